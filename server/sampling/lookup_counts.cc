#include "server/sampling/lookup_counts.h"

#include <algorithm>

#include "server/util/prefetch.h"

namespace graphstore {

int64_t LookupCounts::TablePositions(int64_t bytes, int64_t remote) {
  int64_t positions = kMinPositions;
  while (TableBytes(positions * 2) <= bytes) positions *= 2;
  // Two positions per node it can count.
  while (positions > kMinPositions && positions / 2 >= 2 * remote) positions /= 2;
  return positions;
}

void LookupCounts::PerNode(int64_t num_nodes, int64_t remote) {
  num_nodes_ = num_nodes;
  bytes_ = num_nodes;
  candidates_ = remote;
  per_node_storage_ = HugePageVector<std::atomic<uint8_t>>(static_cast<size_t>(num_nodes));
  for (auto& c : per_node_storage_) c.store(0, std::memory_order_relaxed);
  per_node_.store(per_node_storage_.data(), std::memory_order_relaxed);
}

void LookupCounts::Table(int64_t positions, int64_t remote) {
  positions_ = positions;
  shift_ = 64 - __builtin_ctzll(static_cast<uint64_t>(positions));
  bytes_ = TableBytes(positions);
  candidates_ = std::min(remote, positions / 2);
  table_storage_ = HugePageVector<std::atomic<uint64_t>>(static_cast<size_t>(positions));
  for (auto& w : table_storage_) w.store(0, std::memory_order_relaxed);
  table_.store(table_storage_.data(), std::memory_order_relaxed);
}

void LookupCounts::Add(int64_t id) const {
  if (!looked_up_.load(std::memory_order_relaxed)) looked_up_.store(true, std::memory_order_relaxed);
  if (std::atomic<uint8_t>* counts = per_node_.load(std::memory_order_relaxed)) {
    std::atomic<uint8_t>& c = counts[id];
    const uint8_t v = c.load(std::memory_order_relaxed);
    if (v < kMaxHotCount) c.store(static_cast<uint8_t>(v + 1), std::memory_order_relaxed);
    return;
  }
  std::atomic<uint64_t>* table = table_.load(std::memory_order_relaxed);
  if (table == nullptr) return;
  const int64_t mask = positions_ - 1;
  const uint64_t mine = kOneCount | static_cast<uint64_t>(id);
  std::atomic<uint64_t>* once = nullptr;  // the first position here of a node counted once
  uint64_t once_word = 0;
  int64_t p = Home(id);
  for (int probe = 0; probe < kProbes; ++probe, p = (p + 1) & mask) {
    std::atomic<uint64_t>& w = table[p];
    uint64_t v = w.load(std::memory_order_relaxed);
    if (v == 0 && w.compare_exchange_strong(v, mine, std::memory_order_relaxed)) return;
    // (A failed exchange left the word that won in v: it may be this node's.)
    if ((v & kIdMask) == static_cast<uint64_t>(id)) {
      // A node's id bits change only when another takes its place (below), which a count
      // above one prevents: a plain store of v plus one keeps them, or at worst puts back a
      // node that was just replaced, a lost count as a racing Add may lose one.
      if ((v >> kCountShift) < static_cast<uint64_t>(kMaxHotCount)) w.store(v + kOneCount, std::memory_order_relaxed);
      return;
    }
    if (once == nullptr && (v >> kCountShift) == 1) {
      once = &w;
      once_word = v;
    }
  }
  // Every position from the home holds another node: this one takes the place of a node
  // counted once, so that a node looked up often gets in however late it is first met (and
  // stays once counted twice), where the nodes met first would otherwise hold the table.
  if (once != nullptr) once->compare_exchange_strong(once_word, mine, std::memory_order_relaxed);
}

void LookupCounts::Prefetch(int64_t id) const {
  if (const auto* counts = per_node_.load(std::memory_order_relaxed)) {
    PrefetchRead(counts + id);
  } else if (const auto* table = table_.load(std::memory_order_relaxed)) {
    PrefetchRead(table + Home(id));
  }
}

void LookupCounts::Drop() {
  per_node_.store(nullptr, std::memory_order_relaxed);
  table_.store(nullptr, std::memory_order_relaxed);
  per_node_storage_ = HugePageVector<std::atomic<uint8_t>>();
  table_storage_ = HugePageVector<std::atomic<uint64_t>>();
}

}  // namespace graphstore
