#include "server/sampling/neighbor_draw.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "server/sampling/draw.h"
#include "server/sampling/medium_rows.h"
#include "server/sampling/short_rows.h"
#include "server/util/prefetch.h"

namespace graphstore {
namespace {

// Three passes over a hop's nodes, each issuing the next pass's random loads ahead of time:
// (1) row extents from indptr (Rows; temporal rows from their time lines, TimeRows), (2) the
// draws, gathering CSR positions (Draw, after DrawTogether for short weighted rows), (3) the
// neighbour ids from indices (Gather). Temporal rows cut inside read their stretch of times
// after (1), or, drawn uniformly before their cut is known, after (2) and only when the draw
// needs it (TakePending).
constexpr size_t kAhead = kPrefetchAhead;
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

static_assert(WeightIndex::kBlock == kWeightBlock);
static_assert(kShortWeightedRow == kWeightBlockMinDegree);  // rows are short or long, never both
static_assert(WeightIndex::kTreeMinDegree == kWeightTreeMinDegree);
static_assert(kAliasMaxDegree > kWeightTreeMinDegree);

// Where time t cuts a row (sorted by time) whose cut lies in [lo, hi]: how many of its times
// are at or before t.
int64_t Cut(const int64_t* row, int64_t lo, int64_t hi, int64_t t) {
  if (hi - lo > kCountedStretch) return std::upper_bound(row + lo, row + hi, t) - row;
  // A short stretch is counted rather than searched: the times at or before t are its first
  // ones, and a count has no branch to mispredict.
  int64_t count = lo;
  for (int64_t k = lo; k < hi; ++k) count += row[k] <= t;
  return count;
}

// The draw loop's helpers are inlined into it, as the loop was one body before it was split:
// called out of line, weighted draws with replacement ran at 0.6 of their speed.
#define GS_INLINE __attribute__((always_inline)) inline

// One DrawOwnedNeighbors call: what its passes share.
class OwnedDraw {
 public:
  OwnedDraw(const Partition& partition, int edge_type, const int64_t* ids, size_t n, const DrawSpec& spec,
            NeighborDraw* out)
      : et_(partition.edge_type(edge_type)),
        rows_(partition.node_type(et_.row_type)),
        indptr_(et_.indptr_data()),
        indices_(et_.indices_data()),
        book_(rows_.owners),
        ids_(ids),
        n_(n),
        spec_(spec),
        fanout_(spec.fanout),
        replace_(spec.replace),
        weights_(spec.weighted ? et_.weights_data() : nullptr),
        // Edge times, when this draw is temporal and the type stores them: each row is cut to
        // the prefix at or before its node's time.
        edge_times_(spec.temporal != TemporalStrategy::kNone ? et_.times_data() : nullptr),
        excluded_(spec.excluded != nullptr && !spec.excluded->empty() ? spec.excluded : nullptr),
        out_(out) {
    // Long rows draw by weight from the sums of their weights in blocks (which also serve a
    // prefix of the row); independent draws from a whole row from its alias table.
    if (weights_ != nullptr && (!replace_ || edge_times_ != nullptr)) {
      blocks_ = et_.weight_index->GetBlocks(et_.num_local, weights_).data();
    }
    if (weights_ != nullptr && replace_) alias_ = &et_.weight_index->GetAlias(indptr_, rows_.num_local, weights_);
    // (Rows too long for an alias table draw independently from their trees as well.)
    if (blocks_ != nullptr || (alias_ != nullptr && alias_->longest_row > kAliasMaxDegree)) {
      trees_ = &et_.weight_index->GetTrees(indptr_, rows_.num_local, weights_);
    }
  }

  void Run() {
    out_->base.resize(n_);
    out_->degree.resize(n_);
    // (Cleared whatever this draw is: the draw loop reads them for every edge type.)
    out_->deferred.clear();
    out_->deferred_ranges.clear();
    if (edge_times_ != nullptr) {
      TimeRows();
    } else {
      Rows();
    }
    if (weights_ != nullptr && !replace_) DrawTogether();
    Draw();
    TakePending();
    Gather();
  }

 private:
  // Pass 1: each node's row, its extent in the CSR.
  void Rows() {
    for (size_t i = 0; i < n_; ++i) {
      if (i + 2 * kAhead < n_) book_.Prefetch(ids_[i + 2 * kAhead]);
      if (i + kAhead < n_) PrefetchRead(indptr_ + rows_.OwnerRow(ids_[i + kAhead]));
      const int64_t row = rows_.OwnerRow(ids_[i]);
      out_->base[i] = indptr_[row];
      out_->degree[i] = indptr_[row + 1] - out_->base[i];
    }
  }

  // Pass 1, temporal: one line per node gives its row's extent and time range: the node's time
  // reaches all of the row, none of it, or part of it, and only then does the row's search read
  // its times, in the stretch between the two fences around the node's time.
  void TimeRows() {
    const TimeRows::Row* time_rows = et_.time_rows->Get(indptr_, rows_.num_local, edge_times_).data();
    NeighborDraw* out = out_;
    out->whole.resize(n_);
    out->searched.clear();
    out->search_ranges.clear();
    // A uniform draw of `fanout` from a row whose stretch starts at or past the fanout is made
    // before the cut is known (DrawPositionsPast): most such draws never need it.
    const bool deferrable = spec_.temporal == TemporalStrategy::kUniform && weights_ == nullptr && !replace_ &&
                            excluded_ == nullptr && fanout_ > 0;
    for (size_t i = 0; i < n_; ++i) {
      if (i + 2 * kAhead < n_) book_.Prefetch(ids_[i + 2 * kAhead]);
      if (i + kAhead < n_) PrefetchRead(time_rows + rows_.OwnerRow(ids_[i + kAhead]));
      const TimeRows::Row& r = time_rows[rows_.OwnerRow(ids_[i])];
      const int64_t d = r.end - r.begin;
      const int64_t t = spec_.times[i];
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
      } else if (deferrable && range.first >= fanout_ && range.second - range.first <= kDeferredStretch) {
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
        const int64_t* row = edge_times_ + out->base[out->searched[j + kAhead]];
        PrefetchRead(row + lo);
        PrefetchRead(row + hi - 1);
      }
      const size_t i = out->searched[j];
      const auto [lo, hi] = out->search_ranges[j];
      out->degree[i] = Cut(edge_times_ + out->base[i], lo, hi, spec_.times[i]);
    }
  }

  GS_INLINE bool DrawnTogether(int64_t degree) const {
    return weights_ != nullptr && !replace_ && degree <= kMediumWeightedRow;
  }

  // Rows of up to 256 drawn by weight without replacement are drawn together first (several
  // rows' picks overlap; each row's picks wait on each other), short and medium rows apart, as
  // bit masks Draw reads in node order. (A row that turns out to have excluded neighbours draws
  // again among the others.)
  void DrawTogether() {
    NeighborDraw* out = out_;
    out->short_rows.Clear();
    out->medium_rows.Clear();
    for (size_t i = 0; i < n_; ++i) {
      const int64_t d = out->degree[i];
      if (!DrawnTogether(d)) continue;
      auto& together = d <= kShortWeightedRow ? out->short_rows : out->medium_rows;
      together.Add(HashCombine(spec_.hop_key, static_cast<uint64_t>(ids_[i])), weights_ + out->base[i], d);
    }
    auto& shorts = out->short_rows;
    shorts.masks.resize(shorts.keys.size());
    DrawWeightedShortRows(shorts.keys.data(), shorts.weights.data(), shorts.degrees.data(), shorts.keys.size(), fanout_,
                          shorts.masks.data());
    auto& mediums = out->medium_rows;
    mediums.masks.resize(mediums.keys.size() * kMediumRowMasks);
    DrawWeightedMediumRows(mediums.keys.data(), mediums.weights.data(), mediums.degrees.data(), mediums.keys.size(),
                           fanout_, mediums.masks.data());
  }

  // A weighted draw reads the row's alias cells (with replacement; the draws land anywhere in
  // the row: every cache line of the row's first 64 cells) or, without replacement (rows of up
  // to 256 drew together), a long row's block sums and its weights (all of them up to
  // kWholeLongRow, else its first and last blocks, which may hold other rows' weights too and
  // are summed afresh).
  GS_INLINE void PrefetchWeights(size_t i) const {
    const int64_t d = out_->degree[i];
    const int64_t b = out_->base[i];
    if (alias_ != nullptr) {
      PrefetchLines(alias_->cells.data() + b, alias_->cells.data() + b + std::min<int64_t>(d, 64));
    } else if (blocks_ != nullptr && d <= kWeightTreeMinDegree) {
      PrefetchLines(blocks_ + b / kWeightBlock, blocks_ + (b + d - 1) / kWeightBlock + 1);
      if (d <= kWholeLongRow) {
        PrefetchLines(weights_ + b, weights_ + b + d);
      } else {
        PrefetchRead(weights_ + b);
        PrefetchRead(weights_ + b + d - 1);
      }
    }
  }

  // Pass 2: each node's draw, as CSR positions appended to out->picked.
  void Draw() {
    NeighborDraw* out = out_;
    const bool draw_all = fanout_ < 0;
    if (!draw_all && static_cast<int>(out->positions.size()) < fanout_) out->positions.resize(fanout_);
    out->picked.clear();
    out->pending.clear();
    out->counts.resize(n_);
    size_t next_deferred = 0, next_short = 0, next_medium = 0;
    for (size_t i = 0; i < n_; ++i) {
      if (weights_ != nullptr && i + kRowsAhead < n_ && !DrawnTogether(out->degree[i + kRowsAhead])) {
        PrefetchWeights(i + kRowsAhead);
      }
      if (next_deferred < out->deferred.size() && out->deferred[next_deferred] == i) {
        DrawDeferred(i, next_deferred++);
        continue;
      }
      int64_t degree = out->degree[i];
      // The masks of a row drawn together: one, or kMediumRowMasks for a row of more than 64.
      const uint64_t* drawn = !DrawnTogether(degree)          ? nullptr
                              : degree <= kShortWeightedRow ? &out->short_rows.masks[next_short++]
                                                            : &out->medium_rows.masks[kMediumRowMasks * next_medium++];
      const int drawn_masks = degree <= kShortWeightedRow ? 1 : kMediumRowMasks;
      // A node with excluded neighbours draws among the positions of the others.
      const int64_t* candidates = excluded_ != nullptr ? Candidates(i, &degree) : nullptr;
      if (weights_ != nullptr) {
        out->counts[i] = DrawWeighted(i, degree, candidates, drawn, drawn_masks);
      } else {
        out->counts[i] = DrawUniform(i, degree, candidates);
      }
    }
  }

  // Drawn among the positions before the stretch, which are allowed; a draw in which a
  // position of the stretch would take a slot takes it once the cut is found (TakePending).
  GS_INLINE void DrawDeferred(size_t i, size_t d) {
    NeighborDraw* out = out_;
    const int64_t base = out->base[i];
    const auto [lo, hi] = out->deferred_ranges[d];
    const uint64_t key = HashCombine(spec_.hop_key, static_cast<uint64_t>(ids_[i]));
    DrawNeighborPositions(key, lo, fanout_, false, out->positions.data());
    if (!PastSettled(key, lo, hi, fanout_)) {
      out->pending.push_back({key, out->base[i], lo, hi, spec_.times[i], out->picked.size()});
    }
    for (int k = 0; k < fanout_; ++k) out->picked.push_back(base + out->positions[k]);
    out->counts[i] = fanout_;
  }

  // The positions (in the row) of node i's neighbours that are not excluded, and their number
  // in *degree; null when none is excluded.
  GS_INLINE const int64_t* Candidates(size_t i, int64_t* degree) {
    auto lo = std::lower_bound(excluded_->begin(), excluded_->end(), std::make_pair(ids_[i], INT64_MIN));
    if (lo == excluded_->end() || lo->first != ids_[i]) return nullptr;
    auto hi = lo;
    while (hi != excluded_->end() && hi->first == ids_[i]) ++hi;
    const int64_t base = out_->base[i];
    out_->candidates.clear();
    for (int64_t k = 0; k < *degree; ++k) {
      const int64_t w = indices_[base + k];
      bool skip = false;
      for (auto it = lo; it != hi; ++it) skip |= it->second == w;
      if (!skip) out_->candidates.push_back(k);
    }
    *degree = static_cast<int64_t>(out_->candidates.size());
    return out_->candidates.data();
  }

  // Node i's draw by weight among `degree` neighbours (the row's, or its `candidates`): from the
  // masks drawn together, its alias table, its tree, its block sums, or the row's weights.
  GS_INLINE int64_t DrawWeighted(size_t i, int64_t degree, const int64_t* candidates, const uint64_t* drawn,
                                 int drawn_masks) {
    NeighborDraw* out = out_;
    const int64_t base = out->base[i];
    auto position = [&](int64_t k) { return base + (candidates != nullptr ? candidates[k] : k); };
    const float* w = weights_ + base;
    if (candidates != nullptr) {
      out->candidate_weights.resize(static_cast<size_t>(degree));
      for (int64_t k = 0; k < degree; ++k) out->candidate_weights[k] = weights_[position(k)];
      w = out->candidate_weights.data();
    }
    if (drawn != nullptr && candidates == nullptr) {
      int64_t c = 0;
      for (int g = 0; g < drawn_masks; ++g) {
        c += AppendMaskPositions(drawn[g], base + kShortWeightedRow * g, &out->picked);
      }
      return c;
    }
    const bool draw_all = fanout_ < 0;
    int64_t c;
    const uint64_t key = HashCombine(spec_.hop_key, static_cast<uint64_t>(ids_[i]));
    // (Rows of up to 256 drawn without replacement are not long: they draw in groups of 64.)
    const bool long_row = candidates == nullptr && degree > kWeightBlockMinDegree && !draw_all &&
                          (replace_ || degree > kMediumWeightedRow);
    const bool whole_row = edge_times_ == nullptr || out->whole[i];
    // Independent draws from a whole row take its alias table, when it has one.
    const bool by_alias = replace_ && whole_row && candidates == nullptr && !draw_all && degree <= kAliasMaxDegree;
    if (by_alias) {
      c = DrawWeightedFromAlias(key, alias_->cells.data() + base, degree, fanout_, &out->weighted_picks);
    } else if (long_row && degree > kWeightTreeMinDegree) {
      // (The row, or the whole row it is a prefix of, is that long, so it has a tree.)
      c = DrawWeightedFromTree(key, w, trees_->Of(base), degree, fanout_, replace_, &out->weighted_picks,
                               &out->weighted_scratch);
    } else if (long_row) {
      c = DrawWeightedFromBlocks(key, weights_, blocks_, base, degree, fanout_, replace_, &out->weighted_picks,
                                 &out->weighted_scratch);
    } else {
      c = DrawWeightedPositions(key, w, degree, fanout_, replace_, &out->weighted_picks, &out->weighted_keys);
    }
    for (int64_t k = 0; k < c; ++k) out->picked.push_back(position(out->weighted_picks[k]));
    return c;
  }

  // Node i's uniform draw (or all of its row, or its most recent `fanout` edges).
  GS_INLINE int64_t DrawUniform(size_t i, int64_t degree, const int64_t* candidates) {
    NeighborDraw* out = out_;
    const int64_t base = out->base[i];
    auto position = [&](int64_t k) { return base + (candidates != nullptr ? candidates[k] : k); };
    if (TakesWholeRow(fanout_, replace_, degree)) {
      for (int64_t k = 0; k < degree; ++k) out->picked.push_back(position(k));
      return degree;
    }
    if (spec_.temporal == TemporalStrategy::kLast) {
      // The most recent `fanout` (rows are sorted by time), oldest first.
      const int64_t c = std::min<int64_t>(fanout_, degree);
      for (int64_t k = degree - c; k < degree; ++k) out->picked.push_back(position(k));
      return c;
    }
    const int64_t c = DrawNeighborPositions(HashCombine(spec_.hop_key, static_cast<uint64_t>(ids_[i])), degree, fanout_,
                                            replace_, out->positions.data());
    for (int64_t k = 0; k < c; ++k) out->picked.push_back(position(out->positions[k]));
    return c;
  }

  // The deferred draws that need their cut: the stretch is read as a searched row's is, and
  // its allowed positions take their slots.
  void TakePending() {
    NeighborDraw* out = out_;
    const size_t pending = out->pending.size();
    for (size_t j = 0; j < pending; ++j) {
      if (j + kAhead < pending) {
        const NeighborDraw::Pending& ahead = out->pending[j + kAhead];
        PrefetchRead(edge_times_ + ahead.base + ahead.lo);
        PrefetchRead(edge_times_ + ahead.base + ahead.hi - 1);
      }
      const NeighborDraw::Pending& p = out->pending[j];
      const int64_t allowed = Cut(edge_times_ + p.base, p.lo, p.hi, p.time);
      TakePositionsPast(p.key, p.lo, allowed, fanout_, p.base, out->picked.data() + p.picks);
    }
  }

  // Pass 3: the picked positions' neighbour ids, edge ids and edge features.
  void Gather() {
    NeighborDraw* out = out_;
    const size_t m = out->picked.size();
    out->neighbors.resize(m);
    out->edge_ids.resize(spec_.with_edge_ids ? m : 0);
    for (size_t j = 0; j < m; ++j) {
      if (j + kAhead < m) PrefetchRead(indices_ + out->picked[j + kAhead]);
      out->neighbors[j] = indices_[out->picked[j]];
      if (spec_.with_edge_ids) out->edge_ids[j] = et_.EdgeId(out->picked[j]);
    }
    out->edge_features.clear();
    if (spec_.with_edge_features && et_.feature_dim > 0) {
      const size_t row_bytes = static_cast<size_t>(et_.feature_dim) * DtypeSize(et_.feature_dtype);
      const char* src = static_cast<const char*>(et_.features.raw());
      out->edge_features.resize(m * row_bytes);
      for (size_t j = 0; j < m; ++j) {
        std::memcpy(out->edge_features.data() + j * row_bytes, src + out->picked[j] * row_bytes, row_bytes);
      }
    }
  }

  const EdgeTypeStore& et_;
  const NodeTypeStore& rows_;
  const int64_t* const indptr_;
  const int64_t* const indices_;
  const NodeBook& book_;
  const int64_t* const ids_;
  const size_t n_;
  const DrawSpec& spec_;
  const int fanout_;
  const bool replace_;
  const float* const weights_;
  const int64_t* const edge_times_;
  const decltype(DrawSpec::excluded) excluded_;
  const double* blocks_ = nullptr;
  const WeightIndex::Alias* alias_ = nullptr;
  const WeightIndex::Trees* trees_ = nullptr;
  NeighborDraw* const out_;
};

#undef GS_INLINE

}  // namespace

void DrawOwnedNeighbors(const Partition& partition, int edge_type, const int64_t* ids, size_t n,
                        const DrawSpec& spec, NeighborDraw* out) {
  OwnedDraw(partition, edge_type, ids, n, spec, out).Run();
}

}  // namespace graphstore
