// The sampling indexes of an edge type (weights' block sums, Fenwick trees, alias tables, time
// rows) are built in chunks of rows on several threads; each must equal what one row alone
// gives, whatever the chunks.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "server/graph/partition.h"

namespace graphstore {
namespace {

uint64_t Next(uint64_t* state) {
  // splitmix64
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Rows of 0 to 120 edges, a few of more than 4,096 (Fenwick trees) and one of more than
// 65,535 (no alias table); weights with zeros, some rows all zero; times sorted in each row,
// over spans from one unit to 2^60.
struct Csr {
  std::vector<int64_t> indptr{0};
  std::vector<float> weights;
  std::vector<int64_t> times;
  int64_t rows() const { return static_cast<int64_t>(indptr.size()) - 1; }
};

Csr ManyRows() {
  Csr g;
  uint64_t state = 11;
  for (int64_t r = 0; r < 12000; ++r) {
    int64_t d = static_cast<int64_t>(Next(&state) % 121);
    if (r % 3001 == 7) d = 5000 + r;
    if (r == 6000) d = 70000;
    const bool all_zero = r % 97 == 0;
    const int span_bits = static_cast<int>(Next(&state) % 61);
    const int64_t start = static_cast<int64_t>(Next(&state) % 1000000) - 500000;
    std::vector<int64_t> t(static_cast<size_t>(d));
    for (auto& x : t) x = start + static_cast<int64_t>(Next(&state) & ((uint64_t{1} << span_bits) - 1));
    std::sort(t.begin(), t.end());
    for (int64_t k = 0; k < d; ++k) {
      const uint64_t v = Next(&state);
      g.weights.push_back(all_zero || v % 5 == 0 ? 0.0f : static_cast<float>(v % 1000) / 7.0f + 0.01f);
      g.times.push_back(t[k]);
    }
    g.indptr.push_back(g.indptr.back() + d);
  }
  return g;
}

TEST_CASE("indexes built in chunks on several threads equal those of each row alone", "[graph][weighted][temporal]") {
  const Csr g = ManyRows();
  const int64_t rows = g.rows();
  const int64_t edges = g.indptr.back();
  REQUIRE(edges + rows > 8 * (int64_t{1} << 16));  // several chunks of work (64 Ki edges and rows)

  WeightIndex index;
  // Block sums: each block's usable weights, summed in order.
  const auto& blocks = index.GetBlocks(edges, g.weights.data());
  REQUIRE(static_cast<int64_t>(blocks.size()) == (edges + WeightIndex::kBlock - 1) / WeightIndex::kBlock);
  for (size_t b = 0; b < blocks.size(); ++b) {
    double sum = 0;
    for (int64_t p = static_cast<int64_t>(b) * WeightIndex::kBlock;
         p < std::min(edges, static_cast<int64_t>(b + 1) * WeightIndex::kBlock); ++p) {
      if (g.weights[p] > 0) sum += static_cast<double>(g.weights[p]);
    }
    REQUIRE(blocks[b] == sum);
  }

  const auto& trees = index.GetTrees(g.indptr.data(), rows, g.weights.data());
  const auto& alias = index.GetAlias(g.indptr.data(), rows, g.weights.data());
  TimeRows time_rows;
  const auto& time_index = time_rows.Get(g.indptr.data(), rows, g.times.data());
  REQUIRE(static_cast<int64_t>(time_index.size()) == rows);
  REQUIRE(alias.longest_row == 70000);
  int64_t with_trees = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = g.indptr[r];
    const int64_t d = g.indptr[r + 1] - b;
    INFO("row " << r << " of " << d << " edges at " << b);
    const std::vector<int64_t> one_row = {0, d};
    // Fenwick trees: rows over kTreeMinDegree.
    const double* tree = trees.Of(b);
    if (d > WeightIndex::kTreeMinDegree) {
      REQUIRE(tree != nullptr);
      std::vector<double> expected(static_cast<size_t>(d));
      WeightIndex::BuildTree(g.weights.data() + b, d, expected.data());
      REQUIRE(std::equal(expected.begin(), expected.end(), tree));
      ++with_trees;
    } else if (d > 0) {
      REQUIRE(tree == nullptr);
    }
    // Alias tables: the same cells as the row's own table.
    if (d > 0 && d <= kAliasMaxDegree) {
      WeightIndex alone;
      const auto& expected = alone.GetAlias(one_row.data(), 1, g.weights.data() + b).cells;
      REQUIRE(std::equal(expected.begin(), expected.end(), alias.cells.begin() + b));
    }
    // Time rows: the same extent (shifted), range, shift and fences.
    TimeRows alone;
    const TimeRows::Row& expected = alone.Get(one_row.data(), 1, g.times.data() + b)[0];
    const TimeRows::Row& got = time_index[r];
    REQUIRE(got.begin == b);
    REQUIRE(got.end == b + d);
    REQUIRE(got.oldest == expected.oldest);
    REQUIRE(got.newest == expected.newest);
    REQUIRE(got.shift == expected.shift);
    REQUIRE(std::memcmp(got.fences, expected.fences, sizeof(got.fences)) == 0);
  }
  CHECK(with_trees == 5);
}

TEST_CASE("the degree index draws the node an upper bound over the running sums gives, in a byte or two a node",
          "[graph][ablp]") {
  uint64_t state = 7;
  for (const int64_t largest : {int64_t{9}, int64_t{300}, int64_t{70000}, int64_t{5000000000}}) {
    INFO("degrees up to " << largest);
    // Runs of zeros (nodes never drawn) among the degrees, several blocks of each.
    std::vector<int64_t> degree(1000);
    for (size_t i = 0; i < degree.size(); ++i) {
      degree[i] = (i / 100) % 3 == 1 ? 0 : static_cast<int64_t>(Next(&state) % static_cast<uint64_t>(largest + 1));
    }
    std::vector<int64_t> running(degree.size() + 1, 0);
    for (size_t i = 0; i < degree.size(); ++i) running[i + 1] = running[i] + degree[i];
    DegreeIndex index;
    index.Get(degree.data(), static_cast<int64_t>(degree.size()), 1, 0);
    REQUIRE(index.total() == running.back());
    for (int k = 0; k < 5000; ++k) {
      const int64_t u = static_cast<int64_t>(Next(&state) % static_cast<uint64_t>(running.back()));
      const int64_t want = std::upper_bound(running.begin(), running.end(), u) - running.begin() - 1;
      REQUIRE(index.NodeAt(u) == want);
    }
    for (int64_t u : {int64_t{0}, running.back() - 1}) {
      REQUIRE(index.NodeAt(u) == std::upper_bound(running.begin(), running.end(), u) - running.begin() - 1);
    }
    // The degrees in the fewest bytes the largest fits, and a total every 64 nodes.
    const int64_t width = largest <= 255 ? 1 : largest <= 65535 ? 2 : largest <= 0xffffffffLL ? 4 : 8;
    CHECK(index.bytes() == width * 1000 + 8 * 16 + 8 * 2);
  }
}

TEST_CASE("the degree index of one range of ids: each server resolves its range's positions as one index "
          "of the whole would, and keeps that range alone",
          "[graph][ablp]") {
  uint64_t state = 11;
  // 1000 nodes: a run of zeros over ranges 1 and 2 of 7 leaves them no positions at all.
  std::vector<int64_t> degree(1000);
  for (size_t i = 0; i < degree.size(); ++i) degree[i] = i >= 150 && i < 280 ? 0 : static_cast<int64_t>(Next(&state) % 40);
  const int64_t n = static_cast<int64_t>(degree.size());
  DegreeIndex whole;
  whole.Get(degree.data(), n, 1, 0);
  for (const int parts : {2, 3, 7}) {
    INFO(parts << " ranges");
    std::vector<std::unique_ptr<DegreeIndex>> ranges;
    int64_t bytes = 0;
    for (int r = 0; r < parts; ++r) {
      ranges.push_back(std::make_unique<DegreeIndex>());
      ranges.back()->Get(degree.data(), n, parts, r);
      REQUIRE(ranges.back()->total() == whole.total());
      bytes += ranges.back()->bytes();
      // Its positions are the sums over its ids.
      const int64_t first = DegreeIndex::Begin(n, parts, r), end = DegreeIndex::Begin(n, parts, r + 1);
      int64_t before = 0, in = 0;
      for (int64_t i = 0; i < first; ++i) before += degree[i];
      for (int64_t i = first; i < end; ++i) in += degree[i];
      CHECK(ranges.back()->first_position() == before);
      CHECK(ranges.back()->end_position() == before + in);
    }
    for (int64_t u = 0; u < whole.total(); ++u) {
      const int r = ranges[0]->RangeOf(u);
      REQUIRE(r >= 0);
      REQUIRE(r < parts);
      REQUIRE(u >= ranges[r]->first_position());
      REQUIRE(u < ranges[r]->end_position());
      REQUIRE(ranges[r]->NodeAt(u) == whole.NodeAt(u));
    }
    // The degrees are split between the ranges, not repeated: a byte a node over all of them.
    CHECK(bytes < whole.bytes() + parts * (8 * (parts + 1) + 8 * 2));
    CHECK(ranges[0]->bytes() < whole.bytes() * 2 / parts);
  }
}

}  // namespace
}  // namespace graphstore
