#ifndef GRAPHSTORE_TOOLS_DATASET_LAYOUT_H_
#define GRAPHSTORE_TOOLS_DATASET_LAYOUT_H_

// Where every node and edge of a graph goes in its partition directories, computed once before
// any partition is written: each node's row within its owner, each edge type's CSR order over
// all partitions, the stored edge times and the column degrees.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/dataset/graph_data.h"

namespace graphstore {

// Where every node and edge of a graph goes; computed once, then each partition is written
// from it.
/// The layout of a graph over its partitions.
struct Layout {
  int num_partitions = 1;
  bool rows_are_sources = true;
  // Per node type: the row of each node within its owner, and each partition's owned ids in
  // ascending order.
  std::vector<std::vector<int64_t>> local;
  std::vector<std::vector<std::vector<int64_t>>> owned;
  // Per edge type: edges ordered by (owner of row node, row, column, edge id), i.e. every
  // partition's CSR back to back, and where the next partition's run starts.
  std::vector<std::vector<int64_t>> order;
  std::vector<int64_t> cursor;
  // Per edge type: the stored time of each edge (the later of its own time and its column
  // node's), when its edges or its column nodes have times.
  std::vector<std::optional<std::vector<int64_t>>> time;
  // Per node type: how many edges of any type have each node as their column endpoint.
  std::vector<std::vector<int64_t>> degree;
};

/// Lays `g` out over `num_partitions` partitions as `assignment` places its nodes, with CSR rows
/// of sources (`rows_are_sources`) or destinations. InvalidArgument when a node's owner is out of
/// range.
absl::StatusOr<Layout> LayOut(const GraphData& g, const Assignment& assignment, int num_partitions,
                              bool rows_are_sources);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_DATASET_LAYOUT_H_
