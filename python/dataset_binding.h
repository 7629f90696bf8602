#ifndef GRAPHSTORE_PYTHON_DATASET_BINDING_H_
#define GRAPHSTORE_PYTHON_DATASET_BINDING_H_

// graphstore.write_dataset's C++ side: a graph handed over as DLPack capsules, written as
// partition directories by the tools' own writer (the checks, the partitioners and the files
// graphstore-partition uses).

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace graphstore::python {

/// Adds `_graphstore.write_dataset` to `m`.
void DefineDatasetWriter(pybind11::module_& m);

/// The values of a DLPack capsule of a contiguous CPU int64 tensor, consuming the capsule;
/// ValueError naming `what` for anything else.
std::vector<int64_t> TakeInt64s(const pybind11::handle& capsule, const std::string& what);

}  // namespace graphstore::python

#endif  // GRAPHSTORE_PYTHON_DATASET_BINDING_H_
