#include "tools/elias_fano.h"

#include <algorithm>

namespace graphstore {

int EliasFano::LowBits(int64_t n, uint64_t span) {
  // floor(log2(span / n)), 0 when the values are denser than one a bucket.
  const uint64_t per = n > 0 ? span / static_cast<uint64_t>(n) : 0;
  return per <= 1 ? 0 : 63 - __builtin_clzll(per);
}

void EliasFano::Begin(int64_t n, int64_t lo, int64_t hi) {
  n_ = n;
  lo_ = lo;
  added_ = 0;
  // (hi - lo in uint64: the whole int64 range fits.)
  const uint64_t span = n > 0 ? static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) : 0;
  low_bits_ = LowBits(n, span);
  high_bits_ = n + static_cast<int64_t>(span >> low_bits_) + 1;
  low_.assign(static_cast<size_t>((n * low_bits_ + 63) / 64 + 1), 0);
  high_.assign(static_cast<size_t>((high_bits_ + 63) / 64 + 1), 0);
  ones_.clear();
  zeros_.clear();
  ones_.reserve(static_cast<size_t>(n / kSample + 1));
  zeros_.reserve(static_cast<size_t>((high_bits_ - n) / kSample + 1));
}

void EliasFano::Add(int64_t value) {
  const uint64_t v = static_cast<uint64_t>(value) - static_cast<uint64_t>(lo_);
  if (low_bits_ > 0) {
    const uint64_t low = v & ((uint64_t{1} << low_bits_) - 1);
    const int64_t bit = added_ * low_bits_;
    low_[static_cast<size_t>(bit >> 6)] |= low << (bit & 63);
    if ((bit & 63) + low_bits_ > 64) low_[static_cast<size_t>((bit >> 6) + 1)] |= low >> (64 - (bit & 63));
  }
  const int64_t pos = static_cast<int64_t>(v >> low_bits_) + added_;
  high_[static_cast<size_t>(pos >> 6)] |= uint64_t{1} << (pos & 63);
  ++added_;
}

void EliasFano::Finish() {
  int64_t ones = 0, zeros = 0;
  for (int64_t pos = 0; pos < high_bits_; ++pos) {
    if (High(pos)) {
      if (ones++ % kSample == 0) ones_.push_back(pos);
    } else if (zeros++ % kSample == 0) {
      zeros_.push_back(pos);
    }
  }
}

uint64_t EliasFano::Low(int64_t k) const {
  if (low_bits_ == 0) return 0;
  const int64_t bit = k * low_bits_;
  uint64_t v = low_[static_cast<size_t>(bit >> 6)] >> (bit & 63);
  if ((bit & 63) + low_bits_ > 64) v |= low_[static_cast<size_t>((bit >> 6) + 1)] << (64 - (bit & 63));
  return v & ((uint64_t{1} << low_bits_) - 1);
}

int64_t EliasFano::Select(const std::vector<int64_t>& samples, uint64_t flip, int64_t k) const {
  // From the sampled position of the (k / kSample * kSample)-th bit, count on to the k-th;
  // `flip` all ones selects zeros.
  const int64_t pos = samples[static_cast<size_t>(k / kSample)];
  int64_t left = k % kSample;
  size_t w = static_cast<size_t>(pos >> 6);
  uint64_t word = (high_[w] ^ flip) & (~uint64_t{0} << (pos & 63));
  while (true) {
    const int c = __builtin_popcountll(word);
    if (left < c) {
      for (; left > 0; --left) word &= word - 1;
      return static_cast<int64_t>(w * 64) + __builtin_ctzll(word);
    }
    left -= c;
    word = high_[++w] ^ flip;
  }
}

int64_t EliasFano::At(int64_t k) const {
  const int64_t high = SelectOne(k) - k;
  return static_cast<int64_t>((static_cast<uint64_t>(high) << low_bits_ | Low(k)) + static_cast<uint64_t>(lo_));
}

int64_t EliasFano::LowerBound(int64_t value) const {
  if (n_ == 0 || value <= lo_) return 0;
  const uint64_t v = static_cast<uint64_t>(value) - static_cast<uint64_t>(lo_);
  const uint64_t bucket = v >> low_bits_;
  // Values of lower buckets end at the bucket-th zero: the ones before it are their count.
  const int64_t zeros = high_bits_ - n_;
  if (static_cast<int64_t>(bucket) >= zeros) return n_;
  int64_t pos = bucket == 0 ? 0 : SelectZero(static_cast<int64_t>(bucket) - 1) + 1;
  int64_t k = pos - static_cast<int64_t>(bucket);
  const uint64_t low = low_bits_ == 0 ? 0 : v & ((uint64_t{1} << low_bits_) - 1);
  // Within the bucket the lows ascend.
  while (pos < high_bits_ && High(pos)) {
    if (Low(k) >= low) return k;
    ++pos;
    ++k;
  }
  return k;
}

int64_t EliasFano::Find(int64_t value) const {
  // LowerBound's walk, stopping at the first low bits not below the value's: found only if equal.
  if (n_ == 0 || value < lo_) return -1;
  const uint64_t v = static_cast<uint64_t>(value) - static_cast<uint64_t>(lo_);
  const uint64_t bucket = v >> low_bits_;
  if (static_cast<int64_t>(bucket) >= high_bits_ - n_) return -1;
  int64_t pos = bucket == 0 ? 0 : SelectZero(static_cast<int64_t>(bucket) - 1) + 1;
  int64_t k = pos - static_cast<int64_t>(bucket);
  const uint64_t low = low_bits_ == 0 ? 0 : v & ((uint64_t{1} << low_bits_) - 1);
  for (; pos < high_bits_ && High(pos); ++pos, ++k) {
    const uint64_t l = Low(k);
    if (l >= low) return l == low ? k : -1;
  }
  return -1;
}

int64_t EliasFano::bytes() const {
  return static_cast<int64_t>((low_.capacity() + high_.capacity() + ones_.capacity() + zeros_.capacity()) * 8);
}

int64_t EliasFano::BytesFor(int64_t n, int64_t lo, int64_t hi) {
  const uint64_t span = n > 0 ? static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) : 0;
  const int l = LowBits(n, span);
  const int64_t high_bits = n + static_cast<int64_t>(span >> l) + 1;
  return (n * l / 64 + 2) * 8 + (high_bits / 64 + 2) * 8 + (high_bits / kSample + 2) * 8;
}

}  // namespace graphstore
