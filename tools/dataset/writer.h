#ifndef GRAPHSTORE_TOOLS_DATASET_WRITER_H_
#define GRAPHSTORE_TOOLS_DATASET_WRITER_H_

// Writes a graph held in memory as partition directories (docs/format.md): checked
// (validate.h), laid out (layout.h), then each partition's arrays and manifest. Used by
// graphstore-partition, graphstore-generate and graphstore-movielens.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/manifest.pb.h"
#include "server/graph/npy.h"
#include "tools/dataset/graph_data.h"
#include "tools/dataset/layout.h"

namespace graphstore {

/// Options of WritePartitions.
struct WriteOptions {
  /// Partitions to write, >= 1.
  int num_partitions = 1;
  /// "out": CSR rows are sources; "in": rows are destinations.
  std::string edge_dir = "out";
  /// Recorded in the manifest ("random", "metis", "single").
  std::string method = "random";
  /// The seed RandomAssignment (DealNodes) dealt the nodes with, when it did: each node type's
  /// key goes in the manifest (owner_deal), and a server computes owners from it.
  std::optional<uint64_t> deal_seed;
};

/// Directory of partition `p`: `out_dir` itself when there is one partition, else
/// `out_dir`/part-`p`.
std::string PartitionDir(const std::string& out_dir, int num_partitions, int p);

/// Writes one directory per partition. Creates directories as needed.
absl::Status WritePartitions(const GraphData& graph, const Assignment& assignment,
                             const WriteOptions& options, const std::string& out_dir);

// The writer's steps, for a writer that holds the edges and features elsewhere and streams
// them (tools/bounded_partition.h); WritePartitions is these over a graph in memory.

/// The feature rows of one node type, read by global id: `read(ids, n, out)` fills n rows of
/// `dim` floats; `range` is each column's minimum over every node, then its maximum.
struct FeatureSource {
  int64_t dim = 0;
  std::vector<float> range;
  std::function<absl::Status(const int64_t* ids, size_t n, float* out)> read;
};

/// Writes a node type's feature files (feature_range.npy, then features.npy a block of ids at a
/// time) and records them in its manifest entry.
class FeatureWriter {
 public:
  static absl::StatusOr<std::unique_ptr<FeatureWriter>> Start(const FeatureSource& features, const std::string& ndir,
                                                              v1::ManifestNodeType* mt);
  /// Appends the rows of `n` more nodes.
  absl::Status Add(const int64_t* ids, size_t n);
  absl::Status Finish();

 private:
  FeatureWriter(const FeatureSource& features, std::unique_ptr<NpyWriter> writer)
      : features_(features), writer_(std::move(writer)) {}
  const FeatureSource& features_;
  std::unique_ptr<NpyWriter> writer_;
  std::vector<float> rows_;
};

/// Widens `range` (each column's minimum, then its maximum, `dim` columns) to cover `rows` rows
/// of `data`; `first` starts it from the first row.
void UpdateFeatureRange(const float* data, int64_t rows, int64_t dim, bool first, std::vector<float>* range);

/// The features of `nt` as it holds them (which it must outlive).
FeatureSource InMemoryFeatures(const NodeTypeData& nt);

/// Partition `p`'s manifest before any type is added.
v1::PartitionManifest StartManifest(const std::string& name, int num_partitions, int p, const WriteOptions& options);
/// Records each node type's deal key (options.deal_seed) in `m`, its node types written.
void RecordOwnerDeal(const WriteOptions& options, v1::PartitionManifest* m);

/// Writes node type `t` of partition `p` into `dir` (ids, book files, features, labels,
/// splits) and adds it to `m`. The bounded path writes the same from its compact arrays
/// (tools/bounded_nodes.h): a change to one is a change to both.
absl::Status WriteNodeType(const GraphData& g, const Assignment& assignment, const Layout& l, size_t t, int p,
                           const std::string& dir, const FeatureSource& features, v1::PartitionManifest* m);

/// Adds edge type `e` to `m` with its counts; the caller writes its arrays and sets the rest.
v1::ManifestEdgeType* AddEdgeType(const EdgeTypeData& e, int64_t num_edges, int64_t num_local_edges,
                                  v1::PartitionManifest* m);

/// Checks `m` and writes it as `dir`/manifest.json.
absl::Status FinishPartition(const std::string& dir, const v1::PartitionManifest& m);

/// mkdir -p.
absl::Status MakeDirs(const std::string& path);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_DATASET_WRITER_H_
