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
// cut in blocks of 2^b, b the least (up to 15) that puts about 16 owned ids in a block, and each
// block has one cache line, a slot: the count of owned ids before the block (since its
// superblock of 2^12 blocks) and the offsets in the block of its first 30 owned ids, ascending.
// A row is the slot's count plus its offsets below the id's, compared at once: one memory access,
// which the caller prefetches with the owner's. A block with more than 30 owned ids (one in about 3000
// when they fall at random; every block of a run of owned ids) says so in its count's top bit,
// and the rest of its offsets are searched in a table apart. So the book costs what the owners
// need of the whole graph, and the rows cost the partition's own nodes: 64 bytes a block, about
// 4 bytes a node owned here (where a partition owns under one id in 2048, the slots' 64 bytes per
// 2^15 ids exceed that).
//
// A partition the tools dealt (OwnerDeal, recorded in the manifest) from 8 partitions on keeps no
// owners at all: an owner is computed, and the rows are found in blocks' slots as beyond 128
// partitions. Such a book keeps nothing per node of the whole graph, about 4 bytes per node owned
// here. Below 8 partitions that would exceed the half-byte lines, which are built from the deal.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "server/graph/owner_deal.h"
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
  static constexpr int kSlotOffsets = 30;         // offsets a block's slot holds
  static constexpr int kSuperSlotsBits = 12;      // slot counts are relative to a 64-bit count per 2^12 slots
  static constexpr int kDealtSlotsFrom = 8;       // dealt owners: lines below this many partitions, else slots

  /// A book of one partition: every node is owned here and is its own row.
  NodeBook() = default;

  /// The book of partition `self` of `num_partitions` from every node's owner (`owners`,
  /// `num_nodes` entries, each in [0, num_partitions), as the book file was verified to hold).
  static NodeBook FromOwners(const int32_t* owners, int64_t num_nodes, int num_partitions, int self);
  /// The book of partition `self` of a type whose owners `deal` computes: from kDealtSlotsFrom
  /// partitions no owner is stored (slots alone, about 4/P bytes a node of the graph); below,
  /// the owners are put in lines (0.53 bytes a node, less than the slots there), with no file.
  static NodeBook Dealt(const OwnerDeal& deal, int self);

  int num_partitions() const { return num_partitions_; }
  /// Owning partition of a global id in [0, num_nodes).
  int32_t Owner(int64_t gid) const {
    if (num_partitions_ <= 1) return 0;
    if (dealt_) return deal_.Owner(gid);
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
    if (block_bits_ > 0) return SlotRow(gid);
    return nibbles_ ? NibbleLineRow(gid) : PackedLineRow(gid);
  }
  /// Asks for what Owner(gid) and Row(gid) read, ahead of the reads.
  void Prefetch(int64_t gid) const {
    if (num_partitions_ <= 1) return;
    if (block_bits_ == 0) {
      PrefetchRead(lines_.data() + LineOf(gid));
      return;
    }
    if (owner_width_ > 0) PrefetchRead(owners_.data() + gid * owner_width_);
    PrefetchRead(slots_.data() + (gid >> block_bits_));
  }
  /// Whether the owners are computed (Dealt).
  bool dealt() const { return dealt_; }
  /// Bytes held for every node of the whole graph: the owners, and up to 128 partitions the
  /// lines' counts (none when dealt).
  size_t bytes() const;
  /// Bytes held for the nodes owned here: beyond 128 partitions, or dealt, the blocks' slots
  /// (blocks sized to hold about 16 owned ids each, at most 2^15 ids) and the offsets past a
  /// slot's 30.
  size_t own_bytes() const;

 private:
  struct alignas(64) Line {
    uint8_t owner[kLineIds];
    uint32_t before;  // this partition's ids before the line, since its superblock's start
  };
  static_assert(sizeof(Line) == 64, "a line of the book is one cache line");
  // A block's slot: its count, and the offsets of its first kSlotOffsets owned ids, ascending;
  // kNoOffset past them (never below an id's offset, which is less than 2^15).
  static constexpr uint16_t kNoOffset = 0x7fff;
  static constexpr uint32_t kSpills = 0x80000000u;  // `before`'s top bit: more offsets in spill_
  struct alignas(64) Slot {
    uint32_t before;  // owned ids before the block, since its superblock's start; kSpills
    uint16_t offset[kSlotOffsets];
  };
  static_assert(sizeof(Slot) == 64, "a block's slot is one cache line");

  template <typename OwnerOf>
  void BuildLines(OwnerOf owner_of, int64_t num_nodes);
  // The blocks' slots (and, with an owner_width_, the array of the owners) from `owner_of(g)`,
  // which `owned_all` ids of `num_nodes` name this partition.
  template <typename OwnerOf>
  void BuildBlocks(OwnerOf owner_of, int64_t num_nodes, int64_t owned_all);
  void FillSlot(size_t k, int64_t owned_before, const std::vector<uint16_t>& offsets);
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
  int64_t SlotRow(int64_t gid) const;
  int64_t SpillBelow(size_t k, uint16_t offset) const;

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

  // Dealt: owners computed by deal_, rows by blocks.
  bool dealt_ = false;
  OwnerDeal deal_;
  // Beyond 128 partitions: owners a byte, two or four each (owner_width_); beyond 128 or dealt,
  // rows by blocks of 2^block_bits_ ids (0: rows by lines).
  int owner_width_ = 0;
  int block_bits_ = 0;
  std::vector<uint8_t, HugePageAllocator<uint8_t>> owners_;
  std::vector<Slot, HugePageAllocator<Slot>> slots_;
  std::vector<int64_t> slot_super_;  // owned ids before each superblock of slots
  // Blocks of more than kSlotOffsets owned ids, ascending; spill_start_[i] .. [i + 1] their
  // offsets past the slot's in spill_offsets_.
  std::vector<int64_t> spill_block_;
  std::vector<int64_t> spill_start_;
  std::vector<uint16_t> spill_offsets_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_NODE_BOOK_H_
