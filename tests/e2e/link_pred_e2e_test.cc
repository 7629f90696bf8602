// The example link predictor (client/examples/train_link_pred.cc) trained through a real server
// on MovieLens 100k: validation recall@20 rises over the epochs and ends clearly above the
// popularity baseline the trainer prints. Everything is seeded and sampling is deterministic, so
// the run is the same every time.

#include <catch2/catch.hpp>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/server.h"
#include "tests/test_util.h"
#include "tools/movielens.h"

namespace graphstore {
namespace {

using testing::RunCommand;
using testing::TempDir;

// The first number after `label` on the line that starts with `prefix`; -1 when absent.
double Figure(const std::string& out, const std::string& prefix, const std::string& label) {
  std::smatch m;
  const std::regex line("(^|\n)" + prefix + "[^\n]*" + label + " ([0-9.]+)");
  return std::regex_search(out, m, line) ? std::stod(m[2]) : -1;
}

TEST_CASE("train_link_pred learns ml-100k through graphstore and beats popularity", "[movielens][trainer]") {
  TempDir dir;
  auto graph = ReadMovieLens(testing::SharedDataPath("ml-100k"));
  REQUIRE(graph.ok());
  REQUIRE(WritePartitions(*graph, RandomAssignment(*graph, 1, 0), WriteOptions(), dir / "ml").ok());
  std::vector<ServerOptions> options(1);
  options[0].partition_dir = dir / "ml";
  options[0].shared_memory_dir = "";
  options[0].core.state_log_interval_s = 0;
  auto servers = StartLocalCluster(options);
  REQUIRE(servers.ok());
  const std::string log = dir / "train.log";
  REQUIRE(RunCommand(absl::StrCat("client/train_link_pred --servers=", (*servers)[0]->address(),
                                  " --epochs=25 > ", log, " 2>&1")) == 0);
  const std::string out = testing::ReadFile(log);
  INFO(out);
  const double popularity = Figure(out, "popularity baseline", "recall@20");
  const double before = Figure(out, "before training", "recall@20");
  const double early = Figure(out, "epoch 2:", "recall@20");
  const double last = Figure(out, "epoch 24:", "recall@20");
  REQUIRE(popularity > 0);
  REQUIRE(before >= 0);
  REQUIRE(last > 0);
  CHECK(early > before);
  CHECK(last > early);
  CHECK(last > 1.3 * popularity);
}

}  // namespace
}  // namespace graphstore
