// The epoch order a channel's batches take (EpochPositions): a keyed permutation computed per
// position, never stored.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "server/sampling/draw.h"

namespace graphstore {
namespace {

std::vector<int64_t> Order(uint64_t seed, int64_t epoch, int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  EpochPositions(seed, epoch, n, 0, out.size(), out.data());
  return out;
}

TEST_CASE("an epoch's order is a permutation of the positions, for any count", "[order]") {
  for (int64_t n : {1, 2, 3, 5, 63, 64, 65, 1000, 4097, 100003}) {
    std::vector<int64_t> o = Order(7, 2, n);
    std::sort(o.begin(), o.end());
    std::vector<int64_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), int64_t{0});
    REQUIRE(o == all);
  }
}

TEST_CASE("the order depends on the seed and the epoch only, a batch at a time as whole", "[order]") {
  const int64_t n = 10007;
  const auto whole = Order(3, 1, n);
  CHECK(whole == Order(3, 1, n));
  CHECK(whole != Order(3, 2, n));
  CHECK(whole != Order(4, 1, n));
  // Any slice is the slice of the whole: batches are computed on their own.
  std::vector<int64_t> slice(100);
  EpochPositions(3, 1, n, 5000, slice.size(), slice.data());
  CHECK(std::equal(slice.begin(), slice.end(), whole.begin() + 5000));
}

TEST_CASE("the order is shuffled: positions move far and batches mix the input", "[order]") {
  const int64_t n = 100000;
  const auto o = Order(11, 0, n);
  // Mean displacement of a uniform permutation is n/3.
  double moved = 0;
  for (int64_t i = 0; i < n; ++i) moved += static_cast<double>(std::abs(o[static_cast<size_t>(i)] - i));
  CHECK(moved / n > 0.3 * n);
  CHECK(moved / n < 0.37 * n);
  // A batch of 1000 draws from every tenth of the input about equally.
  std::vector<int> tenth(10, 0);
  for (int i = 0; i < 1000; ++i) ++tenth[static_cast<size_t>(o[static_cast<size_t>(i)] * 10 / n)];
  for (int t : tenth) CHECK((t > 60 && t < 140));
  // Consecutive positions land apart (no runs kept from the input).
  int adjacent = 0;
  for (int64_t i = 1; i < n; ++i) adjacent += std::abs(o[static_cast<size_t>(i)] - o[static_cast<size_t>(i - 1)]) == 1;
  CHECK(adjacent < 20);
}

}  // namespace
}  // namespace graphstore
