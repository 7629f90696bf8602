// Lookup counts in a table smaller than the nodes looked up: the nodes met first must not keep
// the nodes looked up most out of it.

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>

#include "server/sampling/lookup_counts.h"

namespace graphstore {
namespace {

std::map<int64_t, int> Counted(const LookupCounts& counts) {
  std::map<int64_t, int> out;
  counts.ForEach([&](int64_t id, int count) { out[id] = count; });
  return out;
}

TEST_CASE("a full table makes room for nodes looked up often, in place of nodes met once") {
  LookupCounts counts;
  counts.Table(LookupCounts::kMinPositions, /*remote=*/100000);
  // Cold nodes, each looked up once, fill every position first.
  int64_t cold = 0;
  for (; cold < 4 * LookupCounts::kMinPositions; ++cold) counts.Add(10000 + cold);
  REQUIRE(Counted(counts).size() == static_cast<size_t>(LookupCounts::kMinPositions));
  // Then 8 hot nodes, 20 lookups each, among as many new cold nodes.
  for (int round = 0; round < 20; ++round) {
    for (int64_t hot = 0; hot < 8; ++hot) {
      counts.Add(hot);
      counts.Add(10000 + cold++);
    }
  }
  const std::map<int64_t, int> counted = Counted(counts);
  for (int64_t hot = 0; hot < 8; ++hot) {
    INFO("hot node " << hot);
    REQUIRE(counted.count(hot) == 1);
    CHECK(counted.at(hot) >= 18);  // in from its first or second lookup on, and never out
  }
  // Counts above one are the hot nodes' alone.
  for (const auto& [id, count] : counted) {
    if (id >= 10000) CHECK(count == 1);
  }
}

TEST_CASE("a node counted more than once is never made room for") {
  LookupCounts counts;
  counts.Table(LookupCounts::kMinPositions, /*remote=*/100000);
  for (int64_t id = 0; id < 4 * LookupCounts::kMinPositions; ++id) {
    counts.Add(id);
    counts.Add(id);
  }
  const std::map<int64_t, int> before = Counted(counts);
  for (int64_t id = 100000; id < 100000 + 1000; ++id) counts.Add(id);
  CHECK(Counted(counts) == before);  // every position holds a count of 2: none is taken
}

}  // namespace
}  // namespace graphstore
