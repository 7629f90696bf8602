#ifndef GRAPHSTORE_TOOLS_DATASET_VALIDATE_H_
#define GRAPHSTORE_TOOLS_DATASET_VALIDATE_H_

// The checks of a graph in memory before anything is written.

#include "absl/status/status.h"
#include "tools/dataset/graph_data.h"

namespace graphstore {

/// Checks the graph (ids in range, array lengths agree, names valid); InvalidArgument naming
/// the node or edge type otherwise.
absl::Status ValidateGraph(const GraphData& graph);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_DATASET_VALIDATE_H_
