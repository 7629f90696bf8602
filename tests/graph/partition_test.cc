#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

void WriteTiny(const std::string& dir, int partitions = 1) {
  const GraphData g = testing::TinyGraph();
  WriteOptions o;
  o.num_partitions = partitions;
  REQUIRE(WritePartitions(g, RandomAssignment(g, partitions, 7), o, dir).ok());
}

TEST_CASE("a written partition loads with the exact CSR, features and labels", "[partition]") {
  TempDir dir;
  WriteTiny(dir.path());
  auto p = Partition::Load(dir.path());
  REQUIRE(p.ok());
  const Partition& part = **p;
  CHECK(part.num_partitions() == 1);
  CHECK(part.rows_are_sources());
  const NodeTypeStore& n = part.node_type(0);
  CHECK(n.num_local == 6);
  CHECK(n.features.data<float>()[2 * 4 + 1] == -4.0f);
  CHECK(n.labels.data<int64_t>()[5] == 2);
  CHECK(n.splits.at("test").num_elements() == 2);
  const EdgeTypeStore& e = part.edge_type(0);
  const int64_t* ptr = e.indptr_data();
  CHECK(std::vector<int64_t>(ptr, ptr + 7) == std::vector<int64_t>{0, 2, 3, 4, 5, 6, 7});
  const int64_t* idx = e.indices_data();
  CHECK(std::vector<int64_t>(idx, idx + 7) == std::vector<int64_t>{1, 2, 2, 3, 4, 5, 0});
  CHECK(e.EdgeId(6) == 6);
  REQUIRE(part.FindNodeType("").ok());
  CHECK(!part.FindNodeType("paper").ok());
  CHECK(*part.FindEdgeType("node__to__node") == 0);
}

TEST_CASE("an edge_dir \"in\" partition stores in-neighbours by destination", "[partition]") {
  TempDir dir;
  const GraphData g = testing::TinyGraph();
  WriteOptions o;
  o.edge_dir = "in";
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), o, dir.path()).ok());
  auto p = Partition::Load(dir.path());
  REQUIRE(p.ok());
  const EdgeTypeStore& e = (*p)->edge_type(0);
  // In-neighbours of node 2 are 0 and 1.
  const int64_t* ptr = e.indptr_data();
  REQUIRE(ptr[3] - ptr[2] == 2);
  CHECK(e.indices_data()[ptr[2]] == 0);
  CHECK(e.indices_data()[ptr[2] + 1] == 1);
}

// Rewrites one array of a freshly written partition.
template <typename T>
void Replace(const std::string& path, const std::vector<T>& values) {
  REQUIRE(WriteNpyVector(path, values).ok());
}

void Truncate(const std::string& path, size_t drop) {
  const std::string bytes = ReadFile(path);
  WriteFile(path, bytes.substr(0, bytes.size() - drop));
}

void EditManifest(const std::string& dir, const std::string& from, const std::string& to) {
  std::string m = ReadFile(dir + "/manifest.json");
  const size_t at = m.find(from);
  REQUIRE(at != std::string::npos);
  m.replace(at, from.size(), to);
  WriteFile(dir + "/manifest.json", m);
}

TEST_CASE("every kind of corrupt partition fails with the file and the problem", "[partition]") {
  struct Case {
    std::string what;
    std::function<void(const std::string&)> corrupt;
    std::string file;
    std::string message;
    absl::StatusCode code = absl::StatusCode::kDataLoss;
  };
  const std::string E = "/edges/node__to__node/";
  const std::string N = "/nodes/node/";
  const std::vector<Case> cases = {
      {"missing indices", [&](const std::string& d) { std::remove((d + E + "indices.npy").c_str()); },
       "indices.npy", "file is missing", absl::StatusCode::kNotFound},
      {"missing manifest", [&](const std::string& d) { std::remove((d + "/manifest.json").c_str()); },
       "manifest.json", "file is missing", absl::StatusCode::kNotFound},
      {"truncated features", [&](const std::string& d) { Truncate(d + N + "features.npy", 4); },
       "features.npy", "truncated"},
      {"wrong dtype indptr", [&](const std::string& d) {
         Replace<int32_t>(d + E + "indptr.npy", {0, 2, 3, 4, 5, 6, 7});
       }, "indptr.npy", "dtype is int32, expected int64"},
      {"wrong shape labels", [&](const std::string& d) { Replace<int64_t>(d + N + "labels.npy", {0, 1, 2}); },
       "labels.npy", "shape is (3,), expected (6,)"},
      {"edge count disagrees with manifest",
       [&](const std::string& d) {
         EditManifest(d, "\"num_local_edges\": \"7\"", "\"num_local_edges\": \"6\"");
         EditManifest(d, "\"num_edges\": \"7\"", "\"num_edges\": \"6\"");
       },
       "indices.npy", "shape is (7,), expected (6,)"},
      {"one partition holding part of the edges",
       [&](const std::string& d) { EditManifest(d, "\"num_edges\": \"7\"", "\"num_edges\": \"9223372036854775807\""); },
       "manifest.json", "above the limit"},
      {"a split named like a file of the format",
       [&](const std::string& d) { EditManifest(d, "\"test\"", "\"labels\""); },
       "manifest.json", "split 'labels' would be stored as labels.npy"},
      {"a row's neighbours out of order", [&](const std::string& d) {
         Replace<int64_t>(d + E + "indices.npy", {2, 1, 2, 3, 4, 5, 0});
       }, "indices.npy", "row 0 is not sorted at entry 1 (2 then 1)"},
      {"a node twice in a split", [&](const std::string& d) { Replace<int64_t>(d + N + "test.npy", {4, 4}); },
       "test.npy", "node 4 is listed twice"},
      {"a node in two splits", [&](const std::string& d) { Replace<int64_t>(d + N + "test.npy", {4, 0}); },
       "train.npy", "splits must not overlap"},
      {"index out of range", [&](const std::string& d) {
         Replace<int64_t>(d + E + "indices.npy", {1, 2, 2, 3, 4, 99, 0});
       }, "indices.npy", "entry 5 is 99, outside [0, 6)"},
      {"negative index", [&](const std::string& d) {
         Replace<int64_t>(d + E + "indices.npy", {1, 2, -1, 3, 4, 5, 0});
       }, "indices.npy", "entry 2 is -1"},
      {"non-monotone indptr", [&](const std::string& d) {
         Replace<int64_t>(d + E + "indptr.npy", {0, 2, 1, 4, 5, 6, 7});
       }, "indptr.npy", "not monotone at row 1"},
      {"indptr not starting at zero", [&](const std::string& d) {
         Replace<int64_t>(d + E + "indptr.npy", {1, 2, 3, 4, 5, 6, 7});
       }, "indptr.npy", "indptr[0] is 1"},
      {"indptr end disagrees with indices", [&](const std::string& d) {
         Replace<int64_t>(d + E + "indptr.npy", {0, 2, 3, 4, 5, 6, 6});
       }, "indptr.npy", "last entry is 6"},
      {"unsorted node ids", [&](const std::string& d) { Replace<int64_t>(d + N + "ids.npy", {0, 1, 3, 2, 4, 5}); },
       "ids.npy", "not strictly ascending at entry 3"},
      {"book assigns to another partition", [&](const std::string& d) {
         Replace<int32_t>(d + "/book/node.partition.npy", {0, 0, 0, 0, 0, 1});
       }, "node.partition.npy", "partition 1"},
      {"label beyond num_classes", [&](const std::string& d) {
         Replace<int64_t>(d + N + "labels.npy", {0, 1, 2, 0, 7, 2});
       }, "labels.npy", "entry 4 is 7"},
      {"split names a node out of range", [&](const std::string& d) { Replace<int64_t>(d + N + "train.npy", {0, 10}); },
       "train.npy", "entry 1 is node 10"},
      {"manifest not JSON", [&](const std::string& d) { WriteFile(d + "/manifest.json", "{ nope"); },
       "manifest.json", "not a valid manifest"},
      {"manifest unknown field", [&](const std::string& d) { EditManifest(d, "\"dataset_name\"", "\"dataset_nme\""); },
       "manifest.json", "not a valid manifest"},
      {"manifest future version", [&](const std::string& d) { EditManifest(d, "\"format_version\": 1", "\"format_version\": 9"); },
       "manifest.json", "format_version is 9"},
      {"manifest bad edge_dir", [&](const std::string& d) { EditManifest(d, "\"edge_dir\": \"out\"", "\"edge_dir\": \"up\""); },
       "manifest.json", "edge_dir is 'up'"},
      {"manifest unknown node type in edge type", [&](const std::string& d) {
         EditManifest(d, "\"src_type\": \"node\"", "\"src_type\": \"paper\"");
       }, "manifest.json", "unknown node type"},
      {"not an npy file", [&](const std::string& d) { WriteFile(d + N + "ids.npy", "hello"); },
       "ids.npy", "not a valid .npy file"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    TempDir dir;
    WriteTiny(dir.path());
    c.corrupt(dir.path());
    auto p = Partition::Load(dir.path());
    REQUIRE(!p.ok());
    CHECK(p.status().code() == c.code);
    const std::string msg(p.status().message());
    CHECK_THAT(msg, Catch::Contains(c.file));
    CHECK_THAT(msg, Catch::Contains(c.message));
  }
}

TEST_CASE("a partition of several derives its rows, and checks an older dataset's local row index", "[partition]") {
  TempDir dir;
  WriteTiny(dir.path(), 2);
  const std::string part0 = PartitionDir(dir.path(), 2, 0);
  CHECK_FALSE(std::filesystem::exists(part0 + "/book/node.local.npy"));
  for (int p = 0; p < 2; ++p) REQUIRE(Partition::Load(PartitionDir(dir.path(), 2, p)).ok());
  auto loaded = Partition::Load(part0);
  REQUIRE(loaded.ok());
  const NodeTypeStore& n = (*loaded)->node_type(0);
  // The rows older tools wrote: each node's count of its owner's nodes before it.
  auto owners = MappedNpy::Open(part0 + "/book/node.partition.npy");
  REQUIRE(owners.ok());
  std::vector<int64_t> local(6), next(2, 0);
  for (int64_t id = 0; id < 6; ++id) local[id] = next[owners->data<int32_t>()[id]]++;
  Replace<int64_t>(part0 + "/book/node.local.npy", local);
  auto older = Partition::Load(part0);
  REQUIRE(older.ok());
  for (int64_t r = 0; r < n.num_local; ++r) CHECK((*older)->node_type(0).OwnerRow(n.global_ids()[r]) == r);
  const int64_t victim = n.global_ids()[0];
  local[victim] += 1;
  Replace<int64_t>(part0 + "/book/node.local.npy", local);
  auto bad = Partition::Load(part0);
  REQUIRE(!bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("node.local.npy"));
}

TEST_CASE("without content verification a bad index is not scanned but indptr still is", "[partition]") {
  TempDir dir;
  WriteTiny(dir.path());
  Replace<int64_t>(dir.path() + "/edges/node__to__node/indices.npy", {1, 2, 2, 3, 4, 99, 0});
  Partition::LoadOptions quick;
  quick.verify_contents = false;
  CHECK(Partition::Load(dir.path(), quick).ok());
  Replace<int64_t>(dir.path() + "/edges/node__to__node/indptr.npy", {0, 2, 1, 4, 5, 6, 7});
  CHECK(!Partition::Load(dir.path(), quick).ok());
}

TEST_CASE("label files are validated on load, naming the file", "[partition]") {
  TempDir dir;
  GraphData g = testing::Shop();
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

// A ring of `n` nodes, each with an edge to the next.
GraphData Ring(int64_t n) {
  GraphData g;
  g.name = "ring";
  NodeTypeData t;
  t.name = "node";
  t.num_nodes = n;
  EdgeTypeData e;
  e.src_type = e.dst_type = "node";
  e.relation = "to";
  for (int64_t i = 0; i < n; ++i) {
    e.src.push_back(i);
    e.dst.push_back((i + 1) % n);
  }
  g.node_types.push_back(t);
  g.edge_types.push_back(e);
  return g;
}

// Writes `g` dealt in `parts` by seed 11, and checks every partition: its manifest names the
// deal, and each type's owners and rows are the book file's.
void CheckDealt(const GraphData& g, int parts, const std::string& dir) {
  WriteOptions o;
  o.num_partitions = parts;
  o.deal_seed = 11;
  REQUIRE(WritePartitions(g, RandomAssignment(g, parts, 11), o, dir).ok());
  for (int p = 0; p < parts; ++p) {
    const std::string pdir = PartitionDir(dir, parts, p);
    CHECK_THAT(ReadFile(pdir + "/manifest.json"), Catch::Contains("owner_deal"));
    auto loaded = Partition::Load(pdir);
    REQUIRE(loaded.ok());
    for (const NodeTypeStore& n : (*loaded)->node_types()) {
      INFO(n.name << " in partition " << p << " of " << parts);
      // From 8 partitions nothing is kept a node of the graph; below, the deal's owners in lines.
      CHECK(n.owners.dealt() == (parts >= NodeBook::kDealtSlotsFrom));
      if (n.owners.dealt()) CHECK(n.owners.bytes() == 0);
      auto file = MappedNpy::Open(pdir + "/book/" + n.name + ".partition.npy");
      REQUIRE(file.ok());
      for (int64_t id = 0; id < n.num_nodes; ++id) CHECK(n.Owner(id) == file->data<int32_t>()[id]);
      for (int64_t r = 0; r < n.num_local; ++r) CHECK(n.OwnerRow(n.global_ids()[r]) == r);
    }
  }
}

TEST_CASE("a partition whose owners were dealt computes them, and refuses a book file that disagrees", "[partition]") {
  TempDir dir;
  CheckDealt(testing::Shop(), 3, dir.path() + "/shop");  // two node types: each dealt with its own key
  CheckDealt(Ring(2000), 9, dir.path() + "/ring");
  // Two nodes' owners swapped in the file: the counts still agree, the deal does not.
  const std::string part0 = PartitionDir(dir.path() + "/ring", 9, 0);
  const std::string book = part0 + "/book/node.partition.npy";
  auto owners = MappedNpy::Open(book);
  REQUIRE(owners.ok());
  std::vector<int32_t> v(owners->data<int32_t>(), owners->data<int32_t>() + owners->num_elements());
  *owners = MappedNpy();  // unmapped before it is written again
  size_t other = 1;
  while (other < v.size() && v[other] == v[0]) ++other;
  REQUIRE(other < v.size());
  std::swap(v[0], v[other]);
  REQUIRE(WriteNpy(book, NpyDtype::kInt32, {static_cast<int64_t>(v.size())}, v.data()).ok());
  auto bad = Partition::Load(part0);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("node.partition.npy"));
  // Whichever of the two it meets first, or the ids file's disagreement with the file.
  const std::string msg(bad.status().message());
  CHECK((msg.find("owner_deal") != std::string::npos || msg.find("assigns it to partition") != std::string::npos));
  // A manifest whose count of owned nodes is not the deal's is refused before any file is read,
  // verification or not: rows would run past the partition's arrays.
  const std::string part1 = PartitionDir(dir.path() + "/ring", 9, 1);
  auto loaded = Partition::Load(part1);
  REQUIRE(loaded.ok());
  const std::string count = "\"num_local_nodes\": \"" + std::to_string((*loaded)->node_type(0).num_local) + "\"";
  EditManifest(part1, count, "\"num_local_nodes\": \"" + std::to_string((*loaded)->node_type(0).num_local + 1) + "\"");
  Partition::LoadOptions quick;
  quick.verify_contents = false;
  auto miscounted = Partition::Load(part1, quick);
  REQUIRE_FALSE(miscounted.ok());
  CHECK_THAT(std::string(miscounted.status().message()), Catch::Contains("manifest.json"));
  CHECK_THAT(std::string(miscounted.status().message()), Catch::Contains("owner_deal deals"));
}

TEST_CASE("a writer told the owners were dealt refuses an assignment that is not the deal", "[partition]") {
  TempDir dir;
  const GraphData g = testing::TinyGraph();
  WriteOptions o;
  o.num_partitions = 2;
  o.deal_seed = 5;
  Assignment other = RandomAssignment(g, 2, 6);  // another seed's deal
  if (other == RandomAssignment(g, 2, 5)) other[0][0] = 1 - other[0][0];
  const absl::Status s = WritePartitions(g, other, o, dir.path());
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Catch::Contains("not the deal of seed 5"));
}

}  // namespace
}  // namespace graphstore
