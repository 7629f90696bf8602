// The PPR sampler against power iteration, over typed edges, and around label edges.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/sampling/ppr_sampler.h"
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

// Personalized PageRank by power iteration over the out-edges of the tiny graph.
std::vector<double> ReferencePpr(const GraphData& g, int64_t seed, double alpha) {
  const int64_t n = g.node_types[0].num_nodes;
  std::vector<std::vector<int64_t>> out(n);
  for (size_t i = 0; i < g.edge_types[0].src.size(); ++i) out[g.edge_types[0].src[i]].push_back(g.edge_types[0].dst[i]);
  std::vector<double> p(n, 0), walk(n, 0);
  walk[seed] = 1;
  for (int step = 0; step < 2000; ++step) {
    std::vector<double> next(n, 0);
    for (int64_t u = 0; u < n; ++u) {
      p[u] += alpha * walk[u];
      for (int64_t v : out[u]) next[v] += (1 - alpha) * walk[u] / static_cast<double>(out[u].size());
    }
    walk = next;
  }
  return p;
}
TEST_CASE("PPR forward push matches power iteration and keeps the top nodes per seed", "[ppr]") {
  TempDir dir;
  const GraphData tiny = testing::TinyGraph();
  auto p = Write(tiny, dir.path());
  const PprSamplerOptions o = Ppr(0.2, 1e-7, 3);
  auto s = PprSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph g = Run(**s, 0, {0, 3});
  REQUIRE(g.ppr.size() == 1);
  const SampledPpr& w = g.ppr[0];
  REQUIRE(w.seed_index.size() == 6);
  CHECK(g.nodes[0].num_sampled_nodes[0] == 2);
  for (int64_t seed_local : {0, 1}) {
    const int64_t seed = g.nodes[0].ids[seed_local];
    const auto ref = ReferencePpr(tiny, seed, 0.2);
    // The reference's three highest nodes other than the seed, in order.
    std::vector<int64_t> order;
    for (int64_t v = 0; v < 6; ++v) {
      if (v != seed) order.push_back(v);
    }
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ref[a] > ref[b]; });
    std::vector<int64_t> got;
    for (size_t k = 0; k < w.seed_index.size(); ++k) {
      if (w.seed_index[k] != seed_local) continue;
      const int64_t node = g.nodes[0].ids[w.node_index[k]];
      got.push_back(node);
      CHECK(std::abs(w.weight[k] - ref[node]) < 1e-4);
    }
    CHECK(got == V(order.begin(), order.begin() + 3));
  }
  // Deterministic: another worker's scratch, another batch index, the same answer.
  const SampledSubgraph again = Run(**s, 0, {0, 3}, nullptr, 9);
  CHECK(again.nodes[0].ids == g.nodes[0].ids);
  CHECK(again.ppr[0].weight == w.weight);
}
TEST_CASE("PPR walks every edge type of a heterogeneous graph", "[ppr]") {
  TempDir dir;
  auto p = Write(Shop(), dir.path());
  const PprSamplerOptions o = Ppr(0.3, 1e-6, 10);
  auto s = PprSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph g = Run(**s, TypeIndex(*p, "user"), {2});
  // u2 buys only i3, which only u2 bought: the walk stays on {u2, i3}.
  CHECK(g.nodes[TypeIndex(*p, "user")].ids == V{2});
  CHECK(g.nodes[TypeIndex(*p, "item")].ids == V{3});
  REQUIRE(g.ppr.size() == 1);
  CHECK(g.ppr[0].seed_type == TypeIndex(*p, "user"));
  CHECK(g.ppr[0].node_type == TypeIndex(*p, "item"));
  // Two-node walk: ppr(i3) = alpha (1 - alpha) / (1 - (1 - alpha)^2).
  const double expected = 0.3 * 0.7 / (1 - 0.49);
  CHECK(std::abs(g.ppr[0].weight[0] - expected) < 1e-4);
}
TEST_CASE("PPR walks of a link-prediction batch do not cross its label edges", "[ppr][ablp]") {
  TempDir dir;
  auto p = Write(Shop(), dir.path());
  const PprSamplerOptions o = Ppr(0.3, 1e-6, 10);
  auto s = PprSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const int user = TypeIndex(*p, "user"), item = TypeIndex(*p, "item");
  // The items u0's walk reaches, by global id.
  auto reached = [&](const SampledSubgraph& g) {
    std::set<int64_t> out;
    for (const auto& w : g.ppr) {
      if (w.seed_type != user || w.node_type != item) continue;
      for (size_t k = 0; k < w.seed_index.size(); ++k) {
        if (g.nodes[user].ids[w.seed_index[k]] == 0) out.insert(g.nodes[item].ids[w.node_index[k]]);
      }
    }
    return out;
  };
  CHECK(reached(Run(**s, user, {0})) == std::set<int64_t>{0, 1, 2});
  auto labeler = AblpLabeler::Create(p.get(), TrainInput(*p), {});
  REQUIRE(labeler.ok());
  const V anchors = {0};
  AblpBatch batch;
  REQUIRE((*labeler)->MakeBatch(anchors.data(), 1, 7, 0, 0, &batch).ok());
  // i0's only buyer is u0, and u0 - i0 is a label edge: out of reach; i1 only through u1.
  CHECK(reached(Run(**s, user, anchors, &batch)) == std::set<int64_t>{1, 2});
}
}  // namespace
}  // namespace graphstore
