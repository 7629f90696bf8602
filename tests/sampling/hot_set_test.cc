// Choosing what a cache smaller than its data keeps: the buckets that save the most bytes per
// byte kept, whole but for the last, each store's quota a threshold on its lookup counts.

#include <catch2/catch.hpp>

#include <vector>

#include "server/sampling/hot_set.h"

namespace graphstore {
namespace {

HotCandidates Store(int64_t cost, int64_t saves, std::vector<std::pair<int, int64_t>> buckets) {
  HotCandidates c;
  c.cost = cost;
  c.saves = saves;
  for (const auto& [count, nodes] : buckets) c.nodes_with_count[count] = nodes;
  return c;
}

TEST_CASE("the most looked-up nodes are kept first, the last bucket in part") {
  const std::vector<HotCandidates> one = {Store(100, 100, {{0, 1000}, {1, 50}, {5, 10}, {9, 3}})};
  // 3 nodes of count 9, 10 of count 5, and 7 of the 50 of count 1.
  const std::vector<HotQuota> q = ChooseHotSets(one, 2000);
  REQUIRE(q.size() == 1);
  CHECK(q[0].min_count == 1);
  CHECK(q[0].at_min == 7);
  CHECK(q[0].kept == 20);
  CHECK(q[0].bytes == 2000);
  // In id order: every node above the threshold, the first 7 at it, none below.
  int64_t left = q[0].at_min;
  int kept_at_min = 0;
  for (int i = 0; i < 50; ++i) kept_at_min += q[0].Keeps(1, &left);
  CHECK(kept_at_min == 7);
  CHECK(q[0].Keeps(5, &left));
  CHECK(q[0].Keeps(9, &left));
  CHECK_FALSE(q[0].Keeps(0, &left));
}

TEST_CASE("nodes never looked up are never kept, and a budget of nothing keeps nothing") {
  const std::vector<HotCandidates> one = {Store(10, 10, {{0, 1000}, {2, 5}})};
  const std::vector<HotQuota> q = ChooseHotSets(one, 1 << 20);
  CHECK(q[0].kept == 5);
  CHECK(q[0].min_count == 2);
  const std::vector<HotQuota> none = ChooseHotSets(one, 0);
  CHECK(none[0].kept == 0);
  int64_t left = none[0].at_min;
  CHECK_FALSE(none[0].Keeps(2, &left));
  CHECK_FALSE(none[0].Keeps(kMaxHotCount, &left));
}

TEST_CASE("stores share the budget by bytes saved per byte kept") {
  // Rows: 400 bytes saved for 440 kept. Lists: 80 saved for 112 kept. A row looked up 4 times is
  // worth more than a list looked up 4 times, less than a list looked up 8 times.
  const std::vector<HotCandidates> stores = {Store(440, 400, {{4, 10}, {2, 100}}),
                                             Store(112, 80, {{8, 20}, {4, 100}})};
  // Bytes saved per byte kept: lists of count 8 5.71, rows of count 4 3.64, lists of count 4 2.86,
  // rows of count 2 1.82. So 20 lists (2240 bytes), 10 rows (4400), and 30 lists of count 4 with
  // what is left (3360).
  const std::vector<HotQuota> q = ChooseHotSets(stores, 2240 + 4400 + 3360);
  CHECK(q[0].kept == 10);
  CHECK(q[0].min_count == 4);
  CHECK(q[1].kept == 50);
  CHECK(q[1].min_count == 4);
  CHECK(q[1].at_min == 30);
  CHECK(q[0].bytes + q[1].bytes == 2240 + 4400 + 3360);
  // A budget too small for a row still keeps lists.
  const std::vector<HotQuota> small = ChooseHotSets(stores, 300);
  CHECK(small[0].kept == 0);
  CHECK(small[1].kept == 2);
}

}  // namespace
}  // namespace graphstore
