#ifndef GRAPHSTORE_SERVER_GRAPH_PARTITION_H_
#define GRAPHSTORE_SERVER_GRAPH_PARTITION_H_

// One partition of a graph, memory-mapped from its directory and validated on load. This is
// the storage the samplers read; it is immutable after Load and safe to share across threads.
// docs/format.md specifies the directory.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/manifest.pb.h"
#include "server/graph/node_book.h"
#include "server/graph/owner_deal.h"
#include "server/graph/npy.h"
#include "server/graph/sampling_indexes.h"
#include "server/util/huge_pages.h"
#include "server/util/progress.h"

namespace graphstore {

/// The arrays of one node type held by a partition.
struct NodeTypeStore {
  std::string name;
  /// Nodes of this type in the whole graph; global ids are 0 .. num_nodes-1.
  int64_t num_nodes = 0;
  /// Nodes owned here (rows of ids, features and labels).
  int64_t num_local = 0;
  int64_t feature_dim = 0;
  NpyDtype feature_dtype = NpyDtype::kFloat32;
  int64_t num_classes = 0;

  MappedNpy ids;       ///< int64 [num_local]: owned global ids, ascending.
  /// Owner of every global id and row of the owned ones, half a byte to a byte a node up to 256
  /// partitions (NodeBook), built at load from book/<type>.partition.npy, which is then closed,
  /// as is .local.npy; nothing a node of the whole graph when the manifest records the deal
  /// that chose the owners (then the file is only read to verify it).
  NodeBook owners;
  /// The manifest's owner_deal, when it has one and there are several partitions.
  std::optional<OwnerDeal> deal;
  MappedNpy book;      ///< int32 [num_nodes]: the book file, open while the partition loads.
  /// int64 [num_nodes]: row in the owner's arrays, in datasets older tools wrote; open while
  /// the partition loads, for verification.
  MappedNpy local;
  MappedNpy features;  ///< [num_local, feature_dim], when feature_dim > 0.
  /// float32 [2, feature_dim]: each column's min and max over the whole graph, when stored.
  MappedNpy feature_range;
  MappedNpy labels;    ///< int64 [num_local], when the type has labels; -1 means unlabelled.
  MappedNpy raw_ids;   ///< int64 [num_nodes]: input id of every global id, when kept.
  MappedNpy degree;    ///< int64 [num_nodes]: column degree of every global id, when stored.
  /// int64 [num_nodes]: book/<type>.time.npy, the time of every global id (temporal), open while
  /// the partition loads (the edge times are verified against it), then closed.
  MappedNpy times;
  /// The time of each node owned here, by row (8 bytes an owned node), when the type stores
  /// times. Other partitions' nodes' times come from their owners (GetNodeTimes).
  std::vector<int64_t> own_times;
  bool has_times = false;
  std::map<std::string, MappedNpy> splits;  ///< split name -> int64 owned global ids.

  const int64_t* global_ids() const { return ids.data<int64_t>(); }
  /// Owning partition of a global id in [0, num_nodes).
  int32_t Owner(int64_t gid) const { return owners.Owner(gid); }
  /// Row of a global id owned here within this partition's arrays (on a single partition, the
  /// id itself).
  int64_t OwnerRow(int64_t gid) const { return owners.Row(gid); }
};

/// The CSR of one edge type held by a partition. Rows are this partition's nodes of the row
/// type (the source type for edge_dir "out", the destination type for "in"); indices are
/// global ids of the column type.
struct EdgeTypeStore {
  std::string name;
  int src_type = 0;
  int dst_type = 0;
  int row_type = 0;
  int col_type = 0;
  int64_t num_edges = 0;
  int64_t num_local = 0;
  int64_t feature_dim = 0;
  NpyDtype feature_dtype = NpyDtype::kFloat32;

  MappedNpy indptr;    ///< int64 [rows + 1], indptr[0] == 0, non-decreasing.
  MappedNpy indices;   ///< int64 [num_local]: global ids of the column type.
  MappedNpy edge_ids;  ///< int64 [num_local]: global edge ids, when stored.
  MappedNpy features;  ///< [num_local, feature_dim], when feature_dim > 0.
  MappedNpy weights;   ///< float32 [num_local]: sampling weights (finite, >= 0), when stored.
  /// int64 [num_local]: the time from which each edge may be sampled, when stored; each row is
  /// then sorted by (time, neighbour id, edge id).
  MappedNpy times;
  /// float32 [2, feature_dim]: each column's min and max over the whole graph, when stored.
  MappedNpy feature_range;
  /// Label edges (link prediction): split name -> int64 [k, 2] (src, dst) global ids, sorted,
  /// src owned here.
  std::map<std::string, MappedNpy> label_splits;
  /// int64 [num dst nodes]: each destination node's degree in this type over the whole graph;
  /// open when there are label splits.
  MappedNpy dst_degree;
  /// The draw of destination nodes in proportion to dst_degree (DegreeIndex), built by the first
  /// channel with degree negatives and shared by all.
  std::shared_ptr<DegreeIndex> dst_degree_index = std::make_shared<DegreeIndex>();

  const int64_t* indptr_data() const { return indptr.data<int64_t>(); }
  const int64_t* indices_data() const { return indices.data<int64_t>(); }
  /// Sampling weights in CSR order, or null when the type stores none.
  const float* weights_data() const { return weights.is_open() ? weights.data<float>() : nullptr; }
  /// Edge times in CSR order, or null when the type stores none.
  const int64_t* times_data() const { return times.is_open() ? times.data<int64_t>() : nullptr; }
  /// The indexes of the weights (see WeightIndex), built by the first weighted draw.
  std::shared_ptr<WeightIndex> weight_index = std::make_shared<WeightIndex>();
  /// The rows' extents and time ranges (see TimeRows), built by the first temporal draw.
  std::shared_ptr<TimeRows> time_rows = std::make_shared<TimeRows>();
  /// Global edge id of the edge at CSR position `pos`.
  int64_t EdgeId(int64_t pos) const {
    return edge_ids.is_open() ? edge_ids.data<int64_t>()[pos] : pos;
  }
};

/// A loaded partition.
class Partition {
 public:
  /// How much of the data Load checks.
  struct LoadOptions {
    /// Check every CSR index, partition book entry and split id (a linear scan of the files).
    /// Turn off only for data already verified, to start in milliseconds on huge graphs.
    bool verify_contents = true;
  };

  /// Maps and validates the partition in `dir`. Every error names the offending file and the
  /// problem: NotFound for a missing file, DataLoss for malformed or inconsistent contents.
  static absl::StatusOr<std::unique_ptr<Partition>> Load(const std::string& dir,
                                                         const LoadOptions& options);
  static absl::StatusOr<std::unique_ptr<Partition>> Load(const std::string& dir) {
    return Load(dir, LoadOptions());
  }

  const std::string& dir() const { return dir_; }
  const v1::PartitionManifest& manifest() const { return manifest_; }
  int num_partitions() const { return manifest_.num_partitions(); }
  int partition_id() const { return manifest_.partition_id(); }
  /// True when the CSR rows are source nodes (edge_dir "out").
  bool rows_are_sources() const { return manifest_.edge_dir() == "out"; }

  const std::vector<NodeTypeStore>& node_types() const { return nodes_; }
  const std::vector<EdgeTypeStore>& edge_types() const { return edges_; }
  const NodeTypeStore& node_type(int i) const { return nodes_[i]; }
  const EdgeTypeStore& edge_type(int i) const { return edges_[i]; }

  /// Index of a node type by name; "" names the only node type of a homogeneous graph.
  /// InvalidArgument naming the type when unknown or ambiguous.
  absl::StatusOr<int> FindNodeType(const std::string& name) const;
  /// Index of an edge type by "src__rel__dst"; "" names the only edge type.
  absl::StatusOr<int> FindEdgeType(const std::string& name) const;
  /// Edge type `e`'s degree sums (its dst_degree, which must be open), built on first use and
  /// the file let go: whole where they fit `whole_bytes`, else this partition's range of them
  /// (DegreeIndex::Ranges). Every caller of a server passes the same `whole_bytes`.
  const DegreeIndex& DegreeSums(const EdgeTypeStore& e, int64_t whole_bytes) const;

 private:
  Partition() = default;
  // Loading a type: open and shape-check its files, then (verify) check every entry.
  absl::Status LoadNodeType(int index, Progress* verify);
  absl::Status OpenNodeType(int index);
  absl::Status LoadEdgeType(int index, Progress* verify);
  /// Copies the times of the nodes owned here out of the type's whole-graph time file, and
  /// closes it.
  void KeepOwnTimes(NodeTypeStore* t);
  absl::Status OpenEdgeType(int index);

  std::string dir_;
  v1::PartitionManifest manifest_;
  std::vector<NodeTypeStore> nodes_;
  std::vector<EdgeTypeStore> edges_;
};

/// Splits `n` items into `world_size` near-equal contiguous pieces; returns piece `rank` as
/// [begin, end). world_size <= 1 is the whole range (GiGL's server slice).
std::pair<int64_t, int64_t> SliceRange(int64_t n, int rank, int world_size);

/// Path helpers for the directory layout (docs/format.md), shared by the loader and writers.
std::string NodeDir(const std::string& dir, const std::string& node_type);
std::string EdgeDir(const std::string& dir, const std::string& edge_type);
std::string BookFile(const std::string& dir, const std::string& node_type, const std::string& what);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_PARTITION_H_
