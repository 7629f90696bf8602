#ifndef GRAPHSTORE_PYTHON_STORE_BINDING_H_
#define GRAPHSTORE_PYTHON_STORE_BINDING_H_

// graphstore.pyg's C++ side: a connection to every server of a cluster, made with the Loader's
// connection options (TLS, tokens, deadlines), and the unary reads a PyG feature store and graph
// store make (dataset meta, owners, feature rows, labels, edge features, neighbours), each taking
// and returning serialized graphstore.v1 messages that the Python side builds and reads. Calls
// to several owners run at once, on the connections' own threads.

#include <pybind11/pybind11.h>

namespace graphstore::python {

/// Adds `_graphstore.Store` to `m`.
void DefineStore(pybind11::module_& m);

}  // namespace graphstore::python

#endif  // GRAPHSTORE_PYTHON_STORE_BINDING_H_
