// graphstore-inspect: loads a partition directory with full validation and prints what it
// holds. Exit 0 when the partition is valid; 2 (with the problem) when it is not or the command
// line is wrong: the same codes graphstored exits with when it refuses a partition.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "server/graph/partition.h"
#include "common/flags.h"

namespace {

// ", times A..B" for `n` times (none: "").
std::string TimeRange(const int64_t* t, int64_t n) {
  if (t == nullptr || n == 0) return "";
  const auto [lo, hi] = std::minmax_element(t, t + n);
  return ", times " + std::to_string(*lo) + ".." + std::to_string(*hi);
}

// ", weights A..B (Z zero)" for `n` weights (none: "").
std::string WeightRange(const float* w, int64_t n) {
  if (w == nullptr || n == 0) return "";
  const auto [lo, hi] = std::minmax_element(w, w + n);
  const int64_t zero = std::count(w, w + n, 0.0f);
  char buf[96];
  std::snprintf(buf, sizeof buf, ", weights %g..%g (%lld zero)", *lo, *hi, static_cast<long long>(zero));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  graphstore::Flags flags;
  flags.Define("partition", "", "partition directory to check");
  if (auto exit = flags.ParseCommandLine(argc, argv, "graphstore-inspect", "Validates a partition directory and summarises it.")) {
    return *exit;
  }
  if (flags.Get("partition").empty()) {
    std::fprintf(stderr, "graphstore-inspect: --partition is required (see --help)\n");
    return 2;
  }
  auto p = graphstore::Partition::Load(flags.Get("partition"));
  if (!p.ok()) {
    std::fprintf(stderr, "graphstore-inspect: %s\n", std::string(p.status().message()).c_str());
    return 2;
  }
  const auto& part = **p;
  std::printf("dataset %s: partition %d of %d, edge_dir %s, method %s\n",
              part.manifest().dataset_name().c_str(), part.partition_id(), part.num_partitions(),
              part.manifest().edge_dir().c_str(), part.manifest().partition_method().c_str());
  for (const auto& n : part.node_types()) {
    std::printf("  node type %-12s %12lld of %lld nodes, %lld features, %lld classes, %zu splits%s\n",
                n.name.c_str(), static_cast<long long>(n.num_local), static_cast<long long>(n.num_nodes),
                static_cast<long long>(n.feature_dim), static_cast<long long>(n.num_classes), n.splits.size(),
                TimeRange(n.times_data(), n.num_nodes).c_str());
  }
  for (const auto& e : part.edge_types()) {
    std::printf("  edge type %-24s %12lld of %lld edges%s%s", e.name.c_str(), static_cast<long long>(e.num_local),
                static_cast<long long>(e.num_edges), e.edge_ids.is_open() ? ", edge ids" : "",
                e.feature_dim > 0 ? ", features" : "");
    std::printf("%s%s", WeightRange(e.weights_data(), e.num_local).c_str(),
                TimeRange(e.times_data(), e.num_local).c_str());
    for (const auto& [split, f] : e.label_splits) {
      std::printf(", %lld %s label edges", static_cast<long long>(f.shape()[0]), split.c_str());
    }
    std::printf("\n");
  }
  return 0;
}
