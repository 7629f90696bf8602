#ifndef GRAPHSTORE_SERVER_SAMPLING_LOOKUP_COUNTS_H_
#define GRAPHSTORE_SERVER_SAMPLING_LOOKUP_COUNTS_H_

// How often each of one store's remote nodes was looked up while the peer cache chooses what to
// keep (RemoteCache; hot_set.h makes the choice from these counts). Counts saturate at
// kMaxHotCount and come in one of two forms: a byte per node of the graph (exact, every node
// named), or a table of words (count << 56 | id) that takes nodes in as they are met; once the
// kProbes positions from a node's home are full, the node takes the place of one of them
// counted once, if there is one, so the nodes met first do not keep the table from the nodes
// looked up most. Add is lock-free and may lose a count to a racing one; Drop frees the counts
// and must not meet an Add (RemoteCache waits for its lookups).

#include <atomic>
#include <cstdint>

#include "server/sampling/hot_set.h"
#include "server/util/huge_pages.h"

namespace graphstore {

class LookupCounts {
 public:
  /// Positions a node's count is looked for from its home before it is left uncounted.
  static constexpr int kProbes = 16;
  static constexpr int64_t kMinPositions = 64;

  /// Positions of a table within `bytes` (a power of two, at least kMinPositions), no more
  /// than twice what `remote` nodes need.
  static int64_t TablePositions(int64_t bytes, int64_t remote);
  static int64_t TableBytes(int64_t positions) { return positions * static_cast<int64_t>(sizeof(uint64_t)); }

  /// Starts counting with a byte per node of `num_nodes`, `remote` of which can be looked up.
  void PerNode(int64_t num_nodes, int64_t remote);
  /// Starts counting in a table of `positions` (from TablePositions) for `remote` nodes.
  void Table(int64_t positions, int64_t remote);

  /// Whether counting was started (still true once dropped).
  bool on() const { return bytes_ > 0; }
  /// Bytes the counts take or took (0 when never started).
  int64_t bytes() const { return bytes_; }
  /// Nodes the counts can tell apart.
  int64_t candidates() const { return candidates_; }
  /// Whether any lookup was added.
  bool looked_up() const { return looked_up_.load(std::memory_order_relaxed); }

  /// Counts one lookup of node `id`.
  void Add(int64_t id) const;
  /// Starts loading where node `id`'s count lies. (After Drop, a prefetch of memory no longer
  /// ours: harmless.)
  void Prefetch(int64_t id) const;
  /// Calls f(id, count) for each node counted at least once: in id order for a byte per node,
  /// else in table order.
  template <typename F>
  void ForEach(F&& f) const;
  /// Frees the counts.
  void Drop();

 private:
  static constexpr int kCountShift = 56;
  static constexpr uint64_t kOneCount = uint64_t{1} << kCountShift;
  static constexpr uint64_t kIdMask = kOneCount - 1;

  int64_t Home(int64_t id) const {
    return static_cast<int64_t>((static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  int64_t num_nodes_ = 0;
  int64_t positions_ = 0;
  int shift_ = 64;
  int64_t bytes_ = 0;
  int64_t candidates_ = 0;
  mutable std::atomic<bool> looked_up_{false};
  // Null when off and once dropped; read by Prefetch while Drop may run.
  std::atomic<std::atomic<uint8_t>*> per_node_{nullptr};
  std::atomic<std::atomic<uint64_t>*> table_{nullptr};
  HugePageVector<std::atomic<uint8_t>> per_node_storage_;
  HugePageVector<std::atomic<uint64_t>> table_storage_;
};

template <typename F>
void LookupCounts::ForEach(F&& f) const {
  if (const auto* c = per_node_.load(std::memory_order_relaxed)) {
    for (int64_t id = 0; id < num_nodes_; ++id) {
      if (const int v = c[id].load(std::memory_order_relaxed); v > 0) f(id, v);
    }
  } else if (const auto* t = table_.load(std::memory_order_relaxed)) {
    for (int64_t p = 0; p < positions_; ++p) {
      const uint64_t w = t[p].load(std::memory_order_relaxed);
      if (w != 0) f(static_cast<int64_t>(w & kIdMask), static_cast<int>(w >> kCountShift));
    }
  }
}

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_LOOKUP_COUNTS_H_
