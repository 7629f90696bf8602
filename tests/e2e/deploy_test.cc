// Deployment files: the local cluster launcher starts one graphstored per partition, each
// told the whole cluster, and stops them cleanly.

#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/flags.h"
#include "tests/test_util.h"
#include "tools/generator.h"

namespace graphstore {
namespace {

using testing::RunCommand;
using testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST_CASE("deploy/local/cluster.sh starts a server per partition and stops them with exit 0", "[deploy]") {
  TempDir dir;
  GeneratorOptions g;
  g.num_nodes = 3000;
  g.feature_dim = 4;
  g.num_partitions = 2;
  REQUIRE(GenerateDataset(g, dir / "data").ok());
  const std::string env = "GRAPHSTORED=server/graphstored ";
  const std::string run = dir / "run";
  REQUIRE(RunCommand(env + "deploy/local/cluster.sh start " + dir / "data" + " " + run + " --log_level=warn >/dev/null") == 0);
  const std::vector<std::string> addresses = SplitList(ReadFile(run + "/cluster"), ',');
  REQUIRE(addresses.size() == 2);
  for (int k = 0; k < 2; ++k) {
    client::ClientOptions o;
    o.address = addresses[k];
    auto c = client::Client::Connect(o);
    REQUIRE(c.ok());
    auto meta = (*c)->GetDatasetMeta();
    REQUIRE(meta.ok());
    CHECK(meta->partition_id() == k);
    CHECK(meta->num_partitions() == 2);
    CHECK(std::vector<std::string>(meta->cluster().begin(), meta->cluster().end()) == addresses);
  }
  // A second start on the same run directory is refused; stop ends both with exit 0.
  CHECK(RunCommand(env + "deploy/local/cluster.sh start " + dir / "data" + " " + run + " 2>/dev/null") == 2);
  CHECK(RunCommand("deploy/local/cluster.sh stop " + run) == 0);
  client::ClientOptions o;
  o.address = addresses[0];
  o.connect_timeout = std::chrono::milliseconds(300);
  CHECK(!client::Client::Connect(o).ok());
  CHECK(RunCommand("deploy/local/cluster.sh stop " + run + " 2>/dev/null") == 2);  // nothing left to stop
  // A dataset that is not one is refused with a message.
  CHECK(RunCommand(env + "deploy/local/cluster.sh start " + dir / "nothing" + " " + dir / "run2" + " 2>/dev/null") == 2);
}

}  // namespace
}  // namespace graphstore
