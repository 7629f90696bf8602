#include "server/graph/node_book.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

namespace graphstore {
namespace {

// Every owner and every owned node's row against the arrays the book files hold: the owner per
// id, and the row as the node's place among the partition's ids, ascending.
void CheckAgainstFiles(const std::vector<int32_t>& owners, int parts) {
  for (int self = 0; self < parts; self += parts > 8 ? parts / 4 : 1) {
    const NodeBook book = NodeBook::FromOwners(owners.data(), static_cast<int64_t>(owners.size()), parts, self);
    int64_t row = 0;
    for (int64_t g = 0; g < static_cast<int64_t>(owners.size()); ++g) {
      REQUIRE(book.Owner(g) == owners[static_cast<size_t>(g)]);
      if (owners[static_cast<size_t>(g)] == self) {
        REQUIRE(book.Row(g) == row);
        ++row;
      }
    }
  }
}

std::vector<int32_t> RandomOwners(int64_t n, int parts, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, parts - 1);
  std::vector<int32_t> owners(static_cast<size_t>(n));
  for (auto& o : owners) o = pick(rng);
  return owners;
}

TEST_CASE("the book gives every owner and every owned row", "[book]") {
  for (int parts : {2, 3, 7, 16, 17, 32, 33, 64, 65, 128, 129, 255, 256, 300}) {
    // Lengths across line ends (60, 67, 75, 90 and 120 ids): the last line part filled, or
    // exactly full.
    for (int64_t n : {1, 59, 60, 61, 66, 67, 68, 75, 90, 91, 119, 120, 121, 1000, 4096}) {
      CheckAgainstFiles(RandomOwners(n, parts, 11u + parts), parts);
    }
  }
  // Runs of one owner (a range partitioning) and blocks this partition owns wholly or not at all.
  std::vector<int32_t> ranges(5000);
  for (size_t g = 0; g < ranges.size(); ++g) ranges[g] = static_cast<int32_t>(g * 4 / ranges.size());
  CheckAgainstFiles(ranges, 4);
}

TEST_CASE("rows stay right past a superblock of 2^20 lines", "[book]") {
  // Half bytes (3 partitions, 120 ids a line) and 7-bit owners (100 partitions, 67 a line).
  const auto [parts, line_ids] = GENERATE(std::pair<int, int64_t>{3, NodeBook::kNibbleLineIds}, std::pair<int, int64_t>{100, 67});
  INFO(parts << " partitions");
  const int64_t n = (int64_t{1} << NodeBook::kSuperLinesBits) * line_ids + 1000;
  std::vector<int32_t> owners(static_cast<size_t>(n));
  for (int64_t g = 0; g < n; ++g) owners[static_cast<size_t>(g)] = static_cast<int32_t>((g * 2654435761u >> 7) % parts);
  const NodeBook book = NodeBook::FromOwners(owners.data(), n, parts, 1);
  int64_t row = 0;
  for (int64_t g = 0; g < n; ++g) {
    if (owners[static_cast<size_t>(g)] != 1) continue;
    if (g % 997 == 0 || g >= n - 2000) REQUIRE(book.Row(g) == row);
    ++row;
  }
}

TEST_CASE("the book holds about one byte per node", "[book]") {
  const int64_t n = 1 << 20;
  const auto owners = RandomOwners(n, 16, 5);
  // Up to 16 partitions a 64-byte line per 120 ids: 0.53 bytes a node (the files: 12); up to 32,
  // 64 and 128 per 90, 75 and 67 ids (5, 6 and 7 bits an owner), under a byte; up to 256, per 60:
  // 1.07.
  const NodeBook book = NodeBook::FromOwners(owners.data(), n, 16, 3);
  CHECK(static_cast<double>(book.bytes()) / static_cast<double>(n) <= 0.54);
  for (const auto& [parts, most] : {std::pair<int, double>{32, 0.72}, {64, 0.86}, {128, 0.96}, {256, 1.075}}) {
    INFO(parts << " partitions");
    const auto more = RandomOwners(n, parts, 8);
    CHECK(static_cast<double>(NodeBook::FromOwners(more.data(), n, parts, 3).bytes()) / static_cast<double>(n) <= most);
  }
  // Past 256 partitions the owner takes four.
  const auto many = RandomOwners(n, 1000, 6);
  CHECK(static_cast<double>(NodeBook::FromOwners(many.data(), n, 1000, 0).bytes()) / static_cast<double>(n) <= 4.2);
  // One partition holds nothing: every node is its own row.
  const NodeBook one;
  CHECK(one.bytes() == 0);
  CHECK(one.Owner(12345) == 0);
  CHECK(one.Row(12345) == 12345);
}

}  // namespace
}  // namespace graphstore
