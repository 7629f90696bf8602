#include "server/sampling/draw.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "server/graph/alias_cells.h"
#include "server/sampling/medium_rows.h"
#include "server/sampling/short_rows.h"

namespace graphstore {

int64_t PermutedPosition(uint64_t key, int64_t n, int64_t x) {
  if (n <= 1) return 0;
  int bits = 64 - __builtin_clzll(static_cast<uint64_t>(n - 1));
  const int half = (bits + 1) / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  uint64_t v = static_cast<uint64_t>(x);
  do {
    uint64_t left = v >> half, right = v & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t next = left ^ (HashCombine(key + round, right) & mask);
      left = right;
      right = next;
    }
    v = (left << half) | right;
  } while (v >= static_cast<uint64_t>(n));
  return static_cast<int64_t>(v);
}
namespace {

// A weight a draw may pick: positive and finite (what an unverified partition holds otherwise
// counts as zero).
bool UsableWeight(float w) { return w > 0 && std::isfinite(w); }

// The draws that need no randomness: fanout -1, or without replacement a fanout at least the
// number of usable candidates, take every usable one in order (into `out`, true). Otherwise
// `out` is left empty and the caller draws.
bool TakesEveryUsable(const float* weights, int64_t n, int fanout, bool replace, std::vector<int64_t>* out) {
  out->clear();
  if (fanout >= 0 && (replace || fanout < n)) return false;
  for (int64_t k = 0; k < n; ++k) {
    if (UsableWeight(weights[k])) out->push_back(k);
  }
  if (fanout < 0 || static_cast<int64_t>(out->size()) <= fanout) return true;
  out->clear();
  return false;
}

// Successive sampling continued over the usable candidates not yet in `out`, each pick by a
// fresh sum of their weights and a scan: O(n) a pick, and exact whatever the weights' range (a
// running total loses the small weights once the large ones are taken from it).
void ContinueByScan(DrawStream& draws, const float* weights, int64_t n, int fanout, std::vector<int64_t>* out,
                    std::vector<double>* keys) {
  keys->assign(static_cast<size_t>(n), 0.0);
  for (int64_t k = 0; k < n; ++k) (*keys)[k] = UsableWeight(weights[k]) ? static_cast<double>(weights[k]) : 0.0;
  for (int64_t k : *out) (*keys)[k] = 0;
  while (static_cast<int64_t>(out->size()) < fanout) {
    double remaining = 0;
    for (int64_t k = 0; k < n; ++k) remaining += (*keys)[k];
    if (!(remaining > 0)) break;
    double x = draws.Uniform() * remaining;
    int64_t pick = -1;
    for (int64_t k = 0; k < n; ++k) {
      if ((*keys)[k] <= 0) continue;
      pick = k;  // the last usable one, should rounding leave x >= 0 at the end
      x -= (*keys)[k];
      if (x < 0) break;
    }
    out->push_back(pick);
    (*keys)[pick] = 0;
  }
}

}  // namespace

int64_t DrawWeightedPositions(uint64_t key, const float* weights, int64_t n, int fanout, bool replace,
                              std::vector<int64_t>* out, std::vector<double>* keys) {
  auto usable = [&](int64_t k) { return UsableWeight(weights[k]); };
  if (!replace && n <= kShortWeightedRow) {
    out->clear();
    return AppendMaskPositions(DrawWeightedShortRow(key, weights, n, fanout), 0, out);
  }
  if (!replace && n <= kMediumWeightedRow) {
    uint64_t masks[kMediumRowMasks];
    DrawWeightedMediumRow(key, weights, n, fanout, masks);
    out->clear();
    int64_t c = 0;
    for (int g = 0; g < kMediumRowMasks; ++g) c += AppendMaskPositions(masks[g], kShortWeightedRow * g, out);
    return c;
  }
  if (TakesEveryUsable(weights, n, fanout, replace, out)) return static_cast<int64_t>(out->size());
  if (fanout == 0) return 0;
  DrawStream draws(key);
  if (replace) {
    // Cumulative weights of the usable candidates; each draw finds its interval.
    keys->clear();
    double total = 0;
    for (int64_t k = 0; k < n; ++k) {
      total += usable(k) ? static_cast<double>(weights[k]) : 0.0;
      keys->push_back(total);
    }
    if (!(total > 0)) return 0;
    for (int d = 0; d < fanout; ++d) {
      const double x = draws.Uniform() * total;
      int64_t k = std::upper_bound(keys->begin(), keys->end(), x) - keys->begin();
      k = std::min(k, n - 1);
      while (!usable(k)) --k;  // x landed on the end of a run of zero weights: its owner is before
      out->push_back(k);
    }
    return fanout;
  }
  // Rows of more than 256 here have excluded candidates (their block sums count every
  // position).
  ContinueByScan(draws, weights, n, fanout, out, keys);
  std::sort(out->begin(), out->end());
  return static_cast<int64_t>(out->size());
}

int64_t DrawWeightedFromBlocks(uint64_t key, const float* weights, const double* block_sums, int64_t begin,
                               int64_t n, int fanout, bool replace, std::vector<int64_t>* out, WeightedScratch* s) {
  if (TakesEveryUsable(weights + begin, n, fanout, replace, out) || fanout == 0 || n == 0) {
    return static_cast<int64_t>(out->size());
  }
  const int64_t end = begin + n;
  const int64_t first = begin / kWeightBlock;
  const auto blocks = (end - 1) / kWeightBlock - first + 1;
  auto& sums = s->sums;
  auto& taken = s->taken;
  sums.assign(block_sums + first, block_sums + first + blocks);
  taken.assign(static_cast<size_t>(blocks), 0);
  // Block j's positions within the row: [lo, hi), the block starting at `at`.
  auto extent = [&](int64_t j, int64_t* at, int64_t* lo, int64_t* hi) {
    *at = (first + j) * kWeightBlock;
    *lo = std::max(begin, *at);
    *hi = std::min(end, *at + kWeightBlock);
  };
  // Block j's usable weights within the row, less those taken.
  auto block_sum = [&](int64_t j) {
    int64_t at, lo, hi;
    extent(j, &at, &lo, &hi);
    double sum = 0;
    for (int64_t p = lo; p < hi; ++p) {
      const bool left = UsableWeight(weights[p]) && (taken[j] >> (p - at) & 1) == 0;
      sum += left ? static_cast<double>(weights[p]) : 0.0;
    }
    return sum;
  };
  auto sum_afresh = [&] {
    double total = 0;
    for (double v : sums) total += v;
    return total;
  };
  // The row's first and last blocks may hold other rows' positions.
  if (begin % kWeightBlock != 0) sums[0] = block_sum(0);
  if (end % kWeightBlock != 0) sums[blocks - 1] = block_sum(blocks - 1);
  double total = sum_afresh();
  DrawStream draws(key);
  while (total > 0 && static_cast<int64_t>(out->size()) < fanout) {
    // The block whose share of what is left holds the point, then the position within it.
    double x = draws.Uniform() * total;
    int64_t j = 0;
    while (j + 1 < blocks && x >= sums[j]) x -= sums[j++];
    while (j > 0 && !(sums[j] > 0)) --j;  // rounding carried x past the last block with weight left
    int64_t at, lo, hi;
    extent(j, &at, &lo, &hi);
    int64_t pick = -1;
    for (int64_t p = lo; p < hi; ++p) {
      if (!UsableWeight(weights[p]) || (taken[j] >> (p - at) & 1) != 0) continue;
      pick = p;  // the last one left, should rounding leave x past the block's end
      x -= static_cast<double>(weights[p]);
      if (x < 0) break;
    }
    if (pick < 0) {
      // The block's sum and the running total held only rounding: both are summed exactly.
      sums[j] = block_sum(j);
      total = sum_afresh();
      continue;
    }
    out->push_back(pick - begin);
    if (replace) continue;
    taken[j] |= static_cast<uint16_t>(1u << (pick - at));
    const double before = sums[j];
    const double w = static_cast<double>(weights[pick]);
    // When the pick took most of its block, or of the row, what is left is summed afresh:
    // subtracting would leave it with the rounding of the larger sum.
    sums[j] = w > 0.5 * before ? block_sum(j) : before - w;
    total = before - sums[j] > 0.5 * total ? sum_afresh() : total - (before - sums[j]);
  }
  if (!replace) std::sort(out->begin(), out->end());
  return static_cast<int64_t>(out->size());
}

int64_t DrawWeightedFromTree(uint64_t key, const float* weights, const double* tree, int64_t n, int fanout,
                             bool replace, std::vector<int64_t>* out, WeightedScratch* s) {
  auto usable = [&](int64_t k) { return UsableWeight(weights[k]); };
  if (!replace && n <= kShortWeightedRow) {
    out->clear();
    return AppendMaskPositions(DrawWeightedShortRow(key, weights, n, fanout), 0, out);
  }
  if (TakesEveryUsable(weights, n, fanout, replace, out)) return static_cast<int64_t>(out->size());
  if (fanout == 0 || n == 0) return 0;
  double total = 0;
  for (int64_t i = n; i > 0; i -= i & -i) total += tree[i - 1];
  if (!(total > 0)) return 0;
  int64_t top = 1;
  while (top * 2 <= n) top *= 2;
  // The item whose interval of the row's weight holds x.
  auto find = [&](double x) {
    int64_t pos = 0;
    for (int64_t step = top; step > 0; step >>= 1) {
      const int64_t next = pos + step;
      if (next > n) continue;
      // Left or right is a coin toss a branch would mispredict half the time: selects instead.
      const double v = tree[next - 1];
      const bool right = v <= x;
      pos = right ? next : pos;
      x -= right ? v : 0.0;
    }
    return std::min(pos, n - 1);
  };
  DrawStream draws(key);
  if (replace) {
    for (int d = 0; d < fanout; ++d) {
      int64_t k = find(draws.Uniform() * total);
      // Rounding may land on an unusable neighbour of the right one: the nearest usable before.
      while (k > 0 && !usable(k)) --k;
      while (!usable(k)) ++k;
      out->push_back(k);
    }
    return fanout;
  }
  // Without replacement the tree stays as it is: a point drawn under the weight left is carried
  // past the intervals of the items already taken (in the order they lie in the row), which
  // puts it where it falls among the items left.
  double remaining = total;
  const double epsilon = total * 1e-12;
  auto taken = [&](int64_t k) { return std::find(out->begin(), out->end(), k) != out->end(); };
  s->intervals.clear();  // (start of the item's interval, its weight), by start
  while (static_cast<int64_t>(out->size()) < fanout) {
    if (!(remaining > epsilon)) {
      // What is left is below the tree's rounding (weights over 12 orders of magnitude apart):
      // the rest of the draw sums the candidates left afresh.
      ContinueByScan(draws, weights, n, fanout, out, &s->exact);
      break;
    }
    double x = draws.Uniform() * remaining;
    for (const auto& [start, w] : s->intervals) {
      if (start > x) break;
      x += w;
    }
    int64_t k = find(x);
    if (!usable(k) || taken(k)) {
      // Rounding at an interval's edge: the nearest usable item not yet taken.
      int64_t lo = k, hi = k;
      k = -1;
      while (k < 0 && (lo > 0 || hi < n - 1)) {
        if (hi < n - 1 && usable(++hi) && !taken(hi)) k = hi;
        else if (lo > 0 && usable(--lo) && !taken(lo)) k = lo;
      }
      if (k < 0) break;
    }
    out->push_back(k);
    const double w = static_cast<double>(weights[k]);
    remaining -= w;
    double start = 0;
    for (int64_t i = k; i > 0; i -= i & -i) start += tree[i - 1];
    s->intervals.insert(std::upper_bound(s->intervals.begin(), s->intervals.end(), std::make_pair(start, w)), {start, w});
  }
  std::sort(out->begin(), out->end());
  return static_cast<int64_t>(out->size());
}

int64_t DrawWeightedFromAlias(uint64_t key, const uint32_t* cells, int64_t n, int fanout, std::vector<int64_t>* out) {
  out->clear();
  if (n <= 0 || fanout <= 0 || cells[0] == AliasNone(n)) return 0;
  const int bits = AliasBits(n);
  // Each draw's top 32 bits pick the cell, its lowest 32 - bits bits are compared with the
  // cell's threshold.
  const uint32_t alias_mask = (1u << bits) - 1;
  const uint64_t below_mask = (uint64_t{1} << (32 - bits)) - 1;
  DrawStream draws(key);
  for (int d = 0; d < fanout; ++d) {
    const uint64_t x = draws.Next();
    const auto k = static_cast<int64_t>(((x >> 32) * static_cast<uint64_t>(n)) >> 32);
    const uint32_t c = cells[k];
    out->push_back((x & below_mask) < (c >> bits) ? k : static_cast<int64_t>(c & alias_mask));
  }
  return fanout;
}

int64_t DrawNeighborPositions(uint64_t key, int64_t degree, int fanout, bool replace, int64_t* out) {
  if (degree <= 0 || fanout == 0) return 0;
  if (fanout < 0 || (!replace && fanout >= degree)) {
    for (int64_t i = 0; i < degree; ++i) out[i] = i;
    return degree;
  }
  DrawStream rng(key);
  if (replace) {
    for (int i = 0; i < fanout; ++i) out[i] = static_cast<int64_t>(rng.Below(degree));
    return fanout;
  }
  const int64_t k = fanout;
  if (k <= 32) {
    // Floyd's algorithm: k draws, each checked against the few already chosen.
    int64_t n = 0;
    for (int64_t j = degree - k; j < degree; ++j) {
      const int64_t t = static_cast<int64_t>(rng.Below(j + 1));
      bool seen = false;
      for (int64_t i = 0; i < n; ++i) seen |= out[i] == t;
      out[n++] = seen ? j : t;
    }
    return n;
  }
  // Selection sampling (Knuth's algorithm S): one pass, already ascending.
  int64_t chosen = 0;
  for (int64_t i = 0; i < degree && chosen < k; ++i) {
    if (static_cast<double>(degree - i) * rng.Uniform() < static_cast<double>(k - chosen)) {
      out[chosen++] = i;
    }
  }
  return chosen;
}

void DrawPositionsPast(uint64_t key, int64_t known, int64_t allowed, int fanout, int64_t* out) {
  DrawNeighborPositions(key, known, fanout, false, out);
  TakePositionsPast(key, known, allowed, fanout, 0, out);
}

}  // namespace graphstore
