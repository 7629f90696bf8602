// graphstore-inspect and graphstored agree on a partition: both accept a good one, both refuse a
// corrupt one with exit code 2 and the file named. graphstored refuses bad flags the same way.

#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <utility>

#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

TEST_CASE("graphstore-inspect and graphstored refuse the same corrupt partition with exit code 2", "[tools]") {
  TempDir dir;
  const std::string g = dir / "g";
  REQUIRE(RunCommand("tools/graphstore-generate --nodes=300 --feature_dim=4 --out=" + g + " >/dev/null") == 0);
  CHECK(RunCommand("tools/graphstore-inspect --partition=" + g + " >" + dir / "ok.txt") == 0);
  CHECK_THAT(ReadFile(dir / "ok.txt"), Catch::Contains("300 of 300 nodes"));
  // What a server holds, by what it grows with: each own edge's index (8 bytes; the generator's
  // single partition keeps no edge ids; npy headers add a little), each own node's 4 float
  // features, label and id; of the whole graph's nodes nothing on one partition.
  const std::string ok = ReadFile(dir / "ok.txt");
  CHECK_THAT(ok, Catch::Contains("sizing: a server holds "));
  std::smatch m;
  REQUIRE(std::regex_search(ok, m, std::regex("([0-9.]+) bytes per own edge")));
  CHECK(std::stod(m[1]) >= 8.0);
  CHECK(std::stod(m[1]) < 10.0);
  REQUIRE(std::regex_search(ok, m, std::regex("([0-9.]+) bytes per own node")));
  CHECK(std::stod(m[1]) >= 32.0);
  REQUIRE(std::regex_search(ok, m, std::regex("([0-9.]+) bytes per node of graph")));
  CHECK(std::stod(m[1]) == 0.0);
  // On a METIS partition of two, the book in memory: half a byte a node and a count per 120
  // (the files, each node's owner and degree, 12 bytes a node, are read once at load).
  const std::string two = dir / "two";
  REQUIRE(RunCommand("tools/graphstore-generate --nodes=10000 --feature_dim=4 --partitions=2 --method=metis --out=" +
                     two + " >/dev/null") == 0);
  REQUIRE(RunCommand("tools/graphstore-inspect --partition=" + two + "/part-0 >" + dir / "two.txt") == 0);
  const std::string part = ReadFile(dir / "two.txt");
  REQUIRE(std::regex_search(part, m, std::regex("([0-9.]+) bytes per node of graph")));
  CHECK(std::stod(m[1]) >= 0.5);
  CHECK(std::stod(m[1]) <= 0.6);
  REQUIRE(std::regex_search(part, m, std::regex("then let go: ([0-9.]+) MiB of book files")));
  CHECK(std::stod(m[1]) > 0.0);
  // A random partition's owners are dealt by a key: from 8 partitions nothing a node of the
  // whole graph, and the rows' slots (about 4 bytes) a node owned here.
  const std::string dealt = dir / "dealt";
  REQUIRE(RunCommand("tools/graphstore-generate --nodes=10000 --feature_dim=4 --partitions=8 --out=" + dealt +
                     " >/dev/null") == 0);
  REQUIRE(RunCommand("tools/graphstore-inspect --partition=" + dealt + "/part-0 >" + dir / "dealt.txt") == 0);
  const std::string dealt_part = ReadFile(dir / "dealt.txt");
  REQUIRE(std::regex_search(dealt_part, m, std::regex("([0-9.]+) bytes per node of graph")));
  CHECK(std::stod(m[1]) == 0.0);
  CHECK_THAT(dealt_part, Catch::Contains("owners dealt by key"));

  // Garbage after the header dict of one .npy file.
  const std::string labels = g + "/nodes/node/labels.npy";
  std::string bytes = ReadFile(labels);
  const size_t end = bytes.find('}');
  REQUIRE(end != std::string::npos);
  bytes[end + 1] = 'x';
  testing::WriteFile(labels, bytes);

  CHECK(RunCommand("tools/graphstore-inspect --partition=" + g + " 2>" + dir / "inspect.txt") == 2);
  CHECK_THAT(ReadFile(dir / "inspect.txt"), Catch::Contains("labels.npy"));
  CHECK(RunCommand("server/graphstored --port=0 --partition=" + g + " >" + dir / "daemon.txt 2>&1") == 2);
  CHECK_THAT(ReadFile(dir / "daemon.txt"), Catch::Contains("labels.npy: not a valid .npy file"));
  CHECK(RunCommand("tools/graphstore-inspect 2>/dev/null") == 2);  // no --partition
}

TEST_CASE("graphstore-inspect shows the weights and times a partition stores, and only those", "[tools]") {
  TempDir dir;
  const std::string plain = dir / "plain", timed = dir / "timed";
  REQUIRE(RunCommand("tools/graphstore-generate --nodes=300 --feature_dim=4 --out=" + plain + " >/dev/null") == 0);
  REQUIRE(RunCommand("tools/graphstore-generate --nodes=300 --feature_dim=4 --edge_weights --times --out=" + timed +
                     " >/dev/null") == 0);
  REQUIRE(RunCommand("tools/graphstore-inspect --partition=" + plain + " >" + dir / "plain.txt") == 0);
  REQUIRE(RunCommand("tools/graphstore-inspect --partition=" + timed + " >" + dir / "timed.txt") == 0);
  const std::string without = ReadFile(dir / "plain.txt"), with = ReadFile(dir / "timed.txt");
  CHECK_THAT(without, !Catch::Contains("weights") && !Catch::Contains("times"));
  INFO(with);
  // The generator's weights include zeros (edges weighted sampling never draws); its times run
  // from 0 to 10^6.
  CHECK_THAT(with, Catch::Matches("(.|\\n)*node type node .*splits, times [0-9]+\\.\\.[0-9]+\\n(.|\\n)*"));
  CHECK_THAT(with, Catch::Matches("(.|\\n)*edge type node__to__node .*, weights 0\\.\\.[0-9.e+]+ \\([1-9][0-9]* zero\\), "
                                  "times [0-9]+\\.\\.[0-9]+\\n(.|\\n)*"));
}

TEST_CASE("graphstored refuses an out-of-range flag with exit code 2, naming the flag", "[tools]") {
  TempDir dir;
  const std::string g = dir / "g";
  REQUIRE(RunCommand("tools/graphstore-generate --nodes=100 --feature_dim=4 --out=" + g + " >/dev/null") == 0);
  const std::pair<std::string, std::string> cases[] = {
      {"--sampling_nice=20", "--sampling_nice must be in [0, 19]"},
      {"--sampling_nice=-1", "--sampling_nice must be in [0, 19]"},
      {"--stream_split_mb=-1", "--stream_split_mb must be >= 0"},
      {"--stream_part_mb=-1", "--stream_part_mb must be in [0, --max_message_mb)"},
      {"--sample_ahead_batches=65", "--sample_ahead_batches must be in [0, 64]"},
  };
  for (const auto& [flag, message] : cases) {
    INFO(flag);
    CHECK(RunCommand("server/graphstored --port=0 --partition=" + g + " " + flag + " >" + dir / "out.txt 2>&1") == 2);
    CHECK_THAT(ReadFile(dir / "out.txt"), Catch::Contains(message));
  }
}

}  // namespace
}  // namespace graphstore
