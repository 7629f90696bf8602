#ifndef GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_
#define GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_

// Node data (feature rows, labels) of other partitions, kept once a peer has sent it. Node
// data never changes, and in a cluster the same remote nodes come back batch after batch, so
// a row fetched once serves every later batch without crossing the network again. Rows are
// kept until the byte budget is spent and never evicted (the rows that come first are the hot
// ones: high-degree nodes appear in most neighbourhoods).
//
// Reads take no lock: a node's slot is published after its row is written.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "server/graph/partition.h"

namespace graphstore {

class RemoteCache {
 public:
  /// A cache for the node types of `partition`, using at most `capacity_bytes` (0: off).
  RemoteCache(const Partition* partition, int64_t capacity_bytes);
  ~RemoteCache();
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  /// The cached feature row of node `id` of type `type`, or null when absent. Rows never move
  /// (nothing is evicted), so the pointer stays valid for the cache's life.
  const char* FindFeatures(int type, int64_t id) const;
  /// Copies the cached feature row of node `id` of type `type` to `dst`; false when absent.
  bool GetFeatures(int type, int64_t id, char* dst) const;
  /// Keeps a feature row (row width of the type's features) while the budget lasts.
  void PutFeatures(int type, int64_t id, const char* row);
  /// Starts loading where node `id`'s feature slot and label would be, for a lookup a few nodes
  /// later: lookups fall at random in arrays the size of the graph, each a cache miss.
  void Prefetch(int type, int64_t id) const;
  /// The cached label of node `id`; false when absent.
  bool GetLabel(int type, int64_t id, int64_t* label) const;
  void PutLabel(int type, int64_t id, int64_t label);

  /// Bytes in use (rows and index arrays).
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  /// Counts lookups of other partitions' nodes that the cache answered and that went to a peer
  /// (added once per gather, not per row).
  void CountLookups(int64_t hits, int64_t misses) const {
    hits_.fetch_add(hits, std::memory_order_relaxed);
    misses_.fetch_add(misses, std::memory_order_relaxed);
  }
  int64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  int64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  struct Type;
  // Reserves `n` bytes of the budget; false when it is spent.
  bool Reserve(int64_t n);

  const int64_t capacity_;
  std::atomic<int64_t> bytes_{0};
  mutable std::atomic<int64_t> hits_{0};
  mutable std::atomic<int64_t> misses_{0};
  std::vector<std::unique_ptr<Type>> types_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_
