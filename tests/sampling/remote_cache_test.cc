// The cache of other partitions' rows: rows and neighbour lists read back as written across
// its 2 MiB chunks, absent nodes stay absent; a budget too small for everything keeps, once
// lookups are counted (a byte a node, or a table where that would take more than half the
// budget), the most looked-up nodes, and no more than the budget; the counts are freed once
// chosen.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/remote_cache.h"
#include "tests/fixtures.h"

namespace graphstore {
namespace {

// 3000 nodes of 512 float features (2 KiB rows, 1024 to a chunk) in two partitions.
const Partition& PartZero() {
  static const std::unique_ptr<Partition> p = [] {
    auto loaded = Partition::Load(testing::GeneratedDataset(3000, 512, 4, 2, 11) + "/part-0");
    REQUIRE(loaded.ok());
    return *std::move(loaded);
  }();
  return *p;
}

std::vector<char> RowOf(int64_t id, size_t bytes) {
  std::vector<char> row(bytes);
  for (size_t b = 0; b < bytes; ++b) row[b] = static_cast<char>((id * 131 + static_cast<int64_t>(b)) % 251);
  return row;
}

// Every node of `ids` has its row (RowOf) and label (id % 7) in the cache.
void CheckKept(const RemoteCache& cache, const std::vector<int64_t>& ids, size_t row_bytes) {
  for (int64_t id : ids) {
    const char* row = cache.FindFeatures(0, id);
    REQUIRE(row != nullptr);
    CHECK(std::memcmp(row, RowOf(id, row_bytes).data(), row_bytes) == 0);
    int64_t label = -1;
    REQUIRE(cache.GetLabel(0, id, &label));
    CHECK(label == id % 7);
  }
}

std::vector<int64_t> ForeignIds(const Partition& p) {
  std::vector<int64_t> ids;
  const NodeTypeStore& t = p.node_type(0);
  for (int64_t id = 0; id < t.num_nodes; ++id) {
    if (t.Owner(id) != p.partition_id()) ids.push_back(id);
  }
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(3));
  return ids;
}

TEST_CASE("cached rows read back as written, across chunks, in any order of arrival") {
  const Partition& p = PartZero();
  const size_t row_bytes = static_cast<size_t>(p.node_type(0).feature_dim) * 4;
  RemoteCache cache(&p, int64_t{256} << 20);
  const std::vector<int64_t> ids = ForeignIds(p);
  REQUIRE(ids.size() > 1024);  // more than one chunk's rows
  const std::vector<int64_t> kept(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(ids.size() - 10));
  for (int64_t id : kept) {
    cache.PutFeatures(0, id, RowOf(id, row_bytes).data());
    cache.PutLabel(0, id, id % 7);
  }
  CheckKept(cache, kept, row_bytes);
  for (size_t i = kept.size(); i < ids.size(); ++i) {
    CHECK(cache.FindFeatures(0, ids[i]) == nullptr);
    int64_t label = 0;
    CHECK_FALSE(cache.GetLabel(0, ids[i], &label));
  }
  // A row written again keeps its first copy.
  cache.PutFeatures(0, kept[0], RowOf(kept[1], row_bytes).data());
  CHECK(std::memcmp(cache.FindFeatures(0, kept[0]), RowOf(kept[0], row_bytes).data(), row_bytes) == 0);
}

TEST_CASE("a budget too small for everything keeps the most looked-up rows, chosen once counted") {
  const Partition& p = PartZero();
  const size_t row_bytes = static_cast<size_t>(p.node_type(0).feature_dim) * 4;
  const int64_t budget = int64_t{1} << 20;  // about a third of the other partition's rows
  const auto counting = GENERATE(RemoteCache::Counting::kPerNode, RemoteCache::Counting::kTable);
  INFO((counting == RemoteCache::Counting::kTable ? "a table of counts" : "a count a node"));
  RemoteCache cache(&p, budget, /*lists=*/true, counting);
  CHECK_FALSE(cache.keeps_all());
  CHECK_FALSE(cache.chosen());
  // The counts, of rows and of lists: a byte a node, or tables within a quarter of the budget.
  CHECK(cache.bytes() > 0);
  CHECK(cache.bytes() <= budget / 4);
  CHECK_FALSE(cache.has_room());  // no whole lists while nothing is chosen
  const std::vector<int64_t> ids = ForeignIds(p);
  const std::vector<int64_t> hot(ids.begin(), ids.begin() + 200);
  // Nothing is kept while counting.
  cache.PutFeatures(0, hot[0], RowOf(hot[0], row_bytes).data());
  CHECK(cache.FindFeatures(0, hot[0]) == nullptr);
  // The hot nodes looked up 60 times each, the others once (in the order of their ids): enough
  // lookups to choose, 4 per remote node of the rows (the lists, never looked up, do not hold
  // the choice back).
  int64_t lookups = 1;
  for (int round = 0; round < 60; ++round) {
    for (int64_t id : hot) lookups += cache.FindFeatures(0, id) == nullptr;
  }
  for (size_t i = hot.size(); i < ids.size(); ++i) lookups += cache.FindFeatures(0, ids[i]) == nullptr;
  const int64_t enough = 4 * static_cast<int64_t>(ids.size());
  REQUIRE(lookups > enough);
  cache.CountLookups(0, enough - 1);
  CHECK_FALSE(cache.chosen());
  cache.CountLookups(0, lookups - (enough - 1));
  REQUIRE(cache.chosen());
  CHECK(cache.misses() == lookups);
  // The counts are freed: what is held is the chosen rows' index (no rows yet), a position
  // each for the lists that keep nothing.
  CHECK(cache.bytes() < (int64_t{1} << 20) / 8);

  for (int64_t id : ids) {
    cache.PutFeatures(0, id, RowOf(id, row_bytes).data());
    cache.PutLabel(0, id, id % 7);
  }
  CHECK(cache.bytes() <= budget);
  CheckKept(cache, hot, row_bytes);
  // The rest of the budget went to nodes looked up once, no more than it holds.
  int64_t found = 0;
  for (int64_t id : ids) {
    if (const char* row = cache.FindFeatures(0, id); row != nullptr) {
      ++found;
      CHECK(std::memcmp(row, RowOf(id, row_bytes).data(), row_bytes) == 0);
    }
  }
  CHECK(found > static_cast<int64_t>(hot.size()));
  CHECK(found <= budget / static_cast<int64_t>(row_bytes));
  // Own nodes, never looked up, are not kept.
  const int64_t own = p.node_type(0).global_ids()[0];
  cache.PutFeatures(0, own, RowOf(own, row_bytes).data());
  CHECK(cache.FindFeatures(0, own) == nullptr);

  RemoteCache off(&p, 0);
  CHECK(off.keeps_all());
  off.PutFeatures(0, ids[0], RowOf(ids[0], row_bytes).data());
  CHECK(off.FindFeatures(0, ids[0]) == nullptr);
  CHECK(off.bytes() == 0);
}

// Looks up the lists of `ids` `rounds` times and counts the lookups (all misses while the cache
// chooses); returns their number.
int64_t LookUpLists(RemoteCache* cache, const std::vector<int64_t>& ids, int rounds) {
  bool too_long = false;
  int64_t lookups = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int64_t id : ids) lookups += cache->FindList(0, id, &too_long) == nullptr;
  }
  cache->CountListLookups(0, lookups);
  return lookups;
}

// A neighbour list of `degree` ids derived from the node's id.
std::vector<int64_t> ListOf(int64_t id, int64_t degree) {
  std::vector<int64_t> list(static_cast<size_t>(degree));
  for (int64_t k = 0; k < degree; ++k) list[k] = (id * 7919 + k * 13) % 3000;
  return list;
}

TEST_CASE("cached neighbour lists read back as written; too long a list is not kept",
          "[lists]") {
  const Partition& p = PartZero();
  const int64_t entries = (int64_t{2} << 20) / 8;  // int64 entries in a chunk
  const std::vector<int64_t> ids = ForeignIds(p);
  // Lengths that fill chunks unevenly (a list never straddles two), the empty list, and a list
  // one entry too long for a chunk (a chunk also holds the list's length).
  auto degree_of = [&](size_t i) -> int64_t {
    return i == 0 ? 0 : i == 1 ? entries : static_cast<int64_t>(i * 4099 % 70001);
  };
  RemoteCache cache(&p, int64_t{256} << 20);
  CHECK(cache.has_room());
  const size_t n = 200;
  for (size_t i = 0; i < n; ++i) cache.PutNeighbors(0, ids[i], ListOf(ids[i], degree_of(i)).data(), degree_of(i));
  for (size_t i = 0; i < ids.size(); ++i) {
    INFO("node " << ids[i] << ", list of " << (i < n ? degree_of(i) : -1));
    int64_t degree = -2;
    const int64_t* list = cache.FindNeighbors(0, ids[i], &degree);
    if (i >= n || i == 1) {
      CHECK(list == nullptr);
      CHECK(degree == (i == 1 ? -1 : 0));  // the list too long to keep is known as such
      continue;
    }
    REQUIRE(list != nullptr);
    REQUIRE(degree == degree_of(i));
    CHECK(std::vector<int64_t>(list, list + degree) == ListOf(ids[i], degree));
  }
  // A list written again keeps its first copy.
  cache.PutNeighbors(0, ids[2], ListOf(ids[3], degree_of(3)).data(), degree_of(3));
  int64_t degree = 0;
  const int64_t* list = cache.FindNeighbors(0, ids[2], &degree);
  CHECK(std::vector<int64_t>(list, list + degree) == ListOf(ids[2], degree_of(2)));

  RemoteCache no_lists(&p, int64_t{256} << 20, /*lists=*/false);
  CHECK_FALSE(no_lists.has_room());
  no_lists.PutNeighbors(0, ids[0], ListOf(ids[0], 3).data(), 3);
  CHECK(no_lists.FindNeighbors(0, ids[0], &degree) == nullptr);
}

TEST_CASE("a budget too small for everything keeps the most looked-up lists, fetched whole until they came",
          "[lists]") {
  const Partition& p = PartZero();
  const std::vector<int64_t> ids = ForeignIds(p);
  const std::vector<int64_t> hot(ids.begin(), ids.begin() + 100);
  RemoteCache cache(&p, int64_t{512} << 10);  // rows cost more than lists save here: lists only
  REQUIRE_FALSE(cache.keeps_all());
  CHECK_FALSE(cache.has_room());
  const int64_t lookups = LookUpLists(&cache, hot, 200);
  REQUIRE(cache.chosen());
  CHECK(cache.list_misses() == lookups);
  CHECK(cache.has_room());  // the chosen lists are still to come
  // A node not chosen keeps nothing; the chosen ones keep their lists, until nearly all came.
  cache.PutNeighbors(0, ids[100], ListOf(ids[100], 5).data(), 5);
  int64_t degree = 0;
  CHECK(cache.FindNeighbors(0, ids[100], &degree) == nullptr);
  for (size_t i = 0; i < hot.size(); ++i) {
    const int64_t d = 1 + static_cast<int64_t>(i % 9);
    CHECK(cache.has_room() == (i < 95));
    cache.PutNeighbors(0, hot[i], ListOf(hot[i], d).data(), d);
  }
  int64_t found = 0;
  for (size_t i = 0; i < hot.size(); ++i) {
    const int64_t* list = cache.FindNeighbors(0, hot[i], &degree);
    if (list == nullptr) continue;
    ++found;
    CHECK(std::vector<int64_t>(list, list + degree) == ListOf(hot[i], degree));
  }
  CHECK(found == static_cast<int64_t>(hot.size()));
  CHECK(cache.bytes() <= (int64_t{512} << 10));
}

TEST_CASE("lookups counted on several threads while the cache chooses: it chooses once, within budget") {
  // Threads look nodes up and count them as sampling workers do; the one whose count crosses
  // the threshold chooses while the others go on looking up, and frees the counts after the
  // last lookup that counts has left them. Every choice stays within its quota.
  const Partition& p = PartZero();
  const size_t row_bytes = static_cast<size_t>(p.node_type(0).feature_dim) * 4;
  const std::vector<int64_t> ids = ForeignIds(p);
  const auto counting = GENERATE(RemoteCache::Counting::kPerNode, RemoteCache::Counting::kTable);
  for (int trial = 0; trial < 20; ++trial) {
    RemoteCache cache(&p, int64_t{1} << 20, /*lists=*/true, counting);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<uint64_t>(trial * 4 + t));
        while (!cache.chosen()) {
          int64_t misses = 0;
          {
            // Half the threads announce a pass of lookups, as the gathers do; the others
            // announce each lookup.
            RemoteCache::LookupPass pass(t % 2 == 0 ? &cache : nullptr);
            for (int k = 0; k < 200; ++k) {
              // Skewed: the first tenth of the ids half of the time.
              const size_t i = rng() % 2 == 0 ? rng() % (ids.size() / 10) : rng() % ids.size();
              misses += cache.FindFeatures(0, ids[i]) == nullptr;
            }
          }
          cache.CountLookups(0, misses);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (int64_t id : ids) cache.PutFeatures(0, id, RowOf(id, row_bytes).data());
    CHECK(cache.bytes() <= (int64_t{1} << 20));
    int64_t found = 0;
    for (int64_t id : ids) found += cache.FindFeatures(0, id) != nullptr;
    CHECK(found > 0);
    CHECK(found <= (int64_t{1} << 20) / static_cast<int64_t>(row_bytes));
  }
}

TEST_CASE("a budget the chosen lists fill to the byte still keeps them", "[lists]") {
  // Every remote node looked up alike and more lists wanted than the budget holds: the quota
  // takes the budget to within a list's cost, and the tables of the stores that keep nothing
  // (rows, never looked up here) must not take what the chosen lists' chunk needs.
  const Partition& p = PartZero();
  const std::vector<int64_t> ids = ForeignIds(p);
  for (int64_t extra = 0; extra < 160; extra += 8) {
    INFO("budget 64 KiB + " << extra);
    const int64_t budget = (int64_t{64} << 10) + extra;
    RemoteCache cache(&p, budget);
    LookUpLists(&cache, ids, 8);
    REQUIRE(cache.chosen());
    REQUIRE(cache.has_room());
    int64_t found = 0, degree = 0;
    for (int64_t id : ids) cache.PutNeighbors(0, id, ListOf(id, 3).data(), 3);
    for (int64_t id : ids) found += cache.FindNeighbors(0, id, &degree) != nullptr;
    CHECK(found > 0);
    CHECK(cache.bytes() <= budget);
  }
}

TEST_CASE("node times are kept as labels are: all of them, or the chosen nodes' once counted") {
  // 3000 nodes with times, 16 features, in two partitions.
  static const std::unique_ptr<Partition> timed = [] {
    auto loaded = Partition::Load(testing::GeneratedDataset(3000, 16, 4, 2, 11, /*times=*/true) + "/part-0");
    REQUIRE(loaded.ok());
    return *std::move(loaded);
  }();
  const Partition& p = *timed;
  REQUIRE(p.node_type(0).has_times);
  const std::vector<int64_t> ids = ForeignIds(p);
  auto time_of = [](int64_t id) { return 1000 + id * 3; };

  RemoteCache all(&p, int64_t{64} << 20);
  REQUIRE(all.keeps_all());
  int64_t time = -1;
  CHECK_FALSE(all.GetTime(0, ids[0], &time));
  for (size_t i = 0; i + 10 < ids.size(); ++i) all.PutTime(0, ids[i], time_of(ids[i]));
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool kept = all.GetTime(0, ids[i], &time);
    CHECK(kept == (i + 10 < ids.size()));
    if (kept) CHECK(time == time_of(ids[i]));
  }

  // Too small for every row: time lookups alone choose (rows, labels and lists never looked
  // up), and the hot nodes' times are kept.
  const int64_t budget = 64 << 10;
  RemoteCache some(&p, budget);
  REQUIRE_FALSE(some.keeps_all());
  const std::vector<int64_t> hot(ids.begin(), ids.begin() + 50);
  for (int round = 0; round < 200 && !some.chosen(); ++round) {
    int64_t misses = 0;
    for (int64_t id : hot) misses += !some.GetTime(0, id, &time);
    misses += !some.GetTime(0, ids[50 + static_cast<size_t>(round) % (ids.size() - 50)], &time);
    some.CountLookups(0, misses);
  }
  REQUIRE(some.chosen());
  for (int64_t id : ids) some.PutTime(0, id, time_of(id));
  for (int64_t id : hot) {
    REQUIRE(some.GetTime(0, id, &time));
    CHECK(time == time_of(id));
  }
  int64_t kept = 0;
  for (int64_t id : ids) kept += some.GetTime(0, id, &time);
  CHECK(kept < static_cast<int64_t>(ids.size()));
  CHECK(some.bytes() <= budget);
}

TEST_CASE("counts that a byte a node would take past half the budget go in a table") {
  // 3000 nodes, two stores counting: a byte a node is 6000 bytes, more than half this budget.
  // The tables, within a quarter, hold fewer nodes than the graph has: those met first are
  // counted, and the hot ones among them are kept.
  const Partition& p = PartZero();
  const size_t row_bytes = static_cast<size_t>(p.node_type(0).feature_dim) * 4;
  const int64_t budget = 11000;  // five rows and their index
  RemoteCache cache(&p, budget);
  REQUIRE_FALSE(cache.keeps_all());
  CHECK(cache.bytes() > 0);
  CHECK(cache.bytes() <= budget / 4);
  const std::vector<int64_t> ids = ForeignIds(p);
  const std::vector<int64_t> hot(ids.begin(), ids.begin() + 4);
  int64_t lookups = 0;
  {
    // Chosen from inside a pass of this thread's own: the chooser waits for the others alone.
    RemoteCache::LookupPass pass(&cache);
    for (int round = 0; round < 400 && !cache.chosen(); ++round) {
      int64_t misses = 0;
      for (int64_t id : hot) misses += cache.FindFeatures(0, id) == nullptr;
      // Each round also meets a few other nodes once.
      for (int k = 0; k < 3; ++k) misses += cache.FindFeatures(0, ids[5 + (round * 3 + k) % (ids.size() - 5)]) == nullptr;
      lookups += misses;
      cache.CountLookups(0, misses);
    }
  }
  REQUIRE(cache.chosen());
  CHECK(lookups < 4 * static_cast<int64_t>(ids.size()));  // chosen after the table's nodes, not the graph's
  for (int64_t id : ids) {
    cache.PutFeatures(0, id, RowOf(id, row_bytes).data());
    cache.PutLabel(0, id, id % 7);
  }
  CheckKept(cache, hot, row_bytes);
  CHECK(cache.bytes() <= budget);
}

}  // namespace
}  // namespace graphstore
