// graphstore-inspect: loads a partition directory with full validation and prints what it
// holds. Exit 0 when the partition is valid; 2 (with the problem) when it is not or the command
// line is wrong: the same codes graphstored exits with when it refuses a partition.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
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

// What a server holds for this partition, by what it grows with: bytes per edge it stores, per
// node it owns, and per node of the whole graph (the partition book every server holds, in
// memory at half a byte to a byte a node, or nothing where the owners were dealt by a key). Node times are kept for the owned nodes only (8 bytes
// each) and label edges' destination degrees as a shared index of this server's range of
// destination ids (1 to 2 bytes a node of the range, built for degree negatives), both read once
// from their whole-graph files.
void PrintSizing(const std::string& dir, const graphstore::Partition& part) {
  namespace fs = std::filesystem;
  int64_t own_edges = 0, own_nodes = 0, all_nodes = 0, book = 0;
  for (const auto& e : part.edge_types()) own_edges += e.num_local;
  for (const auto& n : part.node_types()) {
    own_nodes += n.num_local;
    all_nodes += n.num_nodes;
    book += static_cast<int64_t>(n.owners.bytes());
  }
  int64_t per_edge = 0, per_own = 0, per_all = book, read_once = 0, unread = 0, other = 0;
  for (const auto& n : part.node_types()) {
    // Node times and, beyond 128 partitions or where owners were dealt, the book's rows of owned nodes.
    per_own += static_cast<int64_t>(n.own_times.size() * sizeof(int64_t) + n.owners.own_bytes());
  }
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), dir).string();
    const auto bytes = static_cast<int64_t>(it->file_size());
    const std::string name = it->path().filename().string();
    auto ends = [&name](const char* tail) { return absl::EndsWith(name, tail); };
    if (rel.rfind("book/", 0) == 0 && ends(".raw_ids.npy")) {
      unread += bytes;  // for the user's tools: the server does not read it
    } else if (rel.rfind("book/", 0) == 0 || name == "dst_degree.npy") {
      read_once += bytes;  // the owner and row files (NodeBook), the degrees, the node times
    } else if (rel.rfind("edges/", 0) == 0 && name.rfind("labels_", 0) != 0) {
      per_edge += bytes;
    } else if (rel.rfind("nodes/", 0) == 0 && name != "feature_range.npy") {
      per_own += bytes;
    } else {
      other += bytes;
    }
  }
  auto per = [](int64_t bytes, int64_t n) { return n > 0 ? static_cast<double>(bytes) / n : 0.0; };
  const double total = static_cast<double>(per_edge + per_own + per_all + other);
  std::printf("sizing: a server holds %.1f MiB for this partition, resident once its files are read:\n",
              total / (1 << 20));
  std::printf("  %8.1f bytes per own edge       x %12lld = %10.1f MiB\n", per(per_edge, own_edges),
              static_cast<long long>(own_edges), per_edge / double(1 << 20));
  std::printf("  %8.1f bytes per own node       x %12lld = %10.1f MiB\n", per(per_own, own_nodes),
              static_cast<long long>(own_nodes), per_own / double(1 << 20));
  bool dealt = !part.node_types().empty();
  for (const auto& n : part.node_types()) dealt = dealt && n.owners.dealt();
  std::printf("  %8.2f bytes per node of graph  x %12lld = %10.1f MiB (on every server: the book in memory, "
              "%.2f a node%s)\n",
              per(per_all, all_nodes), static_cast<long long>(all_nodes), per_all / double(1 << 20),
              per(book, all_nodes), dealt ? "; owners dealt by key, computed" : "");
  std::printf("  read once, then let go: %.1f MiB of book files (owners, rows, degrees, each node's time) and "
              "label edges' destination degrees; never read: "
              "%.1f MiB of raw ids\n",
              read_once / double(1 << 20), unread / double(1 << 20));
  std::printf("  plus, built on the first weighted or temporal draw: about 4.3 bytes per own edge of each "
              "weighted edge type (8.3 in rows over 4096 edges) and 64 per row of each timed one; on the first "
              "degree negatives, 1 to 2 bytes per destination node of the label edge type (past --degree_index_mb, "
              "of this server's range: 1/P of them)\n");
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
                TimeRange(n.has_times ? n.own_times.data() : nullptr, n.num_local).c_str());
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
  PrintSizing(flags.Get("partition"), part);
  return 0;
}
