#ifndef GRAPHSTORE_TOOLS_DATASET_GRAPH_DATA_H_
#define GRAPHSTORE_TOOLS_DATASET_GRAPH_DATA_H_

// A graph held in memory, as the tools read it from their inputs and before it is written as
// partition directories (docs/format.md): node and edge types with their arrays, and which
// partition owns each node.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

/// Index of the node type `name` in `graph.node_types`, or -1.
int FindType(const GraphData& graph, const std::string& name);

/// The stored name of an edge type, "src__rel__dst".
std::string EdgeName(const EdgeTypeData& e);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_DATASET_GRAPH_DATA_H_
