#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tools/dataset/validate.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"
#include "tools/graph_input.h"
#include "tools/metis_partition.h"

namespace graphstore {
namespace {

using testing::RunCommand;
using testing::SharedDataPath;
using testing::TempDir;
using testing::WriteFile;

using RawEdge = std::pair<int64_t, int64_t>;

// Cora's lines are "cited citing"; the edge is citing -> cited.
std::multiset<RawEdge> CoraEdgesFromFile(std::set<int64_t>* nodes) {
  std::ifstream in(SharedDataPath("cora/cora.cites"));
  REQUIRE(in);
  std::multiset<RawEdge> edges;
  int64_t cited, citing;
  while (in >> cited >> citing) {
    edges.insert({citing, cited});
    nodes->insert(cited);
    nodes->insert(citing);
  }
  return edges;
}

// Every edge stored in the partitions of `dir`, as (raw src, raw dst, edge id), and the
// number of partitions owning each global node.
struct Union {
  std::multiset<RawEdge> edges;
  std::set<int64_t> edge_ids;
  std::vector<int> owners;
};

Union ReadBack(const std::string& dir, int num_partitions) {
  Union u;
  for (int p = 0; p < num_partitions; ++p) {
    auto loaded = Partition::Load(PartitionDir(dir, num_partitions, p));
    REQUIRE(loaded.ok());
    const Partition& part = **loaded;
    CHECK(part.partition_id() == p);
    const NodeTypeStore& n = part.node_type(0);
    if (u.owners.empty()) u.owners.assign(n.num_nodes, 0);
    for (int64_t i = 0; i < n.num_local; ++i) ++u.owners[n.global_ids()[i]];
    const int64_t* raw = n.raw_ids.data<int64_t>();
    const EdgeTypeStore& e = part.edge_type(0);
    for (int64_t r = 0; r < n.num_local; ++r) {
      for (int64_t k = e.indptr_data()[r]; k < e.indptr_data()[r + 1]; ++k) {
        u.edges.insert({raw[n.global_ids()[r]], raw[e.indices_data()[k]]});
        CHECK(u.edge_ids.insert(e.EdgeId(k)).second);
      }
    }
  }
  return u;
}

TEST_CASE("Cora converts with the node and edge counts its file implies", "[partitioner]") {
  std::set<int64_t> nodes;
  const auto edges = CoraEdgesFromFile(&nodes);
  auto g = BuildGraph(testing::CoraSpec());
  REQUIRE(g.ok());
  REQUIRE(g->node_types.size() == 1);
  CHECK(g->node_types[0].num_nodes == static_cast<int64_t>(nodes.size()));
  CHECK(g->node_types[0].num_nodes == 2708);
  CHECK(g->edge_types[0].src.size() == edges.size());
  CHECK(g->edge_types[0].src.size() == 5429);
  // Raw ids are kept in ascending order, and global ids index them.
  const auto& raw = g->node_types[0].raw_ids;
  CHECK(std::vector<int64_t>(raw.begin(), raw.end()) == std::vector<int64_t>(nodes.begin(), nodes.end()));
}

TEST_CASE("N-way partitions of Cora round-trip: union is the input, every node owned once",
          "[partitioner]") {
  std::set<int64_t> nodes;
  const auto edges = CoraEdgesFromFile(&nodes);
  auto g = BuildGraph(testing::CoraSpec());
  REQUIRE(g.ok());
  REQUIRE(AssignSplits(&*g, 0.5, 0.25, 0.25, 3).ok());
  for (int parts : {1, 2, 4}) {
    INFO("partitions: " << parts);
    TempDir dir;
    WriteOptions o;
    o.num_partitions = parts;
    REQUIRE(WritePartitions(*g, RandomAssignment(*g, parts, 11), o, dir.path()).ok());
    const Union u = ReadBack(dir.path(), parts);
    CHECK(u.edges == edges);
    CHECK(u.edge_ids.size() == edges.size());
    CHECK(*u.edge_ids.rbegin() == static_cast<int64_t>(edges.size()) - 1);
    for (int c : u.owners) REQUIRE(c == 1);
    // Splits: the partitions' train lists together are the whole train split.
    std::vector<int64_t> train;
    for (int p = 0; p < parts; ++p) {
      auto part = Partition::Load(PartitionDir(dir.path(), parts, p));
      REQUIRE(part.ok());
      const MappedNpy& t = (*part)->node_type(0).splits.at("train");
      train.insert(train.end(), t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
    }
    std::sort(train.begin(), train.end());
    CHECK(train == g->node_types[0].splits.at("train"));
  }
}

TEST_CASE("random partitions are balanced to within one node", "[partitioner]") {
  GraphData g;
  g.node_types.push_back(NodeTypeData{"node", 1003});
  const Assignment a = RandomAssignment(g, 4, 1);
  std::map<int, int> count;
  for (int32_t p : a[0]) ++count[p];
  REQUIRE(count.size() == 4);
  for (const auto& [p, c] : count) CHECK((c == 250 || c == 251));
}

TEST_CASE("METIS partitions of Cora cut far fewer edges than random, stay balanced, round-trip",
          "[partitioner][metis]") {
  std::set<int64_t> nodes;
  const auto edges = CoraEdgesFromFile(&nodes);
  auto g = BuildGraph(testing::CoraSpec());
  REQUIRE(g.ok());
  for (int parts : {2, 4}) {
    INFO("partitions: " << parts);
    auto metis = MetisAssignment(*g, parts, 5);
    REQUIRE(metis.ok());
    const Assignment random = RandomAssignment(*g, parts, 5);
    // The report's cut, counted here independently.
    int64_t cut = 0;
    const auto& e = g->edge_types[0];
    for (size_t i = 0; i < e.src.size(); ++i) cut += (*metis)[0][e.src[i]] != (*metis)[0][e.dst[i]];
    const PartitionReport rm = EvaluateAssignment(*g, *metis, parts, true);
    const PartitionReport rr = EvaluateAssignment(*g, random, parts, true);
    CHECK(rm.cut_edges == cut);
    CHECK(rm.num_edges == 5429);
    CHECK(rm.num_nodes == 2708);
    CHECK(rm.cut_fraction() < 0.5 * rr.cut_fraction());
    CHECK(rr.cut_fraction() > 0.4);  // random cuts about (parts-1)/parts of the edges
    CHECK(rm.node_imbalance() <= 1.05);
    int64_t total_edges = 0;
    for (int p = 0; p < parts; ++p) {
      CHECK(rm.nodes[p] > 0);
      total_edges += rm.edges[p];
    }
    CHECK(total_edges == 5429);
    // Same seed, same assignment.
    CHECK(*MetisAssignment(*g, parts, 5) == *metis);
    // Written and read back like any assignment.
    TempDir dir;
    WriteOptions o;
    o.num_partitions = parts;
    o.method = "metis";
    REQUIRE(WritePartitions(*g, *metis, o, dir.path()).ok());
    const Union u = ReadBack(dir.path(), parts);
    CHECK(u.edges == edges);
    for (int c : u.owners) REQUIRE(c == 1);
    auto p0 = Partition::Load(PartitionDir(dir.path(), parts, 0));
    REQUIRE(p0.ok());
    CHECK((*p0)->manifest().partition_method() == "metis");
  }
}

TEST_CASE("METIS handles several node types, self-loops, duplicates and isolated nodes", "[partitioner][metis]") {
  GraphData g;
  g.node_types.push_back(NodeTypeData{"user", 40});
  g.node_types.push_back(NodeTypeData{"item", 30});
  EdgeTypeData e{"user", "buys", "item"};
  // Two communities: users 0-19 with items 0-14, users 20-39 with items 15-29; user 39 and
  // item 29 are isolated; one duplicate edge.
  for (int u = 0; u < 39; ++u) {
    for (int k = 0; k < 3; ++k) {
      const int base = u < 20 ? 0 : 15;
      e.src.push_back(u);
      e.dst.push_back(base + (u * 7 + k * 5) % (u < 20 ? 15 : 14));
    }
  }
  e.src.push_back(0);
  e.dst.push_back(e.dst[0]);
  g.edge_types.push_back(e);
  EdgeTypeData f{"user", "follows", "user"};
  f.src = {3, 4, 4, 25};
  f.dst = {3, 5, 5, 26};  // a self-loop and a duplicate
  g.edge_types.push_back(f);
  REQUIRE(ValidateGraph(g).ok());
  auto a = MetisAssignment(g, 2, 1);
  REQUIRE(a.ok());
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].size() == 40);
  CHECK((*a)[1].size() == 30);
  const PartitionReport r = EvaluateAssignment(g, *a, 2, true);
  CHECK(r.cut_fraction() < 0.1);  // the two communities separate
  CHECK(MetisAssignment(g, 100, 1).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("graphstore-partition --method=metis reports the edge cut and balance", "[partitioner][cli][metis]") {
  TempDir dir;
  const std::string bin = "tools/graphstore-partition";
  const std::string log = dir / "log.txt";
  CHECK(RunCommand(bin + " --edges=" + SharedDataPath("cora/cora.cites") +
                   " --swap_columns --partitions=2 --method=metis --out=" + dir / "cora > " + log) == 0);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("method metis"));
  CHECK_THAT(text, Catch::Contains("edge cut: "));
  CHECK_THAT(text, Catch::Contains("of 5429 edges"));
  CHECK_THAT(text, Catch::Contains("balance (largest / mean): nodes "));
  CHECK_THAT(text, Catch::Contains("partition 1: "));
  CHECK(RunCommand(bin + " --edges=" + SharedDataPath("cora/cora.cites") + " --method=kmeans --out=" + dir / "x" +
                   " 2>/dev/null") == 2);
}

TEST_CASE("graphstore-partition reports each phase's total on stderr as log lines when it is not a terminal",
          "[partitioner][cli][progress]") {
  TempDir dir;
  const std::string err = dir / "stderr.txt";
  REQUIRE(RunCommand("tools/graphstore-partition --edges=" + SharedDataPath("cora/cora.cites") +
                     " --swap_columns --partitions=2 --method=metis --out=" + dir / "cora >/dev/null 2>" + err) == 0);
  const std::string text = testing::ReadFile(err);
  // The reading, the partitioning and the writing, each with its total and rate, as log lines
  // (no carriage returns: those rewrite a terminal's line).
  CHECK_THAT(text, Catch::Contains("reading " + SharedDataPath("cora/cora.cites") + ": "));
  CHECK_THAT(text, Catch::Contains("bytes in "));
  CHECK_THAT(text, Catch::Contains("partitioning (metis, 2 parts): METIS over 2708 nodes and up to "));
  CHECK_THAT(text, Catch::Contains(" adjacency entries: expect about "));
  CHECK_THAT(text, Catch::Contains("partitioning (metis, 2 parts): 2708 nodes in "));
  CHECK_THAT(text, Catch::Contains("writing 2 partition(s): "));
  CHECK_THAT(text, Catch::Contains("edges/s"));
  CHECK(text.find('\r') == std::string::npos);
}

TEST_CASE("heterogeneous input remaps each node type and keeps its features and labels",
          "[partitioner]") {
  TempDir dir;
  // Users have raw ids 10, 20, 30; movies 7 and 9.
  WriteFile(dir / "rates.txt", "# user movie rating\n10 7 5\n20 9 3\n30,7,1\n");
  WriteFile(dir / "follows.csv", "10,20\n20,30\n");
  const std::vector<int64_t> user_ids = {30, 10, 20};
  REQUIRE(WriteNpyVector(dir / "user_ids.npy", user_ids).ok());
  const std::vector<float> user_feats = {3, 3, 1, 1, 2, 2};
  REQUIRE(WriteNpy(dir / "user_feats.npy", NpyDtype::kFloat32, {3, 2}, user_feats.data()).ok());
  const std::vector<int64_t> user_labels = {0, 1, 1};
  REQUIRE(WriteNpyVector(dir / "user_labels.npy", user_labels).ok());
  GraphInputSpec spec;
  spec.edges.push_back({"user__rates__movie", dir / "rates.txt"});
  spec.edges.push_back({"user__follows__user", dir / "follows.csv"});
  spec.node_ids.push_back({"user", dir / "user_ids.npy"});
  spec.features.push_back({"user", dir / "user_feats.npy"});
  spec.labels.push_back({"user", dir / "user_labels.npy"});
  auto g = BuildGraph(spec);
  REQUIRE(g.ok());
  REQUIRE(g->node_types.size() == 2);
  const NodeTypeData& user = g->node_types[0];
  CHECK(user.name == "user");
  CHECK(user.raw_ids == std::vector<int64_t>{10, 20, 30});
  // Global user 0 is raw 10, whose feature row was the second one: (1, 1).
  CHECK(user.features == std::vector<float>{1, 1, 2, 2, 3, 3});
  CHECK(user.labels == std::vector<int64_t>{1, 1, 0});
  CHECK(g->node_types[1].name == "movie");
  CHECK(g->node_types[1].raw_ids == std::vector<int64_t>{7, 9});
  CHECK(g->edge_types[0].dst == std::vector<int64_t>{0, 1, 0});

  const std::string out = dir / "out";
  WriteOptions o;
  o.num_partitions = 2;
  REQUIRE(WritePartitions(*g, RandomAssignment(*g, 2, 5), o, out).ok());
  for (int p = 0; p < 2; ++p) {
    auto part = Partition::Load(PartitionDir(out, 2, p));
    REQUIRE(part.ok());
    CHECK((*part)->edge_types().size() == 2);
    CHECK((*part)->edge_type(0).name == "user__rates__movie");
    CHECK((*part)->node_type(0).feature_dim == 2);
  }
}

TEST_CASE("node and edge times are stored per edge as the later of the two, rows sorted by time",
          "[partitioner][temporal]") {
  TempDir dir;
  // Raw ids 10..40; edge times in a text file, node times (by row of --node_ids) in an npy.
  WriteFile(dir / "edges.txt", "10 20\n10 30\n10 40\n20 30\n30 10\n");
  WriteFile(dir / "edge_times.txt", "7\n3\n1\n2\n9\n");
  REQUIRE(WriteNpyVector(dir / "ids.npy", std::vector<int64_t>{40, 30, 20, 10}).ok());
  REQUIRE(WriteNpyVector(dir / "node_times.npy", std::vector<int64_t>{0, 5, 1, 2}).ok());
  const std::string bin = "tools/graphstore-partition";
  const std::string inputs = " --edges=" + dir / "edges.txt" + " --edge_times=" + dir / "edge_times.txt" +
                             " --node_ids=" + dir / "ids.npy" + " --node_times=" + dir / "node_times.npy";
  REQUIRE(RunCommand(bin + inputs + " --split=none --partitions=2 --out=" + dir / "out >/dev/null") == 0);
  // Expected stored times: max(edge time, neighbour's time); 10 -> 20 [7], 10 -> 30 [max(3, 5)],
  // 10 -> 40 [max(1, 0)], 20 -> 30 [max(2, 5)], 30 -> 10 [max(9, 2)].
  std::map<std::pair<int64_t, int64_t>, int64_t> stored;
  for (int p = 0; p < 2; ++p) {
    auto part = Partition::Load(PartitionDir(dir / "out", 2, p));
    INFO(part.status().ToString());
    REQUIRE(part.ok());
    const NodeTypeStore& n = (*part)->node_type(0);
    const EdgeTypeStore& e = (*part)->edge_type(0);
    REQUIRE(e.times_data() != nullptr);
    REQUIRE(n.has_times);
    const int64_t* raw = n.raw_ids.data<int64_t>();
    // The book holds every node's time; the server keeps its own nodes'.
    auto book_times = MappedNpy::Open(PartitionDir(dir / "out", 2, p) + "/book/node.time.npy");
    REQUIRE(book_times.ok());
    CHECK(book_times->data<int64_t>()[2] == 5);  // global 2 is raw 30, the second row of ids.npy
    REQUIRE(static_cast<int64_t>(n.own_times.size()) == n.num_local);
    for (int64_t r = 0; r < n.num_local; ++r) CHECK(n.own_times[r] == book_times->data<int64_t>()[n.global_ids()[r]]);
    for (int64_t r = 0; r < n.num_local; ++r) {
      for (int64_t k = e.indptr_data()[r]; k < e.indptr_data()[r + 1]; ++k) {
        if (k > e.indptr_data()[r]) CHECK(e.times_data()[k - 1] <= e.times_data()[k]);
        stored[{raw[n.global_ids()[r]], raw[e.indices_data()[k]]}] = e.times_data()[k];
      }
    }
  }
  CHECK(stored == std::map<std::pair<int64_t, int64_t>, int64_t>{
                      {{10, 20}, 7}, {{10, 30}, 5}, {{10, 40}, 1}, {{20, 30}, 5}, {{30, 10}, 9}});

  // A count that does not match names the file; so does a node without a time.
  WriteFile(dir / "short_times.txt", "1\n2\n");
  CHECK(RunCommand(bin + " --edges=" + dir / "edges.txt" + " --edge_times=" + dir / "short_times.txt" +
                   " --out=" + dir / "x 2>" + dir / "err1") == 2);
  CHECK_THAT(testing::ReadFile(dir / "err1"), Catch::Contains("short_times.txt: 2 times for 5 edges"));
  REQUIRE(WriteNpyVector(dir / "three.npy", std::vector<int64_t>{40, 30, 20}).ok());
  REQUIRE(WriteNpyVector(dir / "three_times.npy", std::vector<int64_t>{0, 5, 1}).ok());
  CHECK(RunCommand(bin + " --edges=" + dir / "edges.txt" + " --node_ids=" + dir / "three.npy" +
                   " --node_times=" + dir / "three_times.npy --out=" + dir / "y 2>" + dir / "err2") == 2);
  CHECK_THAT(testing::ReadFile(dir / "err2"), Catch::Contains("three_times.npy: no time for node 10"));
}

TEST_CASE("a malformed edge list names the file and the line", "[partitioner]") {
  TempDir dir;
  WriteFile(dir / "bad.txt", "1 2\n# fine\n3 x\n");
  auto r = ReadEdgeList(dir / "bad.txt", false);
  REQUIRE(!r.ok());
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("bad.txt:3"));
  WriteFile(dir / "short.txt", "1 2\n3\n");
  auto s = ReadEdgeList(dir / "short.txt", false);
  REQUIRE(!s.ok());
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("short.txt:2"));
}

TEST_CASE("npy edge arrays of different lengths are rejected", "[partitioner]") {
  TempDir dir;
  REQUIRE(WriteNpyVector(dir / "s.npy", std::vector<int64_t>{1, 2, 3}).ok());
  REQUIRE(WriteNpyVector(dir / "d.npy", std::vector<int64_t>{1, 2}).ok());
  auto r = ReadEdgeList(dir / "s.npy," + dir / "d.npy", false);
  REQUIRE(!r.ok());
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("s.npy has 3 ids"));
}

TEST_CASE("graphstore-partition converts Cora from the command line", "[partitioner][cli]") {
  TempDir dir;
  const std::string bin = "tools/graphstore-partition";
  CHECK(RunCommand(bin + " --edges=" + SharedDataPath("cora/cora.cites") +
                   " --swap_columns --partitions=2 --out=" + dir / "cora >/dev/null") == 0);
  for (int p = 0; p < 2; ++p) {
    auto part = Partition::Load(PartitionDir(dir / "cora", 2, p));
    REQUIRE(part.ok());
    CHECK((*part)->node_type(0).num_nodes == 2708);
    CHECK((*part)->manifest().edge_types(0).num_edges() == 5429);
  }
  CHECK(RunCommand(bin + " --edgez=x --out=" + dir / "x 2>/dev/null") == 2);
  CHECK(RunCommand(bin + " --edges=" + dir / "missing.txt --out=" + dir / "x 2>/dev/null") == 2);
}

}  // namespace
}  // namespace graphstore
