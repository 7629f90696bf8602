// The stateless partition queries, called directly with no server.

#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/neighbor_draw.h"
#include "server/service/queries.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::TempDir;
using V = std::vector<int64_t>;

const CoreOptions kOptions;

// The tiny graph with one feature per edge: edge i carries 10 * i.
GraphData TinyWithEdgeFeatures() {
  GraphData g = testing::TinyGraph();
  EdgeTypeData& e = g.edge_types[0];
  e.relation = "cites";
  e.feature_dim = 1;
  for (size_t i = 0; i < e.src.size(); ++i) e.features.push_back(10.0f * i);
  return g;
}
std::unique_ptr<Partition> Load(const std::string& dir) {
  auto p = Partition::Load(dir);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return *std::move(p);
}

PartitionQueries Queries(const Partition& p, const CoreOptions* options = &kOptions) {
  // Feature encodings are computed once per partition; the test's partitions live for a case.
  static std::map<const Partition*, std::unique_ptr<FeatureOutputs>> outputs;
  auto& out = outputs[&p];
  if (out == nullptr) out = std::make_unique<FeatureOutputs>(&p);
  return PartitionQueries(&p, options, out.get());
}

V Ints(const v1::Tensor& t) {
  REQUIRE(t.dtype() == v1::DTYPE_INT64);
  const auto* p = reinterpret_cast<const int64_t*>(t.data().data());
  return V(p, p + t.data().size() / 8);
}

// The tiny graph in two partitions (nodes dealt by a seeded permutation).
std::string TwoPartitions(const TempDir& dir) {
  const GraphData g = testing::TinyGraph();
  WriteOptions w;
  w.num_partitions = 2;
  REQUIRE(WritePartitions(g, RandomAssignment(g, 2, 4), w, dir.path()).ok());
  return dir.path();
}

TEST_CASE("GetDatasetMeta names each edge type's relation", "[core]") {
  TempDir dir;
  const GraphData g = TinyWithEdgeFeatures();
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir.path()).ok());
  auto p = Load(dir.path());
  v1::DatasetMeta meta;
  Queries(*p).FillDatasetMeta(&meta);
  REQUIRE(meta.edge_types_size() == 1);
  CHECK(meta.edge_types(0).name() == "node__cites__node");
  CHECK(meta.edge_types(0).src_type() == "node");
  CHECK(meta.edge_types(0).relation() == "cites");
  CHECK(meta.edge_types(0).dst_type() == "node");
  CHECK(meta.edge_types(0).features().dim() == 1);
}

TEST_CASE("GetDatasetMeta says which types store weights and times", "[core]") {
  GraphData g = TinyWithEdgeFeatures();
  TempDir plain_dir, timed_dir;
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), plain_dir.path()).ok());
  EdgeTypeData& e = g.edge_types[0];
  for (size_t i = 0; i < e.src.size(); ++i) {
    e.weights.push_back(1.0f + i);
    e.times.push_back(100 + static_cast<int64_t>(i));
  }
  g.node_types[0].times.assign(static_cast<size_t>(g.node_types[0].num_nodes), 5);
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), timed_dir.path()).ok());
  for (const bool timed : {false, true}) {
    INFO((timed ? "with" : "without") << " weights and times");
    auto p = Load(timed ? timed_dir.path() : plain_dir.path());
    v1::DatasetMeta meta;
    Queries(*p).FillDatasetMeta(&meta);
    REQUIRE(meta.node_types_size() == 1);
    REQUIRE(meta.edge_types_size() == 1);
    CHECK(meta.node_types(0).has_times() == timed);
    CHECK(meta.edge_types(0).has_weights() == timed);
    CHECK(meta.edge_types(0).has_times() == timed);
  }
}
TEST_CASE("GetEdgeFeatures finds stored edges by global edge id", "[core]") {
  TempDir dir;
  const GraphData g = TinyWithEdgeFeatures();
  WriteOptions w;
  w.num_partitions = 2;
  REQUIRE(WritePartitions(g, RandomAssignment(g, 2, 4), w, dir.path()).ok());
  int found = 0, answered = 0;
  for (int p = 0; p < 2; ++p) {
    auto part = Load(PartitionDir(dir.path(), 2, p));
    const PartitionQueries queries = Queries(*part);
    const EdgeTypeStore& e = part->edge_type(0);
    for (int64_t k = 0; k < e.num_local; ++k) {
      const int64_t id = e.EdgeId(k);
      v1::GetEdgeFeaturesRequest req;
      req.add_ids(id);
      v1::GetEdgeFeaturesResponse resp;
      REQUIRE(queries.GetEdgeFeatures(req, &resp).ok());
      float value = 0;
      std::memcpy(&value, resp.features().data().data(), sizeof(float));
      CHECK(value == 10.0f * id);
      ++found;
    }
    // An edge stored by the other partition is not found here.
    v1::GetEdgeFeaturesRequest missing;
    missing.add_ids(99);
    v1::GetEdgeFeaturesResponse resp;
    const absl::Status s = queries.GetEdgeFeatures(missing, &resp);
    CHECK(absl::IsInvalidArgument(s));
    CHECK_THAT(std::string(s.message()), Catch::Contains("ids[0]=99"));
    // With only_stored, every edge id asked of both partitions is answered by exactly one,
    // positions naming which.
    v1::GetEdgeFeaturesRequest all;
    all.set_only_stored(true);
    for (int64_t id = 6; id >= 0; --id) all.add_ids(id);
    all.add_ids(99);
    REQUIRE(queries.GetEdgeFeatures(all, &resp).ok());
    CHECK(resp.positions_size() == e.num_local);
    CHECK(resp.features().shape(0) == e.num_local);
    for (int i = 0; i < resp.positions_size(); ++i) {
      float value = 0;
      std::memcpy(&value, resp.features().data().data() + i * sizeof(float), sizeof(float));
      CHECK(value == 10.0f * all.ids(static_cast<int>(resp.positions(i))));
      answered += 1;
    }
  }
  CHECK(found == 7);
  CHECK(answered == 7);
}
TEST_CASE("GetAblpInput answers anchors with padded positive and negative labels, sliced", "[ablp]") {
  TempDir dir;
  const GraphData g = testing::Shop();
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir.path()).ok());
  auto p = Load(dir.path());
  const PartitionQueries core = Queries(*p);
  v1::GetAblpInputRequest req;
  req.set_split("train");
  req.set_node_type("user");
  req.set_supervision_edge_type("user__buys__item");
  req.set_negative_edge_type("user__dislikes__item");
  v1::GetAblpInputResponse resp;
  REQUIRE(core.GetAblpInput(req, &resp).ok());
  CHECK(Ints(resp.anchors()) == V{0, 1});
  CHECK(Ints(resp.positive_labels()) == V{0, 1, 2, -1});
  CHECK(std::vector<int64_t>(resp.positive_labels().shape().begin(), resp.positive_labels().shape().end()) == V{2, 2});
  CHECK(Ints(resp.negative_labels()) == V{3, 0});

  req.mutable_slice()->set_rank(1);
  req.mutable_slice()->set_world_size(2);
  resp.Clear();
  REQUIRE(core.GetAblpInput(req, &resp).ok());
  CHECK(Ints(resp.anchors()) == V{1});
  CHECK(Ints(resp.positive_labels()) == V{2});

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
TEST_CASE("LookupPartitions answers every id's owner and names a bad one", "[queries]") {
  TempDir dir;
  auto p = Load(PartitionDir(TwoPartitions(dir), 2, 0));
  const NodeTypeStore& n = p->node_type(0);
  v1::LookupPartitionsRequest req;
  for (int64_t id = 0; id < n.num_nodes; ++id) req.add_ids(id);
  v1::LookupPartitionsResponse resp;
  REQUIRE(Queries(*p).LookupPartitions(req, &resp).ok());
  REQUIRE(resp.partitions().dtype() == v1::DTYPE_INT32);
  const auto* owners = reinterpret_cast<const int32_t*>(resp.partitions().data().data());
  for (int64_t id = 0; id < n.num_nodes; ++id) CHECK(owners[id] == n.Owner(id));
  req.add_ids(6);
  const absl::Status s = Queries(*p).LookupPartitions(req, &resp);
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("ids[6]=6"));
}

TEST_CASE("GetNodeIds answers a split, sliced, and names an unknown split", "[queries]") {
  TempDir dir;
  const GraphData g = testing::TinyGraph();
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir.path()).ok());
  auto p = Load(dir.path());
  v1::GetNodeIdsRequest req;
  req.set_split("train");
  v1::GetNodeIdsResponse resp;
  REQUIRE(Queries(*p).GetNodeIds(req, &resp).ok());
  CHECK(Ints(resp.ids()) == V{0, 1, 2, 3});
  req.mutable_slice()->set_rank(1);
  req.mutable_slice()->set_world_size(2);
  REQUIRE(Queries(*p).GetNodeIds(req, &resp).ok());
  CHECK(Ints(resp.ids()) == V{2, 3});
  req.set_split("holdout");
  const absl::Status s = Queries(*p).GetNodeIds(req, &resp);
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("split 'holdout' does not exist"));
}

TEST_CASE("GetNodeFeatures and GetNodeLabels answer owned rows and refuse others', naming the id", "[queries]") {
  TempDir dir;
  auto p = Load(PartitionDir(TwoPartitions(dir), 2, 1));
  const NodeTypeStore& n = p->node_type(0);
  v1::GetNodeFeaturesRequest req;
  req.set_with_labels(true);
  int64_t foreign = -1;
  for (int64_t id = 0; id < n.num_nodes; ++id) {
    if (n.Owner(id) == 1) {
      req.add_ids(id);
    } else {
      foreign = id;
    }
  }
  REQUIRE(req.ids_size() > 0);
  REQUIRE(foreign >= 0);
  v1::GetNodeFeaturesResponse resp;
  REQUIRE(Queries(*p).GetNodeFeatures(req, &resp).ok());
  REQUIRE(resp.features().shape(0) == req.ids_size());
  const auto* f = reinterpret_cast<const float*>(resp.features().data().data());
  const V labels = Ints(resp.labels());
  for (int i = 0; i < req.ids_size(); ++i) {
    // TinyGraph: features (id, -id), label id % 3.
    CHECK(f[2 * i] == static_cast<float>(req.ids(i)));
    CHECK(f[2 * i + 1] == -static_cast<float>(req.ids(i)));
    CHECK(labels[i] == req.ids(i) % 3);
  }
  req.add_ids(foreign);
  const absl::Status s = Queries(*p).GetNodeFeatures(req, &resp);
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("is owned by partition 0"));
  v1::GetNodeLabelsRequest lr;
  lr.add_ids(foreign);
  v1::GetNodeLabelsResponse lresp;
  CHECK(absl::IsInvalidArgument(Queries(*p).GetNodeLabels(lr, &lresp)));
}

TEST_CASE("GetNodeTimes answers owned nodes' stored times and refuses others' and an untimed type", "[queries]") {
  // Node i's time is 100 + 7i; each server keeps its own nodes' times alone.
  GraphData g = testing::TinyGraph();
  for (int64_t i = 0; i < g.node_types[0].num_nodes; ++i) g.node_types[0].times.push_back(100 + 7 * i);
  TempDir dir, untimed_dir;
  WriteOptions w;
  w.num_partitions = 2;
  REQUIRE(WritePartitions(g, RandomAssignment(g, 2, 4), w, dir.path()).ok());
  for (int k = 0; k < 2; ++k) {
    INFO("partition " << k);
    auto p = Load(PartitionDir(dir.path(), 2, k));
    const NodeTypeStore& n = p->node_type(0);
    REQUIRE(n.has_times);
    CHECK(static_cast<int64_t>(n.own_times.size()) == n.num_local);
    v1::GetNodeTimesRequest req;
    int64_t foreign = -1;
    for (int64_t id = n.num_nodes - 1; id >= 0; --id) {
      if (n.Owner(id) == k) {
        req.add_ids(id);
      } else {
        foreign = id;
      }
    }
    REQUIRE(req.ids_size() > 0);
    REQUIRE(foreign >= 0);
    v1::GetNodeTimesResponse resp;
    REQUIRE(Queries(*p).GetNodeTimes(req, &resp).ok());
    const V times = Ints(resp.times());
    REQUIRE(static_cast<int>(times.size()) == req.ids_size());
    for (int i = 0; i < req.ids_size(); ++i) CHECK(times[i] == 100 + 7 * req.ids(i));
    req.add_ids(foreign);
    const absl::Status s = Queries(*p).GetNodeTimes(req, &resp);
    CHECK(absl::IsInvalidArgument(s));
    CHECK_THAT(std::string(s.message()), Catch::Contains(std::to_string(foreign)));
    CHECK_THAT(std::string(s.message()), Catch::Contains("is owned by partition " + std::to_string(1 - k)));
    req.set_node_type("nope");
    CHECK(absl::IsInvalidArgument(Queries(*p).GetNodeTimes(req, &resp)));
  }
  auto untimed = Load(PartitionDir(TwoPartitions(untimed_dir), 2, 0));
  v1::GetNodeTimesRequest req;
  v1::GetNodeTimesResponse resp;
  const absl::Status s = Queries(*untimed).GetNodeTimes(req, &resp);
  CHECK(absl::IsFailedPrecondition(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("stores no node times"));
}

TEST_CASE("FindDegreeNodes answers the positions of this server's range of destination ids as the whole "
          "running sum does, and names a position outside it",
          "[queries][ablp]") {
  TempDir dir;
  GraphData g = testing::TinyGraph();
  g.edge_types[0].label_splits["train"] = LabelEdges{{0}, {1}};  // (dst_degree.npy comes with labels)
  WriteOptions w;
  w.num_partitions = 2;
  REQUIRE(WritePartitions(g, RandomAssignment(g, 2, 4), w, dir.path()).ok());
  CoreOptions ranges;  // each server its range alone, however small the graph
  ranges.whole_degree_index_bytes = 0;
  int64_t covered = 0;  // the ranges tile [0, total)
  for (int k = 0; k < 2; ++k) {
    INFO("partition " << k);
    auto p = Load(PartitionDir(dir.path(), 2, k));
    const EdgeTypeStore& e = p->edge_type(0);
    REQUIRE(e.dst_degree.is_open());
    const int64_t* degree = e.dst_degree.data<int64_t>();
    V running = {0};
    for (int64_t i = 0; i < e.dst_degree.num_elements(); ++i) running.push_back(running.back() + degree[i]);
    v1::FindDegreeNodesRequest req;
    req.set_edge_type(e.name);
    v1::FindDegreeNodesResponse resp;
    REQUIRE(Queries(*p, &ranges).FindDegreeNodes(req, &resp).ok());  // no positions: the range alone
    CHECK(resp.total() == running.back());
    CHECK(resp.positions_begin() == covered);
    REQUIRE(resp.positions_end() > resp.positions_begin());
    covered = resp.positions_end();
    const int64_t begin = resp.positions_begin(), end = resp.positions_end();
    for (int64_t u = end - 1; u >= begin; --u) req.add_positions(u);
    REQUIRE(Queries(*p, &ranges).FindDegreeNodes(req, &resp).ok());
    REQUIRE(resp.nodes_size() == req.positions_size());
    for (int i = 0; i < req.positions_size(); ++i) {
      const int64_t u = req.positions(i);
      CHECK(resp.nodes(i) == std::upper_bound(running.begin(), running.end(), u) - running.begin() - 1);
    }
    const int64_t outside = k == 0 ? end : begin - 1;
    req.add_positions(outside);
    const absl::Status s = Queries(*p, &ranges).FindDegreeNodes(req, &resp);
    CHECK(absl::IsInvalidArgument(s));
    CHECK_THAT(std::string(s.message()),
               Catch::Contains("positions[" + std::to_string(req.positions_size() - 1) + "]=" + std::to_string(outside)));
    CHECK_THAT(std::string(s.message()), Catch::Contains("outside this server's range"));
    req.set_edge_type("nope");
    CHECK(absl::IsInvalidArgument(Queries(*p, &ranges).FindDegreeNodes(req, &resp)));
  }
  CHECK(covered > 0);
  // Kept whole (the default for a graph this small), the one server answers every position.
  auto p = Load(PartitionDir(dir.path(), 2, 1));
  v1::FindDegreeNodesRequest req;
  req.add_positions(0);
  v1::FindDegreeNodesResponse resp;
  REQUIRE(Queries(*p).FindDegreeNodes(req, &resp).ok());
  CHECK(resp.positions_begin() == 0);
  CHECK(resp.positions_end() == resp.total());
}

TEST_CASE("a request over the id limit is refused before any work", "[queries]") {
  TempDir dir;
  GraphData g = testing::TinyGraph();
  g.edge_types[0].label_splits["train"] = LabelEdges{{0}, {1}};  // (dst_degree.npy comes with labels)
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir.path()).ok());
  auto p = Load(dir.path());
  CoreOptions small;
  small.max_ids_per_request = 3;
  v1::GetNodeLabelsRequest req;
  for (int64_t id : {0, 1, 2, 3}) req.add_ids(id);
  v1::GetNodeLabelsResponse resp;
  const absl::Status s = Queries(*p, &small).GetNodeLabels(req, &resp);
  CHECK(absl::IsResourceExhausted(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("the limit is 3"));
  v1::FindDegreeNodesRequest degree;
  for (int64_t u : {0, 0, 1, 1}) degree.add_positions(u);
  v1::FindDegreeNodesResponse nodes;
  const absl::Status d = Queries(*p, &small).FindDegreeNodes(degree, &nodes);
  CHECK(absl::IsResourceExhausted(d));
  CHECK_THAT(std::string(d.message()), Catch::Contains("positions has 4 entries; the limit is 3"));
}

TEST_CASE("SampleNeighbors draws what the local draw draws for the same context", "[queries]") {
  TempDir dir;
  auto p = Load(testing::GeneratedDataset(500, 4, 3));
  v1::SampleNeighborsRequest req;
  for (int64_t id = 0; id < 50; ++id) req.add_ids(id);
  req.set_fanout(3);
  req.set_with_edge_ids(true);
  req.mutable_context()->set_seed(9);
  req.mutable_context()->set_epoch(2);
  req.mutable_context()->set_batch(5);
  req.mutable_context()->set_hop(1);
  v1::SampleNeighborsResponse resp;
  REQUIRE(Queries(*p).SampleNeighbors(req, &resp).ok());
  DrawSpec spec;
  spec.fanout = 3;
  spec.with_edge_ids = true;
  spec.hop_key = HopKey(9, 2, 5, 1, HashString(p->edge_type(0).name));
  NeighborDraw draw;
  DrawOwnedNeighbors(*p, 0, req.ids().data(), req.ids_size(), spec, &draw);
  CHECK(Ints(resp.counts()) == draw.counts);
  CHECK(Ints(resp.neighbors()) == draw.neighbors);
  CHECK(Ints(resp.edge_ids()) == draw.edge_ids);
  CHECK(resp.neighbors().dtype() == v1::DTYPE_INT64);

  // A compact answer: the same ids in half the bytes.
  req.set_compact(true);
  v1::SampleNeighborsResponse compact;
  REQUIRE(Queries(*p).SampleNeighbors(req, &compact).ok());
  for (const v1::Tensor* t : {&compact.counts(), &compact.neighbors(), &compact.edge_ids()}) {
    CHECK(t->dtype() == v1::DTYPE_INT32);
  }
  CHECK(compact.neighbors().data().size() * 2 == resp.neighbors().data().size());
  auto widened = [](const v1::Tensor& t) {
    std::vector<int64_t> out(t.data().size() / 4);
    for (size_t i = 0; i < out.size(); ++i) {
      int32_t v;
      std::memcpy(&v, t.data().data() + 4 * i, 4);
      out[i] = v;
    }
    return out;
  };
  CHECK(widened(compact.counts()) == draw.counts);
  CHECK(widened(compact.neighbors()) == draw.neighbors);
  CHECK(widened(compact.edge_ids()) == draw.edge_ids);
  // Counts in a byte each where they fit, what servers ask of each other.
  req.set_narrow_counts(true);
  v1::SampleNeighborsResponse narrow;
  REQUIRE(Queries(*p).SampleNeighbors(req, &narrow).ok());
  REQUIRE(narrow.counts().dtype() == v1::DTYPE_UINT8);
  CHECK(std::vector<int64_t>(narrow.counts().data().begin(), narrow.counts().data().end()) == draw.counts);
  CHECK(narrow.neighbors().SerializeAsString() == compact.neighbors().SerializeAsString());
  req.set_narrow_counts(false);
  req.set_compact(false);

  req.add_excluded(1);
  CHECK(absl::IsInvalidArgument(Queries(*p).SampleNeighbors(req, &resp)));
  req.clear_excluded();
  req.set_fanout(kOptions.sampling.max_fanout + 1);
  const absl::Status s = Queries(*p).SampleNeighbors(req, &resp);
  CHECK(absl::IsResourceExhausted(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("fanout"));
}

}  // namespace
}  // namespace graphstore
