#include "server/sampling/ppr_sampler.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "server/sampling/ablp.h"
#include "server/sampling/gather.h"
#include "server/sampling/cross_partition_draw.h"
#include "server/sampling/seeds.h"

namespace graphstore {
namespace {

// A node of any type as one key: the type in the top byte, the id below.
constexpr int kTypeShift = 56;
uint64_t NodeKey(int type, int64_t id) { return (static_cast<uint64_t>(type) << kTypeShift) | static_cast<uint64_t>(id); }
int KeyType(uint64_t key) { return static_cast<int>(key >> kTypeShift); }
int64_t KeyId(uint64_t key) { return static_cast<int64_t>(key & ((uint64_t{1} << kTypeShift) - 1)); }

struct PushState {
  double p = 0;
  double r = 0;
  // The round whose list holds this node (-1: none).
  int queued = -1;
};

}  // namespace

struct PprSampler::Scratch : SamplerScratch {
  LocalIds local_of;
  FrontierScratch frontier;
  // Per batch: every known node's neighbours (keys), as ranges of `neighbors`.
  std::unordered_map<uint64_t, std::pair<size_t, size_t>> adjacency;
  std::vector<uint64_t> neighbors;
  // Per batch, kept for their memory: the seeds, each seed's push state and its nodes to push
  // this round and next, the nodes whose neighbours a round fetches (per type), one fetch's
  // neighbours and offsets per edge type, and one seed's ranking.
  std::vector<uint64_t> seeds;
  std::vector<std::unordered_map<uint64_t, PushState>> state;
  std::vector<std::vector<uint64_t>> current, next;
  std::vector<std::vector<int64_t>> wanted;
  std::vector<std::vector<uint64_t>> fetched;
  std::vector<std::vector<size_t>> fetched_offsets;
  std::vector<std::pair<double, uint64_t>> ranked;
};

absl::StatusOr<std::unique_ptr<PprSampler>> PprSampler::Create(const Partition* partition, PprSamplerOptions options) {
  if (auto s = CheckGatherable(*partition, options.with_node_features, options.with_labels, false); !s.ok()) return s;
  if (partition->node_types().size() > 255) return absl::InvalidArgumentError("PPR supports at most 255 node types");
  return std::unique_ptr<PprSampler>(new PprSampler(partition, options));
}

std::unique_ptr<SamplerScratch> PprSampler::NewScratch() const { return std::make_unique<Scratch>(); }

void PprSampler::StartPush(const SampledSubgraph& out, Scratch* s) const {
  // Every hop-0 node is a seed of its own push.
  std::vector<uint64_t>& seeds = s->seeds;
  seeds.clear();
  for (size_t t = 0; t < out.nodes.size(); ++t) {
    for (int64_t id : out.nodes[t].ids) seeds.push_back(NodeKey(static_cast<int>(t), id));
  }
  const size_t num_seeds = seeds.size();
  if (s->state.size() < num_seeds) {
    s->state.resize(num_seeds);
    s->current.resize(num_seeds);
    s->next.resize(num_seeds);
  }
  for (size_t i = 0; i < num_seeds; ++i) {
    s->state[i].clear();
    s->state[i][seeds[i]] = PushState{0, 1, 0};
    s->current[i].assign(1, seeds[i]);
    s->next[i].clear();
  }
  for (size_t i = num_seeds; i < s->current.size(); ++i) {
    s->current[i].clear();
    s->next[i].clear();
  }
}

absl::Status PprSampler::FetchNeighbors(const SeedBatch& batch, Scratch* s) const {
  const int num_types = static_cast<int>(partition_->node_types().size());
  const int num_edge_types = static_cast<int>(partition_->edge_types().size());
  auto& wanted = s->wanted;
  wanted.resize(num_types);
  s->fetched.resize(num_edge_types);
  s->fetched_offsets.resize(num_edge_types);
  for (auto& w : wanted) w.clear();
  for (size_t i = 0; i < s->seeds.size(); ++i) {
    for (uint64_t k : s->current[i]) {
      auto [it, inserted] = s->adjacency.emplace(k, std::make_pair(size_t{0}, size_t{0}));
      if (inserted) wanted[KeyType(k)].push_back(KeyId(k));
    }
  }
  for (int t = 0; t < num_types; ++t) {
    const std::vector<int64_t>& ids = wanted[t];
    if (ids.empty()) continue;
    for (int e = 0; e < num_edge_types; ++e) {
      const EdgeTypeStore& et = partition_->edge_type(e);
      if (et.row_type != t) continue;
      DrawSpec spec;  // fanout -1: every neighbour, so the key does not matter
      if (batch.ablp != nullptr) spec.excluded = &batch.ablp->excluded[e];  // no walk over label edges
      auto drawn = DrawNeighbors(*partition_, options_.peers, options_.remote_cache, e, ids.data(), ids.size(), spec,
                                 batch, 0, &s->frontier);
      if (!drawn.ok()) return drawn.status();
      const NeighborDraw& d = **drawn;
      std::vector<uint64_t>& keys = s->fetched[e];
      std::vector<size_t>& offsets = s->fetched_offsets[e];
      keys.clear();
      offsets.assign(1, 0);
      for (size_t i = 0; i < ids.size(); ++i) offsets.push_back(offsets.back() + static_cast<size_t>(d.counts[i]));
      for (int64_t w : d.neighbors) keys.push_back(NodeKey(et.col_type, w));
    }
    // Each node's neighbours over every edge type from its type, in edge type order.
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t begin = s->neighbors.size();
      for (int e = 0; e < num_edge_types; ++e) {
        if (partition_->edge_type(e).row_type != t) continue;
        const auto& keys = s->fetched[e];
        const auto& offsets = s->fetched_offsets[e];
        s->neighbors.insert(s->neighbors.end(), keys.begin() + offsets[i], keys.begin() + offsets[i + 1]);
      }
      s->adjacency[NodeKey(t, ids[i])] = {begin, s->neighbors.size()};
    }
  }
  return absl::OkStatus();
}

void PprSampler::PushRound(int round, Scratch* s) const {
  const double alpha = options_.alpha;
  const double eps = options_.eps;
  for (size_t i = 0; i < s->seeds.size(); ++i) {
    auto& st = s->state[i];
    s->next[i].clear();
    for (uint64_t u : s->current[i]) {
      PushState& su = st[u];
      if (su.queued == round) su.queued = -1;
      const auto [begin, end] = s->adjacency.at(u);
      const size_t degree = end - begin;
      if (su.r < eps * static_cast<double>(std::max<size_t>(degree, 1))) continue;
      const double r = su.r;
      su.p += alpha * r;
      su.r = 0;
      if (degree == 0) continue;
      const double share = (1 - alpha) * r / static_cast<double>(degree);
      for (size_t k = begin; k < end; ++k) {
        const uint64_t v = s->neighbors[k];
        PushState& sv = st[v];
        sv.r += share;
        // A node below eps cannot qualify whatever its degree; others are checked next round,
        // once their neighbour lists are known.
        if (sv.r >= eps && sv.queued != round + 1) {
          sv.queued = round + 1;
          s->next[i].push_back(v);
        }
      }
    }
  }
  std::swap(s->current, s->next);
}

void PprSampler::KeepTop(Scratch* s, SampledSubgraph* out) const {
  // Per seed, the highest estimates (ties by type, then id), the seed left out.
  std::vector<std::pair<double, uint64_t>>& ranked = s->ranked;
  std::map<std::pair<int, int>, size_t> entry_of;
  for (size_t i = 0; i < s->seeds.size(); ++i) {
    ranked.clear();
    for (const auto& [k, st] : s->state[i]) {
      if (st.p > 0 && k != s->seeds[i]) ranked.emplace_back(st.p, k);
    }
    const size_t keep = std::min(ranked.size(), static_cast<size_t>(options_.max_nodes_per_seed));
    std::partial_sort(ranked.begin(), ranked.begin() + keep, ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    const int seed_type = KeyType(s->seeds[i]);
    const int64_t seed_local = s->local_of[seed_type].Find(KeyId(s->seeds[i]), out->nodes[seed_type].ids);
    for (size_t r = 0; r < keep; ++r) {
      const int t = KeyType(ranked[r].second);
      const int64_t id = KeyId(ranked[r].second);
      int32_t& local = s->local_of[t].Slot(id, out->nodes[t].ids);
      if (local < 0) {
        local = static_cast<int32_t>(out->nodes[t].ids.size());
        out->nodes[t].ids.push_back(id);
      }
      auto [it, inserted] = entry_of.emplace(std::make_pair(seed_type, t), out->ppr.size());
      if (inserted) {
        out->ppr.emplace_back();
        out->ppr.back().seed_type = seed_type;
        out->ppr.back().node_type = t;
      }
      SampledPpr& p = out->ppr[it->second];
      p.seed_index.push_back(seed_local);
      p.node_index.push_back(local);
      p.weight.push_back(static_cast<float>(ranked[r].first));
    }
  }
}

absl::Status PprSampler::Sample(const SeedBatch& batch, SamplerScratch* scratch, SampledSubgraph* out) const {
  auto* s = static_cast<Scratch*>(scratch);
  ScopedLocalIds reset(&s->local_of, out);
  struct ClearAdjacency {
    Scratch* s;
    ~ClearAdjacency() {
      s->adjacency.clear();
      s->neighbors.clear();
    }
  } clear{s};
  if (auto st = StartSubgraph(*partition_, batch, &s->local_of, out); !st.ok()) return st;
  for (auto& n : out->nodes) n.num_sampled_nodes.push_back(static_cast<int64_t>(n.ids.size()));
  StartPush(*out, s);
  for (int round = 0;; ++round) {
    bool any = false;
    for (size_t i = 0; i < s->seeds.size(); ++i) any |= !s->current[i].empty();
    if (!any) break;
    if (auto st = FetchNeighbors(batch, s); !st.ok()) return st;
    PushRound(round, s);
  }
  KeepTop(s, out);
  for (auto& n : out->nodes) n.num_sampled_nodes.push_back(static_cast<int64_t>(n.ids.size()) - n.num_sampled_nodes[0]);
  return GatherSubgraphData(*partition_, options_.with_node_features, options_.with_labels, batch.features,
                            options_.peers, options_.remote_cache, out);
}

}  // namespace graphstore
