#ifndef GRAPHSTORE_TOOLS_DATASET_TRANSFORMS_H_
#define GRAPHSTORE_TOOLS_DATASET_TRANSFORMS_H_

// What the tools do to a graph in memory before they write it: reverse edge types, splits,
// and a random assignment of nodes to partitions.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "tools/dataset/graph_data.h"

namespace graphstore {

/// Every node assigned by a seeded random permutation, dealt round-robin so partition sizes
/// differ by at most one.
Assignment RandomAssignment(const GraphData& graph, int num_partitions, uint64_t seed);

/// Adds, for every edge type src__rel__dst whose reverse (dst__rev_rel__src) is not there yet,
/// the reverse type: every edge flipped, features kept, no label splits. Sampling can then
/// follow a relation both ways, as PyG's ToUndirected does for heterogeneous graphs.
void AddReverseEdgeTypes(GraphData* graph);

/// Assigns each node of every type with a label (or, when no type has labels, of every type)
/// to "train", "val" or "test" by a seeded permutation, in the given fractions.
absl::Status AssignSplits(GraphData* graph, double train, double val, double test, uint64_t seed,
                          const std::vector<std::string>& only_types = {});

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_DATASET_TRANSFORMS_H_
