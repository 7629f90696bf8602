// Link-prediction batches through real servers and the C++ Loader, on one server and on a
// cluster, with uniform and with degree-proportional negatives. On a cluster the degree sums are
// kept whole where they fit (--degree_index_mb) or each server keeps its range of destination
// ids alone, and then a batch's degree draws that fall in another range cost one FindDegreeNodes
// call to that range's server: the "by range" row forces that. The uniform rows are the baseline
// that cost is read against, in the same run.
//
//   bazel build -c opt //bench:ablp_bench
//   bazel-bin/bench/ablp_bench --movielens=../shared/data/ml-100k --seconds=5

#include "client/loader.h"  // LibTorch first (see client/loader.h)

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "server/server.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "tools/movielens.h"

namespace graphstore {
namespace {

struct Figure {
  double anchors_per_s = 0;
  double batches = 0;
};

// Anchors a second over whole epochs for `seconds` (after one epoch of warm-up), on `parts`
// servers over the dataset written under `dir`.
absl::StatusOr<Figure> Measure(const std::string& dir, int parts, v1::NegativeSampling negatives, bool by_range,
                               int batch_size, int num_negatives, double seconds) {
  std::vector<ServerOptions> options(parts);
  for (int k = 0; k < parts; ++k) {
    if (by_range) options[k].core.whole_degree_index_bytes = 0;
    options[k].partition_dir = PartitionDir(dir, parts, k);
    options[k].shared_memory_dir = "";
    options[k].core.state_log_interval_s = 0;
  }
  auto servers = StartLocalCluster(options);
  if (!servers.ok()) return servers.status();
  client::LoaderOptions o;
  for (const auto& s : *servers) o.servers.push_back(s->address());
  o.config.set_batch_size(batch_size);
  o.config.set_shuffle(true);
  for (const char* type : {"user__rates__movie", "movie__rev_rates__user"}) {
    auto& hops = (*o.config.mutable_num_neighbors_by_type())[type];
    hops.add_per_hop(10);
    hops.add_per_hop(5);
  }
  o.config.set_with_node_features(true);
  o.config.set_num_negatives(num_negatives);
  o.config.set_negative_sampling(negatives);
  o.shared_memory = false;
  v1::GetAblpInputRequest ablp;
  ablp.set_split("train");
  ablp.set_node_type("user");
  ablp.set_supervision_edge_type("user__rates__movie");
  o.ablp = ablp;
  client::Loader loader(o);
  Figure f;
  int64_t anchors = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t epoch = 0;; ++epoch) {
    loader.StartEpoch(epoch);
    while (auto b = loader.Next()) {
      if (epoch == 0) continue;  // warm-up
      anchors += b->ablp->anchors.numel();
      ++f.batches;
    }
    if (epoch == 0) start = std::chrono::steady_clock::now();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (epoch > 0 && took >= seconds) {
      f.anchors_per_s = anchors / took;
      return f;
    }
  }
}

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("movielens", "../shared/data/ml-100k", "MovieLens 100k's directory (read, never copied)");
  flags.Define("seconds", "5", "time measured per row, after an epoch of warm-up");
  flags.Define("batch_size", "64", "anchors per batch");
  flags.Define("negatives", "8", "generated negatives per anchor");
  flags.Define("partitions", "2", "servers of the cluster rows");
  if (auto exit = flags.ParseCommandLine(argc, argv, "ablp_bench", "Link-prediction batches, uniform and degree negatives.")) {
    return *exit;
  }
  auto graph = ReadMovieLens(flags.Get("movielens"));
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", graph.status().ToString().c_str());
    return 1;
  }
  const int parts = static_cast<int>(*flags.GetInt("partitions"));
  const std::string root = (std::filesystem::temp_directory_path() / "graphstore-ablp-bench").string();
  std::printf("ml-100k link prediction, batch %lld, [10, 5] each way, %lld negatives an anchor, features, %s s a row\n",
              static_cast<long long>(*flags.GetInt("batch_size")), static_cast<long long>(*flags.GetInt("negatives")),
              flags.Get("seconds").c_str());
  for (const int p : {1, parts}) {
    const std::string dir = absl::StrCat(root, "/", p);
    std::filesystem::remove_all(dir);
    WriteOptions w;
    w.num_partitions = p;
    w.deal_seed = 1;  // RandomAssignment's
    if (auto s = WritePartitions(*graph, RandomAssignment(*graph, p, 1), w, dir); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    double uniform = 0;
    for (const int row : {0, 1, 2}) {
      if (row == 2 && p == 1) continue;  // one server's range is the whole sum
      const auto kind = row == 0 ? v1::NEGATIVE_SAMPLING_UNIFORM : v1::NEGATIVE_SAMPLING_DEGREE;
      auto f = Measure(dir, p, kind, row == 2, static_cast<int>(*flags.GetInt("batch_size")),
                       static_cast<int>(*flags.GetInt("negatives")), std::stod(flags.Get("seconds")));
      if (!f.ok()) {
        std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
        return 1;
      }
      if (row == 0) uniform = f->anchors_per_s;
      const char* name = row == 0 ? "uniform" : row == 1 ? "degree" : "degree, by range";
      std::printf("%d server(s), %-16s negatives: %9.0f anchors/s (%5.0f batches)   ratio to uniform %.2f\n", p, name,
                  f->anchors_per_s, f->batches, f->anchors_per_s / uniform);
    }
    std::filesystem::remove_all(dir);
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
