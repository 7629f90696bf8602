#ifndef GRAPHSTORE_PYTHON_OPTION_VALUES_H_
#define GRAPHSTORE_PYTHON_OPTION_VALUES_H_

// Python values as the Loader's option schema reads them (binding.cc), shared by the bindings
// that take a Loader's options (the Loader, graphstore.pyg's Store).

#include <pybind11/pybind11.h>

#include "python/loader_values.h"

namespace graphstore::python {

/// `o` as a schema Value; TypeError / ValueError naming what it cannot take.
Value ToValue(const pybind11::handle& o);

}  // namespace graphstore::python

#endif  // GRAPHSTORE_PYTHON_OPTION_VALUES_H_
