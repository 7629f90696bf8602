// The example GraphSAGE trainer (client/examples/train_sage.cc) run through a real graphstored
// each way it samples: uniform, by weight, and temporally at the seeds' node times; it names the
// sampling it uses, trains an epoch, and refuses a bad --temporal naming the flag.

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "tests/daemon.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::Daemon;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

TEST_CASE("train_sage trains an epoch sampling uniformly, by weight and temporally", "[trainer]") {
  // Weights and times (the generator's: a tenth of the weights are 0; node and edge times).
  Daemon d(testing::GeneratedDataset(2000, 8, 3, 1, 11, /*times=*/true));
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> ways = {
      {"", "neighbour sampling: uniform\n"},
      {"--weighted", "neighbour sampling: weighted\n"},
      {"--temporal=last", "neighbour sampling: uniform, temporal (last, seeds at their node times)\n"},
      {"--weighted --temporal=uniform", "neighbour sampling: weighted, temporal (uniform, seeds at their node times)\n"},
  };
  for (const auto& [flags, says] : ways) {
    INFO("train_sage " << flags);
    const std::string out = dir / "out.txt";
    const int status =
        RunCommand("client/train_sage --servers=" + d.address() + " --epochs=1 " + flags + " >" + out + " 2>&1");
    const std::string printed = ReadFile(out);
    INFO(printed);
    REQUIRE(status == 0);
    CHECK_THAT(printed, Catch::Contains(says));
    CHECK_THAT(printed, Catch::Contains("epoch 0: loss "));
  }
  // LAST takes no weights: the server's refusal reaches the user.
  CHECK(RunCommand("client/train_sage --servers=" + d.address() + " --weighted --temporal=last >" + (dir / "last.txt") +
                   " 2>&1") == 1);
  CHECK_THAT(ReadFile(dir / "last.txt"), Catch::Contains("does not draw by weight"));
  CHECK(RunCommand("client/train_sage --servers=" + d.address() + " --temporal=newest 2>" + (dir / "bad.txt")) == 2);
  CHECK_THAT(ReadFile(dir / "bad.txt"), Catch::Contains("--temporal must be uniform or last, got 'newest'"));
}

}  // namespace
}  // namespace graphstore
