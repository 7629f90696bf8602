#ifndef GRAPHSTORE_SERVER_GRAPH_SAMPLING_INDEXES_H_
#define GRAPHSTORE_SERVER_GRAPH_SAMPLING_INDEXES_H_

// The indexes an edge type builds over its stored weights and times for the samplers' weighted
// and temporal draws. Each is built on first use, over every core, from the CSR arrays it is
// given, and is then read-only: safe to share across threads.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "server/graph/alias_cells.h"
#include "server/util/huge_pages.h"

namespace graphstore {

/// Indexes of an edge type's weights for weighted draws, built on first use: sums of the
/// weights in blocks (draws without replacement, and from a prefix of a row), Fenwick trees of
/// the longest rows (the same draws, where walking the blocks would take long) and per-row
/// alias tables (independent draws from a whole row). Weights that are not positive and finite
/// count as 0.
class WeightIndex {
 public:
  /// What the index is of (the edge type's name), for the log lines its builds write.
  std::string label;
  /// CSR positions per block of GetBlocks: 16 float weights, one cache line.
  static constexpr int64_t kBlock = 16;
  /// Sums of the usable weights (positive and finite; others count as 0) of the edge type's
  /// `num_edges` CSR positions in aligned blocks: entry b covers positions [16 b, 16 b + 16),
  /// whichever rows they belong to.
  const HugePageVector<double>& GetBlocks(int64_t num_edges, const float* weights) const;

  /// Rows longer than this also get a Fenwick tree (GetTrees).
  static constexpr int64_t kTreeMinDegree = 4096;
  /// The Fenwick trees of the rows longer than kTreeMinDegree, one after another.
  struct Trees {
    std::vector<int64_t> starts;   ///< each such row's first CSR position, ascending
    std::vector<int64_t> offsets;  ///< where its tree begins in `sums`
    HugePageVector<double> sums;
    /// The tree of the row that starts at CSR position `begin`, or null when it has none.
    const double* Of(int64_t begin) const;
  };
  const Trees& GetTrees(const int64_t* indptr, int64_t rows, const float* weights) const;
  /// Writes the Fenwick tree of a row's `d` weights `w` to `tree`: tree[i - 1] is the sum of
  /// the usable weights in (i - lowbit(i), i].
  static void BuildTree(const float* w, int64_t d, double* tree);

  /// Walker's alias tables of the same rows, for independent draws in O(1), one 32-bit cell
  /// per position of a row of up to kAliasMaxDegree edges (alias_cells.h): its low
  /// AliasBits(degree) bits hold the alias (an offset within the row), the bits above them the
  /// threshold under which a uniform draw of as many bits keeps the position itself instead.
  /// Thresholds are rounded to those bits (24 or more for rows of up to 255 edges, 16 or more up
  /// to kAliasMaxDegree); a position kept whole is its own alias, one that cannot be drawn has
  /// threshold 0. A row without a positive weight holds AliasNone(degree) in its first cell.
  /// Longer rows have no table (their independent draws use their Fenwick trees).
  struct Alias {
    HugePageVector<uint32_t> cells;
    int64_t longest_row = 0;  ///< the longest row's degree: over kAliasMaxDegree, trees serve it
  };
  const Alias& GetAlias(const int64_t* indptr, int64_t rows, const float* weights) const;

  /// Bytes of the indexes built so far (each counted once its build is done).
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<int64_t> bytes_{0};
  mutable std::once_flag alias_once_, blocks_once_, trees_once_;
  mutable HugePageVector<double> blocks_;
  mutable Trees trees_;
  mutable Alias alias_;
};

/// Each row's extent, time range and time fences side by side, for temporal draws: one cache
/// line per node tells whether its time reaches the whole row, none of it, or where inside it
/// the cut falls. The fences are the times at evenly spaced offsets, kept as steps above the
/// row's oldest time (shifted right so that the newest fits): fifteen 16-bit steps for rows of
/// up to 16 edges, thirty-one 8-bit steps for longer rows. They give the cut outright for rows
/// of up to 32 edges and otherwise narrow the search to one short stretch of the row's times
/// (whose lines can be fetched ahead); only a time that falls in a fence's own step leaves that
/// fence undecided. Built on first use from an edge type that stores times.
class TimeRows {
 public:
  /// What the index is of (the edge type's name), for the log line its build writes.
  std::string label;
  /// Rows of up to kWideRow edges keep kWideFences 16-bit fences; longer ones kNarrowFences
  /// 8-bit fences, in the same 31 bytes.
  static constexpr int64_t kWideRow = 16;
  static constexpr int kWideFences = 15;
  static constexpr int kNarrowFences = 31;
  struct alignas(64) Row {
    int64_t begin = 0;   ///< CSR position of the row's first edge
    int64_t end = 0;     ///< one past its last
    int64_t oldest = 0;  ///< the row's first edge time (rows are sorted by time); 0 when empty
    int64_t newest = 0;  ///< its last
    /// Fence j (in 0..Fences(degree) - 1) is Step(time at row offset FencePosition(j + 1,
    /// degree)): little-endian at bytes 2j and 2j + 1 for rows of up to kWideRow edges, at byte
    /// j for longer ones.
    uint8_t fences[kNarrowFences] = {};
    uint8_t shift = 0;  ///< the fences' step is 2^shift
  };
  static_assert(sizeof(Row) == 64 && offsetof(Row, fences) == 32);
  /// How many fences a row of `degree` edges keeps, and how many bits each.
  static int Fences(int64_t degree) { return degree <= kWideRow ? kWideFences : kNarrowFences; }
  static int FenceBits(int64_t degree) { return degree <= kWideRow ? 16 : 8; }
  /// Row offset of fence j in 1..Fences(degree) (offset 0 for j = 0, the degree for j =
  /// Fences(degree) + 1).
  static int64_t FencePosition(int j, int64_t degree) { return degree * j / (Fences(degree) + 1); }
  /// The step of time t in a row, for oldest <= t <= newest.
  static uint64_t Step(const Row& row, int64_t t) {
    return (static_cast<uint64_t>(t) - static_cast<uint64_t>(row.oldest)) >> row.shift;
  }
  /// Fence j of a row of `degree` edges, read and written.
  static uint64_t Fence(const Row& row, int64_t degree, int j) {
    if (degree > kWideRow) return row.fences[j];
    return row.fences[2 * j] | static_cast<uint64_t>(row.fences[2 * j + 1]) << 8;
  }
  static void SetFence(Row* row, int64_t degree, int j, uint64_t step) {
    if (degree > kWideRow) {
      row->fences[j] = static_cast<uint8_t>(step);
    } else {
      row->fences[2 * j] = static_cast<uint8_t>(step);
      row->fences[2 * j + 1] = static_cast<uint8_t>(step >> 8);
    }
  }
  /// The stretch [lo, hi) of a row's offsets that a search for time t must read, for
  /// oldest <= t < newest: every offset before lo holds a time <= t, every offset from hi on
  /// (or the row's last) a later one. Empty (lo >= hi) when the fences alone give the cut, lo.
  static std::pair<int64_t, int64_t> SearchRange(const Row& row, int64_t t) {
    const int64_t d = row.end - row.begin;
    const uint64_t step = Step(row, t);
    const int fences = Fences(d);
    // Fences in an earlier step hold earlier times, fences in a later step later ones; a
    // fence in t's own step is undecided unless steps are single time units. The fences rise
    // with their offsets, so those before t's step come first and those after it last: each
    // side is counted by the first fence that leaves it.
    int before = 0, through = 0;
#if defined(__SSE2__)
    // The fence bytes are the line's second half (16-byte aligned), the shift its last byte:
    // compared as signed after flipping their top bits, sixteen bytes or eight 16-bit fences to
    // a register, one mask bit a byte.
    const __m128i low = _mm_load_si128(reinterpret_cast<const __m128i*>(row.fences));
    const __m128i high = _mm_load_si128(reinterpret_cast<const __m128i*>(row.fences + 16));
    auto bits = [](__m128i lo_mask, __m128i hi_mask) {
      return static_cast<uint32_t>(_mm_movemask_epi8(lo_mask)) | static_cast<uint32_t>(_mm_movemask_epi8(hi_mask)) << 16;
    };
    if (d > kWideRow) {
      const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
      const __m128i at = _mm_xor_si128(_mm_set1_epi8(static_cast<char>(step)), flip);
      const __m128i l = _mm_xor_si128(low, flip), h = _mm_xor_si128(high, flip);
      constexpr uint32_t kShiftBit = uint32_t{1} << kNarrowFences;  // the shift byte's mask bit
      before = __builtin_ctz(~bits(_mm_cmplt_epi8(l, at), _mm_cmplt_epi8(h, at)) | kShiftBit);
      through = __builtin_ctz(bits(_mm_cmpgt_epi8(l, at), _mm_cmpgt_epi8(h, at)) | kShiftBit);
    } else {
      const __m128i flip = _mm_set1_epi16(static_cast<int16_t>(0x8000));
      const __m128i at = _mm_xor_si128(_mm_set1_epi16(static_cast<int16_t>(step)), flip);
      const __m128i l = _mm_xor_si128(low, flip), h = _mm_xor_si128(high, flip);
      constexpr uint32_t kPastFences = uint32_t{1} << (2 * kWideFences);  // two bytes a fence; not the last pair
      before = __builtin_ctz(~bits(_mm_cmplt_epi16(l, at), _mm_cmplt_epi16(h, at)) | kPastFences) / 2;
      through = __builtin_ctz(bits(_mm_cmpgt_epi16(l, at), _mm_cmpgt_epi16(h, at)) | kPastFences) / 2;
    }
#else
    while (before < fences && Fence(row, d, before) < step) ++before;
    through = before;
    while (through < fences && Fence(row, d, through) <= step) ++through;
#endif
    if (row.shift == 0) before = through;
    const int64_t lo = FencePosition(before, d) + 1;
    const int64_t hi = through == fences ? d - 1 : FencePosition(through + 1, d);
    return {lo, std::max(lo, hi)};
  }
  const HugePageVector<Row>& Get(const int64_t* indptr, int64_t rows, const int64_t* times) const;

  /// Bytes of the index once built (0 before).
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<int64_t> bytes_{0};
  mutable std::once_flag once_;
  mutable HugePageVector<Row> rows_;
};

/// Nodes drawn in proportion to their degree (link prediction's degree negatives), from an edge
/// type's dst_degree.npy. Position u of the running sum of the degrees, in destination id order,
/// is node i when sum(degree[0, i)) <= u < sum(degree[0, i]): the same node on any number of
/// partitions. Server `self` of `parts` keeps the sums of one range of destination ids,
/// [Begin(self), Begin(self + 1)), its share by id and not by owner: a running total at every
/// 64th node and each node's degree in the fewest bytes the largest fits, about 1.1 to 2.1 bytes
/// a node of its range; positions in other ranges are their servers' to resolve
/// (FindDegreeNodes). Built on first use and shared by every channel.
class DegreeIndex {
 public:
  static constexpr int64_t kBlock = 64;
  /// Builds the index once from all `n` degrees (>= 0), read once: every range's total and the
  /// sums of range `self` of `parts`. Later calls return it (a server passes one `parts`, `self`).
  const DegreeIndex& Get(const int64_t* degree, int64_t n, int parts, int self) const;
  /// The sum of every degree.
  int64_t total() const { return range_before_.back(); }
  int parts() const { return static_cast<int>(range_before_.size()) - 1; }
  int self() const { return self_; }
  /// The first destination id of range `r` of `parts` over `n` ids.
  static int64_t Begin(int64_t n, int parts, int r);
  /// The ranges a server keeps for `n` destination ids, as (parts, self) for Get: the whole sum
  /// (1, 0) where it fits in `whole_bytes` at two bytes a node, else range `partition` of
  /// `partitions`.
  static std::pair<int, int> Ranges(int64_t n, int partitions, int partition, int64_t whole_bytes) {
    return n <= whole_bytes / 2 ? std::pair<int, int>{1, 0} : std::pair<int, int>{partitions, partition};
  }
  /// The range holding position u, for 0 <= u < total().
  int RangeOf(int64_t u) const;
  /// The positions of this server's range, [first, end).
  int64_t first_position() const { return range_before_[self_]; }
  int64_t end_position() const { return range_before_[self_ + 1]; }
  /// The node at position u, which must be in this server's range.
  int64_t NodeAt(int64_t u) const;
  /// Bytes of the index once built (0 before).
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  int64_t DegreeOf(int64_t i) const;

  mutable std::atomic<int64_t> bytes_{0};
  mutable std::once_flag once_;
  mutable int self_ = 0;
  mutable int64_t first_ = 0;  // the range's first destination id
  mutable int width_ = 1;
  mutable std::vector<int64_t> range_before_ = {0};  // the sum of the degrees before each range, then all
  mutable std::vector<int64_t> before_;  // the sum of the degrees before each block of the range
  mutable std::vector<uint8_t> degrees_;  // width_ bytes a node of the range, little-endian
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_SAMPLING_INDEXES_H_
