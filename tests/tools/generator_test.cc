#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "tests/test_util.h"
#include "tools/generator.h"

namespace graphstore {
namespace {

using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

GeneratorOptions Small(uint64_t seed) {
  GeneratorOptions o;
  o.num_nodes = 3000;
  o.avg_degree = 8;
  o.num_classes = 5;
  o.feature_dim = 16;
  o.feature_signal = 1.0;
  o.seed = seed;
  return o;
}

const char* kFiles[] = {"manifest.json", "edges/node__to__node/indptr.npy",
                        "edges/node__to__node/indices.npy", "nodes/node/features.npy",
                        "nodes/node/labels.npy", "nodes/node/train.npy"};

TEST_CASE("the generator is deterministic for a seed", "[generator]") {
  TempDir a, b, c;
  REQUIRE(GenerateDataset(Small(42), a.path()).ok());
  REQUIRE(GenerateDataset(Small(42), b.path()).ok());
  REQUIRE(GenerateDataset(Small(43), c.path()).ok());
  for (const char* f : kFiles) {
    INFO(f);
    CHECK(ReadFile(a / f) == ReadFile(b / f));
  }
  CHECK(ReadFile(a / "edges/node__to__node/indices.npy") != ReadFile(c / "edges/node__to__node/indices.npy"));
  CHECK(ReadFile(a / "nodes/node/features.npy") != ReadFile(c / "nodes/node/features.npy"));
}

TEST_CASE("a generated graph is a valid partition with planted structure", "[generator]") {
  TempDir dir;
  const GeneratorOptions o = Small(1);
  REQUIRE(GenerateDataset(o, dir.path()).ok());
  auto p = Partition::Load(dir.path());
  REQUIRE(p.ok());
  const NodeTypeStore& n = (*p)->node_type(0);
  const EdgeTypeStore& e = (*p)->edge_type(0);
  REQUIRE(n.num_nodes == o.num_nodes);
  const int64_t edges = e.num_local;
  CHECK(edges > o.num_nodes * o.avg_degree * 0.6);
  CHECK(edges < o.num_nodes * o.avg_degree * 1.2);

  // Homophily: the fraction of edges within a community is near the configured 0.8 (plus the
  // 1/classes of random edges that land inside by chance).
  const int64_t* lab = n.labels.data<int64_t>();
  int64_t same = 0;
  int64_t max_degree = 0;
  for (int64_t v = 0; v < n.num_local; ++v) {
    const int64_t b = e.indptr_data()[v], end = e.indptr_data()[v + 1];
    max_degree = std::max(max_degree, end - b);
    for (int64_t k = b; k < end; ++k) {
      same += lab[v] == lab[e.indices_data()[k]];
      REQUIRE(e.indices_data()[k] != v);
      if (k > b) REQUIRE(e.indices_data()[k] > e.indices_data()[k - 1]);
    }
  }
  const double h = static_cast<double>(same) / edges;
  CHECK(h > 0.75);
  CHECK(h < 0.9);
  // A power law has hubs far above the mean degree.
  CHECK(max_degree > 10 * o.avg_degree);

  // Features carry the label: nearest class mean classifies far better than chance (0.2).
  std::vector<double> mean(o.num_classes * o.feature_dim, 0.0);
  std::vector<int64_t> count(o.num_classes, 0);
  const float* x = n.features.data<float>();
  for (int64_t v = 0; v < n.num_local; ++v) {
    ++count[lab[v]];
    for (int d = 0; d < o.feature_dim; ++d) mean[lab[v] * o.feature_dim + d] += x[v * o.feature_dim + d];
  }
  for (int c = 0; c < o.num_classes; ++c) {
    for (int d = 0; d < o.feature_dim; ++d) mean[c * o.feature_dim + d] /= std::max<int64_t>(1, count[c]);
  }
  int64_t right = 0;
  for (int64_t v = 0; v < n.num_local; ++v) {
    int best = 0;
    double best_dist = 1e300;
    for (int c = 0; c < o.num_classes; ++c) {
      double dist = 0;
      for (int d = 0; d < o.feature_dim; ++d) {
        const double diff = x[v * o.feature_dim + d] - mean[c * o.feature_dim + d];
        dist += diff * diff;
      }
      if (dist < best_dist) best_dist = dist, best = c;
    }
    right += best == lab[v];
  }
  CHECK(static_cast<double>(right) / n.num_local > 0.5);

  // Splits partition the nodes in roughly the configured fractions.
  const int64_t train = n.splits.at("train").num_elements();
  const int64_t val = n.splits.at("val").num_elements();
  const int64_t test = n.splits.at("test").num_elements();
  CHECK(train + val + test == n.num_nodes);
  CHECK(std::abs(train - 0.6 * n.num_nodes) < 0.05 * n.num_nodes);
}

TEST_CASE("a multi-partition generated graph holds the same edges as the single one", "[generator]") {
  // With times, rows are in time order, and edge ids (positions of the single partition) agree.
  const bool times = GENERATE(false, true);
  INFO("times " << times);
  TempDir one, four;
  GeneratorOptions o = Small(9);
  o.times = times;
  REQUIRE(GenerateDataset(o, one.path()).ok());
  o.num_partitions = 4;
  REQUIRE(GenerateDataset(o, four.path()).ok());
  auto single = Partition::Load(one.path());
  REQUIRE(single.ok());
  const EdgeTypeStore& se = (*single)->edge_type(0);
  int64_t total = 0;
  for (int p = 0; p < 4; ++p) {
    auto part = Partition::Load(PartitionDir(four.path(), 4, p));
    REQUIRE(part.ok());
    const NodeTypeStore& n = (*part)->node_type(0);
    const EdgeTypeStore& e = (*part)->edge_type(0);
    total += e.num_local;
    for (int64_t r = 0; r < n.num_local; ++r) {
      const int64_t v = n.global_ids()[r];
      const int64_t deg = e.indptr_data()[r + 1] - e.indptr_data()[r];
      REQUIRE(deg == se.indptr_data()[v + 1] - se.indptr_data()[v]);
      for (int64_t k = 0; k < deg; ++k) {
        const int64_t here = e.indptr_data()[r] + k, there = se.indptr_data()[v] + k;
        REQUIRE(e.indices_data()[here] == se.indices_data()[there]);
        REQUIRE(e.EdgeId(here) == se.EdgeId(there));
        if (!times) continue;
        REQUIRE(e.times_data()[here] == se.times_data()[there]);
        REQUIRE(e.times_data()[here] == EdgeTime(o.seed, v, e.indices_data()[here]));
        if (k > 0) REQUIRE(e.times_data()[here - 1] <= e.times_data()[here]);
      }
    }
  }
  CHECK(total == se.num_local);
}

TEST_CASE("bad generator options are rejected with the flag named", "[generator]") {
  GeneratorOptions o;
  o.num_nodes = 1;
  CHECK_THAT(std::string(ValidateGeneratorOptions(o).message()), Catch::Contains("--nodes"));
  o = GeneratorOptions();
  o.homophily = 1.5;
  CHECK_THAT(std::string(ValidateGeneratorOptions(o).message()), Catch::Contains("--homophily"));
  o = GeneratorOptions();
  o.train_fraction = 0.9;
  CHECK_THAT(std::string(ValidateGeneratorOptions(o).message()), Catch::Contains("--split"));
}

TEST_CASE("graphstore-generate writes a directory graphstored can load", "[generator][cli]") {
  TempDir dir;
  CHECK(RunCommand("tools/graphstore-generate --nodes=500 --feature_dim=8 --out=" + dir / "g >/dev/null") == 0);
  auto p = Partition::Load(dir / "g");
  REQUIRE(p.ok());
  CHECK((*p)->node_type(0).num_nodes == 500);
  CHECK(RunCommand("tools/graphstore-generate --nodes=abc --out=" + dir / "h 2>/dev/null") == 2);
}

TEST_CASE("graphstore-generate reports its progress and total on stderr", "[generator][cli][progress]") {
  TempDir dir;
  const std::string err = dir / "stderr.txt";
  REQUIRE(RunCommand("tools/graphstore-generate --nodes=3000 --feature_dim=4 --out=" + dir / "g >/dev/null 2>" + err) ==
          0);
  const std::string text = testing::ReadFile(err);
  CHECK_THAT(text, Catch::Contains("generating and writing the graph: 3000 nodes in "));
  CHECK_THAT(text, Catch::Contains("nodes/s"));
}

}  // namespace
}  // namespace graphstore
