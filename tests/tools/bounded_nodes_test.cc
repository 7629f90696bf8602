#include "tools/bounded_nodes.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::TempDir;

// Every raw id of `set`, as ForEachRaw gives them.
std::vector<int64_t> Walk(const IdSet& set) {
  std::vector<int64_t> walked;
  REQUIRE(set.ForEachRaw([&](const int64_t* ids, size_t n) {
                walked.insert(walked.end(), ids, ids + n);
                return absl::OkStatus();
              }).ok());
  return walked;
}

TEST_CASE("an id set numbers sparse raw ids densely and back", "[bounded][ids]") {
  std::mt19937_64 rng(3);
  std::set<int64_t> raw;
  for (int i = 0; i < 5000; ++i) raw.insert(static_cast<int64_t>(rng() % 200000));
  raw.insert(0);
  raw.insert(63);
  raw.insert(64);
  raw.insert(199999);
  IdSet set;
  for (int64_t r : raw) REQUIRE(set.Mark(r).ok());
  REQUIRE(set.Rank().ok());
  REQUIRE(set.count() == static_cast<int64_t>(raw.size()));
  CHECK_FALSE(set.identity());
  int64_t gid = 0;
  for (int64_t r : raw) {
    INFO("raw " << r);
    REQUIRE(set.Global(r) == gid);
    REQUIRE(set.Raw(gid) == r);
    ++gid;
  }
  CHECK_FALSE(set.Has(1));
  CHECK_FALSE(set.Has(-5));
  CHECK(set.NextAtOrAfter(0) == 0);
  CHECK(set.NextAtOrAfter(65) == *raw.lower_bound(65));
  CHECK(set.NextAtOrAfter(200000) == -1);
  CHECK(Walk(set) == std::vector<int64_t>(raw.begin(), raw.end()));
}

TEST_CASE("an id set of 0 .. n-1 is the identity, one id short of it is not", "[bounded][ids]") {
  for (int64_t n : {1, 63, 64, 65, 1000}) {
    INFO("n " << n);
    IdSet dense;
    for (int64_t r = n - 1; r >= 0; --r) REQUIRE(dense.Mark(r).ok());
    REQUIRE(dense.Rank().ok());
    CHECK(dense.identity());
    CHECK(dense.Raw(n - 1) == n - 1);
    IdSet gap;
    for (int64_t r = 0; r <= n; ++r) {
      if (r != n / 2) REQUIRE(gap.Mark(r).ok());
    }
    REQUIRE(gap.Rank().ok());
    CHECK_FALSE(gap.identity());
  }
  IdSet empty;
  REQUIRE(empty.Rank().ok());
  CHECK(empty.identity());
  CHECK(empty.count() == 0);
}

TEST_CASE("Elias-Fano keeps ascending values and finds them, their ranks and their successors",
          "[bounded][ids]") {
  std::mt19937_64 rng(5);
  for (const auto& [count, lo, spread] : {std::tuple<int, int64_t, uint64_t>{0, 0, 1},
                                          {1, -7, 1},
                                          {1000, 0, 1000},
                                          {5000, -(int64_t{1} << 62), uint64_t{1} << 63},
                                          {20000, 12345, 40000},
                                          {3000, INT64_MIN, ~uint64_t{0}}}) {
    INFO(count << " values from " << lo << " over " << spread);
    std::set<int64_t> values;
    while (static_cast<int>(values.size()) < count) {
      values.insert(static_cast<int64_t>(static_cast<uint64_t>(lo) + rng() % spread));
    }
    const std::vector<int64_t> v(values.begin(), values.end());
    EliasFano ef;
    ef.Begin(count, v.empty() ? 0 : v.front(), v.empty() ? 0 : v.back());
    for (int64_t x : v) ef.Add(x);
    ef.Finish();
    REQUIRE(ef.size() == count);
    for (int k = 0; k < count; ++k) {
      REQUIRE(ef.At(k) == v[k]);
      REQUIRE(ef.Find(v[k]) == k);
    }
    for (int probe = 0; probe < 2000 && count > 0; ++probe) {
      const int64_t x = static_cast<int64_t>(static_cast<uint64_t>(lo) + rng() % spread);
      const int64_t want = std::lower_bound(v.begin(), v.end(), x) - v.begin();
      REQUIRE(ef.LowerBound(x) == want);
      REQUIRE(ef.Find(x) == (values.count(x) ? want : -1));
    }
    if (count > 0) {
      CHECK(ef.LowerBound(INT64_MIN) == 0);
      CHECK(ef.LowerBound(v.back()) == count - 1);
      if (v.back() < INT64_MAX) CHECK(ef.LowerBound(v.back() + 1) == count);
    }
    CHECK(ef.bytes() <= EliasFano::BytesFor(count, v.empty() ? 0 : v.front(), v.empty() ? 0 : v.back()) + 64);
  }
  // 2 + log2(range / count) bits a value: 1M values over 2^40 take about 22 bits each.
  EliasFano big;
  big.Begin(1000000, 0, (int64_t{1} << 40) - 1);
  CHECK(EliasFano::BytesFor(1000000, 0, (int64_t{1} << 40) - 1) < 1000000 * 23 / 8);
}

TEST_CASE("an id set past its bitmap spills sorted runs and ranks them in Elias-Fano form", "[bounded][ids]") {
  TempDir dir;
  std::mt19937_64 rng(9);
  std::set<int64_t> raw;
  IdSet set;
  // A bitmap of 4 words (ids below 256), then runs of 1024 ids.
  set.SetLimits(4, 1024, dir.path());
  for (int64_t r : {3, 70, 255}) {
    REQUIRE(set.Mark(r).ok());
    raw.insert(r);
  }
  for (int i = 0; i < 20000; ++i) {
    const int64_t r = static_cast<int64_t>(rng() % 30000) * (int64_t{1} << 40) - (int64_t{1} << 50);
    REQUIRE(set.Mark(r).ok());
    REQUIRE(set.Mark(r).ok());  // marked twice, counted once
    raw.insert(r);
  }
  CHECK(set.sparse());
  REQUIRE(set.Rank().ok());
  REQUIRE(set.count() == static_cast<int64_t>(raw.size()));
  CHECK_FALSE(set.identity());
  CHECK(set.bytes() < static_cast<int64_t>(raw.size()) * 8);
  int64_t gid = 0;
  for (int64_t r : raw) {
    REQUIRE(set.Has(r));
    REQUIRE(set.Global(r) == gid);
    REQUIRE(set.Raw(gid) == r);
    ++gid;
  }
  CHECK_FALSE(set.Has(4));
  CHECK(set.NextAtOrAfter(4) == 70);
  CHECK(set.NextAtOrAfter(*raw.rbegin() + 1) == -1);
  CHECK(Walk(set) == std::vector<int64_t>(raw.begin(), raw.end()));
  // Nothing is left in the directory: the runs were nameless.
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("small ints take the fewest bytes their range fits and keep every value", "[bounded][ints]") {
  CHECK(SmallInts::WidthFor(0, 255) == 1);
  CHECK(SmallInts::WidthFor(0, 256) == 2);
  CHECK(SmallInts::WidthFor(-1, 127) == 1);
  CHECK(SmallInts::WidthFor(-1, 128) == 2);
  CHECK(SmallInts::WidthFor(0, 4095) == 2);
  CHECK(SmallInts::WidthFor(-1, 40000) == 4);
  CHECK(SmallInts::WidthFor(0, int64_t{1} << 33) == 8);
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 255}, {-1, 100}, {0, 65535}, {-1, 30000}, {0, 4000000000LL}, {-2000000000LL, 2000000000LL}, {-1, int64_t{1} << 40}};
  for (const auto& [lo, hi] : ranges) {
    INFO("range " << lo << " .. " << hi);
    SmallInts v;
    v.Reset(1000, lo, hi, lo);
    for (int64_t i = 0; i < 1000; ++i) REQUIRE(v.Get(i) == lo);
    for (int64_t i = 0; i < 1000; ++i) v.Set(i, i % 3 == 0 ? lo : i % 3 == 1 ? hi : (lo + hi) / 2);
    for (int64_t i = 0; i < 1000; ++i) REQUIRE(v.Get(i) == (i % 3 == 0 ? lo : i % 3 == 1 ? hi : (lo + hi) / 2));
  }
}

TEST_CASE("a partition's owned ids are walked in ascending blocks", "[bounded][owners]") {
  SmallInts owner;
  const int64_t n = 600000;  // several blocks a partition
  owner.Reset(n, 0, 2, 0);
  for (int64_t i = 0; i < n; ++i) owner.Set(i, (i * 7 + i / 5) % 3);
  for (int p = 0; p < 3; ++p) {
    std::vector<int64_t> walked, want;
    for (int64_t i = 0; i < n; ++i) {
      if (owner.Get(i) == p) want.push_back(i);
    }
    int blocks = 0;
    REQUIRE(ForEachOwned(owner, p, [&](const int64_t* ids, size_t k) {
              ++blocks;
              walked.insert(walked.end(), ids, ids + k);
              return absl::OkStatus();
            }).ok());
    CHECK(walked == want);
    CHECK(blocks > 1);
  }
  // An error from the callback stops the walk and comes back.
  int calls = 0;
  const absl::Status s = ForEachOwned(owner, 0, [&](const int64_t*, size_t) {
    ++calls;
    return absl::DataLossError("stop");
  });
  CHECK(s.code() == absl::StatusCode::kDataLoss);
  CHECK(calls == 1);
}

}  // namespace
}  // namespace graphstore
