#include "python/loader_values.h"

#include <cmath>

#include "absl/strings/cord.h"

namespace graphstore::python {

Value Value::Bool(bool v) {
  Value x;
  x.type = Type::kBool;
  x.b = v;
  return x;
}
Value Value::Int(int64_t v) {
  Value x;
  x.type = Type::kInt;
  x.i = v;
  return x;
}
Value Value::Float(double v) {
  Value x;
  x.type = Type::kFloat;
  x.f = v;
  return x;
}
Value Value::Str(std::string v) {
  Value x;
  x.type = Type::kString;
  x.s = std::move(v);
  return x;
}
Value Value::Ints(std::vector<int64_t> v) {
  Value x;
  x.type = Type::kInts;
  x.ints = std::move(v);
  return x;
}

const char* Value::TypeName() const {
  switch (type) {
    case Type::kNone: return "NoneType";
    case Type::kBool: return "bool";
    case Type::kInt: return "int";
    case Type::kFloat: return "float";
    case Type::kString: return "str";
    case Type::kInts:
    case Type::kList: return "list";
    case Type::kDict: return "dict";
  }
  return "object";
}

const Value* Value::Find(const std::string& key) const {
  for (const auto& [k, v] : dict) {
    if (k == key) return &v;
  }
  return nullptr;
}

absl::Status TypeError(const std::string& message) {
  absl::Status s = absl::InvalidArgumentError(message);
  s.SetPayload(kTypeErrorPayload, absl::Cord("1"));
  return s;
}
absl::Status ValueError(const std::string& message) { return absl::InvalidArgumentError(message); }

// Readers of one option's value: the type error, or a range error, names the option.
absl::StatusOr<bool> ReadBool(const std::string& name, const Value& v) {
  if (v.type != Value::Type::kBool) return TypeError(absl::StrCat(name, " must be a bool, not ", v.TypeName()));
  return v.b;
}

absl::StatusOr<int64_t> ReadInt(const std::string& name, const Value& v, std::optional<int64_t> minimum) {
  if (v.type != Value::Type::kInt) return TypeError(absl::StrCat(name, " must be an int, not ", v.TypeName()));
  if (minimum.has_value() && v.i < *minimum) return ValueError(absl::StrCat(name, " must be >= ", *minimum, ", got ", v.i));
  return v.i;
}

absl::StatusOr<std::string> ReadStr(const std::string& name, const Value& v) {
  if (v.type != Value::Type::kString) return TypeError(absl::StrCat(name, " must be a str, not ", v.TypeName()));
  return v.s;
}

// A str or None ("" for None).
absl::StatusOr<std::string> ReadOptionalStr(const std::string& name, const Value& v) {
  if (v.type == Value::Type::kNone) return std::string();
  return ReadStr(name, v);
}

// Seconds as a number: >= minimum, or > 0 when `positive`.
absl::StatusOr<std::chrono::milliseconds> ReadSeconds(const std::string& name, const Value& v, double minimum,
                                                      bool positive) {
  double seconds;
  if (v.type == Value::Type::kInt) {
    seconds = static_cast<double>(v.i);
  } else if (v.type == Value::Type::kFloat) {
    seconds = v.f;
  } else {
    return TypeError(absl::StrCat(name, " must be a number of seconds, not ", v.TypeName()));
  }
  if (std::isnan(seconds) || seconds < minimum || (positive && seconds <= 0) || seconds > 1e9) {
    return ValueError(absl::StrCat(name, " must be a number of seconds ", positive ? "> " : ">= ", minimum, ", got ",
                                   seconds));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}

absl::StatusOr<std::vector<int64_t>> ReadInts(const std::string& name, const Value& v, const char* what) {
  if (v.type != Value::Type::kInts) return TypeError(absl::StrCat(name, " must be ", what, ", not ", v.TypeName()));
  return v.ints;
}

// Fanouts of one edge type (or every one): ints >= -1, at least one hop.
absl::StatusOr<std::vector<int>> ReadFanouts(const std::string& name, const Value& v) {
  auto list = ReadInts(name, v, "a list of ints");
  if (!list.ok()) return list.status();
  if (list->empty()) return ValueError(absl::StrCat(name, " must name at least one hop"));
  std::vector<int> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const int64_t f = (*list)[i];
    if (f < -1) return ValueError(absl::StrCat(name, "[", i, "] must be >= -1 (-1: every neighbour), got ", f));
    if (f > (int64_t{1} << 30)) return ValueError(absl::StrCat(name, "[", i, "]=", f, " is too large"));
    out.push_back(static_cast<int>(f));
  }
  return out;
}

}  // namespace graphstore::python
