#ifndef GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_
#define GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_

// Node data (feature rows, labels) and neighbour lists of other partitions, kept once a peer
// has sent them. Neither ever changes, and in a cluster the same remote nodes come back batch
// after batch, so a row fetched once serves every later batch without crossing the network
// again: a cached feature row is copied here, and a cached neighbour list is drawn from here
// exactly as its owner would draw from it. Rows are kept until the byte budget is spent and
// never evicted (the rows that come first are the hot ones: high-degree nodes appear in most
// neighbourhoods).
//
// Reads take no lock: a node's slot is published after its row is written.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "server/graph/partition.h"
#include "server/util/huge_pages.h"

namespace graphstore {

class RemoteCache {
 public:
  /// A cache for the node types and edge types of `partition`, using at most `capacity_bytes`
  /// (0: off); neighbour lists only with `lists`.
  RemoteCache(const Partition* partition, int64_t capacity_bytes, bool lists = true);
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

  /// The cached neighbours of node `id` along edge type `edge_type` (global ids, in the order
  /// of the owner's row) and their number in *degree; null when absent, with *degree 0, or -1
  /// when the list is known to be too long to keep (ask the owner to draw). They never move.
  const int64_t* FindNeighbors(int edge_type, int64_t id, int64_t* degree) const;
  /// Where node `id`'s cached list along `edge_type` lies, without reading it: its degree, then
  /// its neighbours as FindNeighbors gives them. Null when absent, with *too_long set when the
  /// list is known to be too long to keep. For a pass that looks many nodes up and reads their
  /// lists later: one cache miss a node here rather than two.
  const int64_t* FindList(int edge_type, int64_t id, bool* too_long) const;
  /// Starts loading where node `id`'s list slot along `edge_type` would be, for a lookup a few
  /// nodes later.
  void PrefetchList(int edge_type, int64_t id) const;
  /// Keeps node `id`'s whole neighbour list along `edge_type` while the budget lasts. A list
  /// longer than one chunk of the cache (2 MiB) is not kept, and the node is marked so that
  /// FindNeighbors says so.
  void PutNeighbors(int edge_type, int64_t id, const int64_t* neighbors, int64_t degree);
  /// Whether lists are kept and none has been refused for want of budget yet: while so,
  /// fetching whole neighbour lists to keep is worth their bytes.
  bool has_room() const { return lists_on_ && !lists_full_.load(std::memory_order_relaxed); }
  /// Whether neighbour lists are kept at all.
  bool keeps_lists() const { return lists_on_; }

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
  struct Lists;
  // Reserves `n` bytes of the budget; false when it is spent.
  bool Reserve(int64_t n);
  // Publishes a slot index of `num_nodes` empty entries in *published (held in *storage) unless
  // there is one; false when the budget has no room for it. Under the owner's writer lock.
  bool MakeSlots(int64_t num_nodes, HugePageVector<std::atomic<int32_t>>* storage,
                 std::atomic<std::atomic<int32_t>*>* published);

  const int64_t capacity_;
  const bool lists_on_;
  std::atomic<bool> lists_full_{false};
  std::atomic<int64_t> bytes_{0};
  mutable std::atomic<int64_t> hits_{0};
  mutable std::atomic<int64_t> misses_{0};
  std::vector<std::unique_ptr<Type>> types_;
  std::vector<std::unique_ptr<Lists>> lists_;  // per edge type
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_
