// The cache of other partitions' rows: rows and neighbour lists read back as written across
// its 2 MiB chunks, absent nodes stay absent, and the byte budget bounds what it keeps.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
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
  for (int64_t id : kept) {
    const char* row = cache.FindFeatures(0, id);
    REQUIRE(row != nullptr);
    CHECK(std::memcmp(row, RowOf(id, row_bytes).data(), row_bytes) == 0);
    int64_t label = -1;
    REQUIRE(cache.GetLabel(0, id, &label));
    CHECK(label == id % 7);
  }
  for (size_t i = kept.size(); i < ids.size(); ++i) {
    CHECK(cache.FindFeatures(0, ids[i]) == nullptr);
    int64_t label = 0;
    CHECK_FALSE(cache.GetLabel(0, ids[i], &label));
  }
  // A row written again keeps its first copy.
  cache.PutFeatures(0, kept[0], RowOf(kept[1], row_bytes).data());
  CHECK(std::memcmp(cache.FindFeatures(0, kept[0]), RowOf(kept[0], row_bytes).data(), row_bytes) == 0);
}

TEST_CASE("the byte budget bounds the cached rows") {
  const Partition& p = PartZero();
  const size_t row_bytes = static_cast<size_t>(p.node_type(0).feature_dim) * 4;
  const int64_t slots = p.node_type(0).num_nodes * 4;
  const int64_t chunk = int64_t{2} << 20;
  RemoteCache cache(&p, slots + chunk);  // the slot index and one chunk
  const std::vector<int64_t> ids = ForeignIds(p);
  for (int64_t id : ids) cache.PutFeatures(0, id, RowOf(id, row_bytes).data());
  CHECK(cache.bytes() <= slots + chunk);
  int64_t found = 0;
  for (int64_t id : ids) {
    if (const char* row = cache.FindFeatures(0, id); row != nullptr) {
      ++found;
      CHECK(std::memcmp(row, RowOf(id, row_bytes).data(), row_bytes) == 0);
    }
  }
  CHECK(found == chunk / static_cast<int64_t>(row_bytes));  // the first chunk's rows, no more

  RemoteCache off(&p, 0);
  off.PutFeatures(0, ids[0], RowOf(ids[0], row_bytes).data());
  CHECK(off.FindFeatures(0, ids[0]) == nullptr);
  CHECK(off.bytes() == 0);
}

// A neighbour list of `degree` ids derived from the node's id.
std::vector<int64_t> ListOf(int64_t id, int64_t degree) {
  std::vector<int64_t> list(static_cast<size_t>(degree));
  for (int64_t k = 0; k < degree; ++k) list[k] = (id * 7919 + k * 13) % 3000;
  return list;
}

TEST_CASE("cached neighbour lists read back as written; too long a list, or past the budget, is not kept",
          "[lists]") {
  const Partition& p = PartZero();
  const int64_t entries = (int64_t{2} << 20) / 8;  // int64 entries in a chunk
  const std::vector<int64_t> ids = ForeignIds(p);
  // Lengths that fill chunks unevenly (a list never straddles two), the empty list, and a list
  // one entry too long for a chunk (a chunk also holds the list's length).
  auto degree_of = [&](size_t i) -> int64_t {
    return i == 0 ? 0 : i == 1 ? entries : static_cast<int64_t>(i * 4099 % 70001);
  };
  const int64_t slots = p.node_type(p.edge_type(0).row_type).num_nodes * 4;
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

  // The slot index and one chunk: lists are kept until the chunk is full, and then no more.
  RemoteCache small(&p, slots + (int64_t{2} << 20));
  int64_t used = 0, kept = 0;
  for (int64_t id : ids) {
    small.PutNeighbors(0, id, ListOf(id, 1000).data(), 1000);
    if (used + 1001 <= entries) used += 1001, ++kept;
  }
  CHECK(small.bytes() == slots + (int64_t{2} << 20));
  CHECK_FALSE(small.has_room());  // no more whole lists asked for
  RemoteCache no_lists(&p, int64_t{256} << 20, /*lists=*/false);
  CHECK_FALSE(no_lists.has_room());
  no_lists.PutNeighbors(0, ids[0], ListOf(ids[0], 3).data(), 3);
  CHECK(no_lists.FindNeighbors(0, ids[0], &degree) == nullptr);
  int64_t found = 0;
  for (int64_t id : ids) found += small.FindNeighbors(0, id, &degree) != nullptr;
  CHECK(found == kept);
}

}  // namespace
}  // namespace graphstore
