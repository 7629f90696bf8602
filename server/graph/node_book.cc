#include "server/graph/node_book.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace graphstore {

NodeBook NodeBook::FromOwners(const int32_t* owners, int64_t num_nodes, int num_partitions, int self) {
  NodeBook b;
  b.num_partitions_ = num_partitions;
  b.self_ = self;
  if (num_partitions <= 1) return b;
  if (num_partitions > 256) {
    b.wide_.assign(owners, owners + num_nodes);
    const int64_t block = int64_t{1} << kWideBlockBits;
    b.wide_count_.resize(static_cast<size_t>((num_nodes + block - 1) / block));
    int64_t owned = 0;
    for (int64_t g = 0; g < num_nodes; ++g) {
      if ((g & (block - 1)) == 0) b.wide_count_[static_cast<size_t>(g >> kWideBlockBits)] = owned;
      owned += owners[g] == self;
    }
    return b;
  }
  b.nibbles_ = num_partitions <= 16;
  const int bits = 32 - __builtin_clz(static_cast<unsigned>(num_partitions - 1));  // bits an owner needs
  if (!b.nibbles_ && bits <= kMaxPackedBits) {
    b.bits_ = bits;
    b.per_word_ = 64 / bits;
    b.line_ids_ = 7 * b.per_word_ + 32 / bits;
    for (int f = 1; f <= b.per_word_; ++f) b.lanes_[f] = b.lanes_[f - 1] | uint64_t{1} << ((f - 1) * bits);
    for (int64_t i = 0; i < b.line_ids_; ++i) {
      const int64_t w = std::min<int64_t>(7, i / b.per_word_);
      b.place_[i] = static_cast<uint16_t>(w << 8 | (i - w * b.per_word_));
    }
  } else {
    b.line_ids_ = b.nibbles_ ? kNibbleLineIds : kLineIds;
  }
  const int64_t per_line = b.line_ids_;
  b.line_inverse_ = ~uint64_t{0} / static_cast<uint64_t>(per_line) + 1;
  const auto lines = static_cast<size_t>((num_nodes + per_line - 1) / per_line);
  b.lines_.resize(lines);
  b.super_.resize((lines >> kSuperLinesBits) + 1);
  int64_t owned = 0, super_start = 0;
  for (size_t k = 0; k < lines; ++k) {
    Line& line = b.lines_[k];
    if ((k & ((size_t{1} << kSuperLinesBits) - 1)) == 0) {
      super_start = owned;
      b.super_[k >> kSuperLinesBits] = owned;
    }
    line.before = static_cast<uint32_t>(owned - super_start);
    const int64_t first = static_cast<int64_t>(k) * per_line;
    const int64_t end = std::min(num_nodes, first + per_line);
    std::fill(line.owner, line.owner + kLineIds, uint8_t{0});  // past the last id: never counted
    uint64_t words[8] = {};
    for (int64_t g = first; g < end; ++g) {
      const int64_t i = g - first;
      if (b.bits_ > 0) {
        int w = 0, field = 0;
        b.PackedPlace(i, &w, &field);
        words[w] |= static_cast<uint64_t>(owners[g]) << (field * b.bits_);
      } else if (b.nibbles_) {
        line.owner[i >> 1] = static_cast<uint8_t>(line.owner[i >> 1] | (owners[g] << ((i & 1) * 4)));
      } else {
        line.owner[i] = static_cast<uint8_t>(owners[g]);
      }
      owned += owners[g] == self;
    }
    // The owners fill the line's first 60 bytes, `before` its last 4 (word 7's high half).
    if (b.bits_ > 0) std::memcpy(line.owner, words, kLineIds);
  }
  return b;
}

int32_t NodeBook::PackedOwner(int64_t gid) const {
  const int64_t k = LineOf(gid);
  int w = 0, field = 0;
  PackedPlace(gid - k * line_ids_, &w, &field);
  uint64_t word = 0;
  std::memcpy(&word, reinterpret_cast<const char*>(&lines_[static_cast<size_t>(k)]) + 8 * w, 8);
  return static_cast<int32_t>((word >> (field * bits_)) & ((uint64_t{1} << bits_) - 1));
}

namespace {

#if defined(__SSE2__)
// 1 in each byte where `value` equals `me` and `position` lies below `limit`, 0 elsewhere.
inline __m128i Hit(__m128i value, __m128i me, __m128i position, __m128i limit) {
  return _mm_and_si128(_mm_and_si128(_mm_cmpeq_epi8(value, me), _mm_cmplt_epi8(position, limit)),
                       _mm_set1_epi8(1));
}

// The sum, over a line's four 16-byte chunks, of the 0/1 bytes `hits(chunk, position)` gives,
// `position` holding each byte's index in the line; summed eight bytes at a time.
template <typename Hits>
int64_t CountLineHits(const uint8_t* owner, Hits hits) {
  __m128i position = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m128i sum = _mm_setzero_si128();
  for (int q = 0; q < 4; ++q) {
    const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(owner) + q);
    sum = _mm_add_epi64(sum, _mm_sad_epu8(hits(v, position), _mm_setzero_si128()));
    position = _mm_add_epi8(position, _mm_set1_epi8(16));
  }
  return _mm_cvtsi128_si64(sum) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum));
}
#endif

}  // namespace

int64_t NodeBook::LineRow(int64_t gid) const {
  const int64_t k = gid / kLineIds;
  const Line& line = lines_[static_cast<size_t>(k)];
  const int below = static_cast<int>(gid - k * kLineIds);
  int64_t n = super_[static_cast<size_t>(k >> kSuperLinesBits)] + line.before;
#if defined(__SSE2__)
  // This partition's bytes among the first `below` of the line.
  const __m128i me = _mm_set1_epi8(static_cast<char>(self_));
  const __m128i limit = _mm_set1_epi8(static_cast<char>(below));
  n += CountLineHits(line.owner, [&](__m128i v, __m128i position) { return Hit(v, me, position, limit); });
#else
  for (int i = 0; i < below; ++i) n += line.owner[i] == self_;
#endif
  return n;
}

int64_t NodeBook::NibbleLineRow(int64_t gid) const {
  const int64_t k = gid / kNibbleLineIds;
  const Line& line = lines_[static_cast<size_t>(k)];
  const int below = static_cast<int>(gid - k * kNibbleLineIds);
  int64_t n = super_[static_cast<size_t>(k >> kSuperLinesBits)] + line.before;
#if defined(__SSE2__)
  // Byte j holds ids 2j (low half) and 2j+1 (high half): each half compared on its own and
  // masked to the bytes whose id lies below.
  const __m128i me = _mm_set1_epi8(static_cast<char>(self_));
  const __m128i low_limit = _mm_set1_epi8(static_cast<char>((below + 1) / 2));
  const __m128i high_limit = _mm_set1_epi8(static_cast<char>(below / 2));
  const __m128i nibble = _mm_set1_epi8(15);
  n += CountLineHits(line.owner, [&](__m128i v, __m128i position) {
    const __m128i low = _mm_and_si128(v, nibble);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(v, 4), nibble);
    return _mm_add_epi8(Hit(low, me, position, low_limit), Hit(high, me, position, high_limit));
  });
#else
  for (int i = 0; i < below; ++i) n += ((line.owner[i >> 1] >> ((i & 1) * 4)) & 15) == self_;
#endif
  return n;
}

namespace {

// How many of the fields of `bits` bits each in `word` whose lowest bits `low` marks equal
// `value`: each field's xor with it is zero where they are equal, found for all fields at once
// (a field's low bits plus all ones below its top bit carry into the top bit unless they are zero).
inline int CountEqualFields(uint64_t word, uint64_t low, int bits, uint64_t value) {
  const uint64_t top = low << (bits - 1);
  const uint64_t below_top = top - low;  // each field's bits under its top one
  const uint64_t x = word ^ (value * low);
  const uint64_t nonzero_low = ((x & below_top) + below_top) | x;
  return __builtin_popcountll(~nonzero_low & top);
}

}  // namespace

int64_t NodeBook::PackedLineRow(int64_t gid) const {
  const int64_t k = LineOf(gid);
  const Line& line = lines_[static_cast<size_t>(k)];
  int64_t n = super_[static_cast<size_t>(k >> kSuperLinesBits)] + line.before;
  int w = 0, field = 0;
  PackedPlace(gid - k * line_ids_, &w, &field);
  uint64_t words[8];
  std::memcpy(words, &line, sizeof(words));
  const uint64_t me = static_cast<uint64_t>(self_);
  for (int v = 0; v < w; ++v) n += CountEqualFields(words[v], lanes_[per_word_], bits_, me);
  n += CountEqualFields(words[w], lanes_[field], bits_, me);
  return n;
}

int64_t NodeBook::WideRow(int64_t gid) const {
  const int64_t start = gid & ~((int64_t{1} << kWideBlockBits) - 1);
  int64_t n = wide_count_[static_cast<size_t>(gid >> kWideBlockBits)];
  for (int64_t g = start; g < gid; ++g) n += wide_[static_cast<size_t>(g)] == self_;
  return n;
}

size_t NodeBook::bytes() const {
  return lines_.size() * sizeof(Line) + super_.size() * sizeof(int64_t) + wide_.size() * sizeof(int32_t) +
         wide_count_.size() * sizeof(int64_t);
}

}  // namespace graphstore
