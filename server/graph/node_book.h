#ifndef GRAPHSTORE_SERVER_GRAPH_NODE_BOOK_H_
#define GRAPHSTORE_SERVER_GRAPH_NODE_BOOK_H_

// Which partition owns each node of a type, and where an owned node's row lies, in at most one
// byte per node of the whole graph up to 256 partitions. A node owned here is row r of the
// partition's arrays, r the count of owned ids below it (ids.npy lists them ascending).
//
// Up to 128 partitions the book is one cache line per 67 to 120 ids: their owners and the count
// of this partition's ids before the line (since its superblock of 2^20 lines, whose own count is
// kept apart), so a node's owner and row are one memory access: the count plus this partition's
// owners before the node in its line. Up to 16 partitions an owner is half a byte, 120 to a line
// (0.53 bytes a node); from 17 to 128 it is 5, 6 or 7 bits, as many as the partitions need,
// packed in the line's eight 64-bit words (90, 75 or 67 to a line: 0.71, 0.85, 0.96 bytes a node).
//
// Beyond 128 partitions the owners are an array of their own, a byte each up to 256 partitions
// (two up to 65536, four beyond), and the rows are found among this partition's ids: the ids are
// cut in blocks of 2^b, b the least (up to 15) that puts about 16 owned ids in a block, the count
// of owned ids before each block is kept (8 bytes a block: half a byte per node owned here), and
// each owned id's offset in its block (two bytes a node owned here). A row is the block's count
// plus the number of the block's offsets below the id's, compared 32 at a time. So the book costs
// what the owners need of the whole graph, and the rows cost the partition's own nodes (where a
// partition owns under one id in 2048, the counts' 8 bytes per 2^15 ids exceed that half byte).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "server/util/huge_pages.h"
#include "server/util/prefetch.h"

namespace graphstore {

class NodeBook {
 public:
  static constexpr int64_t kLineIds = 60;         // a line's bytes before its 4 bytes of count
  static constexpr int64_t kNibbleLineIds = 120;  // up to 16 partitions: owners as half bytes
  static constexpr int kMaxPackedBits = 7;        // up to 128 partitions: owners as 5 to 7 bits
  static constexpr int kSuperLinesBits = 20;      // line counts are relative to a 64-bit count per 2^20 lines
  static constexpr int kMaxBlockBits = 15;        // beyond 128 partitions: an owned id's offset fits 15 bits
  static constexpr int64_t kBlockOwned = 16;      // owned ids a block holds when partitions are of a size
  static constexpr int kBlockScan = 32;           // offsets BlockRow compares at once

  /// A book of one partition: every node is owned here and is its own row.
  NodeBook() = default;

  /// The book of partition `self` of `num_partitions` from every node's owner (`owners`,
  /// `num_nodes` entries, each in [0, num_partitions), as the book file was verified to hold).
  static NodeBook FromOwners(const int32_t* owners, int64_t num_nodes, int num_partitions, int self);

  int num_partitions() const { return num_partitions_; }
  /// Owning partition of a global id in [0, num_nodes).
  int32_t Owner(int64_t gid) const {
    if (num_partitions_ <= 1) return 0;
    if (owner_width_ > 0) return ArrayOwner(gid);
    if (nibbles_) {
      const int64_t line = gid / kNibbleLineIds;
      const int64_t i = gid - line * kNibbleLineIds;
      const uint8_t pair = lines_[static_cast<size_t>(line)].owner[i >> 1];
      return (i & 1) != 0 ? pair >> 4 : pair & 15;
    }
    return PackedOwner(gid);
  }
  /// Row of a global id owned here within this partition's arrays.
  int64_t Row(int64_t gid) const {
    if (num_partitions_ <= 1) return gid;
    if (owner_width_ > 0) return BlockRow(gid);
    return nibbles_ ? NibbleLineRow(gid) : PackedLineRow(gid);
  }
  /// Asks for what Owner(gid) and Row(gid) read, ahead of the reads (beyond 128 partitions all
  /// but the block's offsets, which its count locates).
  void Prefetch(int64_t gid) const {
    if (num_partitions_ <= 1) return;
    if (owner_width_ == 0) {
      PrefetchRead(lines_.data() + LineOf(gid));
      return;
    }
    PrefetchRead(owners_.data() + gid * owner_width_);
    PrefetchRead(block_first_.data() + (gid >> block_bits_));
  }
  /// Bytes held for every node of the whole graph: the owners, and up to 128 partitions the
  /// lines' counts.
  size_t bytes() const;
  /// Bytes held for the nodes owned here: beyond 128 partitions each one's offset in its block
  /// and the blocks' counts (blocks sized to hold about 16 owned ids each, at most 2^15 ids).
  size_t own_bytes() const;

 private:
  struct alignas(64) Line {
    uint8_t owner[kLineIds];
    uint32_t before;  // this partition's ids before the line, since its superblock's start
  };
  static_assert(sizeof(Line) == 64, "a line of the book is one cache line");

  void BuildLines(const int32_t* owners, int64_t num_nodes);
  void BuildBlocks(const int32_t* owners, int64_t num_nodes);
  int64_t NibbleLineRow(int64_t gid) const;
  // Packed owners: words 0-6 of a line hold per_word_ owners of bits_ bits from bit 0, word 7
  // the next last_word_ in its low 32 bits; its high 32 bits are the line's `before`.
  int32_t PackedOwner(int64_t gid) const;
  int64_t PackedLineRow(int64_t gid) const;
  // The word of id `i` of a packed line and its field in the word (a table of the line's places).
  void PackedPlace(int64_t i, int* word, int* field) const {
    *word = place_[i] >> 8;
    *field = place_[i] & 0xff;
  }
  // gid / line_ids_ without a division: the high half of gid times 2^64 / line_ids_ rounded up,
  // exact for ids below 2^64 / line_ids_.
  int64_t LineOf(int64_t gid) const {
    return static_cast<int64_t>((static_cast<unsigned __int128>(static_cast<uint64_t>(gid)) * line_inverse_) >> 64);
  }
  // Beyond 128 partitions: the owner in owners_, owner_width_ little-endian bytes a node.
  int32_t ArrayOwner(int64_t gid) const {
    const uint8_t* p = owners_.data() + gid * owner_width_;
    if (owner_width_ == 1) return *p;
    if (owner_width_ == 2) {
      uint16_t v;
      std::memcpy(&v, p, sizeof(v));
      return v;
    }
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  int64_t BlockRow(int64_t gid) const;

  int num_partitions_ = 1;
  int self_ = 0;
  bool nibbles_ = false;  // owners as half bytes, kNibbleLineIds to a line
  int bits_ = 0;          // packed owners: bits an owner (5 to 7), else 0
  int per_word_ = 0;      // packed: owners in each of words 0-6
  uint64_t lanes_[64 / 5 + 1] = {};  // packed: lanes_[f], the lowest bit of each of the first f owners of a word
  int64_t line_ids_ = kLineIds;  // ids a line
  uint64_t line_inverse_ = ~uint64_t{0} / kLineIds + 1;  // LineOf's multiplier

  uint16_t place_[7 * (64 / 5) + 32 / 5] = {};  // packed: word << 8 | field of each id of a line
  std::vector<Line, HugePageAllocator<Line>> lines_;
  std::vector<int64_t> super_;  // this partition's ids before each superblock

  // Beyond 128 partitions: owners a byte, two or four each (owner_width_), and rows by blocks.
  int owner_width_ = 0;
  int block_bits_ = 0;
  std::vector<uint8_t, HugePageAllocator<uint8_t>> owners_;
  std::vector<int64_t, HugePageAllocator<int64_t>> block_first_;  // owned ids before each block, and in all
  std::vector<uint16_t, HugePageAllocator<uint16_t>> offsets_;    // each owned id less its block's first id
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_NODE_BOOK_H_
