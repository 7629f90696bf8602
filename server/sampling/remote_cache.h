#ifndef GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_
#define GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_

// Node data (feature rows, labels, node times) and neighbour lists of other partitions, kept once a peer
// has sent them. Neither ever changes, and in a cluster the same remote nodes come back batch
// after batch, so a row fetched once serves every later batch without crossing the network
// again: a cached feature row is copied here, and a cached neighbour list is drawn from here
// exactly as its owner would draw from it. Nothing is evicted.
//
// A budget that holds all of other partitions' data keeps every row and list as it first
// comes, indexed by node id. A smaller one first only counts remote nodes' lookups (for rows and
// for each edge type's lists) until it has seen a few per node it counts, then keeps the nodes
// that save the most bytes per byte kept (hot_set.h), indexed by an open-addressing table of
// just those (a row's label beside it), as they next come. First come, first kept spent a small
// budget on whichever nodes the first batches met.
//
// The counts are shared by the stores that count: a byte a node of the graph where that fits
// half the budget (exact, and every node named), else a table of (node, count) words within a
// quarter, a node taken in as it is first looked up until its neighbourhood of the table is
// full (so on a graph far larger than the budget the candidates are the first nodes met, hot
// ones among them as they recur).
// Once the nodes are chosen the counts are freed and their bytes go to rows and lists: nothing
// stays per node of the whole graph.
//
// Reads take no lock: a node's slot is published after its row is written, and an index, once
// published, never changes. Lookups that count announce themselves (one shared counter, once
// per pass over a batch's nodes: LookupPass) so that the chooser frees the counts only after the
// last of them left.

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/hot_set.h"
#include "server/util/huge_pages.h"

namespace graphstore {

class RemoteCache {
 public:
  /// How lookups are counted while the cache chooses: a byte a node where the store's share of
  /// half the budget holds it, else a table (kAuto); or either one always (for tests).
  enum class Counting { kAuto, kPerNode, kTable };

  /// A cache for the node types and edge types of `partition`, using at most `capacity_bytes`
  /// (0: off); neighbour lists only with `lists`.
  RemoteCache(const Partition* partition, int64_t capacity_bytes, bool lists = true,
              Counting counting = Counting::kAuto);
  ~RemoteCache();
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  /// Held by a thread over a pass of lookups (a gather's, a hop's): the counts they make while
  /// the cache chooses stay alive until it ends, at the cost of one shared increment a pass
  /// instead of one a lookup. Lookups outside a pass announce themselves one by one. End the
  /// pass before CountLookups / CountListLookups. A null cache is allowed.
  class LookupPass {
   public:
    explicit LookupPass(const RemoteCache* cache);
    ~LookupPass();
    LookupPass(const LookupPass&) = delete;
    LookupPass& operator=(const LookupPass&) = delete;

   private:
    const RemoteCache* cache_ = nullptr;  // set when this pass announced itself
    const RemoteCache* outer_ = nullptr;  // the thread's pass before this one
  };

  /// The cached feature row of node `id` of type `type`, or null when absent (counted as a
  /// lookup while the cache chooses). Rows never move: the pointer lives as long as the cache.
  const char* FindFeatures(int type, int64_t id) const;
  /// Copies the cached feature row of node `id` of type `type` to `dst`; false when absent.
  bool GetFeatures(int type, int64_t id, char* dst) const;
  /// Keeps a feature row (row width of the type's features) if the node is one to keep and the
  /// budget lasts.
  void PutFeatures(int type, int64_t id, const char* row);
  /// Starts loading where node `id`'s entry would be, for a lookup a few nodes later.
  void Prefetch(int type, int64_t id) const;
  /// The cached label of node `id`; false when absent.
  bool GetLabel(int type, int64_t id, int64_t* label) const;
  void PutLabel(int type, int64_t id, int64_t label);
  /// The cached time of node `id` (a type that stores node times); false when absent (counted
  /// as a lookup while the cache chooses: a node whose time is asked for is worth keeping).
  bool GetTime(int type, int64_t id, int64_t* time) const;
  void PutTime(int type, int64_t id, int64_t time);

  /// The cached neighbours of node `id` along edge type `edge_type` (global ids, in the order
  /// of the owner's row) and their number in *degree; null when absent, with *degree 0, or -1
  /// when the list is known to be too long to keep (ask the owner to draw). They never move.
  const int64_t* FindNeighbors(int edge_type, int64_t id, int64_t* degree) const;
  /// Where node `id`'s cached list along `edge_type` lies, without reading it: its degree, then
  /// its neighbours. Null when absent, with *too_long set when the list is known to be too long
  /// to keep (counted as a lookup while the cache chooses): one cache miss a node, not two.
  const int64_t* FindList(int edge_type, int64_t id, bool* too_long) const;
  /// Starts loading where node `id`'s list entry along `edge_type` would be.
  void PrefetchList(int edge_type, int64_t id) const;
  /// Keeps node `id`'s whole neighbour list along `edge_type` if the node is one to keep and
  /// the budget lasts; a list longer than lists' room (a 2 MiB chunk when everything is kept)
  /// is marked too long instead.
  void PutNeighbors(int edge_type, int64_t id, const int64_t* neighbors, int64_t degree);
  /// Whether whole neighbour lists are worth fetching: lists are kept, chosen ones are still to
  /// come (all, when everything is kept), and none was refused for want of budget.
  bool has_room() const {
    return lists_on_ && !lists_full_.load(std::memory_order_relaxed) &&
           lists_wanted_.load(std::memory_order_relaxed) > 0;
  }
  /// Whether neighbour lists are kept at all.
  bool keeps_lists() const { return lists_on_; }
  /// Whether the budget holds all of other partitions' data (every node kept as it comes).
  bool keeps_all() const { return keep_all_; }
  /// Whether the nodes to keep have been chosen (always, when everything is kept).
  bool chosen() const { return chosen_.load(std::memory_order_acquire); }

  /// Bytes in use (rows, lists, indexes, and lookup counts until the nodes are chosen).
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  /// Counts lookups of other partitions' node data answered here and asked of a peer (once per
  /// gather); once enough are counted (four per node the stores looked up so far can count),
  /// chooses the nodes to keep.
  void CountLookups(int64_t hits, int64_t misses);
  /// The same for neighbour lists (once per hop).
  void CountListLookups(int64_t hits, int64_t misses);
  int64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  int64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  int64_t list_hits() const { return list_hits_.load(std::memory_order_relaxed); }
  int64_t list_misses() const { return list_misses_.load(std::memory_order_relaxed); }

 private:
  // A node's label or time not (yet) kept. (A stored value equal to it is never kept: asked of
  // the owner each time, still right.)
  static constexpr int64_t kNoValue = std::numeric_limits<int64_t>::min();
  static constexpr int kLabel = 0;  // the per-node values: labels and node times
  static constexpr int kTime = 1;
  static constexpr int kValues = 2;
  static constexpr size_t kChunkBytes = HugePageAllocator<char>::kHugePage;
  // A chosen store's table has two positions per kept node.
  static constexpr int64_t kPositionsPerNode = 2;

  // (Defined in remote_cache_stores.h.)
  struct Index;
  struct Store;
  struct Type;
  struct Lists;
  // Reserves `n` bytes of the budget; false when it is spent.
  bool Reserve(int64_t n);
  // The index of `store`, made (dense, one entry per node) when everything is kept and there
  // is none yet; null when there is none. Under the store's writer lock.
  Index* WritableIndex(Store* store);
  // Starts counting lookups in the stores that can keep something (remote_cache_choice.cc).
  void StartCounting(Counting counting);
  // Counts one lookup of node `id` of `store` while choosing.
  void Count(const Store& store, int64_t id) const;
  // Adds to the lookups counted while choosing, and chooses once there are enough.
  void Counted(int64_t lookups);
  // Chooses the nodes to keep from the counts and publishes their indexes.
  void Choose();
  // Publishes the table of the nodes of `store` that `quota` keeps (an empty one where the
  // budget has no room for it), with a label and a time per position as `values` says; whether
  // any node is kept.
  bool Publish(Store* store, const HotQuota& quota, const std::array<bool, kValues>& values);
  // A type's label (k = 0) or time (k = 1) of node `id`, counted as a lookup while choosing
  // when `count`; and its keeping.
  bool GetValue(int type, int k, int64_t id, bool count, int64_t* out) const;
  void PutValue(int type, int k, int64_t id, int64_t value);

  const int64_t capacity_;
  const bool lists_on_;
  bool keep_all_ = true;
  std::atomic<bool> chosen_{false};
  std::atomic<bool> choosing_{false};  // counting has stopped
  mutable std::atomic<int64_t> counting_{0};  // lookups counting now (the counts live until 0)
  std::atomic<bool> lists_full_{false};
  std::atomic<int64_t> lists_wanted_{0};  // chosen lists still to come (whole lists are fetched while > 0)
  std::atomic<int64_t> bytes_{0};
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> misses_{0};
  std::atomic<int64_t> list_hits_{0};
  std::atomic<int64_t> list_misses_{0};
  std::atomic<int64_t> counted_{0};  // lookups counted while choosing
  std::mutex choose_mu_;
  std::vector<std::unique_ptr<Type>> types_;
  std::vector<std::unique_ptr<Lists>> lists_;  // per edge type
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_H_
