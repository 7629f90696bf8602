#ifndef GRAPHSTORE_TOOLS_ELIAS_FANO_H_
#define GRAPHSTORE_TOOLS_ELIAS_FANO_H_

// An ascending sequence of distinct int64 values in Elias-Fano form: each value's low L bits
// packed, its high bits in unary in a bit vector (a one per value, a zero per bucket of 2^L), so
// n values spread over a range U take about n (2 + log2(U / n)) bits — 4.6 bytes a value for
// 250M ids spread over 2^63 — and the k-th value, the rank of a value and the first value at or
// after any bound are each a sampled select and a short scan.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace graphstore {

class EliasFano {
 public:
  /// Starts a sequence of `n` values in [lo, hi]; Add them in ascending order, then Finish.
  void Begin(int64_t n, int64_t lo, int64_t hi);
  void Add(int64_t value);
  void Finish();

  int64_t size() const { return n_; }
  /// The k-th value, 0 <= k < size().
  int64_t At(int64_t k) const;
  /// The index of the first value >= `value` (size() when none).
  int64_t LowerBound(int64_t value) const;
  /// The index of `value`, or -1 when it is not in the sequence.
  int64_t Find(int64_t value) const;
  /// Bytes held.
  int64_t bytes() const;
  /// Bytes n values in [lo, hi] take.
  static int64_t BytesFor(int64_t n, int64_t lo, int64_t hi);

 private:
  static constexpr int64_t kSample = 256;  // every 256th one and zero sampled
  static int LowBits(int64_t n, uint64_t span);
  uint64_t Low(int64_t k) const;
  bool High(int64_t pos) const { return high_[static_cast<size_t>(pos >> 6)] >> (pos & 63) & 1; }
  // Position of the k-th one (k-th zero) of the high bits.
  int64_t Select(const std::vector<int64_t>& samples, uint64_t flip, int64_t k) const;
  int64_t SelectOne(int64_t k) const { return Select(ones_, 0, k); }
  int64_t SelectZero(int64_t k) const { return Select(zeros_, ~uint64_t{0}, k); }

  int64_t n_ = 0;
  int64_t lo_ = 0;
  int low_bits_ = 0;
  int64_t added_ = 0;
  int64_t high_bits_ = 0;           // length of the high bit vector
  std::vector<uint64_t> low_;        // n * low_bits_ bits
  std::vector<uint64_t> high_;       // a one per value at (value >> L) + its index
  std::vector<int64_t> ones_, zeros_;  // position of every kSample-th one and zero
};

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_ELIAS_FANO_H_
