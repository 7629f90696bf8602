#ifndef GRAPHSTORE_COMMON_FLAGS_H_
#define GRAPHSTORE_COMMON_FLAGS_H_

// A small command-line parser for the project's binaries: `--name=value` and `--name` (true)
// flags, declared up front so that a misspelt flag is an error rather than silently ignored.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphstore {

/// Declared flags and their parsed values.
class Flags {
 public:
  /// Declares a flag with its default and a one-line help text.
  void Define(const std::string& name, const std::string& default_value, const std::string& help,
              bool repeated = false);
  /// Parses argv; InvalidArgument for an undeclared flag or a positional argument.
  absl::Status Parse(int argc, char** argv);
  /// What every binary's main does with its command line: parses it; on --help prints the
  /// usage to stdout and returns 0; on a bad flag prints "program: problem" to stderr and
  /// returns 2; otherwise returns nullopt and the program goes on.
  std::optional<int> ParseCommandLine(int argc, char** argv, const std::string& program,
                                      const std::string& summary);
  /// True when --help was given.
  bool help() const { return help_; }
  /// The usage text listing every flag.
  std::string Usage(const std::string& program, const std::string& summary) const;

  std::string Get(const std::string& name) const;
  /// Every value of a repeatable flag, in order.
  std::vector<std::string> GetAll(const std::string& name) const;
  /// Whether the flag was given on the command line.
  bool IsSet(const std::string& name) const;
  absl::StatusOr<int64_t> GetInt(const std::string& name) const;
  absl::StatusOr<double> GetDouble(const std::string& name) const;
  absl::StatusOr<bool> GetBool(const std::string& name) const;

 private:
  struct Spec {
    std::string default_value;
    std::string help;
    bool repeated = false;
  };
  std::map<std::string, Spec> specs_;
  std::map<std::string, std::vector<std::string>> values_;
  bool help_ = false;
};

/// Splits on a separator, dropping empty pieces.
std::vector<std::string> SplitList(const std::string& s, char sep);

}  // namespace graphstore

#endif  // GRAPHSTORE_COMMON_FLAGS_H_
