#include "server/ppr_sampler.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "server/ablp.h"
#include "server/neighbor_sampler.h"

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

class PprScratch : public SamplerScratch {
 public:
  std::vector<std::vector<int32_t>> local_of;
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

}  // namespace

absl::StatusOr<std::unique_ptr<PprSampler>> PprSampler::Create(const Partition* partition, PprSamplerOptions options) {
  if (!(options.alpha > 0 && options.alpha < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("ppr.alpha must be in (0, 1), got ", options.alpha));
  }
  if (!(options.eps >= 1e-7)) {
    return absl::InvalidArgumentError(absl::StrCat("ppr.eps must be >= 1e-7, got ", options.eps));
  }
  if (options.max_nodes_per_seed < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ppr.max_nodes_per_seed must be >= 1, got ", options.max_nodes_per_seed));
  }
  bool any_features = false, any_labels = false;
  for (const auto& n : partition->node_types()) {
    any_features |= n.feature_dim > 0;
    any_labels |= n.labels.is_open();
  }
  if (options.with_node_features && !any_features) {
    return absl::InvalidArgumentError("with_node_features: the dataset has no node features");
  }
  if (options.with_labels && !any_labels) return absl::InvalidArgumentError("with_labels: the dataset has no labels");
  if (partition->node_types().size() > 255) return absl::InvalidArgumentError("PPR supports at most 255 node types");
  return std::unique_ptr<PprSampler>(new PprSampler(partition, options));
}

std::unique_ptr<SamplerScratch> PprSampler::NewScratch() const {
  auto s = std::make_unique<PprScratch>();
  s->local_of.resize(partition_->node_types().size());
  return s;
}

absl::Status PprSampler::Sample(const SeedBatch& batch, SamplerScratch* scratch, SampledSubgraph* out) const {
  auto* s = static_cast<PprScratch*>(scratch);
  const int num_types = static_cast<int>(partition_->node_types().size());
  const int num_edge_types = static_cast<int>(partition_->edge_types().size());
  struct Reset {
    PprScratch* s;
    SampledSubgraph* out;
    ~Reset() {
      for (size_t t = 0; t < out->nodes.size() && t < s->local_of.size(); ++t) {
        if (s->local_of[t].empty()) continue;
        for (int64_t id : out->nodes[t].ids) s->local_of[t][id] = -1;
      }
      s->adjacency.clear();
      s->neighbors.clear();
    }
  } reset{s, out};
  if (auto st = StartSubgraph(*partition_, batch, &s->local_of, out); !st.ok()) return st;

  // Every hop-0 node is a seed of its own push.
  std::vector<uint64_t>& seeds = s->seeds;
  seeds.clear();
  for (int t = 0; t < num_types; ++t) {
    for (int64_t id : out->nodes[t].ids) seeds.push_back(NodeKey(t, id));
    out->nodes[t].num_sampled_nodes.push_back(static_cast<int64_t>(out->nodes[t].ids.size()));
  }
  const size_t num_seeds = seeds.size();
  auto& state = s->state;
  auto& current = s->current;
  auto& next = s->next;
  if (state.size() < num_seeds) {
    state.resize(num_seeds);
    current.resize(num_seeds);
    next.resize(num_seeds);
  }
  for (size_t i = 0; i < num_seeds; ++i) {
    state[i].clear();
    state[i][seeds[i]] = PushState{0, 1, 0};
    current[i].assign(1, seeds[i]);
    next[i].clear();
  }
  for (size_t i = num_seeds; i < current.size(); ++i) {
    current[i].clear();
    next[i].clear();
  }

  // Fetches the neighbour lists of `keys` (unknown ones), per type along every edge type whose
  // rows have that type, concatenated in edge type order.
  auto& wanted = s->wanted;
  wanted.resize(num_types);
  s->fetched.resize(num_edge_types);
  s->fetched_offsets.resize(num_edge_types);
  auto fetch = [&](const std::vector<std::vector<uint64_t>>& lists) -> absl::Status {
    for (auto& w : wanted) w.clear();
    for (size_t i = 0; i < num_seeds; ++i) {
      for (uint64_t k : lists[i]) {
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
        auto drawn = DrawNeighbors(*partition_, options_.peers, e, ids.data(), ids.size(), spec, batch, 0, &s->frontier);
        if (!drawn.ok()) return drawn.status();
        const NeighborDraw& d = **drawn;
        std::vector<uint64_t>& keys = s->fetched[e];
        std::vector<size_t>& offsets = s->fetched_offsets[e];
        keys.clear();
        offsets.assign(1, 0);
        for (size_t i = 0; i < ids.size(); ++i) offsets.push_back(offsets.back() + static_cast<size_t>(d.counts[i]));
        for (int64_t w : d.neighbors) keys.push_back(NodeKey(et.col_type, w));
      }
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
  };

  const double alpha = options_.alpha;
  const double eps = options_.eps;
  for (int round = 0;; ++round) {
    bool any = false;
    for (size_t i = 0; i < num_seeds; ++i) any |= !current[i].empty();
    if (!any) break;
    if (auto st = fetch(current); !st.ok()) return st;
    for (size_t i = 0; i < num_seeds; ++i) {
      auto& st = state[i];
      next[i].clear();
      for (uint64_t u : current[i]) {
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
            next[i].push_back(v);
          }
        }
      }
    }
    std::swap(current, next);
  }

  // Per seed, the highest estimates (ties by type, then id), the seed left out.
  std::vector<std::pair<double, uint64_t>>& ranked = s->ranked;
  std::map<std::pair<int, int>, size_t> entry_of;
  for (size_t i = 0; i < num_seeds; ++i) {
    ranked.clear();
    for (const auto& [k, st] : state[i]) {
      if (st.p > 0 && k != seeds[i]) ranked.emplace_back(st.p, k);
    }
    const size_t keep = std::min(ranked.size(), static_cast<size_t>(options_.max_nodes_per_seed));
    std::partial_sort(ranked.begin(), ranked.begin() + keep, ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    const int seed_type = KeyType(seeds[i]);
    const int64_t seed_local = s->local_of[seed_type][KeyId(seeds[i])];
    for (size_t r = 0; r < keep; ++r) {
      const int t = KeyType(ranked[r].second);
      const int64_t id = KeyId(ranked[r].second);
      int32_t& local = s->local_of[t][id];
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
  for (int t = 0; t < num_types; ++t) {
    SampledNodes& n = out->nodes[t];
    n.num_sampled_nodes.push_back(static_cast<int64_t>(n.ids.size()) - n.num_sampled_nodes[0]);
  }
  return GatherSubgraphData(*partition_, options_.with_node_features, options_.with_labels, options_.peers,
                            options_.remote_cache, out);
}

}  // namespace graphstore
