#include "tools/metis_partition.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/util/progress.h"
#include "tools/metis_kway.h"
#include "tools/stream_partition.h"

namespace graphstore {

absl::StatusOr<Assignment> MetisAssignment(const GraphData& g, int num_partitions, uint64_t seed) {
  if (auto s = ValidateGraph(g); !s.ok()) return s;
  // One vertex space over every node type.
  std::vector<int64_t> offset;
  int64_t n = 0;
  for (const auto& t : g.node_types) {
    offset.push_back(n);
    n += t.num_nodes;
  }
  Assignment out;
  for (const auto& t : g.node_types) out.emplace_back(t.num_nodes, 0);
  if (num_partitions <= 1 || n == 0) return out;
  if (num_partitions > n) {
    return absl::InvalidArgumentError(absl::StrCat("--partitions=", num_partitions, " exceeds the ", n, " nodes"));
  }
  // Calls f(a, b) for every edge of every type, as vertices of the one space, but self-loops.
  auto for_each_edge = [&](auto&& f) {
    for (const auto& e : g.edge_types) {
      const int64_t so = offset[FindType(g, e.src_type)], dof = offset[FindType(g, e.dst_type)];
      for (size_t i = 0; i < e.src.size(); ++i) {
        if (so + e.src[i] != dof + e.dst[i]) f(so + e.src[i], dof + e.dst[i]);
      }
    }
  };
  // Undirected adjacency: count, fill, then sort and deduplicate each row.
  std::vector<int64_t> degree(n + 1, 0);
  for_each_edge([&](int64_t a, int64_t b) {
    ++degree[a + 1];
    ++degree[b + 1];
  });
  for (int64_t v = 0; v < n; ++v) degree[v + 1] += degree[v];
  const int64_t total = degree[n];
  if (n > std::numeric_limits<idx_t>::max() || total > std::numeric_limits<idx_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("--method=metis: the graph has ", n, " nodes and ", total,
                                                   " adjacency entries; METIS's 32-bit indices allow 2^31-1"));
  }
  std::vector<idx_t> adj(static_cast<size_t>(total));
  std::vector<int64_t> fill(degree.begin(), degree.end() - 1);
  for_each_edge([&](int64_t a, int64_t b) {
    adj[fill[a]++] = static_cast<idx_t>(b);
    adj[fill[b]++] = static_cast<idx_t>(a);
  });
  std::vector<idx_t> xadj(n + 1, 0);
  size_t w = 0;
  for (int64_t v = 0; v < n; ++v) {
    auto begin = adj.begin() + degree[v], end = adj.begin() + degree[v + 1];
    std::sort(begin, end);
    end = std::unique(begin, end);
    for (auto it = begin; it != end; ++it) adj[w++] = *it;
    xadj[v + 1] = static_cast<idx_t>(w);
  }
  adj.resize(w);
  KwayGraph kway;
  kway.xadj = std::move(xadj);
  kway.adjncy = std::move(adj);
  auto part = KwayPartition(&kway, num_partitions, seed);
  if (!part.ok()) return part.status();
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    for (int64_t i = 0; i < g.node_types[t].num_nodes; ++i) out[t][i] = static_cast<int32_t>((*part)[offset[t] + i]);
  }
  return out;
}

namespace {
double Imbalance(const std::vector<int64_t>& v) {
  int64_t sum = 0, max = 0;
  for (int64_t x : v) {
    sum += x;
    max = std::max(max, x);
  }
  return sum > 0 ? static_cast<double>(max) * v.size() / sum : 1.0;
}
}  // namespace

double PartitionReport::node_imbalance() const { return Imbalance(nodes); }
double PartitionReport::edge_imbalance() const { return Imbalance(edges); }

PartitionReport EvaluateAssignment(const GraphData& g, const Assignment& a, int num_partitions,
                                   bool rows_are_sources) {
  PartitionReport r;
  r.num_partitions = num_partitions;
  r.nodes.assign(num_partitions, 0);
  r.edges.assign(num_partitions, 0);
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    r.num_nodes += g.node_types[t].num_nodes;
    for (int32_t p : a[t]) ++r.nodes[p];
  }
  for (const auto& e : g.edge_types) {
    const auto& sa = a[FindType(g, e.src_type)];
    const auto& da = a[FindType(g, e.dst_type)];
    for (size_t i = 0; i < e.src.size(); ++i) {
      const int32_t ps = sa[e.src[i]], pd = da[e.dst[i]];
      ++r.num_edges;
      r.cut_edges += ps != pd;
      ++r.edges[rows_are_sources ? ps : pd];
    }
  }
  return r;
}

std::string PartitionReport::ToString() const {
  std::string s = absl::StrCat("edge cut: ", cut_edges, " of ", num_edges, " edges (",
                               absl::StrFormat("%.2f", 100.0 * cut_fraction()), "%) cross partitions\n");
  absl::StrAppend(&s, "balance (largest / mean): nodes ", absl::StrFormat("%.3f", node_imbalance()), ", edges ",
                  absl::StrFormat("%.3f", edge_imbalance()), "\n");
  for (int p = 0; p < num_partitions; ++p) {
    absl::StrAppend(&s, "  partition ", p, ": ", nodes[p], " nodes, ", edges[p], " edges\n");
  }
  return s;
}

namespace {
// METIS's own memory and time per adjacency entry (each undirected edge is two), measured on
// 2 cores of the reference machine.
constexpr int64_t kMetisBytesPerEntry = 50;
constexpr double kMetisSecondsPerEntry = 0.6e-6;
}  // namespace

absl::StatusOr<Assignment> AssignPartitions(const GraphData& graph, const std::string& method, int num_partitions,
                                            uint64_t seed, bool rows_are_sources, int64_t memory_bytes,
                                            const std::string& tmp_dir) {
  int64_t nodes = 0;
  for (const auto& t : graph.node_types) nodes += t.num_nodes;
  // METIS gives no progress of its own: its total, at least, when it is done.
  Progress progress(absl::StrCat("partitioning (", method, ", ", num_partitions, " parts)"), nodes, "nodes");
  auto done = [&](absl::StatusOr<Assignment> a) {
    if (a.ok()) progress.Add(nodes);
    return a;
  };
  if (method == "metis") {
    // METIS reports nothing until it ends: what it will take, from the rates measured on the
    // generated products-like graph (docs/benchmarks.md).
    int64_t entries = 0;
    for (const auto& e : graph.edge_types) entries += 2 * static_cast<int64_t>(e.src.size());
    progress.Note(absl::StrFormat("METIS over %d nodes and up to %d adjacency entries: expect about %d MiB and %.0f s",
                                  nodes, entries, (entries * kMetisBytesPerEntry) >> 20,
                                  static_cast<double>(entries) * kMetisSecondsPerEntry));
    return done(MetisAssignment(graph, num_partitions, seed));
  }
  if (method == "random") return done(RandomAssignment(graph, num_partitions, seed));
  if (method == "stream") {
    StreamOptions options;
    options.num_partitions = num_partitions;
    options.seed = seed;
    options.memory_bytes = memory_bytes;
    options.tmp_dir = tmp_dir;
    return StreamAssignment(graph, rows_are_sources, options);
  }
  return absl::InvalidArgumentError(absl::StrCat("method '", method, "' is not a method (random, metis, stream)"));
}

}  // namespace graphstore
