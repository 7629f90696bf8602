#ifndef GRAPHSTORE_TOOLS_BOUNDED_PARTITION_H_
#define GRAPHSTORE_TOOLS_BOUNDED_PARTITION_H_

// graphstore-partition for inputs larger than memory. The edge lists are never held: passes over
// the files collect the node ids (a bitmap per type), count degrees, and bucket each edge under
// the partition that stores it, in row-range chunks sized to the budget, under a temporary
// directory; each chunk is then sorted into its partition's CSR. Features are read row by row
// from their file as each partition is written. What stays in memory is O(nodes): the
// assignment, each node's row and degree, labels and splits. The output is byte for byte what
// the in-memory path (BuildGraph, then WritePartitions) writes for the same assignment.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/dataset/writer.h"
#include "tools/graph_input.h"
#include "tools/metis_partition.h"

namespace graphstore {

/// How to partition with bounded memory.
struct BoundedOptions {
  /// Partitions, edge_dir and method ("random" or "stream").
  WriteOptions write;
  uint64_t seed = 0;
  /// The budget the passes size their chunks to.
  int64_t memory_bytes = int64_t{1} << 30;
  /// Where the chunks spill.
  std::string tmp_dir = "/tmp";
  /// Also store every edge type's reverse (--reverse_edges).
  bool reverse_edges = false;
  /// Called on the graph's nodes (no edges) before the assignment, e.g. to split by fractions.
  std::function<absl::Status(GraphData*)> prepare;
};

/// OK when every file `spec` names can be streamed; InvalidArgument naming the first flag that
/// needs the in-memory path.
absl::Status CheckStreamable(const GraphInputSpec& spec);

/// What the inputs hold, from the npy headers and file sizes, without reading them.
struct InputEstimate {
  /// Edges over every --edges file (text: estimated from the bytes).
  int64_t edges = 0;
  /// Feature values over every --features file.
  int64_t feature_values = 0;
};
absl::StatusOr<InputEstimate> EstimateInput(const GraphInputSpec& spec);

/// The peak memory the in-memory path is expected to take for `method`, fitted to measured runs
/// (docs/operations.md).
int64_t InMemoryBytes(const InputEstimate& input, const std::string& method, bool reverse_edges);

/// Partitions the graph `spec` names into `out_dir` within about `options.memory_bytes`. Its
/// arrays come and go pass by pass: a program that must stay within the budget maps large
/// allocations on their own (mallopt M_MMAP_THRESHOLD), as graphstore-partition does, so that
/// freeing one returns its pages.
absl::StatusOr<PartitionReport> PartitionBounded(const GraphInputSpec& spec, const BoundedOptions& options,
                                                 const std::string& out_dir);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_BOUNDED_PARTITION_H_
