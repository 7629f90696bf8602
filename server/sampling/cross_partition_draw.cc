// Draws for nodes wherever they are owned (DrawNeighbors): this partition's own with
// DrawOwnedNeighbors, other partitions' from the neighbour lists the peer cache keeps, the rest
// by their owners, merged back in list order; when no node needs its owner, the owned rows and
// the cached lists are drawn together (DrawHere).

#include "server/sampling/cross_partition_draw.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/sampling/draw.h"
#include "server/sampling/hop_codec.h"
#include "server/util/prefetch.h"

namespace graphstore {
namespace {

// Checks an owner's answer for the nodes of its call before it is merged.
absl::Status CheckAnswer(const PeerSampling::NeighborCall& c, const NodeTypeStore& col_type, const DrawSpec& spec,
                         size_t feature_row_bytes) {
  int64_t total = 0;
  for (int64_t k : c.counts) total += k;
  if (c.counts.size() != c.ids.size() || total < 0 || static_cast<size_t>(total) != c.neighbors.size() ||
      (spec.with_edge_ids && c.edge_ids.size() != c.neighbors.size()) ||
      c.edge_features.size() != c.neighbors.size() * feature_row_bytes) {
    return absl::InternalError(absl::StrCat("partition ", c.partition, " answered SampleNeighbors for ",
                                            c.ids.size(), " nodes with inconsistent counts"));
  }
  for (int64_t w : c.neighbors) {
    if (w < 0 || w >= col_type.num_nodes) {
      return absl::InternalError(absl::StrCat("partition ", c.partition, " answered neighbour ", w,
                                              ", which is not a '", col_type.name, "' node id"));
    }
  }
  return absl::OkStatus();
}

// Whether a hop's draw for a node can be made from the node's cached neighbour list (a uniform
// draw of neighbour ids alone, with nothing excluded), exactly as its owner would make it.
bool DrawableFromList(const DrawSpec& spec) {
  return !spec.weighted && spec.temporal == TemporalStrategy::kNone && !spec.with_edge_ids &&
         !spec.with_edge_features && (spec.excluded == nullptr || spec.excluded->empty());
}

// The positions a uniform draw for node `id` picks in its row of `degree` neighbours, each
// passed to take(position) in draw order: OwnedDraw::DrawUniform's picks, wherever the row
// lies. Returns how many.
template <typename Take>
int64_t PickUniform(const DrawSpec& spec, int64_t id, int64_t degree, std::vector<int64_t>* positions, Take take) {
  if (TakesWholeRow(spec.fanout, spec.replace, degree)) {
    for (int64_t k = 0; k < degree; ++k) take(k);
    return degree;
  }
  if (static_cast<int>(positions->size()) < spec.fanout) positions->resize(spec.fanout);
  const int64_t c = DrawNeighborPositions(HashCombine(spec.hop_key, static_cast<uint64_t>(id)), degree, spec.fanout,
                                          spec.replace, positions->data());
  for (int64_t k = 0; k < c; ++k) take((*positions)[k]);
  return c;
}

// Appends node `id`'s draw from its whole neighbour list to out->neighbors and its count to
// out->counts.
void DrawFromList(const DrawSpec& spec, int64_t id, const int64_t* list, int64_t degree, NeighborDraw* out) {
  out->counts.push_back(
      PickUniform(spec, id, degree, &out->positions, [&](int64_t k) { out->neighbors.push_back(list[k]); }));
}

// Draws every node of `ids` here, from a whole row this partition holds: its CSR row when it
// owns the node, else the cached list `cached[i]` (a uniform draw of neighbour ids alone:
// DrawableFromList). The draws are DrawOwnedNeighbors' and DrawFromList's, made in list order
// in DrawOwnedNeighbors' three passes, each loading ahead: where the rows lie, which positions
// each draw picks, the neighbours picked. Nothing to merge afterwards.
void DrawHere(const Partition& partition, int edge_type, const int64_t* ids, size_t n, const DrawSpec& spec,
              const std::vector<const int64_t*>& cached, NeighborDraw* out) {
  const EdgeTypeStore& et = partition.edge_type(edge_type);
  const NodeTypeStore& rows = partition.node_type(et.row_type);
  const int64_t* indptr = et.indptr_data();
  const int64_t* indices = et.indices_data();
  // Rows of several partitions' nodes: an owned node's lies two loads away (its row in this
  // partition's arrays, then the row's extent), a cached list one (its degree leads it).
  out->row_start.resize(n);
  out->degree.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (const size_t a = i + 2 * kPrefetchAhead; a < n && cached[a] == nullptr) {
      rows.owners.Prefetch(ids[a]);
    }
    if (const size_t a = i + kPrefetchAhead; a < n) {
      PrefetchRead(cached[a] != nullptr ? cached[a] : indptr + rows.OwnerRow(ids[a]));
    }
    if (const int64_t* list = cached[i]) {
      out->row_start[i] = list + 1;
      out->degree[i] = list[0];
    } else {
      const int64_t row = rows.OwnerRow(ids[i]);
      out->row_start[i] = indices + indptr[row];
      out->degree[i] = indptr[row + 1] - indptr[row];
    }
  }
  out->counts.resize(n);
  out->picked_at.clear();
  for (size_t i = 0; i < n; ++i) {
    const int64_t* row = out->row_start[i];
    out->counts[i] = PickUniform(spec, ids[i], out->degree[i], &out->positions,
                                 [&](int64_t k) { out->picked_at.push_back(row + k); });
  }
  const size_t m = out->picked_at.size();
  out->neighbors.resize(m);
  for (size_t j = 0; j < m; ++j) {
    if (j + kPrefetchAhead < m) PrefetchRead(out->picked_at[j + kPrefetchAhead]);
    out->neighbors[j] = *out->picked_at[j];
  }
  out->edge_ids.clear();
  out->edge_features.clear();
}

// Nodes of other partitions whose neighbour lists are cached, drawn from here (see
// DrawNeighbors): per node of the list, where its cached list lies (RemoteCache::FindList;
// null: none).
struct CachedLists {
  const DrawSpec* spec = nullptr;
  const int64_t* ids = nullptr;
  const std::vector<const int64_t*>* list = nullptr;
};

// Merges the local draw, the draws from cached lists (`cached` may be null) and the owners'
// answers in the order of the split's list.
void MergeDraws(const OwnerSplit<PeerSampling::NeighborCall>& split, size_t n, const NeighborDraw& local,
                const CachedLists* cached, bool with_edge_ids, size_t feature_row_bytes, NeighborDraw* merged) {
  const auto& calls = split.calls;
  merged->counts.clear();
  merged->neighbors.clear();
  merged->edge_ids.clear();
  merged->edge_features.clear();
  // Per source (the last: the local draw, else a call): next node, next neighbour.
  std::vector<size_t> next_node(calls.size() + 1, 0);
  std::vector<size_t> next_neighbor(calls.size() + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const int32_t r = split.call_of_item(i);
    const bool here = r < 0;
    if (cached != nullptr) {
      // (A list's degree and first 15 neighbours take two cache lines.)
      if (i + kPrefetchAhead < n && (*cached->list)[i + kPrefetchAhead] != nullptr) {
        PrefetchRead((*cached->list)[i + kPrefetchAhead]);
        PrefetchRead((*cached->list)[i + kPrefetchAhead] + 8);
      }
      if (const int64_t* list = (*cached->list)[i]) {
        DrawFromList(*cached->spec, cached->ids[i], list + 1, list[0], merged);
        continue;
      }
    }
    const size_t src = here ? calls.size() : static_cast<size_t>(r);
    const std::vector<int64_t>& counts = here ? local.counts : calls[r].counts;
    const std::vector<int64_t>& neighbors = here ? local.neighbors : calls[r].neighbors;
    const std::vector<int64_t>& eids = here ? local.edge_ids : calls[r].edge_ids;
    const int64_t k = counts[next_node[src]++];
    const size_t from = next_neighbor[src];
    merged->counts.push_back(k);
    merged->neighbors.insert(merged->neighbors.end(), neighbors.begin() + from, neighbors.begin() + from + k);
    if (with_edge_ids) merged->edge_ids.insert(merged->edge_ids.end(), eids.begin() + from, eids.begin() + from + k);
    if (feature_row_bytes > 0) {
      const char* f = here ? local.edge_features.data() : calls[r].edge_features.data();
      merged->edge_features.insert(merged->edge_features.end(), f + from * feature_row_bytes,
                                   f + (from + k) * feature_row_bytes);
    }
    next_neighbor[src] = from + k;
  }
}

// Finds where the cached lists of the nodes the owner split asks about (those owned elsewhere)
// lie, into `list` (null where none), reading their slots only, each loaded some nodes ahead;
// counts the lists found and notes one known to be too long to keep. Owned nodes are never
// looked up: the cache holds other partitions' lists only.
class ListLookup {
 public:
  ListLookup(const RemoteCache* cache, int edge_type, const int64_t* ids, size_t n, std::vector<const int64_t*>* list)
      : cache_(cache), edge_type_(edge_type), ids_(ids), n_(n), list_(list) {
    if (cache_ != nullptr) list_->assign(n, nullptr);
  }

  // Whether node i's list is cached (so it stays here).
  bool Find(size_t i) {
    if (cache_ == nullptr) return false;
    ++asked_;
    if (i + kPrefetchAhead < n_) cache_->PrefetchList(edge_type_, ids_[i + kPrefetchAhead]);
    bool long_list = false;
    const int64_t* list = cache_->FindList(edge_type_, ids_[i], &long_list);
    too_long_ |= long_list;
    if (list == nullptr) return false;
    (*list_)[i] = list;
    ++found_;
    return true;
  }
  // Whether node i's list was found (false for owned nodes).
  bool found(size_t i) const { return found_ > 0 && (*list_)[i] != nullptr; }
  size_t num_found() const { return found_; }
  // Nodes looked up (owned elsewhere).
  size_t num_asked() const { return asked_; }
  bool too_long() const { return too_long_; }

 private:
  const RemoteCache* const cache_;  // null: lists are not drawn from
  const int edge_type_;
  const int64_t* const ids_;
  const size_t n_;
  std::vector<const int64_t*>* const list_;
  size_t found_ = 0;
  size_t asked_ = 0;
  bool too_long_ = false;
};

// Keeps the whole lists an owner sent for the nodes of `c` and replaces them with the draw
// the hop asked for, as if the owner had drawn it.
void KeepListsAndDraw(RemoteCache* cache, int edge_type, const DrawSpec& spec, PeerSampling::NeighborCall* c,
                      NeighborDraw* scratch) {
  scratch->counts.clear();
  scratch->neighbors.clear();
  size_t from = 0;
  for (size_t k = 0; k < c->ids.size(); ++k) {
    const int64_t degree = c->counts[k];
    const int64_t* list = c->neighbors.data() + from;
    cache->PutNeighbors(edge_type, c->ids[k], list, degree);
    DrawFromList(spec, c->ids[k], list, degree, scratch);
    from += static_cast<size_t>(degree);
  }
  // (Copied, not swapped: the call's vectors are larger than the draw, and the scratch keeps
  // its capacity from hop to hop.)
  c->counts.assign(scratch->counts.begin(), scratch->counts.end());
  c->neighbors.assign(scratch->neighbors.begin(), scratch->neighbors.end());
}

}  // namespace

absl::StatusOr<const NeighborDraw*> DrawNeighbors(const Partition& partition, PeerSampling* peers, RemoteCache* cache,
                                                  int edge_type, const int64_t* ids, size_t n, const DrawSpec& spec,
                                                  const SeedBatch& batch, int hop, FrontierScratch* s) {
  const EdgeTypeStore& et = partition.edge_type(edge_type);
  const NodeTypeStore& row_type = partition.node_type(et.row_type);
  const bool features = spec.with_edge_features && et.feature_dim > 0;
  const size_t row_bytes = features ? static_cast<size_t>(et.feature_dim) * DtypeSize(et.feature_dtype) : 0;
  if (partition.num_partitions() == 1) {
    DrawOwnedNeighbors(partition, edge_type, ids, n, spec, &s->local);
    return &s->local;
  }

  // Nodes owned elsewhere whose lists are cached draw here; the others join their owner's
  // call, with the excluded pairs of their nodes. While the cache has room, owners send whole
  // lists, kept and drawn from here. The owners draw while this server draws its own share.
  // (A hop that meets a node whose list is too long to keep asks the owners for the draws of
  // all its uncached nodes: the one call per owner asks for whole lists or for draws.)
  const bool lists = cache != nullptr && cache->keeps_lists() && DrawableFromList(spec);
  ListLookup lookup(lists ? cache : nullptr, edge_type, ids, n, &s->list);
  auto& split = s->split;
  auto keep = [&lookup](size_t i) { return lookup.Find(i); };
  absl::Status split_status;
  {
    RemoteCache::LookupPass pass(lists ? cache : nullptr);
    split_status = split.Split(partition, row_type, ids, n, peers != nullptr, "sampling it needs", keep);
  }
  if (!split_status.ok()) return split_status;
  const size_t cached = lookup.num_found();
  if (lists) cache->CountListLookups(static_cast<int64_t>(cached), static_cast<int64_t>(lookup.num_asked() - cached));
  if (split.calls.empty() && cached > 0) {
    // Every node owned or cached: drawn here in one go.
    DrawHere(partition, edge_type, ids, n, spec, s->list, &s->merged);
    return &s->merged;
  }
  bool whole = lists && cache->has_room() && !lookup.too_long();
  s->owned.clear();
  s->owned_times.clear();
  for (size_t i = 0; i < n; ++i) {
    const int32_t c = split.call_of_item(i);
    if (c < 0 && !lookup.found(i)) s->owned.push_back(ids[i]);
    if (spec.temporal != TemporalStrategy::kNone) {
      (c < 0 ? s->owned_times : split.calls[c].times).push_back(spec.times[i]);
    }
  }
  if (spec.excluded != nullptr) {
    for (const auto& [node, neighbor] : *spec.excluded) {
      const int32_t c = split.call_of_partition(row_type.Owner(node));
      if (c < 0) continue;
      split.calls[c].excluded.push_back(node);
      split.calls[c].excluded.push_back(neighbor);
    }
  }
  auto issue = [&](std::vector<PeerSampling::NeighborCall>* calls) {
    return peers->SampleNeighbors(HopOf(et.name, spec, features, batch, hop, whole ? -1 : spec.fanout), calls);
  };
  auto local = [&] {
    DrawSpec owned_spec = spec;
    if (spec.temporal != TemporalStrategy::kNone) owned_spec.times = s->owned_times.data();
    DrawOwnedNeighbors(partition, edge_type, s->owned.data(), s->owned.size(), owned_spec, &s->local);
    return absl::OkStatus();
  };
  const NodeTypeStore& col_type = partition.node_type(et.col_type);
  auto check = [&](const PeerSampling::NeighborCall& c) { return CheckAnswer(c, col_type, spec, row_bytes); };
  absl::Status st = split.Run(issue, local, check);
  if (whole && st.code() == absl::StatusCode::kResourceExhausted) {
    // Whole lists too large for one answer: the owners draw after all.
    whole = false;
    st = split.Run(issue, [] { return absl::OkStatus(); }, check);
  }
  if (!st.ok()) return st;
  if (split.calls.empty() && cached == 0) return &s->local;
  if (whole) {
    for (auto& c : split.calls) KeepListsAndDraw(cache, edge_type, spec, &c, &s->kept);
  }
  const CachedLists from_lists{&spec, ids, &s->list};
  MergeDraws(split, n, s->local, cached > 0 ? &from_lists : nullptr, spec.with_edge_ids, row_bytes, &s->merged);
  return &s->merged;
}

}  // namespace graphstore
