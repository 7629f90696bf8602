#ifndef GRAPHSTORE_PYTHON_LOADER_SCHEMA_H_
#define GRAPHSTORE_PYTHON_LOADER_SCHEMA_H_

// graphstore.Loader's options, declared once: each option's name, default, place in the
// signature and documentation, and how its value becomes client::LoaderOptions, with every
// check. The Python package builds the Loader's signature and docstring from this table and
// only converts what trainers pass (tensors to lists, edge-type tuples to names, dataclasses
// to dicts); the extension hands the converted values here. No pybind11, no LibTorch.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/loader_options.h"
#include "python/loader_values.h"

namespace graphstore::python {

/// Where an option sits in graphstore.Loader's signature.
enum class Place {
  /// May be passed by position (PyG's NeighborLoader arguments, in their order).
  kPositional,
  /// Keyword only.
  kKeyword,
};

/// One option of graphstore.Loader.
struct OptionSpec {
  std::string name;
  Value default_value;
  Place place = Place::kKeyword;
  /// The docstring's text for it: what it is, units, choices.
  std::string doc;
};

/// Every option, in signature order.
const std::vector<OptionSpec>& LoaderOptionSpecs();

/// The client options for graphstore.Loader's arguments (`values` by name; a missing option
/// takes its default). InvalidArgument naming the option for a value that does not fit; when
/// the value's type is what is wrong, the status carries the payload kTypeErrorPayload (Python
/// raises TypeError for it, ValueError otherwise).
absl::StatusOr<client::LoaderOptions> BuildLoaderOptions(const std::map<std::string, Value>& values);

}  // namespace graphstore::python

#endif  // GRAPHSTORE_PYTHON_LOADER_SCHEMA_H_
