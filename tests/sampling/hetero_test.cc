// Heterogeneous neighbour sampling on hand-built graphs: typed fanouts, edge ids and edge features.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/neighbor_sampler.h"
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

TEST_CASE("heterogeneous sampling follows each edge type's own fanouts, with edge ids and features", "[hetero]") {
  TempDir dir;
  auto p = Write(Shop(), dir.path());
  NeighborSamplerOptions o;
  o.fanouts_by_type["user__buys__item"] = {-1, 0};
  o.fanouts_by_type["item__rev_buys__user"] = {0, -1};
  o.fanouts_by_type["user__dislikes__item"] = {0, 0};
  o.with_edge_ids = true;
  o.with_edge_features = true;
  o.with_node_features = true;
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph g = Run(**s, TypeIndex(*p, "user"), {0});
  const int user = TypeIndex(*p, "user"), item = TypeIndex(*p, "item");
  const int buys = EdgeTypeIndex(*p, "user__buys__item"), rev = EdgeTypeIndex(*p, "item__rev_buys__user");
  CHECK(g.nodes[user].ids == V{0, 1});
  CHECK(g.nodes[user].num_sampled_nodes == V{1, 0, 1});
  CHECK(g.nodes[item].ids == V{0, 1, 2});
  CHECK(g.nodes[item].num_sampled_nodes == V{0, 3, 0});
  // Hop 1: u0 buys i0 (e0), i1 (e1), i2 (e5), neighbours sorted by id.
  CHECK(g.edges[buys].rows == Local{0, 0, 0});
  CHECK(g.edges[buys].cols == Local{0, 1, 2});
  CHECK(g.edges[buys].eids == V{0, 1, 5});
  CHECK(g.edges[buys].num_sampled_edges == V{3, 0});
  REQUIRE(g.edges[buys].feature_dim == 1);
  const float* f = reinterpret_cast<const float*>(g.edges[buys].features.data());
  CHECK(std::vector<float>(f, f + 3) == std::vector<float>{0, 10, 50});
  // Hop 2: the items' buyers through the reverse type (item -> user, as stored).
  CHECK(g.edges[rev].rows == Local{0, 1, 1, 2, 2});
  CHECK(g.edges[rev].cols == Local{0, 0, 1, 0, 1});
  CHECK(g.edges[rev].eids == V{0, 1, 2, 5, 3});
  CHECK(g.edges[rev].num_sampled_edges == V{0, 5});
  const float* nf = reinterpret_cast<const float*>(g.nodes[item].features.data());
  CHECK(std::vector<float>(nf, nf + 3) == std::vector<float>{100, 101, 102});
}
TEST_CASE("edge features are refused on a graph without them", "[hetero]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir.path());
  NeighborSamplerOptions o;
  o.fanouts = {2};
  o.with_edge_features = true;
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("with_edge_features") != std::string::npos);
}
}  // namespace
}  // namespace graphstore
