#include "common/flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace graphstore {

void Flags::Define(const std::string& name, const std::string& default_value,
                   const std::string& help, bool repeated) {
  specs_[name] = Spec{default_value, help, repeated};
}

absl::Status Flags::Parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    }
    arg = arg.substr(2);
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    std::string value = eq == std::string::npos ? "true" : arg.substr(eq + 1);
    auto it = specs_.find(name);
    if (it == specs_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    auto& v = values_[name];
    if (!it->second.repeated) v.clear();
    v.push_back(std::move(value));
  }
  return absl::OkStatus();
}

std::optional<int> Flags::ParseCommandLine(int argc, char** argv, const std::string& program,
                                           const std::string& summary) {
  if (auto s = Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), std::string(s.message()).c_str());
    return 2;
  }
  if (help_) {
    std::printf("%s", Usage(program, summary).c_str());
    return 0;
  }
  return std::nullopt;
}

std::string Flags::Usage(const std::string& program, const std::string& summary) const {
  std::string out = absl::StrCat("Usage: ", program, " [flags]\n", summary, "\n\nFlags:\n");
  for (const auto& [name, spec] : specs_) {
    absl::StrAppend(&out, "  --", name, spec.repeated ? " (repeatable)" : "");
    if (!spec.default_value.empty()) absl::StrAppend(&out, " (default: ", spec.default_value, ")");
    absl::StrAppend(&out, "\n      ", spec.help, "\n");
  }
  return out;
}

std::string Flags::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end() && !it->second.empty()) return it->second.back();
  auto spec = specs_.find(name);
  return spec == specs_.end() ? "" : spec->second.default_value;
}

std::vector<std::string> Flags::GetAll(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

bool Flags::IsSet(const std::string& name) const { return values_.count(name) > 0; }

absl::StatusOr<int64_t> Flags::GetInt(const std::string& name) const {
  const std::string v = Get(name);
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0') {
    return absl::InvalidArgumentError(absl::StrCat("--", name, "=", v, " is not an integer"));
  }
  return x;
}

absl::StatusOr<double> Flags::GetDouble(const std::string& name) const {
  const std::string v = Get(name);
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || errno != 0 || *end != '\0') {
    return absl::InvalidArgumentError(absl::StrCat("--", name, "=", v, " is not a number"));
  }
  return x;
}

absl::StatusOr<bool> Flags::GetBool(const std::string& name) const {
  const std::string v = Get(name);
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no" || v.empty()) return false;
  return absl::InvalidArgumentError(absl::StrCat("--", name, "=", v, " is not true or false"));
}

std::vector<std::string> SplitList(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace graphstore
