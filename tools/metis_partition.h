#ifndef GRAPHSTORE_TOOLS_METIS_PARTITION_H_
#define GRAPHSTORE_TOOLS_METIS_PARTITION_H_

// Partitioning that keeps neighbourhoods together (METIS k-way), and the report that says how
// well an assignment does: the edge cut and the balance of nodes and edges per partition.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/dataset/validate.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"

namespace graphstore {

/// Assigns nodes with METIS k-way partitioning of the graph's edges taken as undirected, every
/// node type in one graph (so a hop of any edge type tends to stay in its partition), without
/// self-loops or duplicate edges. Deterministic for a given seed. InvalidArgument for a graph
/// that ValidateGraph refuses or that is too large for METIS's 32-bit indices; Internal when
/// METIS fails.
absl::StatusOr<Assignment> MetisAssignment(const GraphData& graph, int num_partitions, uint64_t seed);

/// The assignment of `method`: "metis" (MetisAssignment), "random" (RandomAssignment) or
/// "stream" (StreamAssignment: balanced for CSR rows of sources or of destinations, its coarse
/// graph sized to `memory_bytes`, spilling under `tmp_dir`); InvalidArgument naming any other
/// method.
absl::StatusOr<Assignment> AssignPartitions(const GraphData& graph, const std::string& method, int num_partitions,
                                            uint64_t seed, bool rows_are_sources = true,
                                            int64_t memory_bytes = int64_t{1} << 30,
                                            const std::string& tmp_dir = "/tmp");

/// How an assignment splits the graph.
struct PartitionReport {
  int num_partitions = 0;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  /// Edges whose endpoints are owned by different partitions.
  int64_t cut_edges = 0;
  /// Nodes owned, and edges stored (by the owner of the CSR row node), per partition.
  std::vector<int64_t> nodes;
  std::vector<int64_t> edges;

  double cut_fraction() const { return num_edges > 0 ? static_cast<double>(cut_edges) / num_edges : 0.0; }
  /// Largest part over the mean (1.0 is perfect balance).
  double node_imbalance() const;
  double edge_imbalance() const;
  /// A few human-readable lines.
  std::string ToString() const;
};

/// Evaluates `assignment`; `rows_are_sources` says which endpoint's owner stores an edge.
PartitionReport EvaluateAssignment(const GraphData& graph, const Assignment& assignment, int num_partitions,
                                   bool rows_are_sources);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_METIS_PARTITION_H_
