// graphstore-movielens: converts MovieLens 100k (read in place, never copied) into graphstore
// partition directories for link prediction. See tools/movielens.h for the graph it builds.
//
//   graphstore-movielens --input=../shared/data/ml-100k --out=/tmp/ml100k [--partitions=2] [--times]

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/dataset/writer.h"
#include "common/flags.h"
#include "tools/metis_partition.h"
#include "tools/movielens.h"

namespace graphstore {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "graphstore-movielens: %s\n", std::string(s.message()).c_str());
  return 2;
}

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("input", "", "the ml-100k directory (u.data, u.user, u.item, u.occupation)");
  flags.Define("out", "", "output directory (one partition: DIR itself; N: DIR/part-0..N-1)");
  flags.Define("partitions", "1", "number of partitions");
  flags.Define("method", "random", "partitioning method: random or metis");
  flags.Define("edge_dir", "out", "\"out\" (CSR by source) or \"in\" (CSR by destination)");
  flags.Define("seed", "0", "seed of the random assignment");
  flags.Define("times", "false",
               "temporal: rating timestamps as edge times, each node's first rating as its node time");
  if (auto exit = flags.ParseCommandLine(argc, argv, "graphstore-movielens",
                                         "Converts MovieLens 100k into a link-prediction dataset.")) {
    return *exit;
  }
  if (flags.Get("input").empty()) return Fail(absl::InvalidArgumentError("--input is required"));
  if (flags.Get("out").empty()) return Fail(absl::InvalidArgumentError("--out is required"));
  auto parts = flags.GetInt("partitions");
  if (!parts.ok()) return Fail(parts.status());
  if (*parts < 1 || *parts > 64) return Fail(absl::InvalidArgumentError("--partitions must be in [1, 64]"));
  auto seed = flags.GetInt("seed");
  if (!seed.ok()) return Fail(seed.status());
  const std::string method = flags.Get("method");
  if (method != "random" && method != "metis") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--method=", method, " is not a method (random, metis)")));
  }

  auto times = flags.GetBool("times");
  if (!times.ok()) return Fail(times.status());
  MovieLensOptions read;
  read.times = *times;
  auto graph = ReadMovieLens(flags.Get("input"), read);
  if (!graph.ok()) return Fail(graph.status());
  WriteOptions options;
  options.num_partitions = static_cast<int>(*parts);
  options.edge_dir = flags.Get("edge_dir");
  options.method = method;
  options.deal_seed = DealSeed(method, static_cast<uint64_t>(*seed));
  auto assigned = AssignPartitions(*graph, options.method, options.num_partitions, *seed);
  if (!assigned.ok()) return Fail(assigned.status());
  const Assignment& assignment = *assigned;
  if (auto s = WritePartitions(*graph, assignment, options, flags.Get("out")); !s.ok()) return Fail(s);
  for (const auto& t : graph->node_types) {
    std::printf("node type %-6s %6lld nodes, %lld features\n", t.name.c_str(), static_cast<long long>(t.num_nodes),
                static_cast<long long>(t.feature_dim));
  }
  for (const auto& e : graph->edge_types) {
    std::printf("edge type %s__%s__%s: %zu edges", e.src_type.c_str(), e.relation.c_str(), e.dst_type.c_str(),
                e.src.size());
    for (const auto& [split, l] : e.label_splits) std::printf(", %zu %s labels", l.src.size(), split.c_str());
    std::printf("\n");
  }
  if (read.times) std::printf("temporal: ratings keep their timestamps, nodes the time of their first rating\n");
  std::printf("wrote %d partition(s) to %s\n", options.num_partitions, flags.Get("out").c_str());
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
