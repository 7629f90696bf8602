// A dataset written from ids of its own (Cora's sparse paper ids): a Loader given the dataset's
// directory takes its seeds in those ids and hands out n_id and seeds in them, on one server and
// on a cluster of two, from explicit seeds, a split, seed times and link-prediction anchors, and
// refuses ids the dataset does not have and a directory of another dataset, naming them.

#include "client/loader.h"  // LibTorch first (see loader.h)

#undef CHECK
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/server.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "tools/graph_input.h"

namespace graphstore {
namespace {

using testing::TempDir;

struct Cora {
  GraphData graph;
  std::vector<int64_t> raw;                        // the file's id of each global id
  std::map<int64_t, std::set<int64_t>> cites;      // citing paper -> cited papers, file ids
};

const Cora& LoadCora() {
  static const Cora* cora = [] {
    auto g = BuildGraph(testing::CoraSpec());
    if (!g.ok()) throw std::runtime_error(g.status().ToString());
    auto* c = new Cora{*std::move(g), {}, {}};
    c->raw = c->graph.node_types[0].raw_ids;
    for (int64_t g = 0; g < c->graph.node_types[0].num_nodes; g += 5) c->graph.node_types[0].splits["train"].push_back(g);
    const EdgeTypeData& e = c->graph.edge_types[0];
    for (size_t i = 0; i < e.src.size(); ++i) c->cites[c->raw[e.src[i]]].insert(c->raw[e.dst[i]]);
    return c;
  }();
  return *cora;
}

// Servers on port 0 over `graph` (Cora's, by default) written in `n` partitions under `dir`.
std::vector<std::unique_ptr<GraphStoreServer>> Serve(const std::string& dir, int n, const GraphData* graph = nullptr) {
  const GraphData& g = graph != nullptr ? *graph : LoadCora().graph;
  WriteOptions w;
  w.num_partitions = n;
  w.edge_dir = "out";  // a citing paper draws the papers it cites
  REQUIRE(WritePartitions(g, RandomAssignment(g, n, 5), w, dir).ok());
  std::vector<ServerOptions> options(n);
  for (int k = 0; k < n; ++k) {
    options[k].partition_dir = PartitionDir(dir, n, k);
    options[k].shared_memory_dir = "";
    options[k].core.state_log_interval_s = 0;
  }
  auto started = StartLocalCluster(options);
  REQUIRE(started.ok());
  return *std::move(started);
}

client::LoaderOptions Options(const std::vector<std::unique_ptr<GraphStoreServer>>& servers) {
  client::LoaderOptions o;
  for (const auto& s : servers) o.servers.push_back(s->address());
  o.config.set_batch_size(16);
  o.config.add_num_neighbors(-1);
  o.shared_memory = false;
  return o;
}

std::vector<int64_t> Ids(const at::Tensor& t) {
  const auto c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST_CASE("a dataset's own ids go in as seeds and come back as n_id and seeds, on one server and on two",
          "[cluster][raw_ids]") {
  const Cora& cora = LoadCora();
  REQUIRE(cora.raw.size() == 2708);
  REQUIRE(cora.raw.front() != 0);  // sparse: the file's ids are not the global ids
  // Seeds by the file's ids: every seventh paper, in descending order, and the largest id.
  std::vector<int64_t> want;
  for (size_t i = 0; i < cora.raw.size(); i += 7) want.push_back(cora.raw[i]);
  std::reverse(want.begin(), want.end());
  want.insert(want.begin(), cora.raw.back());
  for (int n : {1, 2}) {
    INFO(n << " partitions");
    TempDir dir;
    auto servers = Serve(dir.path(), n);
    client::LoaderOptions o = Options(servers);
    o.seeds = want;
    o.raw_ids = n == 1 ? dir.path() : dir.path() + "/part-1";  // any partition's book serves
    client::Loader loader(o);
    CHECK(loader.meta().node_types(0).has_raw_ids());
    loader.StartEpoch(0);
    std::vector<int64_t> got;
    while (auto b = loader.Next()) {
      const std::vector<int64_t> n_id = Ids(b->n_id), seeds = Ids(b->seeds);
      const int64_t k = b->seeds.numel();
      CHECK(std::vector<int64_t>(n_id.begin(), n_id.begin() + k) == seeds);
      got.insert(got.end(), seeds.begin(), seeds.end());
      // Every edge is a citation of the file, from the cited paper to the citing seed, and
      // each seed drew exactly the papers it cites.
      const auto ei = b->edge_index.contiguous();
      const int64_t m = ei.size(1);
      const int64_t* row = ei.data_ptr<int64_t>();
      std::map<int64_t, std::set<int64_t>> drawn;
      for (int64_t j = 0; j < m; ++j) drawn[n_id[row[m + j]]].insert(n_id[row[j]]);
      for (int64_t s : seeds) {
        const auto it = cora.cites.find(s);
        CHECK(drawn[s] == (it == cora.cites.end() ? std::set<int64_t>{} : it->second));
      }
    }
    CHECK(got == want);
    // Split seeds come back in the file's ids too, each once, with every node of every batch.
    client::LoaderOptions split = Options(servers);
    split.raw_ids = o.raw_ids;
    split.config.set_shuffle(true);
    client::Loader by_split(split);
    by_split.StartEpoch(0);
    std::vector<int64_t> seen;
    while (auto b = by_split.Next()) {
      const std::vector<int64_t> seeds = Ids(b->seeds);
      seen.insert(seen.end(), seeds.begin(), seeds.end());
      for (int64_t id : Ids(b->n_id)) REQUIRE(std::binary_search(cora.raw.begin(), cora.raw.end(), id));
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> train;
    for (int64_t g : cora.graph.node_types[0].splits.at("train")) train.push_back(cora.raw[g]);
    CHECK(seen == train);
  }
}

TEST_CASE("a dataset's own ids through seed times and link-prediction anchors, on two servers",
          "[cluster][raw_ids][temporal][ablp]") {
  const Cora& cora = LoadCora();
  // Cora with node times (a paper's time is its global id) and every third citation a label
  // edge of split "train".
  GraphData g = cora.graph;
  g.node_types[0].splits.clear();
  for (int64_t i = 0; i < g.node_types[0].num_nodes; ++i) g.node_types[0].times.push_back(i);
  EdgeTypeData& e = g.edge_types[0];
  std::map<int64_t, std::set<int64_t>> positives;  // anchor -> label destinations, file ids
  for (size_t i = 0; i < e.src.size(); i += 3) {
    e.label_splits["train"].src.push_back(e.src[i]);
    e.label_splits["train"].dst.push_back(e.dst[i]);
    positives[cora.raw[e.src[i]]].insert(cora.raw[e.dst[i]]);
  }
  TempDir dir;
  auto servers = Serve(dir.path(), 2, &g);
  std::map<int64_t, int64_t> global;  // file id -> global id (its time)
  for (size_t i = 0; i < cora.raw.size(); ++i) global[cora.raw[i]] = static_cast<int64_t>(i);

  // Seed times: each seed by the file's id, half of them before every paper they could reach.
  client::LoaderOptions o = Options(servers);
  o.raw_ids = dir.path();
  o.config.set_batch_size(1);
  o.config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
  o.config.set_with_node_times(true);
  std::map<int64_t, int64_t> when;  // file id -> its seed time
  for (size_t i = 0; i < cora.raw.size(); i += 53) {
    o.seeds.push_back(cora.raw[i]);
    o.seed_times.push_back(o.seeds.size() % 2 == 0 ? -1 : 5000);
    when[o.seeds.back()] = o.seed_times.back();
  }
  {
    client::Loader loader(o);
    loader.StartEpoch(0);
    std::vector<int64_t> got;
    int64_t reaching = 0;
    while (auto b = loader.Next()) {
      const std::vector<int64_t> n_id = Ids(b->n_id), times = Ids(b->time);
      const int64_t seed = n_id.at(0);
      got.push_back(seed);
      REQUIRE(when.count(seed) == 1);
      CHECK(Ids(b->seed_time) == std::vector<int64_t>{when[seed]});
      // Each node's time is its own: the global id of the file's id it came back as.
      REQUIRE(times.size() == n_id.size());
      for (size_t k = 0; k < n_id.size(); ++k) CHECK(times[k] == global.at(n_id[k]));
      if (when[seed] < 0) CHECK(b->edge_index.size(1) == 0);
      reaching += b->edge_index.size(1) > 0;
    }
    CHECK(got == o.seeds);
    CHECK(reaching > 5);
  }

  // Link prediction: anchors and their positives come back as the file's ids.
  client::LoaderOptions l = Options(servers);
  l.raw_ids = dir.path();
  v1::GetAblpInputRequest ablp;
  ablp.set_split("train");
  ablp.set_node_type(g.node_types[0].name);
  ablp.set_supervision_edge_type(EdgeName(e));
  l.ablp = ablp;
  client::Loader loader(l);
  loader.StartEpoch(0);
  std::set<int64_t> anchors;
  while (auto b = loader.Next()) {
    REQUIRE(b->ablp.has_value());
    const std::vector<int64_t> n_id = Ids(b->n_id), at = Ids(b->ablp->anchors), pos = Ids(b->ablp->positive);
    const int64_t w = b->ablp->positive.size(1);
    for (size_t i = 0; i < at.size(); ++i) {
      const int64_t anchor = n_id[at[i]];
      anchors.insert(anchor);
      std::set<int64_t> got;
      for (int64_t k = 0; k < w; ++k) {
        if (pos[i * w + k] >= 0) got.insert(n_id[pos[i * w + k]]);
      }
      CHECK(got == positives.at(anchor));
    }
  }
  CHECK(anchors.size() == positives.size());
}

// Constructing a loader with `o` fails with `code` and a message holding each of `texts`.
void CheckRefused(const client::LoaderOptions& o, absl::StatusCode code, const std::vector<std::string>& texts) {
  try {
    client::Loader loader(o);
    FAIL("the loader was constructed");
  } catch (const client::Error& e) {
    CHECK(e.code() == code);
    for (const auto& t : texts) CHECK_THAT(e.message(), Catch::Contains(t));
  }
}

TEST_CASE("raw_ids refuses an id the dataset does not have, a directory of another dataset and a corrupt file, naming them",
          "[cluster][raw_ids]") {
  const Cora& cora = LoadCora();
  TempDir dir;
  auto servers = Serve(dir.path(), 2);
  client::LoaderOptions o = Options(servers);
  o.raw_ids = dir.path();  // the directory of part-0 and part-1
  o.seeds = {cora.raw[3], cora.raw[5] + 1 == cora.raw[6] ? -7 : cora.raw[5] + 1};
  CheckRefused(o, absl::StatusCode::kInvalidArgument, {"LoaderOptions.seeds[1]=", "node.raw_ids.npy"});
  o.seeds = {cora.raw[3]};
  o.raw_ids = dir.path() + "/nowhere";
  CheckRefused(o, absl::StatusCode::kNotFound, {"nowhere"});
  // Another dataset's book: the same type name, another node count.
  TempDir other;
  GraphData small = LoadCora().graph;
  small.node_types[0].num_nodes = 100;
  small.node_types[0].raw_ids.resize(100);
  small.node_types[0].splits.clear();
  auto& e = small.edge_types[0];
  std::vector<int64_t> src, dst;
  for (size_t i = 0; i < e.src.size(); ++i) {
    if (e.src[i] < 100 && e.dst[i] < 100) {
      src.push_back(e.src[i]);
      dst.push_back(e.dst[i]);
    }
  }
  e.src = src;
  e.dst = dst;
  REQUIRE(WritePartitions(small, RandomAssignment(small, 1, 5), WriteOptions{}, other.path()).ok());
  o.raw_ids = other.path();
  CheckRefused(o, absl::StatusCode::kInvalidArgument, {"has 100 ids"});
  // A corrupt file is named: bytes that are no .npy, and a right header over too few ids.
  TempDir corrupt;
  std::filesystem::create_directories(corrupt.path() + "/book");
  const std::string file = corrupt.path() + "/book/node.raw_ids.npy";
  {
    std::ofstream(file, std::ios::binary) << "not a numpy file at all";
  }
  o.raw_ids = corrupt.path();
  CheckRefused(o, absl::StatusCode::kDataLoss, {file, "not an .npy file"});
  {
    std::ifstream in(dir.path() + "/part-0/book/node.raw_ids.npy", std::ios::binary);
    std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(whole.size() > 2708 * 8);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() - 16);
  }
  CheckRefused(o, absl::StatusCode::kDataLoss, {file, "truncated"});
}

}  // namespace
}  // namespace graphstore
