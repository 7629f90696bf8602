#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/sampling/subgraph_sampler.h"
#include "tests/fixtures.h"
#include "tests/sampling/sampling_fixtures.h"
#include "tests/test_util.h"
#include "tools/generator.h"

namespace graphstore {
namespace {

using testing::TempDir;

std::unique_ptr<Partition> Write(const GraphData& g, const std::string& dir, const std::string& edge_dir = "out",
                                 int parts = 1, int which = 0) {
  return testing::WritePartition(g, dir, edge_dir, parts, which);
}

SampledSubgraph Run(const Sampler& s, std::vector<int64_t> seeds, int64_t batch = 0, uint64_t seed = 1,
                    int64_t epoch = 0) {
  testing::SampleAt at;
  at.seed = seed;
  at.epoch = epoch;
  at.batch = batch;
  return testing::RunSampler(s, std::move(seeds), at);
}

using V = std::vector<int64_t>;
using Local = std::vector<int32_t>;

TEST_CASE("full-fanout two hops on a tiny graph gives the exact subgraph", "[sampler]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir.path());
  NeighborSamplerOptions o;
  o.fanouts = {-1, -1};
  o.with_edge_ids = true;
  o.with_node_features = true;
  o.with_labels = true;
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph g = Run(**s, {0});
  const SampledNodes& n = g.nodes[0];
  CHECK(n.ids == V{0, 1, 2, 3});
  CHECK(n.num_sampled_nodes == V{1, 2, 1});
  CHECK(n.batch == V{0});
  const SampledEdges& e = g.edges[0];
  CHECK(e.rows == Local{0, 0, 1, 2});
  CHECK(e.cols == Local{1, 2, 2, 3});
  CHECK(e.eids == V{0, 1, 2, 3});
  CHECK(e.num_sampled_edges == V{2, 2});
  REQUIRE(n.features.size() == 4 * 2 * sizeof(float));
  const float* f = reinterpret_cast<const float*>(n.features.data());
  CHECK(f[6] == 3.0f);
  CHECK(f[7] == -3.0f);
  CHECK(n.labels == V{0, 1, 2, 0});
}

TEST_CASE("edge_dir in samples in-neighbours and keeps edges oriented source to destination",
          "[sampler]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir.path(), "in");
  NeighborSamplerOptions o;
  o.fanouts = {-1, -1};
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph g = Run(**s, {2});
  CHECK(g.nodes[0].ids == V{2, 0, 1, 5});
  // Hop 1: 0 -> 2 and 1 -> 2. Hop 2: 5 -> 0 and 0 -> 1.
  CHECK(g.edges[0].rows == Local{1, 2, 3, 1});
  CHECK(g.edges[0].cols == Local{0, 0, 1, 2});
}

TEST_CASE("duplicate seeds are kept in batch and appear once in ids", "[sampler]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir.path());
  NeighborSamplerOptions o;
  o.fanouts = {1};
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph g = Run(**s, {4, 4, 3});
  CHECK(g.nodes[0].batch == V{4, 4, 3});
  CHECK(g.nodes[0].num_sampled_nodes[0] == 2);
  CHECK(g.nodes[0].ids[0] == 4);
  CHECK(g.nodes[0].ids[1] == 3);
}

TEST_CASE("bad seeds and bad options are rejected with the field named", "[sampler]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir.path());
  // Fanout ranges and hop counts are the service's to check (tests/service/config_test.cc); the
  // sampler resolves names against its partition.
  NeighborSamplerOptions o;
  o.fanouts_by_type["a__b__c"] = {1};
  CHECK_THAT(std::string(NeighborSampler::Create(p.get(), o).status().message()), Catch::Contains("a__b__c"));

  o = NeighborSamplerOptions();
  o.fanouts = {2};
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  auto scratch = (*s)->NewScratch();
  std::vector<int64_t> bad = {1, 6};
  SeedBatch b;
  b.ids = bad.data();
  b.size = bad.size();
  SampledSubgraph out;
  const absl::Status st = (*s)->Sample(b, scratch.get(), &out);
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("seed 6"));
  // The scratch map is clean after an error: a good batch still samples correctly.
  std::vector<int64_t> good = {1};
  b.ids = good.data();
  b.size = 1;
  REQUIRE((*s)->Sample(b, scratch.get(), &out).ok());
  CHECK(out.nodes[0].ids == V{1, 2});
}

// Whether (u, w) is an edge of the stored CSR (u a row node, single partition).
bool HasEdge(const EdgeTypeStore& e, int64_t u, int64_t w) {
  const int64_t* b = e.indices_data() + e.indptr_data()[u];
  const int64_t* end = e.indices_data() + e.indptr_data()[u + 1];
  return std::binary_search(b, end, w);
}

// A generated graph of kGeneratedNodes nodes, 12 edges each on average and no features,
// written under `dir` and loaded.
constexpr int64_t kGeneratedNodes = 20000;
absl::StatusOr<std::unique_ptr<Partition>> GeneratedGraph(const TempDir& dir) {
  GeneratorOptions go;
  go.num_nodes = kGeneratedNodes;
  go.avg_degree = 12;
  go.feature_dim = 0;
  if (auto s = GenerateDataset(go, dir.path()); !s.ok()) return s;
  return Partition::Load(dir.path());
}

TEST_CASE("a worker's ids mapped by a table give the subgraphs an array gives, batch after batch", "[sampler]") {
  // The same worker scratch reused for ten batches (a table emptied between them), for k-hop
  // neighbour sampling and for the induced subgraph (which looks nodes up without adding them).
  TempDir dir;
  auto p = GeneratedGraph(dir);
  REQUIRE(p.ok());
  for (const bool induced : {false, true}) {
    INFO((induced ? "induced subgraph" : "neighbours"));
    NeighborSamplerOptions o;
    o.fanouts = {15, 10, 5};
    auto make = [&](int64_t dense) -> std::unique_ptr<Sampler> {
      NeighborSamplerOptions with = o;
      with.dense_local_ids = dense;
      if (induced) {
        auto s = SubgraphSampler::Create(p->get(), with);
        REQUIRE(s.ok());
        return *std::move(s);
      }
      auto s = NeighborSampler::Create(p->get(), with);
      REQUIRE(s.ok());
      return *std::move(s);
    };
    const auto array = make(kGeneratedNodes);
    const auto table = make(0);
    auto array_scratch = array->NewScratch();
    auto table_scratch = table->NewScratch();
    for (int64_t batch = 0; batch < 10; ++batch) {
      INFO("batch " << batch);
      std::vector<int64_t> seeds;
      for (int64_t i = 0; i < 300; ++i) seeds.push_back((i * 71 + batch * 977) % kGeneratedNodes);
      SeedBatch b;
      b.ids = seeds.data();
      b.size = seeds.size();
      b.seed = 5;
      b.batch_index = batch;
      SampledSubgraph want, got;
      REQUIRE(array->Sample(b, array_scratch.get(), &want).ok());
      REQUIRE(table->Sample(b, table_scratch.get(), &got).ok());
      CHECK(got.nodes[0].ids == want.nodes[0].ids);
      CHECK(got.nodes[0].num_sampled_nodes == want.nodes[0].num_sampled_nodes);
      CHECK(got.edges[0].rows == want.edges[0].rows);
      CHECK(got.edges[0].cols == want.edges[0].cols);
      CHECK(got.edges[0].num_sampled_edges == want.edges[0].num_sampled_edges);
      CHECK(want.nodes[0].ids.size() > 1000);
    }
  }
}

TEST_CASE("sampling a generated graph: edges exist, no duplicates, fanouts respected", "[sampler]") {
  TempDir dir;
  auto p = GeneratedGraph(dir);
  REQUIRE(p.ok());
  const EdgeTypeStore& et = (*p)->edge_type(0);
  const std::vector<int> fanouts = {15, 10, 5};
  NeighborSamplerOptions o;
  o.fanouts = {fanouts.begin(), fanouts.end()};
  auto s = NeighborSampler::Create(p->get(), o);
  REQUIRE(s.ok());
  std::vector<int64_t> seeds;
  for (int64_t i = 0; i < 256; ++i) seeds.push_back(i * 71 % kGeneratedNodes);
  const SampledSubgraph g = Run(**s, seeds, 3, 77, 2);
  const SampledNodes& n = g.nodes[0];
  const SampledEdges& e = g.edges[0];
  REQUIRE(e.rows.size() == e.cols.size());
  std::set<int64_t> unique(n.ids.begin(), n.ids.end());
  CHECK(unique.size() == n.ids.size());
  int64_t hop_start = 0;
  int64_t frontier_begin = 0;
  for (int hop = 0; hop < 3; ++hop) {
    const int64_t frontier_end = frontier_begin + n.num_sampled_nodes[hop];
    std::map<int64_t, std::vector<int64_t>> per_node;
    for (int64_t k = hop_start; k < hop_start + e.num_sampled_edges[hop]; ++k) {
      REQUIRE(e.rows[k] >= frontier_begin);
      REQUIRE(e.rows[k] < frontier_end);
      const int64_t u = n.ids[e.rows[k]];
      const int64_t w = n.ids[e.cols[k]];
      REQUIRE(HasEdge(et, u, w));
      per_node[u].push_back(w);
    }
    for (int64_t l = frontier_begin; l < frontier_end; ++l) {
      const int64_t u = n.ids[l];
      const int64_t degree = et.indptr_data()[u + 1] - et.indptr_data()[u];
      auto& got = per_node[u];
      CHECK(static_cast<int64_t>(got.size()) == std::min<int64_t>(degree, fanouts[hop]));
      std::set<int64_t> distinct(got.begin(), got.end());
      CHECK(distinct.size() == got.size());
    }
    hop_start += e.num_sampled_edges[hop];
    frontier_begin = frontier_end;
  }
}

TEST_CASE("a batch's sample depends only on (seed, epoch, batch)", "[sampler]") {
  TempDir dir;
  GeneratorOptions go;
  go.num_nodes = 5000;
  go.feature_dim = 0;
  REQUIRE(GenerateDataset(go, dir.path()).ok());
  auto p = Partition::Load(dir.path());
  REQUIRE(p.ok());
  NeighborSamplerOptions o;
  o.fanouts = {10, 5};
  auto s = NeighborSampler::Create(p->get(), o);
  REQUIRE(s.ok());
  const std::vector<int64_t> seeds = {5, 10, 15, 20, 25};
  const SampledSubgraph a = Run(**s, seeds, 7, 42, 3);
  const SampledSubgraph b = Run(**s, seeds, 7, 42, 3);
  CHECK(a.nodes[0].ids == b.nodes[0].ids);
  CHECK(a.edges[0].cols == b.edges[0].cols);
  CHECK(Run(**s, seeds, 8, 42, 3).nodes[0].ids != a.nodes[0].ids);
  CHECK(Run(**s, seeds, 7, 42, 4).nodes[0].ids != a.nodes[0].ids);
  CHECK(Run(**s, seeds, 7, 43, 3).nodes[0].ids != a.nodes[0].ids);
}

TEST_CASE("a node's draw does not depend on the partitioning", "[sampler]") {
  TempDir one, two;
  GeneratorOptions go;
  go.num_nodes = 3000;
  go.feature_dim = 4;
  REQUIRE(GenerateDataset(go, one.path()).ok());
  go.num_partitions = 2;
  REQUIRE(GenerateDataset(go, two.path()).ok());
  auto whole = Partition::Load(one.path());
  REQUIRE(whole.ok());
  NeighborSamplerOptions o;
  o.fanouts = {7};
  o.with_edge_ids = true;
  auto sw = NeighborSampler::Create(whole->get(), o);
  REQUIRE(sw.ok());
  for (int part = 0; part < 2; ++part) {
    auto half = Partition::Load(PartitionDir(two.path(), 2, part));
    REQUIRE(half.ok());
    auto sh = NeighborSampler::Create(half->get(), o);
    REQUIRE(sh.ok());
    const NodeTypeStore& n = (*half)->node_type(0);
    std::vector<int64_t> seeds(n.global_ids(), n.global_ids() + 100);
    const SampledSubgraph a = Run(**sw, seeds, 5, 9, 1);
    const SampledSubgraph b = Run(**sh, seeds, 5, 9, 1);
    CHECK(a.nodes[0].ids == b.nodes[0].ids);
    CHECK(a.edges[0].rows == b.edges[0].rows);
    CHECK(a.edges[0].cols == b.edges[0].cols);
    CHECK(a.edges[0].eids == b.edges[0].eids);
  }
}

TEST_CASE("each neighbour is selected with uniform frequency", "[sampler][statistics]") {
  // Without replacement, 5 of 20: every position has probability 1/4.
  for (int k : {5, 40}) {
    const int degree = k == 5 ? 20 : 100;
    const int trials = 20000;
    std::vector<int> count(degree, 0);
    std::vector<int64_t> out(degree);
    for (int t = 0; t < trials; ++t) {
      const int64_t n = DrawNeighborPositions(HashCombine(123, t), degree, k, false, out.data());
      REQUIRE(n == k);
      std::set<int64_t> distinct(out.begin(), out.begin() + n);
      REQUIRE(distinct.size() == static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) ++count[out[i]];
    }
    // Chi-square with degree-1 freedom; the 99.99th percentile is well under 2 * degree + 40.
    const double expected = static_cast<double>(trials) * k / degree;
    double chi2 = 0;
    for (int c : count) chi2 += (c - expected) * (c - expected) / expected;
    INFO("k " << k << " chi2 " << chi2);
    CHECK(chi2 < 2.0 * degree + 40);
  }
  // With replacement: 5 draws from 8, independent and uniform.
  std::vector<int> count(8, 0);
  std::vector<int64_t> out(5);
  for (int t = 0; t < 20000; ++t) {
    REQUIRE(DrawNeighborPositions(HashCombine(7, t), 8, 5, true, out.data()) == 5);
    for (int64_t x : out) ++count[x];
  }
  double chi2 = 0;
  for (int c : count) chi2 += (c - 12500.0) * (c - 12500.0) / 12500.0;
  CHECK(chi2 < 40);
}

TEST_CASE("sampling with replacement draws exactly fanout neighbours", "[sampler]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir.path());
  NeighborSamplerOptions o;
  o.fanouts = {5};
  o.replace = true;
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph g = Run(**s, {0});
  CHECK(g.edges[0].rows.size() == 5);
  for (int64_t c : g.edges[0].cols) CHECK((g.nodes[0].ids[c] == 1 || g.nodes[0].ids[c] == 2));
}

TEST_CASE("heterogeneous fanouts expand each edge type from its row type", "[sampler]") {
  GraphData g;
  g.node_types.push_back(NodeTypeData{"user", 3});
  g.node_types.push_back(NodeTypeData{"item", 2});
  EdgeTypeData rates;
  rates.src_type = "user";
  rates.relation = "rates";
  rates.dst_type = "item";
  rates.src = {0, 0, 1, 2};
  rates.dst = {0, 1, 1, 0};
  EdgeTypeData rated_by;
  rated_by.src_type = "item";
  rated_by.relation = "rated_by";
  rated_by.dst_type = "user";
  rated_by.src = {0, 1, 1, 0};
  rated_by.dst = {0, 0, 1, 2};
  g.edge_types = {rates, rated_by};
  TempDir dir;
  auto p = Write(g, dir.path());
  NeighborSamplerOptions o;
  o.fanouts_by_type["user__rates__item"] = {-1, 0};
  o.fanouts_by_type["item__rated_by__user"] = {0, -1};
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph out = Run(**s, {0});
  CHECK(out.nodes[0].ids == V{0, 2, 1});        // users: seed 0; hop 2 meets 2 (via item 0), then 1
  CHECK(out.nodes[0].num_sampled_nodes == V{1, 0, 2});
  CHECK(out.nodes[1].ids == V{0, 1});           // items reached at hop 1
  CHECK(out.edges[0].num_sampled_edges == V{2, 0});
  CHECK(out.edges[1].num_sampled_edges == V{0, 4});
  // item 0 <- users 0, 2; item 1 <- users 0, 1 (as item__rated_by__user rows = items).
  CHECK(out.edges[1].rows == Local{0, 0, 1, 1});
}

}  // namespace
}  // namespace graphstore
