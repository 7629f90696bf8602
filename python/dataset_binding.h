#ifndef GRAPHSTORE_PYTHON_DATASET_BINDING_H_
#define GRAPHSTORE_PYTHON_DATASET_BINDING_H_

// graphstore.write_dataset's C++ side: a graph handed over as DLPack capsules, written as
// partition directories by the tools' own writer (the checks, the partitioners and the files
// graphstore-partition uses).

#include <pybind11/pybind11.h>

namespace graphstore::python {

/// Adds `_graphstore.write_dataset` to `m`.
void DefineDatasetWriter(pybind11::module_& m);

}  // namespace graphstore::python

#endif  // GRAPHSTORE_PYTHON_DATASET_BINDING_H_
