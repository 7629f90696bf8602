#ifndef GRAPHSTORE_TOOLS_BOUNDED_PARTITION_H_
#define GRAPHSTORE_TOOLS_BOUNDED_PARTITION_H_

// graphstore-partition for inputs larger than memory. The edge lists are never held: passes over
// the files collect the node ids (a bitmap per type), count degrees, and bucket each edge under
// the partition that stores it, in row-range chunks sized to the budget, under a temporary
// directory; each chunk is then sorted into its partition's CSR. Features are read row by row
// from their file as each partition is written. What stays in memory is a few bytes a node
// (bounded_nodes.h: about 10 with the random method, a byte of owner, 4 of column degree, 4 of
// one edge type's row degree, a label and a bit a split), plus the streaming method's own 10
// with --method=stream; the whole-graph book files are written a block at a time. The output is
// byte for byte what the in-memory path (BuildGraph, then WritePartitions) writes for the same
// assignment.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/dataset/transforms.h"
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
  /// Where set, each type's nodes are split into train, val and test by these fractions, as
  /// AssignSplits does with this run's seed (for inputs without split files).
  std::optional<SplitFractions> split_fractions;
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
