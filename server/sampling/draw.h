#ifndef GRAPHSTORE_SERVER_SAMPLING_DRAW_H_
#define GRAPHSTORE_SERVER_SAMPLING_DRAW_H_

// Deterministic random draws. Every random choice graphstore makes is a pure function of a
// 64-bit key built from (channel seed, epoch, batch, hop, edge type, node id), so results do
// not depend on thread timing, on which worker ran a batch, or on how the graph is
// partitioned: any server that owns a node draws the same neighbours for it.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/util/mix.h"
#include "server/util/prefetch.h"

namespace graphstore {

/// Whether and how neighbour draws respect time (graphstore.v1.TemporalStrategy): not at all,
/// uniformly among the neighbours at or before a node's time, or the most recent of them.
enum class TemporalStrategy { kNone, kUniform, kLast };

/// Combines a key with another value (order matters).
inline uint64_t HashCombine(uint64_t key, uint64_t value) { return Mix64(key ^ Mix64(value)); }

/// A stable hash of a string (FNV-1a, mixed), for edge type names in keys.
inline uint64_t HashString(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return Mix64(h);
}

/// Key of one hop of one batch: every node's draw at that hop derives from it.
inline uint64_t HopKey(uint64_t seed, int64_t epoch, int64_t batch, int hop, uint64_t edge_type_hash) {
  uint64_t k = Mix64(seed);
  k = HashCombine(k, static_cast<uint64_t>(epoch));
  k = HashCombine(k, static_cast<uint64_t>(batch));
  k = HashCombine(k, static_cast<uint64_t>(hop));
  return HashCombine(k, edge_type_hash);
}

/// A counter-based stream of uniform 64-bit values from one key.
class DrawStream {
 public:
  explicit DrawStream(uint64_t key) : key_(key) {}
  uint64_t Next() { return Mix64(key_ + 0x632be59bd9b4e019ULL * ++counter_); }
  /// Uniform in [0, n) for n > 0 (multiply-shift; bias below 2^-40 for n < 2^24).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  /// Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

/// How many items ahead a pass over a batch's nodes or edges asks for the random line the item
/// will read (CSR extents, neighbour ids, times): far enough for the misses to overlap, near
/// enough that the lines are still cached when their turn comes.
inline constexpr size_t kPrefetchAhead = 32;

/// Asks for every cache line of [from, to) ahead of its use (a draw's rows are read at random).
template <typename T>
void PrefetchLines(const T* from, const T* to) {
  constexpr uintptr_t kLine = 64;
  for (uintptr_t p = reinterpret_cast<uintptr_t>(from) & ~(kLine - 1); p < reinterpret_cast<uintptr_t>(to); p += kLine) {
    PrefetchRead(reinterpret_cast<const void*>(p));
  }
}

/// Key of the seed permutation of one epoch of a channel.
inline uint64_t ShuffleKey(uint64_t seed, int64_t epoch) {
  return HashCombine(HashCombine(Mix64(seed), 0x5368756666ULL), static_cast<uint64_t>(epoch));
}

/// Permutes `values` in place (Fisher-Yates driven by a DrawStream of `key`): the same key
/// gives the same permutation on every platform.
template <typename T>
void DeterministicShuffle(uint64_t key, T* values, size_t n) {
  DrawStream rng(key);
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.Below(i));
    std::swap(values[i - 1], values[j]);
  }
}

/// Position `x` of a keyed permutation of [0, n): a 4-round Feistel network over the smallest
/// even number of bits that covers n, applied again while the result falls outside [0, n)
/// (cycle walking, fewer than 4 times on average), so that it is a bijection of [0, n) computed
/// per position, never stored, the same on every platform.
int64_t PermutedPosition(uint64_t key, int64_t n, int64_t x);

/// Positions [first, first + count) of a channel's epoch order over `n` seeds: the permutation
/// keyed by (seed, epoch) (scheduler::EpochOrder).
inline void EpochPositions(uint64_t seed, int64_t epoch, int64_t n, int64_t first, size_t count, int64_t* out) {
  const uint64_t key = ShuffleKey(seed, epoch);
  for (size_t i = 0; i < count; ++i) out[i] = PermutedPosition(key, n, first + static_cast<int64_t>(i));
}

/// Picks `fanout` of a node's neighbours with probability proportional to `weights[k]` (one
/// per candidate k in [0, n)), writing candidate indices to `out` and returning how many were
/// written. Candidates whose weight is not a positive finite number are never picked; fanout < 0
/// takes every other one. Without replacement: successive sampling (each pick proportional to
/// weight among those left: rows of up to 64 candidates by vectors of running sums, up to 256 in
/// groups of 64, longer ones by a scan, O(fanout n)), min(fanout, positive) distinct indices in
/// increasing order; with replacement: fanout independent draws
/// (none when no weight is positive). Depends only on (key, weights, fanout, replace). `keys`
/// is scratch.
int64_t DrawWeightedPositions(uint64_t key, const float* weights, int64_t n, int fanout, bool replace,
                              std::vector<int64_t>* out, std::vector<double>* keys);

/// Rows longer than this draw by weight from the sums of their weights in blocks
/// (DrawWeightedFromBlocks) — without replacement only past kMediumWeightedRow (medium_rows.h);
/// shorter ones, and rows with excluded edges, by DrawWeightedPositions.
inline constexpr int64_t kWeightBlockMinDegree = 64;

/// CSR positions per block of the block sums: 16 float weights, one cache line.
inline constexpr int64_t kWeightBlock = 16;

/// Rows longer than this draw from their Fenwick tree (DrawWeightedFromTree) instead: a walk
/// over a row's block sums costs one step per 16 edges, a tree descent one per doubling.
inline constexpr int64_t kWeightTreeMinDegree = 4096;

/// Scratch of DrawWeightedFromBlocks and DrawWeightedFromTree.
struct WeightedScratch {
  std::vector<double> sums;                          // blocks: per block of the row, its weight left
  std::vector<uint16_t> taken;                       // blocks: per block, its positions taken
  std::vector<std::pair<double, double>> intervals;  // tree: the intervals of the items taken so far
  std::vector<double> exact;                         // tree: the rest of a draw past the tree's rounding
};

/// The same distributions as DrawWeightedPositions over the first `n` positions of the row
/// that starts at CSR position `begin`, from the sums of the edge type's usable weights in
/// aligned blocks: `weights` is the edge type's whole array and `block_sums[b]` the sum of its
/// usable weights in [16 b, 16 b + 16), as WeightIndex::GetBlocks builds them. A pick walks
/// the row's block sums (contiguous, read once for all its picks) to its block, then that
/// block's 16 weights (one cache line); without replacement each pick is drawn under the sums
/// of what is left (a block the pick took most of is summed afresh), exact whatever the
/// weights' range. Row offsets in increasing order without replacement, in draw order with it.
int64_t DrawWeightedFromBlocks(uint64_t key, const float* weights, const double* block_sums, int64_t begin,
                               int64_t n, int fanout, bool replace, std::vector<int64_t>* out,
                               WeightedScratch* scratch);

/// The same distributions as DrawWeightedPositions over the first `n` positions of a row, in
/// O(fanout log n) from the row's Fenwick tree `tree` (tree[i - 1] = sum of the usable weights
/// (i - lowbit(i), i], as WeightIndex::BuildTree builds it; `weights` the row's): successive
/// sampling without replacement (each point drawn under the weight left and carried past the
/// intervals already taken), independent draws with it. Row offsets in increasing order without
/// replacement, in draw order with it.
int64_t DrawWeightedFromTree(uint64_t key, const float* weights, const double* tree, int64_t n, int fanout,
                             bool replace, std::vector<int64_t>* out, WeightedScratch* scratch);

/// Independent weighted draws from the alias table of a row of `n` <= kAliasMaxDegree edges
/// (its cells, WeightIndex::Alias): `fanout` row offsets in draw order, none when the row has
/// no positive weight. O(fanout).
int64_t DrawWeightedFromAlias(uint64_t key, const uint32_t* cells, int64_t n, int fanout, std::vector<int64_t>* out);

/// Picks which of a node's `degree` neighbours to take, writing positions in [0, degree) to
/// `out` (room for min(fanout, degree) values, or fanout with replacement) and returning how
/// many were written. fanout < 0 takes all. Without replacement the positions are distinct and
/// every subset of size fanout is equally likely; with replacement they are independent uniform
/// draws. The values and their order depend only on (key, degree, fanout, replace).
int64_t DrawNeighborPositions(uint64_t key, int64_t degree, int fanout, bool replace, int64_t* out);

/// Whether a uniform draw of `fanout` from a row of `degree` neighbours takes the whole row, in
/// row order, without drawing: fanout < 0, or without replacement from a row no longer than the
/// fanout. Wherever a uniform draw is made (from a partition's CSR row or from a copy of it),
/// this decides it, so every copy draws alike.
inline bool TakesWholeRow(int fanout, bool replace, int64_t degree) {
  return fanout < 0 || (!replace && degree <= fanout);
}

/// The slot of a row's position x in a draw of `fanout` past `known` positions (below): uniform
/// in [0, x], so x takes slot r when r < fanout. A counter-based stream like DrawStream's, keyed
/// apart from it.
inline uint64_t SlotPast(uint64_t key, int64_t x) {
  const uint64_t v = Mix64((key ^ 0x7265736572766f69ULL) + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(x));
  return static_cast<uint64_t>((static_cast<unsigned __int128>(v) * (static_cast<uint64_t>(x) + 1)) >> 64);
}

/// Picks `fanout` distinct positions among a row's first `allowed`, every subset equally likely,
/// for 0 < fanout <= known <= allowed: DrawNeighborPositions(key, known, fanout) (the first
/// `known` positions, in `out`), then each later position x < allowed in turn taking slot
/// SlotPast(key, x) of `out` when that is below the fanout (reservoir sampling). For a temporal
/// row whose allowed prefix is only known to lie between `known` and some `most`: when
/// PastSettled(key, known, most, fanout), every such prefix gives the picks of `known`.
/// Depends only on (key, known, allowed, fanout).
void DrawPositionsPast(uint64_t key, int64_t known, int64_t allowed, int fanout, int64_t* out);

/// DrawPositionsPast's second half: each position x in [from, to) taking slot SlotPast(key, x)
/// of `out` when that is below the fanout, written as base + x.
inline void TakePositionsPast(uint64_t key, int64_t from, int64_t to, int fanout, int64_t base, int64_t* out) {
  for (int64_t x = from; x < to; ++x) {
    const uint64_t slot = SlotPast(key, x);
    if (slot < static_cast<uint64_t>(fanout)) out[slot] = base + x;
  }
}

/// Whether no position in [known, most) takes a slot in DrawPositionsPast: then its picks are
/// the same for every `allowed` from `known` to `most`.
inline bool PastSettled(uint64_t key, int64_t known, int64_t most, int fanout) {
  bool settled = true;
  for (int64_t x = known; x < most; ++x) settled &= SlotPast(key, x) >= static_cast<uint64_t>(fanout);
  return settled;
}

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_DRAW_H_
