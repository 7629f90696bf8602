#include "server/sampling/local_ids.h"

#include <catch2/catch.hpp>

#include <random>
#include <unordered_map>

namespace graphstore {
namespace {

TEST_CASE("a local id map finds what was added, -1 for the rest, and empties for the next batch", "[local_ids]") {
  // A type of 2^20 nodes, mapped by an array; one of 2^40, by a table of the batch's nodes.
  const int64_t num_nodes = GENERATE(int64_t{1} << 20, int64_t{1} << 40);
  INFO(num_nodes << " nodes");
  LocalIdMap map;
  map.Reset(num_nodes);
  CHECK(map.dense() == (num_nodes <= LocalIdMap::kDenseNodes));
  std::vector<int64_t> ids;  // the subgraph's: local id -> global id
  CHECK(map.Find(7, ids) == -1);
  std::mt19937_64 rng(1);
  std::unordered_map<int64_t, int32_t> want;
  // Enough ids to grow the table several times.
  for (int batch = 0; batch < 3; ++batch) {
    want.clear();
    ids.clear();
    for (int i = 0; i < 50000; ++i) {
      const int64_t id = static_cast<int64_t>(rng() % num_nodes);
      map.Prefetch(id);
      int32_t& slot = map.Slot(id, ids);
      if (slot < 0) {
        slot = static_cast<int32_t>(ids.size());
        ids.push_back(id);
        want.emplace(id, slot);
      }
      REQUIRE(slot == want.at(id));
    }
    for (const auto& [id, local] : want) REQUIRE(map.Find(id, ids) == local);
    for (int i = 0; i < 1000; ++i) {
      const int64_t other = static_cast<int64_t>(rng() % num_nodes);
      if (want.count(other) == 0) REQUIRE(map.Find(other, ids) == -1);
    }
    map.Clear(ids);
    for (const auto& [id, local] : want) REQUIRE(map.Find(id, ids) == -1);
  }
  // What it holds does not follow the graph: the array is at most 64 MiB, the table the batch's.
  CHECK(map.bytes() <= (size_t{64} << 20) + (size_t{8} << 20));
  if (!map.dense()) CHECK(map.bytes() < (size_t{2} << 20));
}

TEST_CASE("a slot looked up and left at -1 reads as absent", "[local_ids]") {
  for (int64_t dense_nodes : {int64_t{0}, int64_t{100}}) {
    INFO("dense up to " << dense_nodes);
    LocalIdMap map;
    map.Reset(100, dense_nodes);
    std::vector<int64_t> ids;
    map.Slot(5, ids) = 0;
    ids.push_back(5);
    CHECK(map.Slot(9, ids) == -1);  // looked up to be added, then not added
    CHECK(map.Find(9, ids) == -1);
    CHECK(map.Find(5, ids) == 0);
    map.Clear(ids);
    CHECK(map.Find(5, ids) == -1);
  }
}

}  // namespace
}  // namespace graphstore
