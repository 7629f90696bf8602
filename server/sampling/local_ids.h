#ifndef GRAPHSTORE_SERVER_SAMPLING_LOCAL_IDS_H_
#define GRAPHSTORE_SERVER_SAMPLING_LOCAL_IDS_H_

// The global -> local id map of a batch's subgraph, one per node type and sampling worker. Up to
// kDenseNodes nodes of the type it is an array indexed by global id (4 bytes a node, at most
// 64 MiB: the fastest lookup while it fits); beyond, a table of the batch's nodes alone (open
// addressing, linear probing, at most half full) whose slots hold local ids, 4 bytes each: a
// slot's key is the subgraph's id at that local id, so the table and the id list it points into
// stay a few MB for the largest batch. Either way what a worker holds is bounded whatever the
// graph's size, and it is emptied after each batch at the cost of what the batch added.
//
// Every lookup takes the subgraph's id list of the type (`ids`: local id -> global id); a caller
// that gets -1 from Slot and keeps the node sets the slot to ids.size() and appends the id.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "server/util/prefetch.h"

namespace graphstore {

class LocalIdMap {
 public:
  LocalIdMap() = default;
  // Prefetch's base points into the map's own arrays, which a move carries along.
  LocalIdMap(LocalIdMap&&) = default;
  LocalIdMap& operator=(LocalIdMap&&) = default;
  LocalIdMap(const LocalIdMap&) = delete;
  LocalIdMap& operator=(const LocalIdMap&) = delete;

  /// Types of up to this many nodes are mapped by an array.
  static constexpr int64_t kDenseNodes = int64_t{1} << 24;

  /// Maps ids of a type of `num_nodes` nodes (an array up to `dense_nodes` of them, a table
  /// beyond). Forgets what it held.
  void Reset(int64_t num_nodes, int64_t dense_nodes = kDenseNodes);
  bool dense() const { return dense_; }

  /// The local id of `id`, or -1 when the batch has no such node.
  int32_t Find(int64_t id, const std::vector<int64_t>& ids) const {
    if (dense_) return array_[static_cast<size_t>(id)];
    if (slots_.empty()) return -1;
    for (size_t s = Home(id);; s = (s + 1) & mask_) {
      const int32_t local = slots_[s];
      if (local < 0 || ids[static_cast<size_t>(local)] == id) return local;
    }
  }
  /// The local id slot of `id`, -1 when `id` is new (see above). The reference is good until
  /// the next Slot call.
  int32_t& Slot(int64_t id, const std::vector<int64_t>& ids) {
    if (dense_) return array_[static_cast<size_t>(id)];
    if (2 * (touched_.size() + 1) > slots_.size()) Grow(ids);
    size_t s = Home(id);
    while (slots_[s] >= 0 && ids[static_cast<size_t>(slots_[s])] != id) s = (s + 1) & mask_;
    if (slots_[s] < 0) touched_.push_back(static_cast<uint32_t>(s));
    return slots_[s];
  }
  /// Asks for the memory `id`'s lookup starts at, ahead of Find or Slot: one formula for both
  /// forms, without a branch.
  void Prefetch(int64_t id) const {
    PrefetchRead(prefetch_base_ + (((static_cast<uint64_t>(id) * prefetch_mul_) >> prefetch_shift_) << 2));
  }
  /// Forgets every id of `ids` (the subgraph's, as above); costs what was added since the last
  /// Clear.
  void Clear(const std::vector<int64_t>& ids);
  /// Bytes held.
  size_t bytes() const { return (array_.capacity() + slots_.capacity() + touched_.capacity()) * 4; }

 private:
  static constexpr size_t kFirstSlots = size_t{1} << 12;
  static constexpr uint64_t kMix = 0x9E3779B97F4A7C15ULL;  // Fibonacci hashing: the top bits of id * 2^64/phi

  size_t Home(int64_t id) const { return static_cast<size_t>((static_cast<uint64_t>(id) * kMix) >> shift_); }
  void Grow(const std::vector<int64_t>& ids);
  void SetPrefetch();

  bool dense_ = false;
  std::vector<int32_t> array_;  // dense: the local id of every global id, -1 for none
  std::vector<int32_t> slots_;  // table: local ids, -1 for an empty slot
  std::vector<uint32_t> touched_;  // table: the slots looked up empty since the last Clear
  size_t mask_ = 0;
  int shift_ = 64;
  // Prefetch's address of an id, base + 4 ((id * mul) >> shift): dense, its entry; table, its
  // home slot; an empty table, the base (nothing to ask for).
  const char* prefetch_base_ = nullptr;
  uint64_t prefetch_mul_ = 0;
  int prefetch_shift_ = 0;
};

/// A worker's maps, one per node type of the partition.
using LocalIds = std::vector<LocalIdMap>;

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_LOCAL_IDS_H_
