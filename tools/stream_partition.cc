#include "tools/stream_partition.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/util/progress.h"
#include "tools/metis_kway.h"

namespace graphstore {
namespace {

constexpr int64_t kPairBytes = 2 * sizeof(int64_t);
// Set on a neighbour when the edge to it is stored at the node the list is of (the node is its
// CSR row): a node's stored edges are counted from its list each pass, not kept per node.
constexpr int64_t kStored = int64_t{1} << 62;
constexpr int64_t kMaxChunks = 512;

// Pairs of clusters (a < b) with the edges between them, summed a batch at a time; past `cap`
// pairs only the heaviest are kept, so that memory stays bounded whatever the graph (a light
// pair says little about where a cluster belongs).
class CoarsePairs {
 public:
  explicit CoarsePairs(size_t cap) : cap_(cap) {}

  void Add(int64_t a, int64_t b) {
    if (a == b) return;
    batch_.push_back({static_cast<int32_t>(std::min(a, b)), static_cast<int32_t>(std::max(a, b)), 1});
    if (batch_.size() >= cap_) Merge();
  }

  // The kept pairs as METIS's symmetric CSR over `n` clusters.
  void ToCsr(int64_t n, std::vector<idx_t>* xadj, std::vector<idx_t>* adj, std::vector<idx_t>* weight) {
    Merge();
    std::vector<Pair>().swap(batch_);
    std::vector<Pair>().swap(merged_);
    xadj->assign(n + 1, 0);
    for (const Pair& p : pairs_) {
      ++(*xadj)[p.a + 1];
      ++(*xadj)[p.b + 1];
    }
    for (int64_t c = 0; c < n; ++c) (*xadj)[c + 1] += (*xadj)[c];
    adj->assign(2 * pairs_.size(), 0);
    weight->assign(adj->size(), 0);
    std::vector<idx_t> fill(xadj->begin(), xadj->end() - 1);
    for (const Pair& p : pairs_) {
      (*adj)[fill[p.a]] = p.b;
      (*weight)[fill[p.a]++] = p.w;
      (*adj)[fill[p.b]] = p.a;
      (*weight)[fill[p.b]++] = p.w;
    }
    std::vector<Pair>().swap(pairs_);
  }

  bool truncated() const { return truncated_; }

 private:
  struct Pair {
    int32_t a, b, w;
  };
  static bool SameKey(const Pair& x, const Pair& y) { return x.a == y.a && x.b == y.b; }
  static bool KeyLess(const Pair& x, const Pair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; }
  static int32_t Sum(int32_t x, int32_t y) { return static_cast<int32_t>(std::min<int64_t>(int64_t{x} + y, INT32_MAX)); }
  // Appends `p` to sorted `out`, summing into its last pair when the keys match.
  static void Push(const Pair& p, std::vector<Pair>* out) {
    if (!out->empty() && SameKey(out->back(), p)) {
      out->back().w = Sum(out->back().w, p.w);
    } else {
      out->push_back(p);
    }
  }
  // Sorts `v` by key and sums the pairs of each key, in place.
  static void Reduce(std::vector<Pair>* v) {
    std::sort(v->begin(), v->end(), KeyLess);
    size_t w = 0;
    for (size_t i = 0; i < v->size(); ++i) {
      if (w > 0 && SameKey((*v)[w - 1], (*v)[i])) {
        (*v)[w - 1].w = Sum((*v)[w - 1].w, (*v)[i].w);
      } else {
        (*v)[w++] = (*v)[i];
      }
    }
    v->resize(w);
  }
  // Adds the reduced batch to the kept pairs in one linear pass; past twice `cap`, keeps the
  // heaviest `cap`.
  void Merge() {
    Reduce(&batch_);
    merged_.clear();
    merged_.reserve(pairs_.size() + batch_.size());
    size_t i = 0, j = 0;
    while (i < pairs_.size() || j < batch_.size()) {
      const bool from_pairs = j == batch_.size() || (i < pairs_.size() && !KeyLess(batch_[j], pairs_[i]));
      Push(from_pairs ? pairs_[i++] : batch_[j++], &merged_);
    }
    pairs_.swap(merged_);
    batch_.clear();
    if (pairs_.size() > 2 * cap_) {
      truncated_ = true;
      std::nth_element(pairs_.begin(), pairs_.begin() + static_cast<std::ptrdiff_t>(cap_), pairs_.end(),
                       [](const Pair& x, const Pair& y) { return x.w != y.w ? x.w > y.w : KeyLess(x, y); });
      pairs_.resize(cap_);
      Reduce(&pairs_);
    }
  }

  const size_t cap_;
  std::vector<Pair> pairs_, batch_, merged_;
  bool truncated_ = false;
};

}  // namespace

StreamPartitioner::StreamPartitioner(std::vector<int64_t> type_sizes, int64_t num_edges, StreamOptions options)
    : type_sizes_(std::move(type_sizes)), options_(std::move(options)) {
  for (int64_t n : type_sizes_) {
    type_offset_.push_back(total_nodes_);
    total_nodes_ += n;
  }
  // Each edge is held from both ends; a pass holds a chunk's pairs and their sorted copy.
  const int64_t bytes = 2 * std::max<int64_t>(num_edges, 1) * kPairBytes * 3 / 2;
  int64_t num_chunks = 1;
  if (bytes > options_.memory_bytes) {
    spilling_ = true;
    num_chunks = std::min(kMaxChunks, 2 * ((bytes + options_.memory_bytes - 1) / options_.memory_bytes));
  }
  chunk_nodes_ = std::max<int64_t>(1, (total_nodes_ + num_chunks - 1) / num_chunks);
  for (int64_t first = 0; first < std::max<int64_t>(total_nodes_, 1); first += chunk_nodes_) {
    Chunk c;
    c.first = first;
    c.end = std::min(total_nodes_, first + chunk_nodes_);
    chunks_.push_back(std::move(c));
  }
}

StreamPartitioner::~StreamPartitioner() {
  for (auto& c : chunks_) {
    if (c.spill != nullptr) std::fclose(c.spill);
  }
}

absl::Status StreamPartitioner::Append(int64_t u, int64_t v) {
  Chunk& c = chunks_[u / chunk_nodes_];
  if (!spilling_) {
    c.pairs.push_back(u);
    c.pairs.push_back(v);
    return absl::OkStatus();
  }
  if (c.spill == nullptr) {
    c.path = absl::StrCat(options_.tmp_dir, "/graphstore-stream-", ::getpid(), "-", c.first, ".bin");
    c.spill = std::fopen(c.path.c_str(), "w+b");
    if (c.spill == nullptr) {
      return absl::PermissionDeniedError(absl::StrCat(c.path, ": cannot create (--tmp_dir): ", std::strerror(errno)));
    }
    ::unlink(c.path.c_str());  // nameless from now on: nothing is left behind, however the run ends
  }
  const int64_t pair[2] = {u, v};
  if (std::fwrite(pair, sizeof(pair), 1, c.spill) != 1) {
    return absl::ResourceExhaustedError(absl::StrCat(c.path, ": write failed (--tmp_dir full?): ", std::strerror(errno)));
  }
  ++c.spilled;
  return absl::OkStatus();
}

absl::Status StreamPartitioner::AddEdges(int row_type, const int64_t* rows, int col_type, const int64_t* cols,
                                         size_t n) {
  const int64_t ro = type_offset_[row_type], co = type_offset_[col_type];
  for (size_t i = 0; i < n; ++i) {
    const int64_t u = ro + rows[i], v = co + cols[i];
    ++total_edges_;
    // A self-loop says nothing about where a node belongs, but weighs on its partition's edges:
    // it is held once, as a stored edge, and left out of the neighbours a pass sees.
    if (auto s = Append(u, v | kStored); !s.ok()) return s;
    if (u == v) continue;
    if (auto s = Append(v, u); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status StreamPartitioner::Load(Chunk* c, std::vector<int64_t>* pairs) {
  pairs->resize(2 * c->spilled);
  if (c->spilled == 0) return absl::OkStatus();
  if (std::fflush(c->spill) != 0 || std::fseek(c->spill, 0, SEEK_SET) != 0 ||
      std::fread(pairs->data(), kPairBytes, c->spilled, c->spill) != static_cast<size_t>(c->spilled)) {
    return absl::DataLossError(absl::StrCat(c->path, ": cannot read back: ", std::strerror(errno)));
  }
  return std::fseek(c->spill, 0, SEEK_END) == 0 ? absl::OkStatus()
                                                : absl::DataLossError(absl::StrCat(c->path, ": seek failed"));
}

// A chunk's (node, neighbour) pairs as a CSR over its node range, by a counting sort that keeps
// each node's neighbours in the order they were added.
void StreamPartitioner::SortByNode(const std::vector<int64_t>& pairs, const Chunk& c, Adjacency* out) {
  const int64_t span = c.end - c.first;
  out->start.assign(span + 1, 0);
  for (size_t i = 0; i < pairs.size(); i += 2) ++out->start[pairs[i] - c.first + 1];
  for (int64_t k = 0; k < span; ++k) out->start[k + 1] += out->start[k];
  out->neighbours.resize(pairs.size() / 2);
  std::vector<int64_t> fill(out->start.begin(), out->start.end() - 1);
  for (size_t i = 0; i < pairs.size(); i += 2) out->neighbours[fill[pairs[i] - c.first]++] = pairs[i + 1];
}

int StreamPartitioner::TypeOf(int64_t u) const {
  return static_cast<int>(std::upper_bound(type_offset_.begin(), type_offset_.end(), u) - type_offset_.begin()) - 1;
}

template <typename Fn>
absl::Status StreamPartitioner::Scan(const std::string& what, Fn fn) {
  Progress progress(what, total_nodes_, "nodes");
  std::vector<int64_t> pairs;
  Adjacency loaded;
  std::vector<int64_t> around;  // a node's neighbours, without the marks and self-loops
  for (auto& c : chunks_) {
    // A chunk held in memory is sorted once and kept sorted; a spilled one is read and sorted
    // each pass.
    const Adjacency* adj = &c.held;
    if (spilling_) {
      if (auto s = Load(&c, &pairs); !s.ok()) return s;
      SortByNode(pairs, c, &loaded);
      adj = &loaded;
    } else if (c.held.start.empty()) {
      SortByNode(c.pairs, c, &c.held);
      std::vector<int64_t>().swap(c.pairs);
    }
    for (int64_t u = c.first; u < c.end; ++u) {
      const int64_t k = u - c.first;
      int64_t stored = 0;
      around.clear();
      for (int64_t i = adj->start[k]; i < adj->start[k + 1]; ++i) {
        const int64_t v = adj->neighbours[i] & ~kStored;
        stored += adj->neighbours[i] != v;
        if (v != u) around.push_back(v);
      }
      fn(u, around.data(), static_cast<int64_t>(around.size()), stored);
    }
    progress.Add(c.end - c.first);
  }
  return absl::OkStatus();
}

// Size-bounded label propagation: every node starts alone and joins the cluster most of its
// neighbours are in, while that cluster has room; ties keep the node where it is, then take the
// smaller cluster id, so the result depends only on the graph.
absl::Status StreamPartitioner::Cluster(int64_t max_size) {
  label_.resize(total_nodes_);
  for (int64_t u = 0; u < total_nodes_; ++u) label_[u] = static_cast<uint32_t>(u);
  // Cluster sizes are kept in 16 bits (a cluster of more nodes would leave METIS a coarse graph
  // of under total/65535 vertices, more than any budget this tool runs in needs).
  max_size = std::min<int64_t>(max_size, std::numeric_limits<uint16_t>::max());
  if (max_size <= 1) return absl::OkStatus();
  std::vector<uint16_t> size(total_nodes_, 1);
  std::vector<uint32_t> around;  // the clusters of a node's neighbours, sorted: runs are counts
  for (int pass = 0; pass < options_.cluster_passes; ++pass) {
    auto s = Scan(absl::StrCat("partitioning (stream): clustering, pass ", pass + 1, " of ", options_.cluster_passes),
                  [&](int64_t u, const int64_t* nb, int64_t n, int64_t) {
                    around.resize(static_cast<size_t>(n));
                    for (int64_t k = 0; k < n; ++k) around[k] = label_[nb[k]];
                    std::sort(around.begin(), around.end());
                    const uint32_t own = label_[u];
                    const auto mine = std::equal_range(around.begin(), around.end(), own);
                    uint32_t best = own;
                    int64_t best_count = mine.second - mine.first;
                    // (The choice depends on the counts alone, not on the order they come in.)
                    for (auto run = around.begin(); run != around.end();) {
                      const uint32_t l = *run;
                      const auto end = std::upper_bound(run, around.end(), l);
                      const int64_t c = end - run;
                      run = end;
                      if (l == own || size[l] + 1 > max_size) continue;
                      if (c > best_count || (c == best_count && best != own && l < best)) {
                        best = l;
                        best_count = c;
                      }
                    }
                    if (best != own) {
                      --size[own];
                      ++size[best];
                      label_[u] = best;
                    }
                  });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Renumbers the clusters 0 .. n-1 in order of their first node; returns n.
int64_t StreamPartitioner::NumberClusters() {
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> number(total_nodes_, kNone);
  uint32_t n = 0;
  for (int64_t u = 0; u < total_nodes_; ++u) {
    if (number[label_[u]] == kNone) number[label_[u]] = n++;
  }
  for (int64_t u = 0; u < total_nodes_; ++u) label_[u] = number[label_[u]];
  return n;
}

// METIS over the graph of clusters: one vertex per cluster weighted by its nodes of each type
// and its stored edges, one edge per pair of clusters weighted by the edges between them.
// Where clustering left far more clusters than the coarse graph should have (a sparse graph:
// nodes with few or no neighbours stay alone), merges neighbouring cluster numbers into groups of
// up to twice `max_size` nodes, at most about `target` of them, so that METIS's graph stays near
// its share of the budget (3.4M clusters of 5M nodes at one edge a node: 337 MB resident under a
// 150 MiB budget). Returns the clusters after it.
// Merged only past this many times the target: merging costs cut (Cora coarsened to a ninth
// of its nodes leaves 970 clusters; merged to 300 the cut is 2.8x METIS's, unmerged within 1.5x).
constexpr int64_t kMergeBeyond = 4;

int64_t StreamPartitioner::MergeClusters(int64_t num_clusters, int64_t target, int64_t max_size) {
  if (num_clusters <= kMergeBeyond * target) return num_clusters;
  std::vector<uint16_t> size(static_cast<size_t>(num_clusters), 0);  // (each at most max_size)
  for (int64_t u = 0; u < total_nodes_; ++u) ++size[label_[u]];
  std::vector<uint32_t> first;  // each group's first cluster
  int64_t fill = 2 * max_size;
  for (int64_t c = 0; c < num_clusters; ++c) {
    if (fill + size[c] > 2 * max_size) {
      first.push_back(static_cast<uint32_t>(c));
      fill = 0;
    }
    fill += size[c];
  }
  std::vector<uint16_t>().swap(size);
  for (int64_t u = 0; u < total_nodes_; ++u) {
    label_[u] = static_cast<uint32_t>(std::upper_bound(first.begin(), first.end(), label_[u]) - first.begin() - 1);
  }
  return static_cast<int64_t>(first.size());
}

absl::Status StreamPartitioner::PartitionClusters(int64_t target, int64_t max_size) {
  const int64_t nc = MergeClusters(NumberClusters(), target, max_size);
  if (nc > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("--method=stream: ", nc, " clusters; METIS allows 2^31-1"));
  }
  const int T = static_cast<int>(type_sizes_.size());
  KwayGraph g;
  g.ncon = T + 1;
  g.vwgt.assign(nc * g.ncon, 0);
  for (int64_t u = 0; u < total_nodes_; ++u) g.vwgt[int64_t{label_[u]} * g.ncon + TypeOf(u)] += 1;
  std::vector<int64_t> stored_edges(static_cast<size_t>(nc), 0);  // each cluster's
  g.ubvec.assign(g.ncon, static_cast<real_t>(std::min(options_.node_slack, options_.edge_slack)));
  // Held at once: up to 2 cap pairs, a batch of cap and their merge, 12 bytes each.
  CoarsePairs pairs(static_cast<size_t>(std::max<int64_t>(int64_t{1} << 16, options_.memory_bytes / 96)));
  auto s = Scan("partitioning (stream): coarse graph", [&](int64_t u, const int64_t* nb, int64_t n, int64_t stored) {
    stored_edges[label_[u]] += stored;
    for (int64_t k = 0; k < n; ++k) {
      // Each edge is held from both ends: count it from the smaller.
      if (u < nb[k]) pairs.Add(label_[u], label_[nb[k]]);
    }
  });
  if (!s.ok()) return s;
  for (int64_t c = 0; c < nc; ++c) {
    g.vwgt[c * g.ncon + T] = static_cast<idx_t>(std::min<int64_t>(stored_edges[c], std::numeric_limits<idx_t>::max()));
  }
  pairs.ToCsr(nc, &g.xadj, &g.adjncy, &g.adjwgt);
  Progress progress(absl::StrCat("partitioning (stream): METIS over ", nc, " clusters and ", g.adjncy.size() / 2,
                                 " pairs of them", pairs.truncated() ? " (the heaviest)" : ""),
                    nc, "clusters");
  auto where = KwayPartition(&g, options_.num_partitions, options_.seed);
  if (!where.ok()) return where.status();
  progress.Add(nc);
  // The loads refining starts from, summed over the clusters.
  type_load_.assign(type_sizes_.size(), std::vector<int64_t>(options_.num_partitions, 0));
  edge_load_.assign(options_.num_partitions, 0);
  for (int64_t c = 0; c < nc; ++c) {
    const int p = (*where)[c];
    for (int t = 0; t < T; ++t) type_load_[t][p] += g.vwgt[c * g.ncon + t];
    edge_load_[p] += stored_edges[c];
  }
  place_.resize(total_nodes_);
  for (int64_t u = 0; u < total_nodes_; ++u) place_[u] = static_cast<uint16_t>((*where)[label_[u]]);
  return absl::OkStatus();
}

// Moves `u` to the partition most of its neighbours are in when that has more of them than its
// own and the caps allow.
void StreamPartitioner::Refine(int64_t u, const int64_t* neighbours, int64_t n, int64_t deg) {
  const int P = options_.num_partitions;
  const int type = TypeOf(u);
  std::fill(counts_.begin(), counts_.end(), 0);
  for (int64_t k = 0; k < n; ++k) ++counts_[place_[neighbours[k]]];
  const int own = place_[u];
  int best = own;
  for (int p = 0; p < P; ++p) {
    if (p == own || counts_[p] <= counts_[best]) continue;
    if (type_load_[type][p] + 1 > type_cap_[type] || edge_load_[p] + deg > edge_cap_) continue;
    best = p;
  }
  if (best == own) return;
  --type_load_[type][own];
  edge_load_[own] -= deg;
  ++type_load_[type][best];
  edge_load_[best] += deg;
  place_[u] = static_cast<uint16_t>(best);
}

absl::StatusOr<Assignment> StreamPartitioner::Assign() {
  const int P = options_.num_partitions;
  if (P > std::numeric_limits<uint16_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("--method=stream takes up to 65535 partitions, not ", P));
  }
  if (total_nodes_ >= int64_t{std::numeric_limits<uint32_t>::max()}) {
    return absl::InvalidArgumentError(absl::StrCat("--method=stream takes fewer than 2^32-1 nodes; this graph has ",
                                                   total_nodes_, " (use --method=random)"));
  }
  if (P > total_nodes_ && P > 1) {
    return absl::InvalidArgumentError(absl::StrCat("--partitions=", P, " exceeds the ", total_nodes_, " nodes"));
  }
  for (auto& c : chunks_) {
    if (c.spill != nullptr && std::fflush(c.spill) != 0) {
      return absl::ResourceExhaustedError(absl::StrCat(c.path, ": write failed (--tmp_dir full?)"));
    }
  }
  // (The places are made once the clusters are partitioned: never beside the cluster sizes.)
  if (P <= 1 || total_nodes_ == 0) place_.assign(total_nodes_, 0);
  if (P > 1 && total_nodes_ > 0) {
    // The coarse graph METIS gets: about 200 bytes per vertex and 40 per adjacency entry, in
    // half the budget.
    int64_t target = options_.coarse_nodes;
    if (target <= 0) {
      const double per_node = 200.0 + 40.0 * 2.0 * total_edges_ / total_nodes_;
      target = static_cast<int64_t>(static_cast<double>(options_.memory_bytes) / 2 / per_node);
    }
    target = std::max<int64_t>(target, 64 * P);
    const int64_t max_size = std::max<int64_t>(1, (total_nodes_ + target - 1) / target);
    if (auto s = Cluster(max_size); !s.ok()) return s;
    if (auto s = PartitionClusters(target, max_size); !s.ok()) return s;
    std::vector<uint32_t>().swap(label_);
    counts_.assign(P, 0);
    // Caps: the slack over the mean, or what METIS already gave when that is more.
    type_cap_.clear();
    for (size_t t = 0; t < type_sizes_.size(); ++t) {
      const auto cap = static_cast<int64_t>(std::ceil(options_.node_slack * type_sizes_[t] / P));
      type_cap_.push_back(std::max(cap, *std::max_element(type_load_[t].begin(), type_load_[t].end())));
    }
    edge_cap_ = std::max(static_cast<int64_t>(std::ceil(options_.edge_slack * total_edges_ / P)),
                         *std::max_element(edge_load_.begin(), edge_load_.end()));
    for (int pass = 0; pass < options_.refine_passes; ++pass) {
      auto s = Scan(absl::StrCat("partitioning (stream): refining, pass ", pass + 1, " of ", options_.refine_passes),
                    [&](int64_t u, const int64_t* nb, int64_t n, int64_t stored) { Refine(u, nb, n, stored); });
      if (!s.ok()) return s;
    }
  }
  Assignment out;
  for (size_t t = 0; t < type_sizes_.size(); ++t) {
    out.emplace_back(place_.begin() + type_offset_[t], place_.begin() + type_offset_[t] + type_sizes_[t]);
  }
  std::vector<uint16_t>().swap(place_);
  return out;
}

absl::StatusOr<Assignment> StreamAssignment(const GraphData& g, bool rows_are_sources, StreamOptions options) {
  std::vector<int64_t> sizes;
  for (const auto& t : g.node_types) sizes.push_back(t.num_nodes);
  int64_t edges = 0;
  for (const auto& e : g.edge_types) edges += static_cast<int64_t>(e.src.size());
  StreamPartitioner sp(sizes, edges, options);
  for (const auto& e : g.edge_types) {
    const int s = FindType(g, e.src_type), d = FindType(g, e.dst_type);
    auto st = rows_are_sources ? sp.AddEdges(s, e.src.data(), d, e.dst.data(), e.src.size())
                               : sp.AddEdges(d, e.dst.data(), s, e.src.data(), e.src.size());
    if (!st.ok()) return st;
  }
  return sp.Assign();
}

}  // namespace graphstore
