#ifndef GRAPHSTORE_TOOLS_BOUNDED_NODES_H_
#define GRAPHSTORE_TOOLS_BOUNDED_NODES_H_

// The nodes of a graph as graphstore-partition holds them in bounded memory (bounded_partition.h):
// a few bytes a node instead of the in-memory path's arrays, and the writing of each partition's
// node files from them, byte for byte what WriteNodeType writes from a GraphData. Per node of a
// type: a quarter of a byte of raw-id bitmap, its owner (a byte up to 256 partitions, two
// beyond), its column degree (4 bytes), its label in the fewest bytes its type's labels fit, and
// a bit a split. Nothing is kept per owned node: a partition's ids are found by walking owners.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graphstore/v1/manifest.pb.h"
#include "tools/dataset/writer.h"
#include "tools/elias_fano.h"

namespace graphstore {

/// The raw ids of one node type, ranked so that the k-th smallest raw id is global id k: a bitmap
/// over raw ids (a quarter of a byte per id up to the largest) while the ids are non-negative and
/// the bitmap stays within its limit; otherwise (ids spread far, or negative) sorted runs of ids
/// spilled to disk while they are marked, merged into Elias-Fano form (tools/elias_fano.h: about
/// 2 + log2(range / count) bits an id, 4.6 bytes for 250M ids spread over 2^63).
class IdSet {
 public:
  /// A bitmap of at most `bitmap_words` words; past it, runs of `run_ids` ids spilled under
  /// `tmp_dir`. Call before the first Mark (the defaults: no limit, runs of 2^20).
  void SetLimits(int64_t bitmap_words, int64_t run_ids, std::string tmp_dir);
  absl::Status Mark(int64_t raw) {
    const uint64_t w = static_cast<uint64_t>(raw) >> 6;  // (negative ids: past any limit)
    if (!sparse_ && w < static_cast<uint64_t>(bitmap_limit_)) {
      if (w >= bits_.size()) bits_.resize(std::min<size_t>(std::max<size_t>(w + 1, bits_.size() * 2), bitmap_limit_), 0);
      bits_[w] |= uint64_t{1} << (raw & 63);
      return absl::OkStatus();
    }
    return MarkSparse(raw);
  }
  bool Has(int64_t raw) const {
    if (sparse_) return ef_.Find(raw) >= 0;
    const size_t w = static_cast<size_t>(raw >> 6);
    return raw >= 0 && w < bits_.size() && (bits_[w] >> (raw & 63) & 1);
  }
  /// Counts the ids (merging the spilled runs); call once, after the last Mark.
  absl::Status Rank();
  int64_t count() const { return count_; }
  /// Whether the ids went past the bitmap.
  bool sparse() const { return sparse_; }
  /// The global id of a marked raw id.
  int64_t Global(int64_t raw) const {
    if (sparse_) return ef_.Find(raw);
    const size_t w = static_cast<size_t>(raw >> 6);
    return rank_[w] + __builtin_popcountll(bits_[w] & ((uint64_t{1} << (raw & 63)) - 1));
  }
  /// The raw id of global id `gid` in [0, count()).
  int64_t Raw(int64_t gid) const;
  /// True when the raw ids are 0 .. count()-1 (no raw_ids.npy is written).
  bool identity() const { return identity_; }
  /// The smallest marked raw id >= `raw`, or -1 when none (ids are then >= 0).
  int64_t NextAtOrAfter(int64_t raw) const;
  /// Calls fn(raw ids, n) over every raw id in ascending order, a block at a time.
  template <typename Fn>
  absl::Status ForEachRaw(Fn fn) const {
    std::vector<int64_t> block;
    const auto flush = [&](bool last) {
      if (block.empty() || (!last && block.size() < kBlock)) return absl::OkStatus();
      auto s = fn(block.data(), block.size());
      block.clear();
      return s;
    };
    if (sparse_) {
      for (int64_t k = 0; k < count_; ++k) {
        block.push_back(ef_.At(k));
        if (auto s = flush(false); !s.ok()) return s;
      }
      return flush(true);
    }
    for (size_t w = 0; w < bits_.size(); ++w) {
      for (uint64_t b = bits_[w]; b != 0; b &= b - 1) block.push_back(static_cast<int64_t>(w * 64 + __builtin_ctzll(b)));
      if (auto s = flush(false); !s.ok()) return s;
    }
    return flush(true);
  }
  /// Bytes held.
  int64_t bytes() const {
    return static_cast<int64_t>(bits_.capacity() * 8 + rank_.capacity() * 8 + run_.capacity() * 8) + ef_.bytes();
  }

 private:
  static constexpr size_t kBlock = 1 << 16;
  absl::Status MarkSparse(int64_t raw);
  // Sorts the run in memory, drops repeats and appends it to a nameless file of its own.
  absl::Status Spill();
  std::vector<uint64_t> bits_;
  std::vector<int64_t> rank_;  // ids before each word
  int64_t bitmap_limit_ = INT64_MAX >> 6;
  // Past the bitmap: the run being filled, the files of those spilled, and the ranked ids.
  bool sparse_ = false;
  size_t run_ids_ = size_t{1} << 20;
  std::string tmp_dir_ = "/tmp";
  std::vector<int64_t> run_;
  std::vector<std::shared_ptr<std::FILE>> runs_;
  EliasFano ef_;
  int64_t count_ = 0;
  bool identity_ = true;
};

/// Integers of a known range, one per node, each in the fewest bytes the range fits (1, 2, 4 or
/// 8; unsigned when the range has no negative value).
class SmallInts {
 public:
  /// `n` values in [lo, hi], all `fill` (which must be in range).
  void Reset(int64_t n, int64_t lo, int64_t hi, int64_t fill);
  int64_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  /// Bytes a value.
  int width() const { return width_; }
  int64_t Get(int64_t i) const {
    const uint8_t* p = bytes_.data() + i * width_;
    switch (kind_) {
      case Kind::kU8: return *p;
      case Kind::kI8: return static_cast<int8_t>(*p);
      case Kind::kU16: return Load<uint16_t>(p);
      case Kind::kI16: return Load<int16_t>(p);
      case Kind::kU32: return Load<uint32_t>(p);
      case Kind::kI32: return Load<int32_t>(p);
      default: return Load<int64_t>(p);
    }
  }
  void Set(int64_t i, int64_t v);
  /// Bytes `n` values of [lo, hi] take.
  static int WidthFor(int64_t lo, int64_t hi);
  void Clear();

 private:
  enum class Kind { kU8, kI8, kU16, kI16, kU32, kI32, kI64 };
  template <typename T>
  static int64_t Load(const uint8_t* p) {
    T v;
    __builtin_memcpy(&v, p, sizeof(T));
    return static_cast<int64_t>(v);
  }
  Kind kind_ = Kind::kI64;
  int width_ = 8;
  int64_t n_ = 0;
  std::vector<uint8_t> bytes_;
};

/// One bit a node.
class NodeBits {
 public:
  explicit NodeBits(int64_t n = 0) : words_((n + 63) / 64, 0) {}
  void Set(int64_t i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  bool Get(int64_t i) const { return words_[i >> 6] >> (i & 63) & 1; }
  int64_t bytes() const { return static_cast<int64_t>(words_.size() * 8); }

 private:
  std::vector<uint64_t> words_;
};

/// What the bounded path holds of one node type between its passes.
struct BoundedNodeType {
  IdSet ids;
  /// The owning partition of each global id, from the assignment on.
  SmallInts owner;
  /// How many edges of any type have each node as their column endpoint (book/<type>.degree.npy);
  /// empty while no edge type has been counted, or when none has this type as its column.
  std::vector<uint32_t> col_degree;
  /// Each node's label, -1 for none; empty when the type has no labels.
  SmallInts labels;
  int64_t max_label = -1;
  /// Split name -> a bit a node.
  std::map<std::string, NodeBits> splits;
  /// With --node_ids and features: each global id's row in the feature file.
  std::vector<int64_t> feature_row;

  /// Bytes a node of what is held after the assignment, with `owner_width` bytes an owner and
  /// the column degree when `counted`.
  int64_t BytesPerNodeAfterAssignment(int owner_width, bool counted) const;
};

/// Calls fn(ids, n) over the global ids that partition `p` owns, ascending, a block at a time.
template <typename Fn>
absl::Status ForEachOwned(const SmallInts& owner, int p, Fn fn) {
  constexpr size_t kBlock = 1 << 16;
  std::vector<int64_t> block;
  block.reserve(kBlock);
  for (int64_t gid = 0; gid < owner.size(); ++gid) {
    if (owner.Get(gid) != p) continue;
    block.push_back(gid);
    if (block.size() == kBlock) {
      if (auto s = fn(block.data(), block.size()); !s.ok()) return s;
      block.clear();
    }
  }
  return block.empty() ? absl::OkStatus() : fn(block.data(), block.size());
}

/// Writes node type `t` of partition `p` into `dir` and adds it to `m`: what WriteNodeType writes
/// for the same graph and assignment, from `nodes` (`meta` gives the type's name, count and
/// feature width; its arrays are unused). The book files are written a block at a time.
absl::Status WriteBoundedNodeType(const NodeTypeData& meta, const BoundedNodeType& nodes, int p,
                                  const std::string& dir, const FeatureSource& features, v1::PartitionManifest* m);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_BOUNDED_NODES_H_
