#ifndef GRAPHSTORE_TOOLS_DATASET_WRITER_H_
#define GRAPHSTORE_TOOLS_DATASET_WRITER_H_

// Writes a graph held in memory as partition directories (docs/format.md): checked
// (validate.h), laid out (layout.h), then each partition's arrays and manifest. Used by
// graphstore-partition, graphstore-generate and graphstore-movielens.

#include <string>

#include "absl/status/status.h"
#include "tools/dataset/graph_data.h"

namespace graphstore {

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

/// Writes one directory per partition. Creates directories as needed.
absl::Status WritePartitions(const GraphData& graph, const Assignment& assignment,
                             const WriteOptions& options, const std::string& out_dir);

/// mkdir -p.
absl::Status MakeDirs(const std::string& path);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_DATASET_WRITER_H_
