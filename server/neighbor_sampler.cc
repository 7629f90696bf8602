#include "server/neighbor_sampler.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "scheduler/draw.h"
#include "server/ablp.h"

namespace graphstore {
namespace {

// Per-worker memory: a dense global -> local map per node type (-1 = not in the subgraph),
// reset after each batch by walking the ids the batch added, and the staging of each hop.
class NeighborScratch : public SamplerScratch {
 public:
  std::vector<std::vector<int32_t>> local_of;
  FrontierScratch frontier;
};

// The call of `owner` in `calls`, created on first use.
template <typename Call>
Call& CallFor(int owner, std::vector<int32_t>* call_of, std::vector<Call>* calls) {
  int32_t& c = (*call_of)[owner];
  if (c < 0) {
    c = static_cast<int32_t>(calls->size());
    calls->emplace_back();
    calls->back().partition = owner;
  }
  return (*calls)[c];
}

absl::Status NeedsCluster(int64_t gid, const NodeTypeStore& t) {
  return absl::FailedPreconditionError(absl::StrCat(
      "node ", gid, " of type '", t.name, "' is owned by partition ", t.Owner(gid),
      "; sampling it needs that partition's server (start graphstored with --cluster)"));
}

// Resets the touched entries of the dense maps however Sample returns.
class MapReset {
 public:
  MapReset(NeighborScratch* s, const SampledSubgraph* out) : s_(s), out_(out) {}
  ~MapReset() {
    for (size_t t = 0; t < out_->nodes.size(); ++t) {
      auto& map = s_->local_of[t];
      if (map.empty()) continue;
      for (int64_t id : out_->nodes[t].ids) map[id] = -1;
    }
  }

 private:
  NeighborScratch* s_;
  const SampledSubgraph* out_;
};

// Adds a link-prediction batch's label nodes as seeds (positives, then negatives, after the
// anchors) and records the labels as local indices, padded with -1.
template <typename AddSeed>
absl::Status AddLabelSeeds(const Partition& partition, const SeedBatch& batch, AddSeed add_seed,
                           SampledSubgraph* out) {
  const AblpBatch& a = *batch.ablp;
  const size_t n = batch.size;
  if (a.anchor_type != batch.node_type || a.pos_offsets.size() != n + 1 || a.neg_offsets.size() != n + 1) {
    return absl::InternalError("link-prediction labels do not match the batch's anchors");
  }
  const NodeTypeStore& label_type = partition.node_type(a.label_type);
  for (const auto* list : {&a.positives, &a.negatives}) {
    for (int64_t id : *list) {
      if (id < 0 || id >= label_type.num_nodes) {
        return absl::InternalError(absl::StrCat("label node ", id, " is not a '", label_type.name, "' node id"));
      }
    }
  }
  SampledAblp& out_labels = out->ablp;
  out_labels.present = true;
  out_labels.supervision_edge_type = a.supervision_edge_type;
  for (size_t i = 0; i < n; ++i) out_labels.anchors.push_back(add_seed(a.anchor_type, batch.ids[i]));
  auto matrix = [&](const std::vector<int64_t>& offsets, const std::vector<int64_t>& ids, std::vector<int64_t>* m,
                    int64_t* width) {
    *width = 0;
    for (size_t i = 0; i < n; ++i) *width = std::max(*width, offsets[i + 1] - offsets[i]);
    m->assign(n * static_cast<size_t>(*width), -1);
    for (size_t i = 0; i < n; ++i) {
      for (int64_t k = offsets[i]; k < offsets[i + 1]; ++k) {
        (*m)[i * *width + (k - offsets[i])] = add_seed(a.label_type, ids[k]);
      }
    }
  };
  matrix(a.pos_offsets, a.positives, &out_labels.positive, &out_labels.max_positive);
  matrix(a.neg_offsets, a.negatives, &out_labels.negative, &out_labels.max_negative);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NeighborSampler>> NeighborSampler::Create(
    const Partition* partition, NeighborSamplerOptions options) {
  const int num_edge_types = static_cast<int>(partition->edge_types().size());
  int hops = -1;
  auto check_list = [&](const std::vector<int>& list, const std::string& field) -> absl::Status {
    if (hops >= 0 && static_cast<int>(list.size()) != hops) {
      return absl::InvalidArgumentError(absl::StrCat(field, " has ", list.size(),
                                                     " hops but other fanouts have ", hops));
    }
    hops = static_cast<int>(list.size());
    for (int f : list) {
      if (f < -1) return absl::InvalidArgumentError(absl::StrCat(field, ": fanout ", f, " is below -1"));
    }
    return absl::OkStatus();
  };
  if (!options.fanouts.empty()) {
    if (auto s = check_list(options.fanouts, "num_neighbors"); !s.ok()) return s;
  }
  for (const auto& [name, list] : options.fanouts_by_type) {
    auto et = partition->FindEdgeType(name);
    if (!et.ok() || name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("num_neighbors_by_type: edge type '", name,
                                                     "' does not exist"));
    }
    if (auto s = check_list(list, absl::StrCat("num_neighbors_by_type['", name, "']")); !s.ok()) return s;
  }
  if (hops < 0) hops = 0;
  if (hops > 16) return absl::InvalidArgumentError("num_neighbors: at most 16 hops");
  bool any_features = false;
  bool any_labels = false;
  for (const auto& n : partition->node_types()) {
    any_features |= n.feature_dim > 0;
    any_labels |= n.labels.is_open();
  }
  if (options.with_node_features && !any_features) {
    return absl::InvalidArgumentError("with_node_features: the dataset has no node features");
  }
  if (options.with_labels && !any_labels) {
    return absl::InvalidArgumentError("with_labels: the dataset has no labels");
  }
  bool any_edge_features = false;
  for (const auto& e : partition->edge_types()) any_edge_features |= e.feature_dim > 0;
  if (options.with_edge_features && !any_edge_features) {
    return absl::InvalidArgumentError("with_edge_features: the dataset has no edge features");
  }

  std::unique_ptr<NeighborSampler> s(new NeighborSampler(partition, std::move(options)));
  s->num_hops_ = hops;
  s->fanout_.resize(num_edge_types);
  for (int e = 0; e < num_edge_types; ++e) {
    const std::string& name = partition->edge_type(e).name;
    auto it = s->options_.fanouts_by_type.find(name);
    if (it != s->options_.fanouts_by_type.end()) {
      s->fanout_[e] = it->second;
    } else if (!s->options_.fanouts.empty()) {
      s->fanout_[e] = s->options_.fanouts;
    } else {
      s->fanout_[e].assign(hops, 0);
    }
    s->edge_type_hash_.push_back(HashString(name));
  }
  return s;
}

absl::Status PlaceSeeds(const Partition& partition, const SeedBatch& batch,
                        std::vector<std::vector<int32_t>>* local_of, SampledSubgraph* out) {
  const int pid = partition.partition_id();
  const NodeTypeStore& seed_type = partition.node_type(batch.node_type);
  SampledNodes& seeds = out->nodes[batch.node_type];
  seeds.batch.assign(batch.ids, batch.ids + batch.size);
  seeds.ids.reserve(batch.size);
  auto add_seed = [&](int type, int64_t id) {
    int32_t& local = (*local_of)[type][id];
    if (local < 0) {
      local = static_cast<int32_t>(out->nodes[type].ids.size());
      out->nodes[type].ids.push_back(id);
    }
    return static_cast<int64_t>(local);
  };
  for (size_t i = 0; i < batch.size; ++i) {
    const int64_t id = batch.ids[i];
    if (id < 0 || id >= seed_type.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat("seed ", id, " is not a '", seed_type.name,
                                                     "' node id (0 <= id < ", seed_type.num_nodes, ")"));
    }
    if (seed_type.Owner(id) != pid) {
      return absl::InvalidArgumentError(absl::StrCat("seed ", id, " is owned by partition ",
                                                     seed_type.Owner(id), ", not ", pid));
    }
    add_seed(batch.node_type, id);
  }
  if (batch.ablp != nullptr) return AddLabelSeeds(partition, batch, add_seed, out);
  return absl::OkStatus();
}

absl::Status StartSubgraph(const Partition& partition, const SeedBatch& batch,
                           std::vector<std::vector<int32_t>>* local_of, SampledSubgraph* out) {
  const int num_types = static_cast<int>(partition.node_types().size());
  if (batch.node_type < 0 || batch.node_type >= num_types) {
    return absl::InvalidArgumentError(absl::StrCat("node type index ", batch.node_type, " is out of range"));
  }
  out->Reset(num_types, partition.edge_types().size());
  local_of->resize(num_types);
  for (int t = 0; t < num_types; ++t) {
    if ((*local_of)[t].empty()) (*local_of)[t].assign(partition.node_type(t).num_nodes, -1);
  }
  return PlaceSeeds(partition, batch, local_of, out);
}

std::unique_ptr<SamplerScratch> NeighborSampler::NewScratch() const {
  auto s = std::make_unique<NeighborScratch>();
  s->local_of.resize(partition_->node_types().size());
  return s;
}

absl::Status NeighborSampler::Sample(const SeedBatch& batch, SamplerScratch* scratch,
                                     SampledSubgraph* out) const {
  auto* s = static_cast<NeighborScratch*>(scratch);
  const int num_types = static_cast<int>(partition_->node_types().size());
  const int num_edge_types = static_cast<int>(partition_->edge_types().size());
  MapReset reset(s, out);
  if (auto st = StartSubgraph(*partition_, batch, &s->local_of, out); !st.ok()) return st;
  std::vector<size_t> begin(num_types, 0);
  std::vector<size_t> end(num_types);
  for (int t = 0; t < num_types; ++t) {
    end[t] = out->nodes[t].ids.size();
    out->nodes[t].num_sampled_nodes.push_back(static_cast<int64_t>(end[t]));
  }

  for (int hop = 0; hop < num_hops_; ++hop) {
    for (int e = 0; e < num_edge_types; ++e) {
      const int fanout = fanout_[e][hop];
      SampledEdges& edges = out->edges[e];
      const size_t before = edges.rows.size();
      if (fanout != 0) {
        const EdgeTypeStore& et = partition_->edge_type(e);
        const uint64_t hop_key =
            HopKey(batch.seed, batch.epoch, batch.batch_index, hop, edge_type_hash_[e]);
        if (auto st = ExpandHop(e, fanout, hop_key, batch, hop, begin[et.row_type], end[et.row_type],
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

  if (options_.induced) {
    // Every stored edge between two sampled nodes, each type's rows in local id order.
    for (int e = 0; e < num_edge_types; ++e) {
      SampledEdges& edges = out->edges[e];
      edges.rows.clear();
      edges.cols.clear();
      edges.eids.clear();
      edges.features.clear();
      edges.num_sampled_edges.clear();
      const EdgeTypeStore& et = partition_->edge_type(e);
      if (auto st = ExpandHop(e, -1, 0, batch, num_hops_, 0, out->nodes[et.row_type].ids.size(),
                              /*add_nodes=*/false, s, out);
          !st.ok()) {
        return st;
      }
      edges.num_sampled_edges.push_back(static_cast<int64_t>(edges.rows.size()));
    }
  }

  return GatherSubgraphData(*partition_, options_.with_node_features, options_.with_labels, options_.peers,
                            options_.remote_cache, out);
}

absl::Status GatherSubgraphData(const Partition& partition, bool features, bool labels, PeerSampling* peers,
                                RemoteCache* cache, SampledSubgraph* out) {
  const int num_types = static_cast<int>(partition.node_types().size());
  std::vector<char*> targets(num_types, nullptr);
  if (out->feature_target) {
    std::vector<size_t> bytes(num_types, 0);
    for (int t = 0; t < num_types; ++t) {
      const NodeTypeStore& nt = partition.node_type(t);
      if (features && nt.feature_dim > 0) {
        bytes[t] = out->nodes[t].ids.size() * static_cast<size_t>(nt.feature_dim) * DtypeSize(nt.feature_dtype);
      }
    }
    auto placed = out->feature_target(*out, bytes);
    if (!placed.ok()) return placed.status();
    if (placed->size() != targets.size()) return absl::InternalError("feature_target returned a wrong count");
    targets = *std::move(placed);
  }
  for (int t = 0; t < num_types; ++t) {
    if (auto st = GatherNodeData(partition, t, features, labels, targets[t], &out->nodes[t], peers, cache);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

void DrawOwnedNeighbors(const Partition& partition, int edge_type, const int64_t* ids, size_t n,
                        const DrawSpec& spec, NeighborDraw* out) {
  // Three passes, each issuing the next pass's random loads ahead of time: (1) row extents from
  // indptr, (2) the draws, gathering CSR positions, (3) the neighbour ids from indices.
  constexpr size_t kAhead = 32;
  const EdgeTypeStore& et = partition.edge_type(edge_type);
  const NodeTypeStore& rows = partition.node_type(et.row_type);
  const int64_t* indptr = et.indptr_data();
  const int64_t* indices = et.indices_data();
  const int64_t* owner_row = rows.local.is_open() ? rows.local.data<int64_t>() : nullptr;
  const int fanout = spec.fanout;
  const bool replace = spec.replace;
  const auto* excluded = spec.excluded != nullptr && !spec.excluded->empty() ? spec.excluded : nullptr;

  out->base.resize(n);
  out->degree.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (owner_row != nullptr && i + 2 * kAhead < n) __builtin_prefetch(owner_row + ids[i + 2 * kAhead]);
    if (i + kAhead < n) __builtin_prefetch(indptr + rows.OwnerRow(ids[i + kAhead]));
    const int64_t row = rows.OwnerRow(ids[i]);
    out->base[i] = indptr[row];
    out->degree[i] = indptr[row + 1] - out->base[i];
  }

  const bool draw_all = fanout < 0;
  if (!draw_all && static_cast<int>(out->positions.size()) < fanout) out->positions.resize(fanout);
  out->picked.clear();
  out->counts.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t base = out->base[i];
    int64_t degree = out->degree[i];
    // A node with excluded neighbours draws among the positions of the others.
    const int64_t* candidates = nullptr;
    if (excluded != nullptr) {
      auto lo = std::lower_bound(excluded->begin(), excluded->end(), std::make_pair(ids[i], INT64_MIN));
      if (lo != excluded->end() && lo->first == ids[i]) {
        auto hi = lo;
        while (hi != excluded->end() && hi->first == ids[i]) ++hi;
        out->candidates.clear();
        for (int64_t k = 0; k < degree; ++k) {
          const int64_t w = indices[base + k];
          bool skip = false;
          for (auto it = lo; it != hi; ++it) skip |= it->second == w;
          if (!skip) out->candidates.push_back(k);
        }
        candidates = out->candidates.data();
        degree = static_cast<int64_t>(out->candidates.size());
      }
    }
    auto position = [&](int64_t k) { return base + (candidates != nullptr ? candidates[k] : k); };
    if (draw_all || (!replace && degree <= fanout)) {
      for (int64_t k = 0; k < degree; ++k) out->picked.push_back(position(k));
      out->counts[i] = degree;
    } else {
      const int64_t c = DrawNeighborPositions(HashCombine(spec.hop_key, static_cast<uint64_t>(ids[i])), degree,
                                              fanout, replace, out->positions.data());
      for (int64_t k = 0; k < c; ++k) out->picked.push_back(position(out->positions[k]));
      out->counts[i] = c;
    }
  }

  const size_t m = out->picked.size();
  out->neighbors.resize(m);
  out->edge_ids.resize(spec.with_edge_ids ? m : 0);
  for (size_t j = 0; j < m; ++j) {
    if (j + kAhead < m) __builtin_prefetch(indices + out->picked[j + kAhead]);
    out->neighbors[j] = indices[out->picked[j]];
    if (spec.with_edge_ids) out->edge_ids[j] = et.EdgeId(out->picked[j]);
  }
  out->edge_features.clear();
  if (spec.with_edge_features && et.feature_dim > 0) {
    const size_t row_bytes = static_cast<size_t>(et.feature_dim) * DtypeSize(et.feature_dtype);
    const char* src = static_cast<const char*>(et.features.raw());
    out->edge_features.resize(m * row_bytes);
    for (size_t j = 0; j < m; ++j) {
      std::memcpy(out->edge_features.data() + j * row_bytes, src + out->picked[j] * row_bytes, row_bytes);
    }
  }
}

absl::StatusOr<const NeighborDraw*> DrawNeighbors(const Partition& partition, PeerSampling* peers, int edge_type,
                                                  const int64_t* ids, size_t n, const DrawSpec& spec,
                                                  const SeedBatch& batch, int hop, FrontierScratch* s) {
  const EdgeTypeStore& et = partition.edge_type(edge_type);
  const NodeTypeStore& row_type = partition.node_type(et.row_type);
  const NodeTypeStore& col_type = partition.node_type(et.col_type);
  const int pid = partition.partition_id();
  const bool features = spec.with_edge_features && et.feature_dim > 0;
  const size_t row_bytes = features ? static_cast<size_t>(et.feature_dim) * DtypeSize(et.feature_dtype) : 0;

  // The nodes owned elsewhere join their owner's call; the owners draw while this server draws
  // its own share.
  std::vector<PeerSampling::NeighborCall> calls;
  const int64_t* owned = ids;
  size_t num_owned = n;
  if (partition.num_partitions() > 1) {
    s->remote.assign(n, -1);
    s->call_of.assign(partition.num_partitions(), -1);
    s->owned.clear();
    for (size_t i = 0; i < n; ++i) {
      const int64_t gid = ids[i];
      if (row_type.Owner(gid) == pid) {
        s->owned.push_back(gid);
        continue;
      }
      if (peers == nullptr) return NeedsCluster(gid, row_type);
      auto& call = CallFor(row_type.Owner(gid), &s->call_of, &calls);
      s->remote[i] = s->call_of[call.partition];
      call.ids.push_back(gid);
    }
    owned = s->owned.data();
    num_owned = s->owned.size();
    if (spec.excluded != nullptr) {
      for (const auto& [node, neighbor] : *spec.excluded) {
        const int32_t c = s->call_of[row_type.Owner(node)];
        if (c < 0) continue;
        calls[c].excluded.push_back(node);
        calls[c].excluded.push_back(neighbor);
      }
    }
  }
  std::unique_ptr<PeerSampling::Pending> pending;
  if (!calls.empty()) {
    PeerSampling::Hop h;
    h.edge_type = et.name;
    h.fanout = spec.fanout;
    h.replace = spec.replace;
    h.with_edge_ids = spec.with_edge_ids;
    h.with_edge_features = features;
    h.seed = batch.seed;
    h.epoch = batch.epoch;
    h.batch = batch.batch_index;
    h.hop = hop;
    pending = peers->SampleNeighbors(h, &calls);
  }
  NeighborDraw& draw = s->local;
  DrawOwnedNeighbors(partition, edge_type, owned, num_owned, spec, &draw);
  if (pending == nullptr) return &draw;

  // Merge the local draw and the owners' answers in `ids` order.
  if (auto st = pending->Wait(); !st.ok()) return st;
  for (const auto& c : calls) {
    int64_t total = 0;
    for (int64_t k : c.counts) total += k;
    if (c.counts.size() != c.ids.size() || total < 0 || static_cast<size_t>(total) != c.neighbors.size() ||
        (spec.with_edge_ids && c.edge_ids.size() != c.neighbors.size()) ||
        (features && c.edge_features.size() != c.neighbors.size() * row_bytes)) {
      return absl::InternalError(absl::StrCat("partition ", c.partition, " answered SampleNeighbors for ",
                                              c.ids.size(), " nodes with inconsistent counts"));
    }
    for (int64_t w : c.neighbors) {
      if (w < 0 || w >= col_type.num_nodes) {
        return absl::InternalError(absl::StrCat("partition ", c.partition, " answered neighbour ", w,
                                                ", which is not a '", col_type.name, "' node id"));
      }
    }
  }
  NeighborDraw& merged = s->merged;
  merged.counts.clear();
  merged.neighbors.clear();
  merged.edge_ids.clear();
  merged.edge_features.clear();
  // Per source (the last: the local draw, else a call): next node, next neighbour.
  std::vector<size_t> next_node(calls.size() + 1, 0);
  std::vector<size_t> next_neighbor(calls.size() + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const int32_t r = s->remote[i];
    const bool local = r < 0;
    const size_t src = local ? calls.size() : static_cast<size_t>(r);
    const std::vector<int64_t>& counts = local ? draw.counts : calls[r].counts;
    const std::vector<int64_t>& neighbors = local ? draw.neighbors : calls[r].neighbors;
    const std::vector<int64_t>& eids = local ? draw.edge_ids : calls[r].edge_ids;
    const int64_t k = counts[next_node[src]++];
    const size_t from = next_neighbor[src];
    merged.counts.push_back(k);
    merged.neighbors.insert(merged.neighbors.end(), neighbors.begin() + from, neighbors.begin() + from + k);
    if (spec.with_edge_ids) merged.edge_ids.insert(merged.edge_ids.end(), eids.begin() + from, eids.begin() + from + k);
    if (features) {
      const char* f = local ? draw.edge_features.data() : calls[r].edge_features.data();
      merged.edge_features.insert(merged.edge_features.end(), f + from * row_bytes, f + (from + k) * row_bytes);
    }
    next_neighbor[src] = from + k;
  }
  return &merged;
}

absl::Status NeighborSampler::ExpandHop(int edge_type, int fanout, uint64_t hop_key, const SeedBatch& coordinates,
                                        int hop, size_t begin, size_t end, bool add_nodes, SamplerScratch* scratch,
                                        SampledSubgraph* out) const {
  auto* s = static_cast<NeighborScratch*>(scratch);
  const EdgeTypeStore& et = partition_->edge_type(edge_type);
  constexpr size_t kAhead = 32;
  const size_t n = end - begin;
  if (n == 0) return absl::OkStatus();

  DrawSpec spec;
  spec.fanout = fanout;
  spec.replace = options_.replace;
  spec.with_edge_ids = options_.with_edge_ids;
  spec.with_edge_features = options_.with_edge_features;
  spec.hop_key = hop_key;
  if (coordinates.ablp != nullptr) spec.excluded = &coordinates.ablp->excluded[edge_type];
  auto drawn = DrawNeighbors(*partition_, options_.peers, edge_type, out->nodes[et.row_type].ids.data() + begin, n,
                             spec, coordinates, hop, &s->frontier);
  if (!drawn.ok()) return drawn.status();
  const NeighborDraw& d = **drawn;

  // Map neighbours to local ids (appending new nodes in the order they are met) and emit the
  // edges.
  const size_t m = d.neighbors.size();
  std::vector<int64_t>& col_ids = out->nodes[et.col_type].ids;
  std::vector<int32_t>& col_map = s->local_of[et.col_type];
  SampledEdges& edges = out->edges[edge_type];
  const bool rows_are_sources = partition_->rows_are_sources();
  std::vector<int64_t>& src = rows_are_sources ? edges.rows : edges.cols;
  std::vector<int64_t>& dst = rows_are_sources ? edges.cols : edges.rows;
  const bool features = options_.with_edge_features && et.feature_dim > 0;
  const size_t row_bytes = features ? static_cast<size_t>(et.feature_dim) * DtypeSize(et.feature_dtype) : 0;
  if (features) {
    edges.feature_dim = et.feature_dim;
    edges.feature_dtype = et.feature_dtype;
  }
  src.reserve(src.size() + m);
  dst.reserve(dst.size() + m);
  if (options_.with_edge_ids) edges.eids.reserve(edges.eids.size() + m);
  size_t j = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t u = static_cast<int64_t>(begin + i);
    for (int64_t k = 0; k < d.counts[i]; ++k, ++j) {
      if (j + kAhead < m) __builtin_prefetch(&col_map[d.neighbors[j + kAhead]]);
      const int64_t w = d.neighbors[j];
      int32_t& local = col_map[w];
      if (local < 0) {
        if (!add_nodes) continue;
        local = static_cast<int32_t>(col_ids.size());
        col_ids.push_back(w);
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
  return absl::OkStatus();
}

absl::Status GatherNodeData(const Partition& partition, int node_type, bool features, bool labels,
                            char* feature_dst, SampledNodes* nodes, PeerSampling* peers, RemoteCache* cache) {
  const NodeTypeStore& t = partition.node_type(node_type);
  features = features && t.feature_dim > 0;
  labels = labels && t.labels.is_open();
  if (!features && !labels) return absl::OkStatus();
  const size_t n = nodes->ids.size();
  const int pid = partition.partition_id();
  const size_t row_bytes = static_cast<size_t>(t.feature_dim) * DtypeSize(t.feature_dtype);

  char* dst = nullptr;
  if (features) {
    nodes->feature_dim = t.feature_dim;
    nodes->feature_dtype = t.feature_dtype;
    dst = feature_dst;
    if (dst != nullptr) {
      nodes->features.clear();
      nodes->placed_features = dst;
      nodes->placed_feature_bytes = n * row_bytes;
    } else {
      nodes->features.resize(n * row_bytes);
      dst = nodes->features.data();
    }
  }
  if (labels) nodes->labels.resize(n);

  // Nodes owned elsewhere and not cached: one call per owner, answered while the local rows
  // are copied.
  std::vector<PeerSampling::NodeDataCall> calls;
  std::vector<int32_t> call_of;
  std::vector<std::pair<int32_t, size_t>> remote;  // (call, position in nodes->ids)
  if (partition.num_partitions() > 1) {
    call_of.assign(partition.num_partitions(), -1);
    for (size_t i = 0; i < n; ++i) {
      const int64_t id = nodes->ids[i];
      if (t.Owner(id) == pid) continue;
      if (cache != nullptr && (!features || cache->GetFeatures(node_type, id, dst + i * row_bytes)) &&
          (!labels || cache->GetLabel(node_type, id, &nodes->labels[i]))) {
        continue;
      }
      if (peers == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node ", id, " of type '", t.name, "' is owned by partition ", t.Owner(id),
            "; its features and labels need that partition's server (start graphstored with --cluster)"));
      }
      auto& call = CallFor(t.Owner(id), &call_of, &calls);
      call.ids.push_back(id);
      remote.emplace_back(call_of[call.partition], i);
    }
  }
  std::unique_ptr<PeerSampling::Pending> pending;
  if (!calls.empty()) pending = peers->FetchNodeData(t.name, features, labels, &calls);

  if (features) {
    const char* src = static_cast<const char*>(t.features.raw());
    for (size_t i = 0; i < n; ++i) {
      if (t.Owner(nodes->ids[i]) != pid) continue;
      std::memcpy(dst + i * row_bytes, src + t.OwnerRow(nodes->ids[i]) * row_bytes, row_bytes);
    }
  }
  if (labels) {
    const int64_t* lab = t.labels.data<int64_t>();
    for (size_t i = 0; i < n; ++i) {
      if (t.Owner(nodes->ids[i]) != pid) continue;
      nodes->labels[i] = lab[t.OwnerRow(nodes->ids[i])];
    }
  }
  if (pending == nullptr) return absl::OkStatus();

  if (auto st = pending->Wait(); !st.ok()) return st;
  for (const auto& c : calls) {
    if ((features && c.features.size() != c.ids.size() * row_bytes) ||
        (labels && c.labels.size() != c.ids.size())) {
      return absl::InternalError(absl::StrCat("partition ", c.partition, " answered the data of ", c.ids.size(),
                                              " '", t.name, "' nodes with the wrong size"));
    }
  }
  std::vector<size_t> next(calls.size(), 0);
  for (const auto& [c, i] : remote) {
    const size_t k = next[c]++;
    const int64_t id = nodes->ids[i];
    if (features) {
      const char* row = calls[c].features.data() + k * row_bytes;
      std::memcpy(dst + i * row_bytes, row, row_bytes);
      if (cache != nullptr) cache->PutFeatures(node_type, id, row);
    }
    if (labels) {
      nodes->labels[i] = calls[c].labels[k];
      if (cache != nullptr) cache->PutLabel(node_type, id, calls[c].labels[k]);
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore
