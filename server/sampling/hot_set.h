#ifndef GRAPHSTORE_SERVER_SAMPLING_HOT_SET_H_
#define GRAPHSTORE_SERVER_SAMPLING_HOT_SET_H_

// Which nodes a cache smaller than the data it caches should keep, from how often each node was
// looked up while it kept nothing (see RemoteCache). Several stores share one budget (the feature
// rows of each node type, the neighbour lists of each edge type), a node costs a different
// number of bytes in each, and a hit saves a different number of bytes from crossing the network
// (a whole row; a draw from a list), so what is kept is what saves the most bytes per byte kept:
// whole buckets of nodes looked up equally often, best first, the last one in part.

#include <array>
#include <cstdint>
#include <vector>

namespace graphstore {

/// The largest count a node's lookups are kept to.
inline constexpr int kMaxHotCount = 255;

/// One store's candidates: how many nodes were looked up each number of times, the bytes keeping
/// one of them takes, and the bytes a lookup it answers saves.
struct HotCandidates {
  int64_t cost = 1;
  int64_t saves = 1;
  std::array<int64_t, kMaxHotCount + 1> nodes_with_count{};
};

/// How many of a store's nodes to keep: every node looked up more than `min_count` times, and
/// the first `at_min` (in id order) of those looked up exactly `min_count` times. A store that
/// keeps nothing has `min_count` above kMaxHotCount.
struct HotQuota {
  int min_count = kMaxHotCount + 1;
  int64_t at_min = 0;
  int64_t kept = 0;  // nodes in all
  int64_t bytes = 0;  // kept * cost

  /// Whether a node looked up `count` times is kept, where `*at_min_left` counts down the nodes
  /// of count `min_count` still to keep (start it at `at_min`; call in id order).
  bool Keeps(int count, int64_t* at_min_left) const {
    if (count > min_count) return true;
    if (count < min_count || *at_min_left <= 0) return false;
    --*at_min_left;
    return true;
  }
};

/// The quotas of `stores` (in their order) that save the most bytes within `budget` bytes.
/// Nodes never looked up are never kept.
std::vector<HotQuota> ChooseHotSets(const std::vector<HotCandidates>& stores, int64_t budget);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_HOT_SET_H_
