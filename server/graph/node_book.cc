#include "server/graph/node_book.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace graphstore {

NodeBook NodeBook::FromOwners(const int32_t* owners, int64_t num_nodes, int num_partitions, int self) {
  NodeBook b;
  b.num_partitions_ = num_partitions;
  b.self_ = self;
  if (num_partitions <= 1) return b;
  if (num_partitions > 128) {
    b.owner_width_ = num_partitions <= 256 ? 1 : num_partitions <= 65536 ? 2 : 4;
    const int64_t owned_all = std::count(owners, owners + num_nodes, self);
    b.BuildBlocks([owners](int64_t g) { return owners[g]; }, num_nodes, owned_all);
  } else {
    b.BuildLines([owners](int64_t g) { return owners[g]; }, num_nodes);
  }
  return b;
}

NodeBook NodeBook::Dealt(const OwnerDeal& deal, int self) {
  NodeBook b;
  b.num_partitions_ = deal.num_partitions();
  b.self_ = self;
  if (b.num_partitions_ <= 1) return b;
  if (b.num_partitions_ < kDealtSlotsFrom) {
    // Lines of half bytes (0.53 bytes a node) are smaller than slots (4 a node owned here).
    b.BuildLines([&deal](int64_t g) { return deal.Owner(g); }, deal.num_nodes());
    return b;
  }
  b.dealt_ = true;
  b.deal_ = deal;
  b.BuildBlocks([&deal](int64_t g) { return deal.Owner(g); }, deal.num_nodes(), deal.OwnedCount(self));
  return b;
}

template <typename OwnerOf>
void NodeBook::BuildBlocks(OwnerOf owner_of, int64_t num_nodes, int64_t owned_all) {
  const bool keep_owners = owner_width_ > 0;
  // Blocks of about kBlockOwned owned ids: 2^b ids with 2^b >= kBlockOwned * num_nodes / owned.
  block_bits_ = 4;
  while (block_bits_ < kMaxBlockBits && (int64_t{1} << block_bits_) * owned_all < kBlockOwned * num_nodes) {
    ++block_bits_;
  }
  if (keep_owners) owners_.resize(static_cast<size_t>(num_nodes) * static_cast<size_t>(owner_width_));
  const int64_t block = int64_t{1} << block_bits_;
  const auto blocks = static_cast<size_t>((num_nodes + block - 1) / block);
  slots_.resize(blocks);
  slot_super_.resize((blocks >> kSuperSlotsBits) + 1);
  spill_start_.push_back(0);
  std::vector<uint16_t> offsets;
  int64_t owned = 0;
  for (size_t k = 0; k < blocks; ++k) {
    const int64_t first = static_cast<int64_t>(k) * block;
    const int64_t end = std::min(num_nodes, first + block);
    offsets.clear();
    for (int64_t g = first; g < end; ++g) {
      const int32_t o = owner_of(g);
      if (keep_owners) std::memcpy(owners_.data() + g * owner_width_, &o, static_cast<size_t>(owner_width_));  // its low bytes
      if (o == self_) offsets.push_back(static_cast<uint16_t>(g - first));
    }
    FillSlot(k, owned, offsets);
    owned += static_cast<int64_t>(offsets.size());
  }
}

void NodeBook::FillSlot(size_t k, int64_t owned_before, const std::vector<uint16_t>& offsets) {
  if ((k & ((size_t{1} << kSuperSlotsBits) - 1)) == 0) slot_super_[k >> kSuperSlotsBits] = owned_before;
  Slot& slot = slots_[k];
  // At most 2^12 blocks of 2^15 ids since the superblock: below 2^27, clear of kSpills.
  slot.before = static_cast<uint32_t>(owned_before - slot_super_[k >> kSuperSlotsBits]);
  std::fill(std::begin(slot.offset), std::end(slot.offset), kNoOffset);
  const size_t held = std::min<size_t>(offsets.size(), kSlotOffsets);
  std::copy_n(offsets.begin(), held, slot.offset);
  if (offsets.size() > held) {
    slot.before |= kSpills;
    spill_block_.push_back(static_cast<int64_t>(k));
    spill_offsets_.insert(spill_offsets_.end(), offsets.begin() + static_cast<std::ptrdiff_t>(held), offsets.end());
    spill_start_.push_back(static_cast<int64_t>(spill_offsets_.size()));
  }
}

template <typename OwnerOf>
void NodeBook::BuildLines(OwnerOf owner_of, int64_t num_nodes) {
  nibbles_ = num_partitions_ <= 16;
  if (!nibbles_) {
    bits_ = 32 - __builtin_clz(static_cast<unsigned>(num_partitions_ - 1));  // bits an owner needs: 5 to 7
    per_word_ = 64 / bits_;
    line_ids_ = 7 * per_word_ + 32 / bits_;
    for (int f = 1; f <= per_word_; ++f) lanes_[f] = lanes_[f - 1] | uint64_t{1} << ((f - 1) * bits_);
    for (int64_t i = 0; i < line_ids_; ++i) {
      const int64_t w = std::min<int64_t>(7, i / per_word_);
      place_[i] = static_cast<uint16_t>(w << 8 | (i - w * per_word_));
    }
  } else {
    line_ids_ = kNibbleLineIds;
  }
  const int64_t per_line = line_ids_;
  line_inverse_ = ~uint64_t{0} / static_cast<uint64_t>(per_line) + 1;
  const auto lines = static_cast<size_t>((num_nodes + per_line - 1) / per_line);
  lines_.resize(lines);
  super_.resize((lines >> kSuperLinesBits) + 1);
  int64_t owned = 0, super_start = 0;
  for (size_t k = 0; k < lines; ++k) {
    Line& line = lines_[k];
    if ((k & ((size_t{1} << kSuperLinesBits) - 1)) == 0) {
      super_start = owned;
      super_[k >> kSuperLinesBits] = owned;
    }
    line.before = static_cast<uint32_t>(owned - super_start);
    const int64_t first = static_cast<int64_t>(k) * per_line;
    const int64_t end = std::min(num_nodes, first + per_line);
    std::fill(line.owner, line.owner + kLineIds, uint8_t{0});  // past the last id: never counted
    uint64_t words[8] = {};
    for (int64_t g = first; g < end; ++g) {
      const int64_t i = g - first;
      const int32_t o = owner_of(g);
      if (bits_ > 0) {
        int w = 0, field = 0;
        PackedPlace(i, &w, &field);
        words[w] |= static_cast<uint64_t>(o) << (field * bits_);
      } else {
        line.owner[i >> 1] = static_cast<uint8_t>(line.owner[i >> 1] | (o << ((i & 1) * 4)));
      }
      owned += o == self_;
    }
    // The owners fill the line's first 60 bytes, `before` its last 4 (word 7's high half).
    if (bits_ > 0) std::memcpy(line.owner, words, kLineIds);
  }
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
// (a field's low bits plus all ones below its top bit carry into the top bit unless they are
// zero). The equal fields' 1s, moved to their fields' lowest bits, are summed by a multiply by
// `all` (the lowest bit of every field of a word): the top field of the product is the sum of
// all fields, at most 12, so no field carries into the next. No popcount instruction: without
// one in the target, the compiler calls a library function for it.
inline int CountEqualFields(uint64_t word, uint64_t low, uint64_t all, int bits, int top_shift, uint64_t value) {
  const uint64_t top = low << (bits - 1);
  const uint64_t below_top = top - low;  // each field's bits under its top one
  const uint64_t x = word ^ (value * low);
  const uint64_t nonzero_low = ((x & below_top) + below_top) | x;
  const uint64_t equal = (~nonzero_low & top) >> (bits - 1);
  return static_cast<int>(((equal * all) >> top_shift) & ((uint64_t{1} << bits) - 1));
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
  const uint64_t all = lanes_[per_word_];
  const int top_shift = (per_word_ - 1) * bits_;
  for (int v = 0; v < w; ++v) n += CountEqualFields(words[v], all, all, bits_, top_shift, me);
  n += CountEqualFields(words[w], lanes_[field], all, bits_, top_shift, me);
  return n;
}

int64_t NodeBook::SlotRow(int64_t gid) const {
  const auto k = static_cast<size_t>(gid >> block_bits_);
  const Slot& slot = slots_[k];
  const auto offset = static_cast<uint16_t>(gid & ((int64_t{1} << block_bits_) - 1));
  int64_t row = slot_super_[k >> kSuperSlotsBits] + (slot.before & ~kSpills);
#if defined(__SSE2__)
  // The slot as 32 16-bit lanes, the first two its count: each lane counts the offsets below
  // the id's (a hit is -1, subtracted; at most 4 a lane, in its low byte), summed by the byte
  // sums of each half.
  const __m128i id = _mm_set1_epi16(static_cast<int16_t>(offset));
  const auto* lines = reinterpret_cast<const __m128i*>(&slot);
  __m128i hits = _mm_and_si128(_mm_cmplt_epi16(_mm_load_si128(lines), id), _mm_setr_epi16(0, 0, -1, -1, -1, -1, -1, -1));
  for (int q = 1; q < 4; ++q) hits = _mm_add_epi16(hits, _mm_cmplt_epi16(_mm_load_si128(lines + q), id));
  hits = _mm_sub_epi16(_mm_setzero_si128(), hits);
  const __m128i sums = _mm_sad_epu8(hits, _mm_setzero_si128());
  row += _mm_cvtsi128_si64(sums) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
#else
  for (int i = 0; i < kSlotOffsets; ++i) row += slot.offset[i] < offset;
#endif
  if ((slot.before & kSpills) != 0) row += SpillBelow(k, offset);
  return row;
}

int64_t NodeBook::SpillBelow(size_t k, uint16_t offset) const {
  const auto i = static_cast<size_t>(std::lower_bound(spill_block_.begin(), spill_block_.end(), static_cast<int64_t>(k)) -
                                     spill_block_.begin());
  const uint16_t* first = spill_offsets_.data() + spill_start_[i];
  const uint16_t* last = spill_offsets_.data() + spill_start_[i + 1];
  return std::lower_bound(first, last, offset) - first;
}

size_t NodeBook::bytes() const {
  return lines_.size() * sizeof(Line) + super_.size() * sizeof(int64_t) + owners_.size();
}

size_t NodeBook::own_bytes() const {
  return slots_.size() * sizeof(Slot) + slot_super_.size() * sizeof(int64_t) + spill_block_.size() * sizeof(int64_t) +
         spill_start_.size() * sizeof(int64_t) + spill_offsets_.size() * sizeof(uint16_t);
}

}  // namespace graphstore
