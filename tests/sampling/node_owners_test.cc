// NodeOwners: a batch's owners held in the one form the message carries.

#include <catch2/catch.hpp>

#include "server/sampling/sampler.h"

namespace graphstore {
namespace {

TEST_CASE("owners are a byte a node up to 256 partitions") {
  NodeOwners owners;
  owners.Resize(3, 256);
  owners.Set(0, 0);
  owners.Set(1, 255);
  owners.Set(2, 7);
  CHECK(owners.wide.empty());
  CHECK(owners.bytes == std::vector<uint8_t>{0, 255, 7});
  CHECK(owners[1] == 255);
  CHECK(owners.ByteSize() == 3);
}

TEST_CASE("owners are four bytes a node beyond 256 partitions") {
  NodeOwners owners;
  owners.Resize(2, 256);
  owners.Set(0, 3);
  owners.Resize(2, 1000);
  owners.Set(0, 999);
  owners.Set(1, 256);
  CHECK(owners.bytes.empty());
  CHECK(owners[0] == 999);
  CHECK(owners[1] == 256);
  CHECK(owners.ByteSize() == 8);
  owners.clear();
  CHECK(owners.empty());
  CHECK(owners.ByteSize() == 0);
}

TEST_CASE("a subgraph counts its owners by the form it holds") {
  SampledSubgraph g;
  g.Reset(1, 0);
  const size_t before = g.ByteSize();
  g.nodes[0].owners.Resize(10, 4);
  CHECK(g.ByteSize() == before + 10);
  g.nodes[0].owners.Resize(10, 300);
  CHECK(g.ByteSize() == before + 40);
  g.Reset(1, 0);
  CHECK(g.nodes[0].owners.empty());
}

}  // namespace
}  // namespace graphstore
