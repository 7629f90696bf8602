#include "server/sampling/neighbor_draw.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/sampling/draw.h"
#include "server/sampling/medium_rows.h"
#include "server/sampling/short_rows.h"

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

// Merges the local draw and the owners' answers in the order of the split's list.
void MergeDraws(const OwnerSplit<PeerSampling::NeighborCall>& split, size_t n, const NeighborDraw& local,
                bool with_edge_ids, size_t feature_row_bytes, NeighborDraw* merged) {
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

}  // namespace

void DrawOwnedNeighbors(const Partition& partition, int edge_type, const int64_t* ids, size_t n,
                        const DrawSpec& spec, NeighborDraw* out) {
  // Three passes, each issuing the next pass's random loads ahead of time: (1) row extents from
  // indptr, (2) the draws, gathering CSR positions, (3) the neighbour ids from indices. Temporal
  // rows cut inside read their stretch of times after (1), or, drawn uniformly before their cut
  // is known, after (2) and only when the draw needs it.
  constexpr size_t kAhead = 32;
  // Whole rows are fetched fewer at a time: each takes several line fills.
  constexpr size_t kRowsAhead = 12;
  // Stretches of edge times up to this long (two cache lines) are counted, not searched.
  constexpr int64_t kCountedStretch = 16;
  // Uniform draws from rows whose stretch is up to this long may be made before it is read: a
  // hash for each of its positions tells whether the draw needs it.
  constexpr int64_t kDeferredStretch = 64;
  // Long rows up to this long have all their weights fetched ahead: each pick waits for its
  // block's weights, and the picks' blocks would otherwise arrive one after another.
  constexpr int64_t kWholeLongRow = 256;
  const EdgeTypeStore& et = partition.edge_type(edge_type);
  const NodeTypeStore& rows = partition.node_type(et.row_type);
  const int64_t* indptr = et.indptr_data();
  const int64_t* indices = et.indices_data();
  const int64_t* owner_row = rows.local.is_open() ? rows.local.data<int64_t>() : nullptr;
  const int fanout = spec.fanout;
  const bool replace = spec.replace;
  const float* weights = spec.weighted ? et.weights_data() : nullptr;
  // Edge times, when this draw is temporal and the type stores them: each row is cut to the
  // prefix at or before its node's time.
  const int64_t* edge_times = spec.temporal != TemporalStrategy::kNone ? et.times_data() : nullptr;
  // Long rows draw by weight from the sums of their weights in blocks (which also serve a
  // prefix of the row); independent draws from a whole row from its alias table.
  const double* blocks = weights != nullptr && (!replace || edge_times != nullptr)
                             ? et.weight_index->GetBlocks(et.num_local, weights).data()
                             : nullptr;
  const WeightIndex::Alias* alias =
      weights != nullptr && replace ? &et.weight_index->GetAlias(indptr, rows.num_local, weights) : nullptr;
  // (Rows too long for an alias table draw independently from their trees as well.)
  const WeightIndex::Trees* trees = blocks != nullptr || (alias != nullptr && alias->longest_row > kAliasMaxDegree)
                                        ? &et.weight_index->GetTrees(indptr, rows.num_local, weights)
                                        : nullptr;
  static_assert(WeightIndex::kBlock == kWeightBlock);
  static_assert(kShortWeightedRow == kWeightBlockMinDegree);  // rows are short or long, never both
  static_assert(WeightIndex::kTreeMinDegree == kWeightTreeMinDegree);
  static_assert(kAliasMaxDegree > kWeightTreeMinDegree);
  const auto* excluded = spec.excluded != nullptr && !spec.excluded->empty() ? spec.excluded : nullptr;

  // Where time t cuts a row (sorted by time) whose cut lies in [lo, hi]: how many of its times
  // are at or before t.
  auto cut = [&](const int64_t* row, int64_t lo, int64_t hi, int64_t t) -> int64_t {
    if (hi - lo > kCountedStretch) return std::upper_bound(row + lo, row + hi, t) - row;
    // A short stretch is counted rather than searched: the times at or before t are its first
    // ones, and a count has no branch to mispredict.
    int64_t count = lo;
    for (int64_t k = lo; k < hi; ++k) count += row[k] <= t;
    return count;
  };

  out->base.resize(n);
  out->degree.resize(n);
  // (Cleared whatever this draw is: the draw loop below reads them for every edge type.)
  out->deferred.clear();
  out->deferred_ranges.clear();
  if (edge_times != nullptr) {
    // One line per node gives its row's extent and time range: the node's time reaches all of
    // the row, none of it, or part of it, and only then does the row's search read its times,
    // in the stretch between the two fences around the node's time.
    const TimeRows::Row* time_rows = et.time_rows->Get(indptr, rows.num_local, edge_times).data();
    out->whole.resize(n);
    out->searched.clear();
    out->search_ranges.clear();
    // A uniform draw of `fanout` from a row whose stretch starts at or past the fanout is made
    // before the cut is known (DrawPositionsPast): most such draws never need it.
    const bool deferrable = spec.temporal == TemporalStrategy::kUniform && weights == nullptr && !replace &&
                            excluded == nullptr && fanout > 0;
    for (size_t i = 0; i < n; ++i) {
      if (owner_row != nullptr && i + 2 * kAhead < n) __builtin_prefetch(owner_row + ids[i + 2 * kAhead]);
      if (i + kAhead < n) __builtin_prefetch(time_rows + rows.OwnerRow(ids[i + kAhead]));
      const TimeRows::Row& r = time_rows[rows.OwnerRow(ids[i])];
      const int64_t d = r.end - r.begin;
      const int64_t t = spec.times[i];
      out->base[i] = r.begin;
      out->degree[i] = d;
      out->whole[i] = d == 0 || r.newest <= t;
      if (out->whole[i]) continue;
      if (t < r.oldest) {
        out->degree[i] = 0;
        continue;
      }
      const auto range = TimeRows::SearchRange(r, t);
      if (range.first >= range.second) {
        out->degree[i] = range.first;
      } else if (deferrable && range.first >= fanout && range.second - range.first <= kDeferredStretch) {
        out->deferred.push_back(i);
        out->deferred_ranges.push_back(range);
      } else {
        out->searched.push_back(i);
        out->search_ranges.push_back(range);
      }
    }
    // The allowed prefix of the rows cut inside: the neighbours at or before the node's time.
    const size_t searches = out->searched.size();
    for (size_t j = 0; j < searches; ++j) {
      if (j + kAhead < searches) {
        // The stretch the search reads (its first line and its last, which for short rows is
        // all of it; a long row's stretch takes a few more misses).
        const auto [lo, hi] = out->search_ranges[j + kAhead];
        const int64_t* row = edge_times + out->base[out->searched[j + kAhead]];
        __builtin_prefetch(row + lo);
        __builtin_prefetch(row + hi - 1);
      }
      const size_t i = out->searched[j];
      const auto [lo, hi] = out->search_ranges[j];
      out->degree[i] = cut(edge_times + out->base[i], lo, hi, spec.times[i]);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (owner_row != nullptr && i + 2 * kAhead < n) __builtin_prefetch(owner_row + ids[i + 2 * kAhead]);
      if (i + kAhead < n) __builtin_prefetch(indptr + rows.OwnerRow(ids[i + kAhead]));
      const int64_t row = rows.OwnerRow(ids[i]);
      out->base[i] = indptr[row];
      out->degree[i] = indptr[row + 1] - out->base[i];
    }
  }

  // Rows of up to 256 drawn by weight without replacement are drawn together first (several
  // rows' picks overlap; each row's picks wait on each other), short and medium rows apart, as
  // bit masks the loop below reads in node order. (A row that turns out to have excluded
  // neighbours draws again among the others.)
  auto drawn_together = [&](int64_t degree) { return weights != nullptr && !replace && degree <= kMediumWeightedRow; };
  size_t next_short = 0, next_medium = 0;
  if (weights != nullptr && !replace) {
    out->short_rows.Clear();
    out->medium_rows.Clear();
    for (size_t i = 0; i < n; ++i) {
      const int64_t d = out->degree[i];
      if (!drawn_together(d)) continue;
      auto& together = d <= kShortWeightedRow ? out->short_rows : out->medium_rows;
      together.Add(HashCombine(spec.hop_key, static_cast<uint64_t>(ids[i])), weights + out->base[i], d);
    }
    auto& shorts = out->short_rows;
    shorts.masks.resize(shorts.keys.size());
    DrawWeightedShortRows(shorts.keys.data(), shorts.weights.data(), shorts.degrees.data(), shorts.keys.size(), fanout,
                          shorts.masks.data());
    auto& mediums = out->medium_rows;
    mediums.masks.resize(mediums.keys.size() * kMediumRowMasks);
    DrawWeightedMediumRows(mediums.keys.data(), mediums.weights.data(), mediums.degrees.data(), mediums.keys.size(),
                           fanout, mediums.masks.data());
  }

  const bool draw_all = fanout < 0;
  if (!draw_all && static_cast<int>(out->positions.size()) < fanout) out->positions.resize(fanout);
  out->picked.clear();
  out->pending.clear();
  out->counts.resize(n);
  size_t next_deferred = 0;
  for (size_t i = 0; i < n; ++i) {
    if (weights != nullptr && i + kRowsAhead < n && !drawn_together(out->degree[i + kRowsAhead])) {
      // A weighted draw reads the row's alias cells (with replacement; the draws land anywhere
      // in the row: every cache line of the row's first 64 cells) or, without replacement (rows
      // of up to 256 drew above), a long row's block sums and its weights (all of them up to
      // kWholeLongRow, else its first and last blocks, which may hold other rows' weights too
      // and are summed afresh).
      const int64_t d = out->degree[i + kRowsAhead];
      const int64_t b = out->base[i + kRowsAhead];
      if (alias != nullptr) {
        PrefetchLines(alias->cells.data() + b, alias->cells.data() + b + std::min<int64_t>(d, 64));
      } else if (blocks != nullptr && d <= kWeightTreeMinDegree) {
        PrefetchLines(blocks + b / kWeightBlock, blocks + (b + d - 1) / kWeightBlock + 1);
        if (d <= kWholeLongRow) {
          PrefetchLines(weights + b, weights + b + d);
        } else {
          __builtin_prefetch(weights + b);
          __builtin_prefetch(weights + b + d - 1);
        }
      }
    }
    const int64_t base = out->base[i];
    if (next_deferred < out->deferred.size() && out->deferred[next_deferred] == i) {
      // Drawn among the positions before the stretch, which are allowed; a draw in which a
      // position of the stretch would take a slot takes it once the cut is found (below).
      const size_t d = next_deferred++;
      const auto [lo, hi] = out->deferred_ranges[d];
      const uint64_t key = HashCombine(spec.hop_key, static_cast<uint64_t>(ids[i]));
      DrawNeighborPositions(key, lo, fanout, false, out->positions.data());
      if (!PastSettled(key, lo, hi, fanout)) {
        out->pending.push_back({key, base, lo, hi, spec.times[i], out->picked.size()});
      }
      for (int k = 0; k < fanout; ++k) out->picked.push_back(base + out->positions[k]);
      out->counts[i] = fanout;
      continue;
    }
    int64_t degree = out->degree[i];
    // The masks of a row drawn together: one, or kMediumRowMasks for a row of more than 64.
    const uint64_t* drawn = !drawn_together(degree)       ? nullptr
                            : degree <= kShortWeightedRow ? &out->short_rows.masks[next_short++]
                                                          : &out->medium_rows.masks[kMediumRowMasks * next_medium++];
    const int drawn_masks = degree <= kShortWeightedRow ? 1 : kMediumRowMasks;
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
    if (weights != nullptr) {
      const float* w = weights + base;
      if (candidates != nullptr) {
        out->candidate_weights.resize(static_cast<size_t>(degree));
        for (int64_t k = 0; k < degree; ++k) out->candidate_weights[k] = weights[position(k)];
        w = out->candidate_weights.data();
      }
      if (drawn != nullptr && candidates == nullptr) {
        int64_t c = 0;
        for (int g = 0; g < drawn_masks; ++g) {
          c += AppendMaskPositions(drawn[g], base + kShortWeightedRow * g, &out->picked);
        }
        out->counts[i] = c;
        continue;
      }
      int64_t c;
      const uint64_t key = HashCombine(spec.hop_key, static_cast<uint64_t>(ids[i]));
      // (Rows of up to 256 drawn without replacement are not long: they draw in groups of 64.)
      const bool long_row = candidates == nullptr && degree > kWeightBlockMinDegree && !draw_all &&
                            (replace || degree > kMediumWeightedRow);
      const bool whole_row = edge_times == nullptr || out->whole[i];
      // Independent draws from a whole row take its alias table, when it has one.
      const bool by_alias = replace && whole_row && candidates == nullptr && !draw_all && degree <= kAliasMaxDegree;
      if (by_alias) {
        c = DrawWeightedFromAlias(key, alias->cells.data() + base, degree, fanout, &out->weighted_picks);
      } else if (long_row && degree > kWeightTreeMinDegree) {
        // (The row, or the whole row it is a prefix of, is that long, so it has a tree.)
        c = DrawWeightedFromTree(key, w, trees->Of(base), degree, fanout, replace, &out->weighted_picks,
                                 &out->weighted_scratch);
      } else if (long_row) {
        c = DrawWeightedFromBlocks(key, weights, blocks, base, degree, fanout, replace, &out->weighted_picks,
                                   &out->weighted_scratch);
      } else {
        c = DrawWeightedPositions(key, w, degree, fanout, replace, &out->weighted_picks, &out->weighted_keys);
      }
      for (int64_t k = 0; k < c; ++k) out->picked.push_back(position(out->weighted_picks[k]));
      out->counts[i] = c;
      continue;
    }
    if (draw_all || (!replace && degree <= fanout)) {
      for (int64_t k = 0; k < degree; ++k) out->picked.push_back(position(k));
      out->counts[i] = degree;
    } else if (spec.temporal == TemporalStrategy::kLast) {
      // The most recent `fanout` (rows are sorted by time), oldest first.
      const int64_t c = std::min<int64_t>(fanout, degree);
      for (int64_t k = degree - c; k < degree; ++k) out->picked.push_back(position(k));
      out->counts[i] = c;
    } else {
      const int64_t c = DrawNeighborPositions(HashCombine(spec.hop_key, static_cast<uint64_t>(ids[i])), degree,
                                              fanout, replace, out->positions.data());
      for (int64_t k = 0; k < c; ++k) out->picked.push_back(position(out->positions[k]));
      out->counts[i] = c;
    }
  }

  // The deferred draws that need their cut: the stretch is read as a searched row's is, and
  // its allowed positions take their slots.
  const size_t pending = out->pending.size();
  for (size_t j = 0; j < pending; ++j) {
    if (j + kAhead < pending) {
      const NeighborDraw::Pending& ahead = out->pending[j + kAhead];
      __builtin_prefetch(edge_times + ahead.base + ahead.lo);
      __builtin_prefetch(edge_times + ahead.base + ahead.hi - 1);
    }
    const NeighborDraw::Pending& p = out->pending[j];
    const int64_t allowed = cut(edge_times + p.base, p.lo, p.hi, p.time);
    TakePositionsPast(p.key, p.lo, allowed, fanout, p.base, out->picked.data() + p.picks);
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
  const bool features = spec.with_edge_features && et.feature_dim > 0;
  const size_t row_bytes = features ? static_cast<size_t>(et.feature_dim) * DtypeSize(et.feature_dtype) : 0;
  if (partition.num_partitions() == 1) {
    DrawOwnedNeighbors(partition, edge_type, ids, n, spec, &s->local);
    return &s->local;
  }

  // The nodes owned elsewhere join their owner's call, with the excluded pairs of their nodes;
  // the owners draw while this server draws its own share.
  auto& split = s->split;
  if (auto st = split.Split(partition, row_type, ids, n, peers != nullptr, "sampling it needs", [](size_t) { return false; });
      !st.ok()) {
    return st;
  }
  s->owned.clear();
  s->owned_times.clear();
  for (size_t i = 0; i < n; ++i) {
    const int32_t c = split.call_of_item(i);
    if (c < 0) s->owned.push_back(ids[i]);
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
    PeerSampling::Hop h;
    h.edge_type = et.name;
    h.fanout = spec.fanout;
    h.replace = spec.replace;
    h.weighted = spec.weighted;
    h.temporal = spec.temporal;
    h.with_edge_ids = spec.with_edge_ids;
    h.with_edge_features = features;
    h.seed = batch.seed;
    h.epoch = batch.epoch;
    h.batch = batch.batch_index;
    h.hop = hop;
    return peers->SampleNeighbors(h, calls);
  };
  auto local = [&] {
    DrawSpec owned_spec = spec;
    if (spec.temporal != TemporalStrategy::kNone) owned_spec.times = s->owned_times.data();
    DrawOwnedNeighbors(partition, edge_type, s->owned.data(), s->owned.size(), owned_spec, &s->local);
    return absl::OkStatus();
  };
  const NodeTypeStore& col_type = partition.node_type(et.col_type);
  auto check = [&](const PeerSampling::NeighborCall& c) { return CheckAnswer(c, col_type, spec, row_bytes); };
  if (auto st = split.Run(issue, local, check); !st.ok()) return st;
  if (split.calls.empty()) return &s->local;
  MergeDraws(split, n, s->local, spec.with_edge_ids, row_bytes, &s->merged);
  return &s->merged;
}

}  // namespace graphstore
