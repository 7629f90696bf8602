#include "server/sampling/hot_set.h"

#include <algorithm>

namespace graphstore {

std::vector<HotQuota> ChooseHotSets(const std::vector<HotCandidates>& stores, int64_t budget) {
  std::vector<HotQuota> quotas(stores.size());
  // Every (store, count) bucket, most bytes saved per byte kept first; ties go to the earlier
  // store.
  struct Bucket {
    size_t store;
    int count;
  };
  std::vector<Bucket> buckets;
  for (size_t s = 0; s < stores.size(); ++s) {
    for (int c = kMaxHotCount; c >= 1; --c) {
      if (stores[s].nodes_with_count[c] > 0) buckets.push_back({s, c});
    }
  }
  auto per_byte = [&](const Bucket& b) {
    const HotCandidates& s = stores[b.store];
    return static_cast<double>(b.count) * static_cast<double>(s.saves) / static_cast<double>(std::max<int64_t>(1, s.cost));
  };
  std::stable_sort(buckets.begin(), buckets.end(),
                   [&](const Bucket& a, const Bucket& b) { return per_byte(a) > per_byte(b); });
  int64_t left = budget;
  for (const Bucket& b : buckets) {
    const int64_t cost = std::max<int64_t>(1, stores[b.store].cost);
    const int64_t n = std::min(stores[b.store].nodes_with_count[b.count], left / cost);
    if (n <= 0) continue;
    // A store's buckets come in falling count, and one taken in part leaves less than a node's
    // cost: each store's quota is a threshold.
    HotQuota& q = quotas[b.store];
    q.min_count = b.count;
    q.at_min = n;
    q.kept += n;
    q.bytes += n * cost;
    left -= n * cost;
  }
  return quotas;
}

}  // namespace graphstore
