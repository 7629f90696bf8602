#ifndef GRAPHSTORE_TOOLS_STREAM_PARTITION_H_
#define GRAPHSTORE_TOOLS_STREAM_PARTITION_H_

// The streaming locality method (--method=stream): multilevel partitioning with the graph on
// disk. Passes over the graph's adjacency, read a node-range chunk at a time, first gather nodes
// into small clusters by size-bounded label propagation (each node joins the cluster most of
// its neighbours are in, as KaHIP's coarsening does); METIS then partitions the graph of
// clusters, weighted by each cluster's nodes of every type and its stored edges, which is as
// large as the memory budget allows (the whole graph when it fits); each node takes its
// cluster's partition, and refining passes move a node to where more of its neighbours are
// when the caps on every type's node count and on stored edges allow. Memory: O(nodes), one
// chunk of adjacency, and the coarse graph; the adjacency is spilled under a temporary
// directory when it does not fit.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/dataset/graph_data.h"

namespace graphstore {

/// Options of the streaming method.
struct StreamOptions {
  int num_partitions = 2;
  /// Label propagation passes that form the clusters, and refining passes after METIS.
  int cluster_passes = 4;
  int refine_passes = 3;
  /// Nodes of the coarse graph METIS partitions; 0: as many as `memory_bytes` allows.
  int64_t coarse_nodes = 0;
  uint64_t seed = 0;
  /// Largest node count of a type, and edge count, as a multiple of the mean.
  double node_slack = 1.03;
  double edge_slack = 1.03;
  /// Bytes the adjacency may hold in memory; beyond it, chunks go to `tmp_dir`.
  int64_t memory_bytes = int64_t{1} << 30;
  std::string tmp_dir = "/tmp";
};

/// Collects a graph's edges, then assigns its nodes. Nodes are numbered per type; edges are
/// given by type pair, each with the endpoint whose owner stores it (the CSR row).
class StreamPartitioner {
 public:
  /// `type_sizes`: nodes of each type; `num_edges`: an upper bound of the edges to come (sizes
  /// the chunks).
  StreamPartitioner(std::vector<int64_t> type_sizes, int64_t num_edges, StreamOptions options);
  ~StreamPartitioner();
  StreamPartitioner(const StreamPartitioner&) = delete;
  StreamPartitioner& operator=(const StreamPartitioner&) = delete;

  /// Adds `n` edges between rows of type `row_type` and columns of type `col_type`.
  absl::Status AddEdges(int row_type, const int64_t* rows, int col_type, const int64_t* cols, size_t n);
  /// Runs the passes; call once, after the last AddEdges.
  absl::StatusOr<Assignment> Assign();

 private:
  // A chunk's neighbours as a CSR over its node range.
  struct Adjacency {
    std::vector<int64_t> start, neighbours;
  };
  struct Chunk {
    int64_t first = 0, end = 0;  // node range
    std::vector<int64_t> pairs;  // (node, neighbour) pairs held in memory, until sorted into `held`
    Adjacency held;
    std::FILE* spill = nullptr;  // or spilled
    std::string path;
    int64_t spilled = 0;
  };
  absl::Status Append(int64_t u, int64_t v);
  absl::Status Load(Chunk* c, std::vector<int64_t>* pairs);
  static void SortByNode(const std::vector<int64_t>& pairs, const Chunk& c, Adjacency* out);
  // Calls fn(u, neighbours, n, stored) for every node in id order, a chunk at a time: its
  // neighbours without self-loops, and how many edges it stores (self-loops included).
  template <typename Fn>
  absl::Status Scan(const std::string& what, Fn fn);
  int TypeOf(int64_t u) const;
  absl::Status Cluster(int64_t max_size);
  int64_t NumberClusters();
  int64_t MergeClusters(int64_t num_clusters, int64_t target, int64_t max_size);
  absl::Status PartitionClusters(int64_t target, int64_t max_size);
  void Refine(int64_t u, const int64_t* neighbours, int64_t n, int64_t stored);

  const std::vector<int64_t> type_sizes_;
  const StreamOptions options_;
  std::vector<int64_t> type_offset_;
  int64_t total_nodes_ = 0;
  int64_t total_edges_ = 0;
  std::vector<uint16_t> place_;       // each node's partition
  std::vector<Chunk> chunks_;
  int64_t chunk_nodes_ = 1;
  bool spilling_ = false;
  std::vector<uint32_t> label_;        // cluster of each node (nodes number below 2^32)
  // Loads of the current assignment.
  std::vector<std::vector<int64_t>> type_load_;  // [type][partition]
  std::vector<int64_t> edge_load_;
  std::vector<int64_t> type_cap_;
  int64_t edge_cap_ = 0;
  std::vector<int64_t> counts_;
};

/// The streaming method over a graph in memory (its adjacency in memory too).
absl::StatusOr<Assignment> StreamAssignment(const GraphData& graph, bool rows_are_sources, StreamOptions options);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_STREAM_PARTITION_H_
