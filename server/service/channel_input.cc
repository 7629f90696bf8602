#include "server/service/channel_input.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/util/prefetch.h"

namespace graphstore {
namespace {

// kSelectInByte[r][b]: the position of the (r+1)-th set bit of byte b (8 where b has fewer).
struct SelectInByteTable {
  uint8_t at[8][256];
  SelectInByteTable() {
    for (int b = 0; b < 256; ++b) {
      for (int r = 0; r < 8; ++r) at[r][b] = 8;
      for (int bit = 0, r = 0; bit < 8; ++bit) {
        if (b & (1 << bit)) at[r++][b] = static_cast<uint8_t>(bit);
      }
    }
  }
};
const SelectInByteTable kSelectInByte;

// The position of the (r+1)-th set bit of x, r < popcount(x): the bytes' running counts side by
// side in one word, the byte found by comparing them all with r at once, then a table.
int SelectInWord(uint64_t x, int r) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  uint64_t s = x - ((x >> 1) & 0x5555555555555555ULL);
  s = (s & 0x3333333333333333ULL) + ((s >> 2) & 0x3333333333333333ULL);
  s = (s + (s >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  const uint64_t running = s * kOnes;  // byte i: set bits in bytes 0..i
  // Byte i's high bit stays set where running_i <= r: their count is the byte holding the bit.
  const uint64_t at_most = ((static_cast<uint64_t>(r) * kOnes) | kHighs) - running;
  const int byte = __builtin_popcountll(at_most & kHighs);
  const int before = byte == 0 ? 0 : static_cast<int>((running >> (8 * byte - 8)) & 0xFF);
  return 8 * byte + kSelectInByte.at[r - before][(x >> (8 * byte)) & 0xFF];
}

}  // namespace

IdSet::IdSet(int64_t universe) : universe_(universe), words_(static_cast<size_t>((universe + 63) / 64), 0) {}

absl::Status IdSet::Add(absl::Span<const int64_t> ids) {
  for (int64_t id : ids) {
    if (id < 0 || id >= universe_) {
      return absl::OutOfRangeError(absl::StrCat("id ", id, " is outside [0, ", universe_, ")"));
    }
    words_[static_cast<size_t>(id >> 6)] |= uint64_t{1} << (id & 63);
  }
  return absl::OkStatus();
}

void IdSet::Seal() {
  const size_t blocks = (words_.size() + kBlockWords - 1) / kBlockWords;
  before_.assign(blocks + 1, 0);
  hints_.clear();
  int64_t count = 0;
  for (size_t b = 0; b < blocks; ++b) {
    before_[b] = count;
    const size_t end = std::min(words_.size(), (b + 1) * kBlockWords);
    for (size_t w = b * kBlockWords; w < end; ++w) count += __builtin_popcountll(words_[w]);
    // Every hinted member this block reaches lies in it.
    while (static_cast<int64_t>(hints_.size()) * kHintEvery < count) hints_.push_back(static_cast<int64_t>(b));
  }
  before_[blocks] = count;
  size_ = count;
}

int64_t IdSet::GuessBlock(int64_t k, int64_t* lo, int64_t* hi) const {
  // The blocks between the hints around k hold it; members spread evenly put it near the guess.
  const size_t h = static_cast<size_t>(k / kHintEvery);
  *lo = hints_[h];
  *hi = h + 1 < hints_.size() ? hints_[h + 1] : static_cast<int64_t>(before_.size()) - 2;
  return *lo + (*hi - *lo) * (k % kHintEvery) / kHintEvery;
}

int64_t IdSet::Select(int64_t k) const {
  int64_t lo = 0, hi = 0;
  int64_t block = GuessBlock(k, &lo, &hi);
  // A few steps from the guess, else a binary search of [lo, hi]: the last block with at most k
  // members before it.
  int steps = 0;
  while (steps < 4 && block < hi && before_[static_cast<size_t>(block + 1)] <= k) ++block, ++steps;
  while (steps < 4 && before_[static_cast<size_t>(block)] > k) --block, ++steps;
  if (steps == 4) {
    const auto first = before_.begin() + lo;
    block = std::upper_bound(first, before_.begin() + hi + 1, k) - before_.begin() - 1;
  }
  int64_t rank = k - before_[static_cast<size_t>(block)];
  for (size_t w = static_cast<size_t>(block) * kBlockWords;; ++w) {
    const uint64_t bits = words_[w];
    const int in_word = __builtin_popcountll(bits);
    if (rank < in_word) return static_cast<int64_t>(w) * 64 + SelectInWord(bits, static_cast<int>(rank));
    rank -= in_word;
  }
}

void IdSet::Prefetch(int64_t k) const {
  int64_t lo = 0, hi = 0;
  const int64_t guess = GuessBlock(k, &lo, &hi);
  PrefetchRead(before_.data() + guess);
  PrefetchRead(words_.data() + guess * kBlockWords);
}

size_t IdSet::ByteSize() const {
  return words_.size() * sizeof(uint64_t) + (before_.size() + hints_.size()) * sizeof(int64_t);
}

ChannelInput ChannelInput::Listed(std::vector<int64_t> ids) {
  ChannelInput in;
  in.size_ = static_cast<int64_t>(ids.size());
  in.listed_ = std::move(ids);
  return in;
}

ChannelInput ChannelInput::Every(int64_t num_nodes) {
  ChannelInput in;
  in.size_ = num_nodes;
  in.every_ = true;
  return in;
}

ChannelInput ChannelInput::Members(std::shared_ptr<const IdSet> set) {
  ChannelInput in;
  in.size_ = set->size();
  in.set_ = std::move(set);
  return in;
}

int64_t ChannelInput::operator[](int64_t p) const {
  if (every_) return p;
  if (set_ != nullptr) return set_->Select(p);
  return listed_[static_cast<size_t>(p)];
}

void ChannelInput::Ids(const int64_t* positions, size_t n, int64_t* out) const {
  if (every_) {
    std::copy(positions, positions + n, out);
  } else if (set_ != nullptr) {
    constexpr size_t kAhead = 8;
    for (size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) set_->Prefetch(positions[i + kAhead]);
      out[i] = set_->Select(positions[i]);
    }
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = listed_[static_cast<size_t>(positions[i])];
  }
}

absl::StatusOr<std::shared_ptr<const IdSet>> InputSets::Get(
    int node_type, const std::string& split, absl::FunctionRef<absl::StatusOr<std::shared_ptr<IdSet>>()> build) {
  const std::pair<int, std::string> key(node_type, split);
  auto held = [&]() -> std::shared_ptr<const IdSet> {
    absl::MutexLock lock(&mu_);
    auto it = sets_.find(key);
    return it == sets_.end() ? nullptr : it->second.lock();
  };
  if (auto set = held()) return set;
  absl::MutexLock building(&build_mu_);
  if (auto set = held()) return set;  // built while this one waited
  auto built = build();
  if (!built.ok()) return built.status();
  (*built)->Seal();
  std::shared_ptr<const IdSet> set = *std::move(built);
  absl::MutexLock lock(&mu_);
  // Sets no channel holds any more go as a new one comes.
  for (auto it = sets_.begin(); it != sets_.end();) {
    if (it->second.expired()) {
      sets_.erase(it++);
    } else {
      ++it;
    }
  }
  sets_[key] = set;
  return set;
}

size_t InputSets::ByteSize() const {
  absl::MutexLock lock(&mu_);
  size_t bytes = 0;
  for (const auto& [key, weak] : sets_) {
    if (auto set = weak.lock()) bytes += set->ByteSize();
  }
  return bytes;
}

}  // namespace graphstore
