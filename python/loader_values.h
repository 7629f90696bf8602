#ifndef GRAPHSTORE_PYTHON_LOADER_VALUES_H_
#define GRAPHSTORE_PYTHON_LOADER_VALUES_H_

// The values graphstore.Loader's options arrive as, and the readers that check one value's type
// and range: each error names the option; a type error carries kTypeErrorPayload, so that the
// package raises TypeError, and any other is a ValueError.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphstore::python {

/// A Python value as the package hands it over: None, bool, int, float, str, a list of ints
/// (ids, times, fanouts: kept flat, they can be long), another list, or a dict with str keys.
struct Value {
  enum class Type { kNone, kBool, kInt, kFloat, kString, kInts, kList, kDict };
  Type type = Type::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<Value> list;
  std::vector<std::pair<std::string, Value>> dict;

  static Value None() { return Value(); }
  static Value Bool(bool v);
  static Value Int(int64_t v);
  static Value Float(double v);
  static Value Str(std::string v);
  static Value Ints(std::vector<int64_t> v);
  /// Python's name of the type ("NoneType", "bool", "int", "float", "str", "list", "dict").
  const char* TypeName() const;
  /// The entry `key` of a dict, or null.
  const Value* Find(const std::string& key) const;
};

/// The payload that marks a status as Python's TypeError.
inline constexpr char kTypeErrorPayload[] = "graphstore/type-error";

absl::Status TypeError(const std::string& message);
absl::Status ValueError(const std::string& message);

absl::StatusOr<bool> ReadBool(const std::string& name, const Value& v);
/// An int, >= `minimum` when given.
absl::StatusOr<int64_t> ReadInt(const std::string& name, const Value& v, std::optional<int64_t> minimum = {});
absl::StatusOr<std::string> ReadStr(const std::string& name, const Value& v);
/// A str or None ("" for None).
absl::StatusOr<std::string> ReadOptionalStr(const std::string& name, const Value& v);
/// Seconds as a number: >= minimum, or > 0 when `positive`.
absl::StatusOr<std::chrono::milliseconds> ReadSeconds(const std::string& name, const Value& v, double minimum,
                                                      bool positive = false);
/// A flat list of ints; `what` says what it should have been in the type error.
absl::StatusOr<std::vector<int64_t>> ReadInts(const std::string& name, const Value& v, const char* what);
/// Fanouts of one edge type (or every one): ints >= -1, at least one hop.
absl::StatusOr<std::vector<int>> ReadFanouts(const std::string& name, const Value& v);

/// A str naming one of `choices`.
template <typename T>
absl::StatusOr<T> ReadChoice(const std::string& name, const Value& v, const std::vector<std::pair<std::string, T>>& choices) {
  auto s = ReadStr(name, v);
  if (!s.ok()) return s.status();
  std::vector<std::string> names;
  for (const auto& [n, value] : choices) {
    if (n == *s) return value;
    names.push_back(absl::StrCat("'", n, "'"));
  }
  return ValueError(absl::StrCat(name, " must be one of ", absl::StrJoin(names, ", "), ", got '", *s, "'"));
}

}  // namespace graphstore::python

#endif  // GRAPHSTORE_PYTHON_LOADER_VALUES_H_
