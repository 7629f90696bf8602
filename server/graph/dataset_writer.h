#ifndef GRAPHSTORE_SERVER_GRAPH_DATASET_WRITER_H_
#define GRAPHSTORE_SERVER_GRAPH_DATASET_WRITER_H_

// Writes a graph held in memory as partition directories (docs/format.md). Used by
// graphstore-partition and by graphstore-generate when it writes several partitions.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphstore {

/// One node type of an in-memory graph. Global ids are 0 .. num_nodes-1.
struct NodeTypeData {
  std::string name;
  int64_t num_nodes = 0;
  /// Input id of each global id, [num_nodes]; empty when global ids are the input ids.
  std::vector<int64_t> raw_ids;
  /// Feature columns; 0 for none.
  int64_t feature_dim = 0;
  /// Row-major [num_nodes, feature_dim].
  std::vector<float> features;
  /// [num_nodes], -1 for unlabelled; empty for none.
  std::vector<int64_t> labels;
  /// Time of each node, [num_nodes], for temporal sampling; empty for none.
  std::vector<int64_t> times;
  /// Split name -> global ids.
  std::map<std::string, std::vector<int64_t>> splits;
};

/// Label edges of one split (link prediction): pairs (src[i], dst[i]).
struct LabelEdges {
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
};

/// One edge type of an in-memory graph; edge i has global edge id i.
struct EdgeTypeData {
  std::string src_type;
  std::string relation;
  std::string dst_type;
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  int64_t feature_dim = 0;
  /// Row-major [num_edges, feature_dim].
  std::vector<float> features;
  /// Sampling weight of each edge, finite and >= 0, [num_edges]; empty for none.
  std::vector<float> weights;
  /// Time of each edge, [num_edges], for temporal sampling; empty for none. Stored as the later
  /// of it and the time of the edge's neighbour (its column node), which alone gives the stored
  /// time when the edge has none.
  std::vector<int64_t> times;
  /// Split name -> label edges of this type (need not be edges of the graph).
  std::map<std::string, LabelEdges> label_splits;
};

/// A whole graph in memory.
struct GraphData {
  std::string name = "graph";
  std::vector<NodeTypeData> node_types;
  std::vector<EdgeTypeData> edge_types;
};

/// Owning partition of every node: assignment[node type][global id].
using Assignment = std::vector<std::vector<int32_t>>;

/// Options of WritePartitions.
struct WriteOptions {
  /// Partitions to write, >= 1.
  int num_partitions = 1;
  /// "out": CSR rows are sources; "in": rows are destinations.
  std::string edge_dir = "out";
  /// Recorded in the manifest ("random", "metis", "single").
  std::string method = "random";
};

/// Directory of partition `p`: `out_dir` itself when there is one partition, else
/// `out_dir`/part-`p`.
std::string PartitionDir(const std::string& out_dir, int num_partitions, int p);

/// Index of the node type `name` in `graph.node_types`, or -1.
int FindType(const GraphData& graph, const std::string& name);

/// Checks the graph (ids in range, array lengths agree, names valid); InvalidArgument naming
/// the node or edge type otherwise.
absl::Status ValidateGraph(const GraphData& graph);

/// Every node assigned by a seeded random permutation, dealt round-robin so partition sizes
/// differ by at most one.
Assignment RandomAssignment(const GraphData& graph, int num_partitions, uint64_t seed);

/// Adds, for every edge type src__rel__dst whose reverse (dst__rev_rel__src) is not there yet,
/// the reverse type: every edge flipped, features kept, no label splits. Sampling can then
/// follow a relation both ways, as PyG's ToUndirected does for heterogeneous graphs.
void AddReverseEdgeTypes(GraphData* graph);

/// Writes one directory per partition. Creates directories as needed.
absl::Status WritePartitions(const GraphData& graph, const Assignment& assignment,
                             const WriteOptions& options, const std::string& out_dir);

/// Assigns each node of every type with a label (or, when no type has labels, of every type)
/// to "train", "val" or "test" by a seeded permutation, in the given fractions.
absl::Status AssignSplits(GraphData* graph, double train, double val, double test, uint64_t seed,
                          const std::vector<std::string>& only_types = {});

/// mkdir -p.
absl::Status MakeDirs(const std::string& path);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_DATASET_WRITER_H_
