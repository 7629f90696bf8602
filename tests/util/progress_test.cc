// A long step's progress: about once an interval while it works, its total at the end.

#include "server/util/progress.h"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace graphstore {
namespace {

struct Recorder {
  Progress::Clock::time_point now{};
  std::vector<std::pair<std::string, bool>> lines;
  Progress::Options Options() {
    Progress::Options o;
    o.now = [this] { return now; };
    o.sink = [this](const std::string& line, bool final) { lines.emplace_back(line, final); };
    return o;
  }
  void Advance(double s) { now += std::chrono::duration_cast<Progress::Clock::duration>(std::chrono::duration<double>(s)); }
};

TEST_CASE("progress reports about once a second, then its total once", "[progress]") {
  Recorder r;
  {
    Progress p("writing partitions", 4000000, "edges", r.Options());
    for (int i = 0; i < 40; ++i) {
      r.Advance(0.1);  // ten chunks a second
      p.Add(100000);
    }
    r.Advance(0.05);
    p.Finish();
    p.Finish();  // idempotent; the destructor adds nothing either
  }
  // At 1, 2 and 3 s; at 4 s the step is complete and its total says so (no "100%" line).
  REQUIRE(r.lines.size() == 4);
  for (int i = 0; i < 3; ++i) CHECK_FALSE(r.lines[i].second);
  CHECK(r.lines[0].first == "writing partitions: 25% (1.0M of 4.0M edges, 1.0M edges/s)");
  CHECK(r.lines[2].first == "writing partitions: 75% (3.0M of 4.0M edges, 1.0M edges/s)");
  CHECK(r.lines[3].second);
  CHECK(r.lines[3].first == "writing partitions: 4.0M edges in 4.0 s, 987.7k edges/s");
}

TEST_CASE("a step of unknown size reports what it did, and a quick one only its total", "[progress]") {
  Recorder r;
  {
    Progress p("reading edges", 0, "lines", r.Options());
    r.Advance(1.5);
    p.Add(3000);
  }
  REQUIRE(r.lines.size() == 2);
  CHECK(r.lines[0].first == "reading edges: 3000 lines, 2000 lines/s");
  Recorder quick;
  {
    Progress p("verifying", 10, "arrays", quick.Options());
    quick.Advance(0.2);
    p.Add(10);
  }
  REQUIRE(quick.lines.size() == 1);
  CHECK(quick.lines[0].second);
}

TEST_CASE("counts read in a few digits", "[progress]") {
  CHECK(ShortCount(812) == "812");
  CHECK(ShortCount(32100) == "32.1k");
  CHECK(ShortCount(27100000) == "27.1M");
  CHECK(ShortCount(3.2e9) == "3.2G");
}

TEST_CASE("a note is a line of its own under the phase's name, before the total", "[progress]") {
  Recorder r;
  {
    Progress p("partitioning (metis, 2 parts)", 10, "nodes", r.Options());
    p.Note("METIS over 10 nodes: expect about 0 s");
    r.Advance(2);
    p.Add(10);
  }
  REQUIRE(r.lines.size() == 2);
  CHECK(r.lines[0].first == "partitioning (metis, 2 parts): METIS over 10 nodes: expect about 0 s");
  CHECK(r.lines[0].second);
  CHECK(r.lines[1].first == "partitioning (metis, 2 parts): 10 nodes in 2.0 s, 5 nodes/s");
}

}  // namespace
}  // namespace graphstore
