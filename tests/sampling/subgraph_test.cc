// The SUBGRAPH sampler: every stored edge among the sampled nodes.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/subgraph_sampler.h"
#include "tests/fixtures.h"
#include "tests/sampling/sampling_fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::EdgePairs;
using testing::EdgeTypeIndex;
using testing::Ppr;
using testing::Shop;
using testing::TempDir;
using testing::TrainInput;
using testing::TypeIndex;
using testing::Run;
using testing::Write;
using V = std::vector<int64_t>;
using Local = std::vector<int32_t>;

TEST_CASE("SUBGRAPH sampling returns every edge among the sampled nodes", "[subgraph]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir.path());
  NeighborSamplerOptions o;
  o.fanouts = {-1};
  o.with_edge_ids = true;
  auto s = SubgraphSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  // One hop from 0 reaches 1 and 2; the induced subgraph adds 1 -> 2, which no hop drew.
  const SampledSubgraph g = Run(**s, 0, {0});
  CHECK(g.nodes[0].ids == V{0, 1, 2});
  CHECK(g.edges[0].rows == Local{0, 0, 1});
  CHECK(g.edges[0].cols == Local{1, 2, 2});
  CHECK(g.edges[0].eids == V{0, 1, 2});
  CHECK(g.edges[0].num_sampled_edges == V{3});
  // From 4: 4 -> 5 is drawn; 5 -> 0 leaves the node set, so only one edge.
  const SampledSubgraph h = Run(**s, 0, {4});
  CHECK(h.nodes[0].ids == V{4, 5});
  CHECK(h.edges[0].eids == V{5});
}
}  // namespace
}  // namespace graphstore
