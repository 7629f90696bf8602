#ifndef GRAPHSTORE_BENCH_BENCH_GRAPHS_H_
#define GRAPHSTORE_BENCH_BENCH_GRAPHS_H_

// The benchmark graphs, generated on first use and kept in a cache directory between runs.

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "tools/generator.h"

namespace graphstore {

/// The partition directory of a named graph — "1m" (1M nodes, ~25M edges) or "products"
/// (2.45M nodes, ~125M edges), both with 100 float features, edge weights and node and edge
/// times — generating it into `cache_dir` if needed. Any other name is taken as a partition
/// directory.
inline absl::StatusOr<std::string> BenchGraph(const std::string& name, const std::string& cache_dir) {
  if (name != "1m" && name != "products") return name;
  // The format version is part of the name: a graph written by an older generator (without the
  // degree and feature range files, the edge weights or the times) is not reused.
  const std::string dir = absl::StrCat(cache_dir, "/", name, "-v4");
  if (std::filesystem::exists(dir + "/manifest.json")) return dir;
  GeneratorOptions o;
  o.feature_dim = 100;
  o.edge_weights = true;
  o.times = true;
  if (name == "1m") {
    o.num_nodes = 1000000;
    o.avg_degree = 25.6;
  } else {
    o.num_nodes = 2449029;
    o.avg_degree = 52;
    o.num_classes = 47;
  }
  std::fprintf(stderr, "generating %s into %s ...\n", name.c_str(), dir.c_str());
  if (auto s = GenerateDataset(o, dir); !s.ok()) return s;
  return dir;
}

/// Where cluster_bench and cross_draw_bench keep the datasets of the graph `g` generates: the
/// whole graph in `single`, its 2-partition splits in `metis2` and `random2`.
inline std::string ClusterBenchDir(const std::string& cache_dir, const GeneratorOptions& g) {
  // "-dealt": random partitions written before the manifest recorded their deal are not reused.
  return absl::StrCat(cache_dir, "/cluster-", g.num_nodes, "-", g.avg_degree, "-", g.feature_dim, g.times ? "-t" : "",
                      "-dealt");
}

/// Whether a dataset of `num_partitions` was written completely into `dir` (its last manifest).
inline bool ClusterBenchWritten(const std::string& dir, int num_partitions) {
  return std::filesystem::exists(num_partitions == 1 ? dir + "/manifest.json"
                                                     : absl::StrCat(dir, "/part-", num_partitions - 1, "/manifest.json"));
}

/// Writes `graph` into `dir`, split by `assignment` (made by `method`; for "random", dealt by
/// RandomAssignment with `seed`, which the manifests record), unless already there.
inline absl::Status WriteClusterBenchDataset(const GraphData& graph, const Assignment& assignment,
                                             const std::string& method, int num_partitions, const std::string& dir,
                                             uint64_t seed) {
  if (ClusterBenchWritten(dir, num_partitions)) return absl::OkStatus();
  std::filesystem::remove_all(dir);
  WriteOptions w;
  w.num_partitions = num_partitions;
  w.method = method;
  w.deal_seed = DealSeed(method, seed);
  return WritePartitions(graph, assignment, w, dir);
}

/// Drops the files under `dir` from the page cache (those no process maps), so that the run
/// reads the graph as a server started on files that are not in memory does: faulted in
/// through its mapping, in huge pages where the kernel gives them (server/graph/npy.cc).
/// Files just written by the generator sit in the cache in small pages, which would make
/// every random read of the run cost a page walk besides its cache miss.
inline void EvictFromPageCache(const std::string& dir) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const int fd = open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    fdatasync(fd);  // written pages must be clean to be dropped
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

}  // namespace graphstore

#endif  // GRAPHSTORE_BENCH_BENCH_GRAPHS_H_
