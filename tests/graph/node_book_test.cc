#include "server/graph/node_book.h"

#include <catch2/catch.hpp>

#include <algorithm>
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

TEST_CASE("the book holds at most a byte per node of the whole graph up to 256 partitions", "[book]") {
  const int64_t n = 1 << 20;
  const auto owners = RandomOwners(n, 16, 5);
  // Up to 16 partitions a 64-byte line per 120 ids: 0.53 bytes a node (the files: 12); up to 32,
  // 64 and 128 per 90, 75 and 67 ids (5, 6 and 7 bits an owner), under a byte.
  const NodeBook book = NodeBook::FromOwners(owners.data(), n, 16, 3);
  CHECK(static_cast<double>(book.bytes()) / static_cast<double>(n) <= 0.54);
  CHECK(book.own_bytes() == 0);
  for (const auto& [parts, most] : {std::pair<int, double>{32, 0.72}, {64, 0.86}, {128, 0.96}, {129, 1.0}, {256, 1.0}}) {
    INFO(parts << " partitions");
    const auto more = RandomOwners(n, parts, 8);
    CHECK(static_cast<double>(NodeBook::FromOwners(more.data(), n, parts, 3).bytes()) / static_cast<double>(n) <= most);
  }
  // Beyond 128 partitions a byte of owner for the whole graph; for each block of about 16 nodes
  // owned here (2^12 ids at 200 partitions) a 64-byte slot, a count per 2^12 blocks, and the
  // offsets of the few blocks past a slot's 30.
  const auto wide = RandomOwners(n, 200, 9);
  const NodeBook blocks = NodeBook::FromOwners(wide.data(), n, 200, 7);
  const auto owned_here = std::count(wide.begin(), wide.end(), 7);
  CHECK(blocks.bytes() == static_cast<size_t>(n));
  CHECK(blocks.own_bytes() >= static_cast<size_t>(n / 4096) * 64);
  CHECK(blocks.own_bytes() <= static_cast<size_t>(n / 4096) * 64 + 100 * 8);
  CHECK(static_cast<double>(blocks.own_bytes()) / static_cast<double>(owned_here) <= 4.5);
  // Past 256 partitions the owner takes two bytes.
  const auto many = RandomOwners(n, 1000, 6);
  CHECK(static_cast<double>(NodeBook::FromOwners(many.data(), n, 1000, 0).bytes()) / static_cast<double>(n) <= 2.0);
  // One partition holds nothing: every node is its own row.
  const NodeBook one;
  CHECK(one.bytes() == 0);
  CHECK(one.Owner(12345) == 0);
  CHECK(one.Row(12345) == 12345);
}

TEST_CASE("beyond 128 partitions, rows stay right in blocks owned wholly, not at all, or in part", "[book]") {
  // 200 partitions. Partition 5 owns 16,484 ids in a run, then nothing for 8,192, then every
  // third id: its blocks (of 64 ids, for about 16 owned in each) are owned wholly (more than the
  // 30 offsets a slot holds: the rest spill), not at all, or in part. Partition 1 owns a run of
  // 5,000 and a few ids spread out: its blocks of 256 ids are wholly owned too.
  const int parts = 200;
  const int64_t span = 8192;
  std::vector<int32_t> owners(static_cast<size_t>(5 * span + 77));
  std::mt19937 rng(3);
  for (auto& o : owners) o = static_cast<int32_t>(rng() % parts);
  for (auto& o : owners) o = o == 5 || o == 1 ? 6 : o;
  for (int64_t g = span - 100; g < 3 * span; ++g) owners[static_cast<size_t>(g)] = 5;
  for (int64_t g = 4 * span; g < static_cast<int64_t>(owners.size()); g += 3) owners[static_cast<size_t>(g)] = 5;
  for (int64_t g = 3 * span; g < 3 * span + 5000; ++g) owners[static_cast<size_t>(g)] = 1;
  for (int64_t g = 7; g < span; g += 1000) owners[static_cast<size_t>(g)] = 1;
  CheckAgainstFiles(owners, parts);  // partitions 0, 50, 100 and 150
  for (int self : {1, 5}) {
    const NodeBook book = NodeBook::FromOwners(owners.data(), static_cast<int64_t>(owners.size()), parts, self);
    int64_t row = 0;
    for (int64_t g = 0; g < static_cast<int64_t>(owners.size()); ++g) {
      REQUIRE(book.Owner(g) == owners[static_cast<size_t>(g)]);
      if (owners[static_cast<size_t>(g)] == self) REQUIRE(book.Row(g) == row++);
    }
  }
  // Owners past 256 and past 65536 partitions.
  for (int many : {70000, 40000}) {
    std::vector<int32_t> spread(5000);
    for (auto& o : spread) o = static_cast<int32_t>(rng() % many);
    for (size_t g = 0; g < spread.size(); g += 7) spread[g] = 1;
    const NodeBook wide = NodeBook::FromOwners(spread.data(), static_cast<int64_t>(spread.size()), many, 1);
    int64_t r = 0;
    for (size_t g = 0; g < spread.size(); ++g) {
      REQUIRE(wide.Owner(static_cast<int64_t>(g)) == spread[g]);
      if (spread[g] == 1) REQUIRE(wide.Row(static_cast<int64_t>(g)) == r++);
    }
  }
}

TEST_CASE("a deal is a permutation of the nodes, with partitions' sizes at most one apart", "[book][deal]") {
  for (int64_t n : {1, 2, 3, 5, 64, 65, 1000, 4097}) {
    for (int parts : {1, 2, 3, 7, 256, 300}) {
      INFO(n << " nodes, " << parts << " partitions");
      const OwnerDeal deal(n, parts, OwnerDeal::TypeKey(42, 0));
      std::vector<int> seen(static_cast<size_t>(n), 0);
      std::vector<int64_t> sizes(static_cast<size_t>(parts), 0);
      for (int64_t g = 0; g < n; ++g) {
        const int64_t pos = deal.Position(g);
        REQUIRE(pos >= 0);
        REQUIRE(pos < n);
        ++seen[static_cast<size_t>(pos)];
        const int32_t owner = deal.Owner(g);
        REQUIRE(owner == pos % parts);
        ++sizes[static_cast<size_t>(owner)];
      }
      REQUIRE(std::count(seen.begin(), seen.end(), 1) == n);
      for (int p = 0; p < parts; ++p) REQUIRE(sizes[static_cast<size_t>(p)] == deal.OwnedCount(p));
    }
  }
  // Another key, or another type of the same run, deals otherwise.
  const OwnerDeal a(1000, 4, OwnerDeal::TypeKey(42, 0)), b(1000, 4, OwnerDeal::TypeKey(42, 1)), c(1000, 4, OwnerDeal::TypeKey(43, 0));
  int same_b = 0, same_c = 0;
  for (int64_t g = 0; g < 1000; ++g) {
    same_b += a.Owner(g) == b.Owner(g);
    same_c += a.Owner(g) == c.Owner(g);
  }
  CHECK(same_b < 400);  // about 250 by chance
  CHECK(same_c < 400);
}

TEST_CASE("a deal's owners are not ids in order: neighbouring ids land apart", "[book][deal]") {
  const OwnerDeal deal(100000, 4, OwnerDeal::TypeKey(7, 0));
  int64_t runs = 0;
  for (int64_t g = 1; g < 100000; ++g) runs += deal.Owner(g) != deal.Owner(g - 1);
  // Owners drawn at random change between 3 in 4 neighbouring ids.
  CHECK(runs > 70000);
  CHECK(runs < 80000);
}

TEST_CASE("a dealt book computes owners, keeps no byte per node, and gives every owned row", "[book][deal]") {
  for (int parts : {2, 3, 16, 100, 200, 300, 70000}) {
    for (int64_t n : {1, 2, 61, 1000, 100000}) {
      INFO(n << " nodes, " << parts << " partitions");
      const OwnerDeal deal(n, parts, OwnerDeal::TypeKey(5, 0));
      std::vector<int32_t> owners(static_cast<size_t>(n));
      for (int64_t g = 0; g < n; ++g) owners[static_cast<size_t>(g)] = deal.Owner(g);
      for (int self : {0, 1, parts - 1}) {
        const NodeBook book = NodeBook::Dealt(deal, self);
        // From 8 partitions slots alone; below, lines of the deal's owners (0.53 bytes a node).
        REQUIRE(book.dealt() == (parts >= NodeBook::kDealtSlotsFrom));
        if (book.dealt()) REQUIRE(book.bytes() == 0);
        if (!book.dealt()) REQUIRE(static_cast<double>(book.bytes()) <= 0.54 * static_cast<double>(n) + 72);  // + a line, a count
        int64_t row = 0;
        for (int64_t g = 0; g < n; ++g) {
          REQUIRE(book.Owner(g) == owners[static_cast<size_t>(g)]);
          if (owners[static_cast<size_t>(g)] == self) REQUIRE(book.Row(g) == row++);
        }
        REQUIRE(row == deal.OwnedCount(self));
        // The blocks' slots: about 4 bytes a node owned here, whatever the graph.
        if (row >= 1000 && book.dealt()) CHECK(static_cast<double>(book.own_bytes()) / static_cast<double>(row) < 4.5);
      }
    }
  }
}

TEST_CASE("rows in slots stay right past a superblock of 2^12 blocks", "[book][deal]") {
  // Dealt at 8 partitions (blocks of 128 ids) and stored at 200 (blocks of 4096): a few ids past
  // the first superblock of each.
  const OwnerDeal deal((int64_t{1} << NodeBook::kSuperSlotsBits) * 128 * 2 + 100, 8, OwnerDeal::TypeKey(9, 0));
  const NodeBook dealt = NodeBook::Dealt(deal, 1);
  REQUIRE(dealt.dealt());
  int64_t row = 0;
  for (int64_t g = 0; g < deal.num_nodes(); ++g) {
    if (deal.Owner(g) == 1) REQUIRE(dealt.Row(g) == row++);
  }
  const int64_t n = (int64_t{1} << NodeBook::kSuperSlotsBits) * 4096 + 5000;
  const auto owners = RandomOwners(n, 200, 4);
  const NodeBook stored = NodeBook::FromOwners(owners.data(), n, 200, 3);
  row = 0;
  for (int64_t g = 0; g < n; ++g) {
    if (owners[static_cast<size_t>(g)] == 3) REQUIRE(stored.Row(g) == row++);
  }
}

}  // namespace
}  // namespace graphstore
