#include "server/sampling/neighbor_sampler.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "server/sampling/ablp.h"
#include "server/sampling/draw.h"
#include "server/sampling/gather.h"
#include "server/sampling/node_times.h"
#include "server/util/prefetch.h"

namespace graphstore {
namespace {

// Whether any of a partition's node types, or edge types, stores times.
bool AnyStoresTimes(const std::vector<NodeTypeStore>& types) {
  return std::any_of(types.begin(), types.end(), [](const NodeTypeStore& t) { return t.has_times; });
}
bool AnyStoresTimes(const std::vector<EdgeTypeStore>& types) {
  return std::any_of(types.begin(), types.end(), [](const EdgeTypeStore& t) { return t.times_data() != nullptr; });
}

}  // namespace

absl::StatusOr<std::unique_ptr<NeighborSampler>> NeighborSampler::Create(const Partition* partition,
                                                                         NeighborSamplerOptions options) {
  std::unique_ptr<NeighborSampler> s(new NeighborSampler(partition, std::move(options)));
  if (auto st = s->Init(); !st.ok()) return st;
  return s;
}

absl::Status NeighborSampler::Init() {
  const NeighborSamplerOptions& o = options_;
  for (const auto& [name, list] : o.fanouts_by_type) {
    if (name.empty() || !partition_->FindEdgeType(name).ok()) {
      return absl::InvalidArgumentError(absl::StrCat("num_neighbors_by_type: edge type '", name, "' does not exist"));
    }
  }
  if (auto s = CheckGatherable(*partition_, o.with_node_features, o.with_labels, o.with_edge_features); !s.ok()) {
    return s;
  }
  if (o.with_node_times && !AnyStoresTimes(partition_->node_types())) {
    return absl::InvalidArgumentError(
        "with_node_times: no node type of the graph stores times (book/<type>.time.npy; "
        "graphstore-partition --node_times, graphstore-generate --times)");
  }
  // Every list has the same number of hops (the service checked it).
  num_hops_ = static_cast<int>(!o.fanouts.empty()           ? o.fanouts.size()
                               : !o.fanouts_by_type.empty() ? o.fanouts_by_type.begin()->second.size()
                                                            : 0);
  // Every option is checked before the weight indexes below are built (seconds on a large graph).
  if (o.temporal != TemporalStrategy::kNone) {
    if (!AnyStoresTimes(partition_->edge_types())) {
      return absl::InvalidArgumentError(
          "temporal_strategy: no edge type of the graph stores times (edges/<type>/time.npy; "
          "graphstore-partition --edge_times / --node_times, graphstore-generate --times)");
    }
    if (o.temporal == TemporalStrategy::kLast && o.replace) {
      return absl::InvalidArgumentError("temporal_strategy LAST takes the most recent neighbours once each; "
                                        "it does not draw with replacement (replace)");
    }
    if (o.temporal == TemporalStrategy::kLast && !o.weighted_edge_types.empty()) {
      return absl::InvalidArgumentError("temporal_strategy LAST takes the most recent neighbours; it does not "
                                        "draw by weight (weighted_edge_types)");
    }
  }
  if (auto s = ResolveWeighted(); !s.ok()) return s;
  BuildIndexes();
  for (const EdgeTypeStore& e : partition_->edge_types()) {
    auto it = o.fanouts_by_type.find(e.name);
    if (it != o.fanouts_by_type.end()) {
      fanout_.push_back(it->second);
    } else if (!o.fanouts.empty()) {
      fanout_.push_back(o.fanouts);
    } else {
      fanout_.emplace_back(num_hops_, 0);
    }
    edge_type_hash_.push_back(HashString(e.name));
  }
  return absl::OkStatus();
}

absl::Status NeighborSampler::ResolveWeighted() {
  const NeighborSamplerOptions& o = options_;
  weighted_.assign(partition_->edge_types().size(), false);
  for (const std::string& name : o.weighted_edge_types) {
    if (name == "*") {
      for (size_t e = 0; e < weighted_.size(); ++e) weighted_[e] = true;
      continue;
    }
    auto t = partition_->FindEdgeType(name);
    if (name.empty() || !t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("weighted_edge_types: edge type '", name, "' does not exist"));
    }
    weighted_[*t] = true;
  }
  for (size_t e = 0; e < weighted_.size(); ++e) {
    const EdgeTypeStore& et = partition_->edge_type(static_cast<int>(e));
    if (weighted_[e] && et.weights_data() == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("weighted_edge_types: edge type '", et.name,
                                                     "' stores no edge weights (weights.npy; graphstore-partition "
                                                     "--edge_weights)"));
    }
  }
  return absl::OkStatus();
}

void NeighborSampler::BuildIndexes() const {
  const NeighborSamplerOptions& o = options_;
  for (size_t e = 0; e < weighted_.size(); ++e) {
    if (!weighted_[e]) continue;
    const EdgeTypeStore& et = partition_->edge_type(static_cast<int>(e));
    // The indexes weighted draws use, built now rather than in the first batch's draw
    // (temporal draws cut rows, which only the block sums and trees serve).
    const int64_t rows = partition_->node_type(et.row_type).num_local;
    const bool long_rows =
        o.replace && et.weight_index->GetAlias(et.indptr_data(), rows, et.weights_data()).longest_row > kAliasMaxDegree;
    if (!o.replace || long_rows || (o.temporal != TemporalStrategy::kNone && et.times_data() != nullptr)) {
      et.weight_index->GetBlocks(et.num_local, et.weights_data());
      et.weight_index->GetTrees(et.indptr_data(), rows, et.weights_data());
    }
  }
  if (o.temporal != TemporalStrategy::kNone) {
    // The rows' time ranges temporal draws start from, built now as well.
    for (const EdgeTypeStore& e : partition_->edge_types()) {
      if (e.times_data() != nullptr) {
        e.time_rows->Get(e.indptr_data(), partition_->node_type(e.row_type).num_local, e.times_data());
      }
    }
  }
}

std::unique_ptr<SamplerScratch> NeighborSampler::NewScratch() const { return std::make_unique<Scratch>(); }

absl::Status NeighborSampler::Sample(const SeedBatch& batch, SamplerScratch* scratch, SampledSubgraph* out) const {
  auto* s = static_cast<Scratch*>(scratch);
  ScopedLocalIds reset(&s->local_of, out);
  if (auto st = SampleHops(batch, s, out); !st.ok()) return st;
  return GatherData(batch, out);
}

absl::Status NeighborSampler::GatherData(const SeedBatch& batch, SampledSubgraph* out) const {
  if (auto s = GatherNodeTimes(out); !s.ok()) return s;
  return GatherSubgraphData(*partition_, options_.with_node_features, options_.with_labels, batch.features,
                            options_.peers, options_.remote_cache, out);
}

absl::Status NeighborSampler::SampleHops(const SeedBatch& batch, Scratch* s, SampledSubgraph* out) const {
  const int num_types = static_cast<int>(partition_->node_types().size());
  const int num_edge_types = static_cast<int>(partition_->edge_types().size());
  if (auto st = StartSubgraph(*partition_, batch, &s->local_of, out, options_.dense_local_ids); !st.ok()) return st;
  const bool temporal = options_.temporal != TemporalStrategy::kNone;
  if (temporal) {
    if (auto st = PlaceSeedTimes(batch, s, out); !st.ok()) return st;
  }
  // Each type's nodes [begin, end) entered at the previous hop: the next hop's frontier.
  std::vector<size_t> begin(num_types, 0);
  std::vector<size_t> end(num_types);
  for (int t = 0; t < num_types; ++t) {
    end[t] = out->nodes[t].ids.size();
    out->nodes[t].num_sampled_nodes.push_back(static_cast<int64_t>(end[t]));
  }
  // Edge ids asked for are sent even for a type with no sampled edge (an empty tensor).
  for (SampledEdges& edges : out->edges) edges.with_eids = options_.with_edge_ids;
  for (int hop = 0; hop < num_hops_; ++hop) {
    s->hop_start = end;
    for (int e = 0; e < num_edge_types; ++e) {
      const int fanout = fanout_[e][hop];
      SampledEdges& edges = out->edges[e];
      const size_t before = edges.rows.size();
      if (fanout != 0) {
        const int row_type = partition_->edge_type(e).row_type;
        const uint64_t hop_key = HopKey(batch.seed, batch.epoch, batch.batch_index, hop, edge_type_hash_[e]);
        if (auto st = ExpandHop(e, fanout, hop_key, batch, hop, begin[row_type], end[row_type],
                                /*add_nodes=*/true, s, out);
            !st.ok()) {
          return st;
        }
      }
      edges.num_sampled_edges.push_back(static_cast<int64_t>(edges.rows.size() - before));
    }
    for (int t = 0; t < num_types; ++t) {
      const size_t now = out->nodes[t].ids.size();
      out->nodes[t].num_sampled_nodes.push_back(static_cast<int64_t>(now - end[t]));
      begin[t] = end[t];
      end[t] = now;
    }
  }
  return absl::OkStatus();
}

absl::Status NeighborSampler::GatherNodeTimes(SampledSubgraph* out) const {
  if (!options_.with_node_times) return absl::OkStatus();
  out->node_times = true;
  for (size_t t = 0; t < out->nodes.size(); ++t) {
    SampledNodes& n = out->nodes[t];
    if (!partition_->node_type(static_cast<int>(t)).has_times) continue;
    n.times.resize(n.ids.size());
    if (auto s = LookUpNodeTimes(*partition_, static_cast<int>(t), n.ids.data(), n.ids.size(), options_.peers,
                                 options_.remote_cache, n.times.data());
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status NeighborSampler::PlaceSeedTimes(const SeedBatch& batch, Scratch* s, SampledSubgraph* out) const {
  for (SampledNodes& n : out->nodes) n.sampled_times.assign(n.ids.size(), INT64_MAX);
  const NodeTypeStore& seed_type = partition_->node_type(batch.node_type);
  if (batch.times == nullptr && !seed_type.has_times) {
    return absl::FailedPreconditionError(absl::StrCat("temporal sampling: the seeds have no times, and node type '",
                                                      seed_type.name, "' stores none (book/", seed_type.name,
                                                      ".time.npy); register seeds with nodes.times"));
  }
  out->temporal = true;
  std::vector<int64_t>& seed_times = out->nodes[batch.node_type].seed_times;
  if (batch.times != nullptr) {
    seed_times.assign(batch.times, batch.times + batch.size);
  } else {
    // The seeds' own times; those of seeds other partitions own come from their owners.
    seed_times.resize(batch.size);
    if (auto st = LookUpNodeTimes(*partition_, batch.node_type, batch.ids, batch.size, options_.peers,
                                  options_.remote_cache, seed_times.data());
        !st.ok()) {
      return st;
    }
  }
  auto lower = [&](int type, int64_t id, int64_t t) {
    int64_t& slot = out->nodes[type].sampled_times[s->local_of[type].Find(id, out->nodes[type].ids)];
    slot = std::min(slot, t);
  };
  for (size_t i = 0; i < batch.size; ++i) lower(batch.node_type, batch.ids[i], seed_times[i]);
  if (batch.ablp != nullptr) {
    // Label nodes take their anchor's time, so nothing after the anchor's time is sampled
    // around them either.
    const AblpBatch& a = *batch.ablp;
    for (size_t i = 0; i < batch.size; ++i) {
      for (int64_t k = a.pos_offsets[i]; k < a.pos_offsets[i + 1]; ++k) {
        lower(a.label_type, a.positives[k], seed_times[i]);
      }
      for (int64_t k = a.neg_offsets[i]; k < a.neg_offsets[i + 1]; ++k) {
        lower(a.label_type, a.negatives[k], seed_times[i]);
      }
    }
  }
  return absl::OkStatus();
}

DrawSpec NeighborSampler::SpecFor(int edge_type, int fanout, uint64_t hop_key, const SeedBatch& coordinates,
                                   size_t begin, SampledSubgraph* out) const {
  const EdgeTypeStore& et = partition_->edge_type(edge_type);
  DrawSpec spec;
  spec.fanout = fanout;
  spec.replace = options_.replace;
  spec.weighted = weighted_[edge_type];
  spec.with_edge_ids = options_.with_edge_ids;
  spec.with_edge_features = options_.with_edge_features;
  spec.hop_key = hop_key;
  if (coordinates.ablp != nullptr) spec.excluded = &coordinates.ablp->excluded[edge_type];
  if (options_.temporal != TemporalStrategy::kNone && et.times_data() != nullptr) {
    spec.temporal = options_.temporal;
    spec.times = out->nodes[et.row_type].sampled_times.data() + begin;
  }
  return spec;
}

namespace {

// A node met again in the hop that added it (local ids from `hop_start` on) keeps the earliest
// time that reached it. Taken over the hop's edges (from `first_edge` on) once they are all in:
// each node's time is then fetched ahead from its local id, where in the placing loop it waited
// for the node's map entry first.
void KeepEarliestTimes(const std::vector<int32_t>& src, const std::vector<int32_t>& dst, size_t first_edge,
                       size_t hop_start, const int64_t* row_times, int64_t* times) {
  constexpr size_t kAhead = kPrefetchAhead;
  const size_t num_edges = dst.size();
  for (size_t k = first_edge; k < num_edges; ++k) {
    if (k + kAhead < num_edges) PrefetchRead(times + dst[k + kAhead]);
    const size_t local = static_cast<size_t>(dst[k]);
    if (local >= hop_start) times[local] = std::min(times[local], row_times[src[k]]);
  }
}

}  // namespace

absl::Status NeighborSampler::ExpandHop(int edge_type, int fanout, uint64_t hop_key, const SeedBatch& coordinates,
                                        int hop, size_t begin, size_t end, bool add_nodes, Scratch* s,
                                        SampledSubgraph* out) const {
  const EdgeTypeStore& et = partition_->edge_type(edge_type);
  constexpr size_t kAhead = kPrefetchAhead;
  const size_t n = end - begin;
  if (n == 0) return absl::OkStatus();

  const DrawSpec spec = SpecFor(edge_type, fanout, hop_key, coordinates, begin, out);
  const bool temporal = options_.temporal != TemporalStrategy::kNone;
  auto drawn = DrawNeighbors(*partition_, options_.peers, options_.remote_cache, edge_type,
                             out->nodes[et.row_type].ids.data() + begin, n, spec, coordinates, hop, &s->frontier);
  if (!drawn.ok()) return drawn.status();
  const NeighborDraw& d = **drawn;

  // Map neighbours to local ids (appending new nodes in the order they are met) and emit the
  // edges.
  const size_t m = d.neighbors.size();
  std::vector<int64_t>& col_ids = out->nodes[et.col_type].ids;
  LocalIdMap& col_map = s->local_of[et.col_type];
  SampledEdges& edges = out->edges[edge_type];
  const bool rows_are_sources = partition_->rows_are_sources();
  std::vector<int32_t>& src = rows_are_sources ? edges.rows : edges.cols;
  std::vector<int32_t>& dst = rows_are_sources ? edges.cols : edges.rows;
  const bool features = options_.with_edge_features && et.feature_dim > 0;
  const size_t row_bytes = features ? static_cast<size_t>(et.feature_dim) * DtypeSize(et.feature_dtype) : 0;
  if (features) {
    edges.feature_dim = et.feature_dim;
    edges.feature_dtype = et.feature_dtype;
  }
  src.reserve(src.size() + m);
  dst.reserve(dst.size() + m);
  if (options_.with_edge_ids) edges.eids.reserve(edges.eids.size() + m);
  // Temporal: the time of each node (the column type's grows with the new nodes, room made
  // first so that the row type's, possibly the same vector, stays in place).
  std::vector<int64_t>* col_times = temporal ? &out->nodes[et.col_type].sampled_times : nullptr;
  if (temporal) col_times->reserve(col_times->size() + m);
  const int64_t* row_times = temporal ? out->nodes[et.row_type].sampled_times.data() : nullptr;
  const size_t hop_start = temporal ? s->hop_start[et.col_type] : 0;
  const size_t first_edge = dst.size();
  size_t j = 0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t u = static_cast<int32_t>(begin + i);
    for (int64_t k = 0; k < d.counts[i]; ++k, ++j) {
      if (j + kAhead < m) col_map.Prefetch(d.neighbors[j + kAhead]);
      const int64_t w = d.neighbors[j];
      int32_t local = -1;
      if (!add_nodes) {
        local = col_map.Find(w, col_ids);
        if (local < 0) continue;
      } else {
        int32_t& slot = col_map.Slot(w, col_ids);
        if (slot < 0) {
          slot = static_cast<int32_t>(col_ids.size());
          col_ids.push_back(w);
          if (temporal) col_times->push_back(row_times[u]);
        }
        local = slot;
      }
      src.push_back(u);
      dst.push_back(local);
      if (options_.with_edge_ids) edges.eids.push_back(d.edge_ids[j]);
      if (features) {
        edges.features.insert(edges.features.end(), d.edge_features.begin() + j * row_bytes,
                              d.edge_features.begin() + (j + 1) * row_bytes);
      }
    }
  }
  if (temporal) KeepEarliestTimes(src, dst, first_edge, hop_start, row_times, col_times->data());
  return absl::OkStatus();
}

}  // namespace graphstore
