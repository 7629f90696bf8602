// Heterogeneous graphs, link prediction (ABLP), PPR and induced subgraphs, on hand-built graphs
// whose answers are known exactly: the samplers and the core called directly.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/sampling/ablp.h"
#include "server/service/core.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/graph/partition.h"
#include "server/sampling/ppr_sampler.h"
#include "server/sampling/subgraph_sampler.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"
#include "server/graph/dataset_writer.h"

namespace graphstore {
namespace {

using testing::TempDir;
using V = std::vector<int64_t>;

// Users u0..u2 and items i0..i3. user__buys__item edges, edge id = position, feature 10 * id:
//   e0 u0->i0, e1 u0->i1, e2 u1->i1, e3 u1->i2, e4 u2->i3, e5 u0->i2
// plus the reverse type item__rev_buys__user. Label splits of buys: train (u0,i0) (u0,i1)
// (u1,i2); val (u2,i3) (u0,i3). Explicit negatives in the label-only type user__dislikes__item:
// train (u0,i3) (u1,i0). User features [id], item features [100 + id].
GraphData Shop() {
  GraphData g;
  g.name = "shop";
  NodeTypeData user;
  user.name = "user";
  user.num_nodes = 3;
  user.feature_dim = 1;
  user.features = {0, 1, 2};
  NodeTypeData item;
  item.name = "item";
  item.num_nodes = 4;
  item.feature_dim = 1;
  item.features = {100, 101, 102, 103};
  g.node_types = {user, item};
  EdgeTypeData buys;
  buys.src_type = "user";
  buys.relation = "buys";
  buys.dst_type = "item";
  buys.src = {0, 0, 1, 1, 2, 0};
  buys.dst = {0, 1, 1, 2, 3, 2};
  buys.feature_dim = 1;
  buys.features = {0, 10, 20, 30, 40, 50};
  buys.label_splits["train"] = LabelEdges{{0, 0, 1}, {0, 1, 2}};
  buys.label_splits["val"] = LabelEdges{{2, 0}, {3, 3}};
  EdgeTypeData dislikes;
  dislikes.src_type = "user";
  dislikes.relation = "dislikes";
  dislikes.dst_type = "item";
  dislikes.label_splits["train"] = LabelEdges{{0, 1}, {3, 0}};
  g.edge_types = {buys, dislikes};
  AddReverseEdgeTypes(&g);
  return g;
}

std::unique_ptr<Partition> Write(const GraphData& g, const std::string& dir, const std::string& edge_dir = "out") {
  WriteOptions o;
  o.edge_dir = edge_dir;
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), o, dir).ok());
  auto p = Partition::Load(dir);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return *std::move(p);
}

// The service core over Shop() written to `dir`.
std::unique_ptr<Core> ShopCore(const std::string& dir) {
  const GraphData g = Shop();
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir).ok());
  auto part = Partition::Load(dir);
  REQUIRE(part.ok());
  CoreOptions co;
  co.state_log_interval_s = 0;
  return std::make_unique<Core>(*std::move(part), co);
}

// The train-split input of user anchors over user__buys__item.
AblpInput TrainInput(const Partition& p, const std::string& negative_edge_type = "") {
  AblpRequest req;
  req.split = "train";
  req.node_type = "user";
  req.supervision_edge_type = "user__buys__item";
  req.negative_edge_type = negative_edge_type;
  auto in = LoadAblpInput(p, req);
  INFO(in.status().ToString());
  REQUIRE(in.ok());
  return *std::move(in);
}

PprSamplerOptions Ppr(double alpha, double eps, int max_nodes_per_seed) {
  PprSamplerOptions o;
  o.alpha = alpha;
  o.eps = eps;
  o.max_nodes_per_seed = max_nodes_per_seed;
  return o;
}

int Type(const Partition& p, const std::string& name) { return *p.FindNodeType(name); }
int EdgeType(const Partition& p, const std::string& name) { return *p.FindEdgeType(name); }

SampledSubgraph Run(const Sampler& s, int node_type, V seeds, const AblpBatch* ablp = nullptr, int64_t batch = 0) {
  auto scratch = s.NewScratch();
  SeedBatch b;
  b.node_type = node_type;
  b.ids = seeds.data();
  b.size = seeds.size();
  b.seed = 7;
  b.batch_index = batch;
  b.ablp = ablp;
  SampledSubgraph out;
  const absl::Status st = s.Sample(b, scratch.get(), &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

// Global (src, dst) pairs of an edge type's sampled edges.
std::set<std::pair<int64_t, int64_t>> Pairs(const Partition& p, const SampledSubgraph& g, int e) {
  const EdgeTypeStore& et = p.edge_type(e);
  std::set<std::pair<int64_t, int64_t>> out;
  for (size_t k = 0; k < g.edges[e].rows.size(); ++k) {
    out.emplace(g.nodes[et.src_type].ids[g.edges[e].rows[k]], g.nodes[et.dst_type].ids[g.edges[e].cols[k]]);
  }
  return out;
}

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
  const SampledSubgraph g = Run(**s, Type(*p, "user"), {0});
  const int user = Type(*p, "user"), item = Type(*p, "item");
  const int buys = EdgeType(*p, "user__buys__item"), rev = EdgeType(*p, "item__rev_buys__user");
  CHECK(g.nodes[user].ids == V{0, 1});
  CHECK(g.nodes[user].num_sampled_nodes == V{1, 0, 1});
  CHECK(g.nodes[item].ids == V{0, 1, 2});
  CHECK(g.nodes[item].num_sampled_nodes == V{0, 3, 0});
  // Hop 1: u0 buys i0 (e0), i1 (e1), i2 (e5), neighbours sorted by id.
  CHECK(g.edges[buys].rows == V{0, 0, 0});
  CHECK(g.edges[buys].cols == V{0, 1, 2});
  CHECK(g.edges[buys].eids == V{0, 1, 5});
  CHECK(g.edges[buys].num_sampled_edges == V{3, 0});
  REQUIRE(g.edges[buys].feature_dim == 1);
  const float* f = reinterpret_cast<const float*>(g.edges[buys].features.data());
  CHECK(std::vector<float>(f, f + 3) == std::vector<float>{0, 10, 50});
  // Hop 2: the items' buyers through the reverse type (item -> user, as stored).
  CHECK(g.edges[rev].rows == V{0, 1, 1, 2, 2});
  CHECK(g.edges[rev].cols == V{0, 0, 1, 0, 1});
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

TEST_CASE("GetAblpInput answers anchors with padded positive and negative labels, sliced", "[ablp]") {
  TempDir dir;
  auto core_ptr = ShopCore(dir.path());
  Core& core = *core_ptr;
  auto ints = [](const v1::Tensor& t) {
    const auto* p = reinterpret_cast<const int64_t*>(t.data().data());
    return V(p, p + t.data().size() / 8);
  };
  v1::GetAblpInputRequest req;
  req.set_split("train");
  req.set_node_type("user");
  req.set_supervision_edge_type("user__buys__item");
  req.set_negative_edge_type("user__dislikes__item");
  v1::GetAblpInputResponse resp;
  REQUIRE(core.GetAblpInput(req, &resp).ok());
  CHECK(ints(resp.anchors()) == V{0, 1});
  CHECK(ints(resp.positive_labels()) == V{0, 1, 2, -1});
  CHECK(std::vector<int64_t>(resp.positive_labels().shape().begin(), resp.positive_labels().shape().end()) == V{2, 2});
  CHECK(ints(resp.negative_labels()) == V{3, 0});

  req.mutable_slice()->set_rank(1);
  req.mutable_slice()->set_world_size(2);
  resp.Clear();
  REQUIRE(core.GetAblpInput(req, &resp).ok());
  CHECK(ints(resp.anchors()) == V{1});
  CHECK(ints(resp.positive_labels()) == V{2});

  // Bad requests name the field.
  auto fails = [&](v1::GetAblpInputRequest r, const std::string& text) {
    v1::GetAblpInputResponse out;
    const absl::Status st = core.GetAblpInput(r, &out);
    INFO(st.ToString());
    CHECK(st.code() == absl::StatusCode::kInvalidArgument);
    CHECK(st.message().find(text) != std::string::npos);
  };
  v1::GetAblpInputRequest bad = req;
  bad.clear_slice();
  bad.set_split("holdout");
  fails(bad, "split 'holdout' has no label edges");
  bad = req;
  bad.set_supervision_edge_type("item__rev_buys__user");
  fails(bad, "starts at 'item'");
  bad = req;
  bad.set_negative_edge_type("item__rev_buys__user");
  fails(bad, "negative_edge_type 'item__rev_buys__user' does not join");
  bad = req;
  bad.set_node_type("shop");
  fails(bad, "node_type");
  bad = req;
  bad.mutable_slice()->set_rank(2);
  fails(bad, "slice.rank 2");
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
      const SampledSubgraph g = Run(**s, Type(*p, "user"), anchors, &batch);
      const int user = Type(*p, "user"), item = Type(*p, "item");
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
      const auto buys = Pairs(*p, g, EdgeType(*p, "user__buys__item"));
      const auto rev = Pairs(*p, g, EdgeType(*p, "item__rev_buys__user"));
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

  PprSamplerOptions bad = o;
  bad.alpha = 1.0;
  CHECK(PprSampler::Create(p.get(), bad).status().message().find("ppr.alpha") != std::string::npos);
  bad = o;
  bad.eps = 0;
  CHECK(PprSampler::Create(p.get(), bad).status().message().find("ppr.eps") != std::string::npos);
  bad = o;
  bad.max_nodes_per_seed = 0;
  CHECK(PprSampler::Create(p.get(), bad).status().message().find("ppr.max_nodes_per_seed") != std::string::npos);
}

TEST_CASE("PPR walks every edge type of a heterogeneous graph", "[ppr]") {
  TempDir dir;
  auto p = Write(Shop(), dir.path());
  const PprSamplerOptions o = Ppr(0.3, 1e-6, 10);
  auto s = PprSampler::Create(p.get(), o);
  REQUIRE(s.ok());
  const SampledSubgraph g = Run(**s, Type(*p, "user"), {2});
  // u2 buys only i3, which only u2 bought: the walk stays on {u2, i3}.
  CHECK(g.nodes[Type(*p, "user")].ids == V{2});
  CHECK(g.nodes[Type(*p, "item")].ids == V{3});
  REQUIRE(g.ppr.size() == 1);
  CHECK(g.ppr[0].seed_type == Type(*p, "user"));
  CHECK(g.ppr[0].node_type == Type(*p, "item"));
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
  const int user = Type(*p, "user"), item = Type(*p, "item");
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
  CHECK(g.edges[0].rows == V{0, 0, 1});
  CHECK(g.edges[0].cols == V{1, 2, 2});
  CHECK(g.edges[0].eids == V{0, 1, 2});
  CHECK(g.edges[0].num_sampled_edges == V{3});
  // From 4: 4 -> 5 is drawn; 5 -> 0 leaves the node set, so only one edge.
  const SampledSubgraph h = Run(**s, 0, {4});
  CHECK(h.nodes[0].ids == V{4, 5});
  CHECK(h.edges[0].eids == V{5});
}

TEST_CASE("the core validates sampler kinds and link-prediction options, naming the field", "[core]") {
  TempDir dir;
  auto core_ptr = ShopCore(dir.path());
  Core& core = *core_ptr;
  auto init = [&](const v1::SamplingConfig& c) {
    v1::InitSamplingBackendRequest req;
    static int next_key = 0;
    req.set_backend_key(absl::StrCat("backend-", next_key++));
    *req.mutable_config() = c;
    v1::InitSamplingBackendResponse resp;
    absl::Status out;
    core.InitSamplingBackend(req, &resp, [&](absl::Status s) { out = s; });
    return std::make_pair(out, resp.backend_id());
  };
  v1::SamplingConfig c;
  c.set_batch_size(2);
  c.set_kind(v1::SAMPLER_KIND_PPR);
  c.add_num_neighbors(2);
  CHECK(init(c).first.message().find("config.num_neighbors") != std::string::npos);
  c.clear_num_neighbors();
  c.mutable_ppr()->set_alpha(0.2);
  c.mutable_ppr()->set_eps(1e-4);
  c.mutable_ppr()->set_max_nodes_per_seed(0);
  CHECK(init(c).first.message().find("ppr.max_nodes_per_seed") != std::string::npos);
  c.mutable_ppr()->set_max_nodes_per_seed(4);
  CHECK(init(c).first.ok());
  v1::SamplingConfig n;
  n.set_batch_size(2);
  n.add_num_neighbors(2);
  n.set_num_negatives(3);
  CHECK(init(n).first.message().find("config.num_negatives needs config.negative_sampling") != std::string::npos);
  n.set_negative_sampling(v1::NEGATIVE_SAMPLING_DEGREE);
  const auto [ok, backend] = init(n);
  REQUIRE(ok.ok());

  // An ablp registration: the anchors of the split; bad inputs name ablp.input.
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend);
  auto* in = reg.mutable_ablp()->mutable_input();
  in->set_split("train");
  in->set_node_type("user");
  in->set_supervision_edge_type("user__buys__item");
  v1::RegisterSamplingInputResponse resp;
  REQUIRE(core.RegisterSamplingInput(reg, &resp).ok());
  CHECK(resp.num_seeds() == 2);
  CHECK(resp.num_batches_per_epoch() == 1);
  in->set_supervision_edge_type("user__likes__item");
  const absl::Status st = core.RegisterSamplingInput(reg, &resp);
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(st.message().find("ablp.input: supervision_edge_type") != std::string::npos);
}

TEST_CASE("label files are validated on load, naming the file", "[ablp]") {
  TempDir dir;
  GraphData g = Shop();
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir.path()).ok());
  // Unsorted rows.
  const std::string file = dir.path() + "/edges/user__buys__item/labels_train.npy";
  const int64_t rows[] = {1, 2, 0, 0};
  REQUIRE(WriteNpy(file, NpyDtype::kInt64, {2, 2}, rows).ok());
  auto p = Partition::Load(dir.path());
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("labels_train.npy") != std::string::npos);
  CHECK(p.status().message().find("not sorted") != std::string::npos);
  // A destination outside the item ids.
  const int64_t far[] = {0, 9};
  REQUIRE(WriteNpy(file, NpyDtype::kInt64, {1, 2}, far).ok());
  p = Partition::Load(dir.path());
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("destination 9 is not a 'item' node id") != std::string::npos);
}

}  // namespace
}  // namespace graphstore
