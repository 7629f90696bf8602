// Link-prediction (ABLP) batches: label nodes as seeds, label edges left out, generated negatives.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
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

// One anchor user with positives i0..i9 (train) and i20 (val), 50 items; i10 is bought by 100
// other users, every other item once.
GraphData Skewed() {
  GraphData g;
  NodeTypeData user;
  user.name = "user";
  user.num_nodes = 101;
  NodeTypeData item;
  item.name = "item";
  item.num_nodes = 50;
  g.node_types = {user, item};
  EdgeTypeData buys;
  buys.src_type = "user";
  buys.relation = "buys";
  buys.dst_type = "item";
  for (int64_t i = 0; i < 50; ++i) {
    buys.src.push_back(0);
    buys.dst.push_back(i);
  }
  for (int64_t u = 1; u <= 100; ++u) {
    buys.src.push_back(u);
    buys.dst.push_back(10);
  }
  for (int64_t i = 0; i < 10; ++i) {
    buys.label_splits["train"].src.push_back(0);
    buys.label_splits["train"].dst.push_back(i);
  }
  buys.label_splits["val"] = LabelEdges{{0}, {20}};
  g.edge_types = {buys};
  return g;
}
TEST_CASE("an ABLP batch seeds its label nodes after the anchors and never passes messages over its label edges",
          "[ablp]") {
  for (const std::string edge_dir : {"out", "in"}) {
    DYNAMIC_SECTION("edge_dir " << edge_dir) {
      TempDir dir;
      auto p = Write(Shop(), dir.path(), edge_dir);
      auto labeler = AblpLabeler::Create(p.get(), TrainInput(*p, "user__dislikes__item"), {});
      REQUIRE(labeler.ok());
      NeighborSamplerOptions o;
      o.fanouts = {-1, -1, -1};
      o.with_edge_ids = true;
      auto s = NeighborSampler::Create(p.get(), o);
      REQUIRE(s.ok());
      const V anchors = {0};
      AblpBatch batch;
      REQUIRE((*labeler)->MakeBatch(anchors.data(), 1, 7, 0, 0, &batch).ok());
      const SampledSubgraph g = Run(**s, TypeIndex(*p, "user"), anchors, &batch);
      const int user = TypeIndex(*p, "user"), item = TypeIndex(*p, "item");
      // Anchors first; then the positives i0, i1 and the explicit negative i3 as seeds.
      CHECK(g.nodes[user].ids.front() == 0);
      REQUIRE(g.nodes[item].ids.size() >= 3);
      CHECK(V(g.nodes[item].ids.begin(), g.nodes[item].ids.begin() + 3) == V{0, 1, 3});
      CHECK(g.nodes[item].num_sampled_nodes[0] == 3);
      REQUIRE(g.ablp.present);
      CHECK(g.ablp.anchors == V{0});
      CHECK(g.ablp.max_positive == 2);
      CHECK(g.ablp.positive == V{0, 1});
      CHECK(g.ablp.negative == V{2});
      // No leakage: u0 -> i0 and u0 -> i1 appear in neither direction, though three hops at
      // full fanout reach every other edge of the graph.
      const auto buys = EdgePairs(*p, g, EdgeTypeIndex(*p, "user__buys__item"));
      const auto rev = EdgePairs(*p, g, EdgeTypeIndex(*p, "item__rev_buys__user"));
      CHECK(buys.count({0, 0}) == 0);
      CHECK(buys.count({0, 1}) == 0);
      CHECK(rev.count({0, 0}) == 0);
      CHECK(rev.count({1, 0}) == 0);
      CHECK(buys.count({0, 2}) == 1);  // u0 -> i2 is no label of the split
      CHECK(buys.count({1, 1}) == 1);
      CHECK(rev.count({1, 1}) == 1);
      CHECK(rev.count({3, 2}) == 1);
    }
  }
}
TEST_CASE("generated negatives are never a known positive, repeat with the seed, and follow the degree when asked",
          "[ablp]") {
  TempDir dir;
  auto p = Write(Skewed(), dir.path());
  const AblpInput in = TrainInput(*p);
  const V anchors = {0};
  for (auto kind : {NegativeOptions::Kind::kUniform, NegativeOptions::Kind::kDegree}) {
    NegativeOptions n;
    n.kind = kind;
    n.num = 5;
    auto labeler = AblpLabeler::Create(p.get(), in, n);
    REQUIRE(labeler.ok());
    int popular = 0, total = 0;
    for (int64_t b = 0; b < 400; ++b) {
      AblpBatch x, y;
      REQUIRE((*labeler)->MakeBatch(anchors.data(), 1, 3, 1, b, &x).ok());
      REQUIRE((*labeler)->MakeBatch(anchors.data(), 1, 3, 1, b, &y).ok());
      CHECK(x.negatives == y.negatives);
      REQUIRE(x.negatives.size() == 5);
      std::set<int64_t> distinct(x.negatives.begin(), x.negatives.end());
      CHECK(distinct.size() == 5);
      for (int64_t c : x.negatives) {
        CHECK(c >= 10);   // train positives 0..9
        CHECK(c != 20);  // the val positive is a true positive too
        popular += c == 10;
        ++total;
      }
    }
    // i10 holds 101 of the 150 destination degrees: degree sampling takes it in nearly every
    // one of the 400 batches, uniform sampling in about one in eight.
    if (kind == NegativeOptions::Kind::kDegree) {
      CHECK(popular > 360);
    } else {
      CHECK(popular < 100);
    }
  }
}
TEST_CASE("degree negatives on one partition of several kept by range need the cluster's other servers, and say so",
          "[ablp]") {
  TempDir dir;
  auto p = testing::WritePartition(Skewed(), dir.path(), "out", 2, 0);
  NegativeOptions n;
  n.kind = NegativeOptions::Kind::kDegree;
  n.num = 3;
  n.whole_degree_index_bytes = 0;  // each server its range of the degree sums alone
  auto refused = AblpLabeler::Create(p.get(), TrainInput(*p), n);
  REQUIRE(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("partition 0 of 2"));
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("--cluster"));
  n.kind = NegativeOptions::Kind::kUniform;  // drawn from the ids alone: no peer needed
  CHECK(AblpLabeler::Create(p.get(), TrainInput(*p), n).ok());
  n.kind = NegativeOptions::Kind::kDegree;  // the whole sum fits the default: no peer needed
  n.whole_degree_index_bytes = NegativeOptions().whole_degree_index_bytes;
  CHECK(AblpLabeler::Create(p.get(), TrainInput(*p), n).ok());
}

}  // namespace
}  // namespace graphstore
