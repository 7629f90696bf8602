#include "tools/bounded_nodes.h"

#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <vector>

namespace graphstore {
namespace {

TEST_CASE("an id set numbers sparse raw ids densely and back", "[bounded][ids]") {
  std::mt19937_64 rng(3);
  std::set<int64_t> raw;
  for (int i = 0; i < 5000; ++i) raw.insert(static_cast<int64_t>(rng() % 200000));
  raw.insert(0);
  raw.insert(63);
  raw.insert(64);
  raw.insert(199999);
  IdSet set;
  for (int64_t r : raw) set.Mark(r);
  set.Rank();
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
  std::vector<int64_t> walked;
  REQUIRE(set.ForEachRaw([&](const int64_t* ids, size_t n) {
                walked.insert(walked.end(), ids, ids + n);
                return absl::OkStatus();
              }).ok());
  CHECK(walked == std::vector<int64_t>(raw.begin(), raw.end()));
}

TEST_CASE("an id set of 0 .. n-1 is the identity, one id short of it is not", "[bounded][ids]") {
  for (int64_t n : {1, 63, 64, 65, 1000}) {
    INFO("n " << n);
    IdSet dense;
    for (int64_t r = n - 1; r >= 0; --r) dense.Mark(r);
    dense.Rank();
    CHECK(dense.identity());
    CHECK(dense.Raw(n - 1) == n - 1);
    IdSet gap;
    for (int64_t r = 0; r <= n; ++r) {
      if (r != n / 2) gap.Mark(r);
    }
    gap.Rank();
    CHECK_FALSE(gap.identity());
  }
  IdSet empty;
  empty.Rank();
  CHECK(empty.identity());
  CHECK(empty.count() == 0);
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
