// Temporal neighbour sampling: exact answers on hand-built graphs (edge times, node times, the
// earliest-reacher rule, link-prediction anchors), no sampled edge newer than the time of the
// node that reached it on a generated graph (uniform, last, weighted), `last` takes the newest,
// uniform draws are uniform among the allowed, bad options and bad time files are refused.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "tools/dataset/writer.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/sampling/draw.h"
#include "server/sampling/neighbor_sampler.h"
#include "tests/fixtures.h"
#include "tests/sampling/sampling_fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::TempDir;
using Pairs = std::set<std::pair<int64_t, int64_t>>;

// `num_nodes` nodes of one type and one edge type among them ("to"), with no edges yet.
GraphData OneTypeGraph(int64_t num_nodes) {
  GraphData g;
  NodeTypeData n;
  n.name = "node";
  n.num_nodes = num_nodes;
  g.node_types.push_back(n);
  EdgeTypeData e;
  e.src_type = e.dst_type = "node";
  e.relation = "to";
  g.edge_types.push_back(e);
  return g;
}

// Node 0 reaching 1..100 at times 10, 20, ..., 1000: a row long enough that its fences leave
// stretches to read.
GraphData LongRowGraph() {
  GraphData g = OneTypeGraph(101);
  for (int64_t k = 1; k <= 100; ++k) {
    g.edge_types[0].src.push_back(0);
    g.edge_types[0].dst.push_back(k);
    g.edge_types[0].times.push_back(10 * k);
  }
  return g;
}

// Eight nodes, edge times in brackets:
//   0 -> 1 [10], 0 -> 2 [20], 0 -> 3 [30], 0 -> 4 [40], 2 -> 5 [15], 2 -> 6 [26], 1 -> 6 [5],
//   4 -> 5 [1], 6 -> 0 [50], 6 -> 3 [28], 7 -> 1 [1] ... 7 -> 6 [6] (7 -> k at time k)
GraphData TimeGraph() {
  GraphData g = OneTypeGraph(8);
  EdgeTypeData& e = g.edge_types[0];
  e.src = {0, 0, 0, 0, 2, 2, 1, 4, 6, 6};
  e.dst = {1, 2, 3, 4, 5, 6, 6, 5, 0, 3};
  e.times = {10, 20, 30, 40, 15, 26, 5, 1, 50, 28};
  for (int64_t k = 1; k <= 6; ++k) {
    e.src.push_back(7);
    e.dst.push_back(k);
    e.times.push_back(k);
  }
  return g;
}

std::unique_ptr<NeighborSampler> Temporal(const Partition* p, std::vector<int> fanouts,
                                          TemporalStrategy strategy = TemporalStrategy::kUniform) {
  NeighborSamplerOptions o;
  o.fanouts = std::move(fanouts);
  o.temporal = strategy;
  o.with_edge_ids = true;
  auto s = NeighborSampler::Create(p, o);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return *std::move(s);
}

Pairs Sample(const NeighborSampler& s, const Partition& p, std::vector<int64_t> seeds, std::vector<int64_t> times,
             int64_t batch = 0) {
  testing::SampleAt at;
  at.times = times.data();
  at.batch = batch;
  return testing::EdgePairs(p, testing::RunSampler(s, std::move(seeds), at), 0);
}

TEST_CASE("temporal draws keep the edges at or before the time of the node that reaches them, exactly", "[temporal]") {
  TempDir dir;
  auto p = testing::WritePartition(TimeGraph(), dir.path());
  REQUIRE(p->edge_type(0).times_data() != nullptr);
  auto all = Temporal(p.get(), {-1});
  CHECK(Sample(*all, *p, {0}, {25}) == Pairs{{0, 1}, {0, 2}});
  CHECK(Sample(*all, *p, {0}, {40}) == Pairs{{0, 1}, {0, 2}, {0, 3}, {0, 4}});  // <= t, not < t
  CHECK(Sample(*all, *p, {0}, {9}).empty());
  // A fanout above the allowed count takes all of them.
  CHECK(Sample(*Temporal(p.get(), {3}), *p, {0}, {25}) == Pairs{{0, 1}, {0, 2}});

  // Two hops: the nodes reached carry the seed's time, so 2 -> 6 [26] is out at 25.
  auto two = Temporal(p.get(), {-1, -1});
  CHECK(Sample(*two, *p, {0}, {25}) == Pairs{{0, 1}, {0, 2}, {1, 6}, {2, 5}});

  // Node 6 is reached in one hop by seed 1 (time 100) and seed 2 (time 30): it carries the
  // earliest, so 6 -> 3 [28] is drawn and 6 -> 0 [50] is not.
  CHECK(Sample(*two, *p, {1, 2}, {100, 30}) == Pairs{{1, 6}, {2, 5}, {2, 6}, {6, 3}});
  // With 2 alone at 100, 6 carries 100 and reaches 0.
  CHECK(Sample(*two, *p, {2}, {100}).count({6, 0}) == 1);
}

TEST_CASE("temporal LAST takes the most recent allowed neighbours", "[temporal]") {
  TempDir dir;
  auto p = testing::WritePartition(TimeGraph(), dir.path());
  CHECK(Sample(*Temporal(p.get(), {1}, TemporalStrategy::kLast), *p, {0}, {35}) == Pairs{{0, 3}});
  CHECK(Sample(*Temporal(p.get(), {2}, TemporalStrategy::kLast), *p, {0}, {35}) == Pairs{{0, 2}, {0, 3}});
  CHECK(Sample(*Temporal(p.get(), {3}, TemporalStrategy::kLast), *p, {7}, {4}) == Pairs{{7, 2}, {7, 3}, {7, 4}});
  // The same in every batch: nothing is random.
  auto last = Temporal(p.get(), {3}, TemporalStrategy::kLast);
  for (int64_t b = 0; b < 10; ++b) CHECK(Sample(*last, *p, {7}, {5}, b) == Pairs{{7, 3}, {7, 4}, {7, 5}});
}

TEST_CASE("temporal uniform draws are uniform among the allowed neighbours", "[temporal][statistics]") {
  TempDir dir;
  auto p = testing::WritePartition(TimeGraph(), dir.path());
  auto s = Temporal(p.get(), {2});
  // Node 7 reaches 1..6 at times 1..6; at time 4, two of 1..4 each draw.
  std::map<int64_t, int> count;
  const int trials = 6000;
  for (int64_t b = 0; b < trials; ++b) {
    const Pairs got = Sample(*s, *p, {7}, {4}, b);
    REQUIRE(got.size() == 2);
    for (const auto& [u, v] : got) ++count[v];
  }
  CHECK(count.count(5) == 0);
  CHECK(count.count(6) == 0);
  for (int64_t v = 1; v <= 4; ++v) {
    const double expected = trials * 0.5;  // 2 of 4
    INFO("neighbour " << v << " drawn " << count[v] << " times, expected " << expected);
    CHECK(std::abs(count[v] - expected) <= 5 * std::sqrt(trials * 0.5 * 0.5));
  }
}

TEST_CASE("temporal uniform draws from a long row are uniform among the allowed, its stretch unread or read",
          "[temporal][statistics]") {
  // Node 0 reaches 1..100 at times 10..1000: at 505 the fences leave a stretch of the row past
  // the fanout, so the draw is made before the stretch is read and reads it only when one of the
  // stretch's positions would take a pick (neighbours 48..50, each drawn only that way).
  GraphData g = LongRowGraph();
  TempDir dir;
  auto p = testing::WritePartition(g, dir.path());
  const EdgeTypeStore& et = p->edge_type(0);
  const int fanout = 5;
  const int64_t t = 505, allowed = 50;
  const TimeRows::Row& row = et.time_rows->Get(et.indptr_data(), 101, et.times_data())[0];
  const auto [lo, hi] = TimeRows::SearchRange(row, t);
  INFO("stretch [" << lo << ", " << hi << ")");
  REQUIRE(lo >= fanout);  // drawn before the stretch is read
  REQUIRE(lo < allowed);  // the stretch holds allowed neighbours
  REQUIRE(hi >= allowed);

  auto s = Temporal(p.get(), {fanout});
  std::map<int64_t, int> count;
  const int trials = 6000;
  for (int64_t b = 0; b < trials; ++b) {
    const Pairs got = Sample(*s, *p, {0}, {t}, b);
    REQUIRE(got.size() == static_cast<size_t>(fanout));
    for (const auto& [u, v] : got) ++count[v];
  }
  for (int64_t v = 1; v <= 100; ++v) {
    const double expected = v <= allowed ? trials * fanout / static_cast<double>(allowed) : 0;
    INFO("neighbour " << v << " drawn " << count[v] << " times, expected " << expected);
    CHECK(std::abs(count[v] - expected) <= 5 * std::sqrt(expected * (1 - fanout / static_cast<double>(allowed))));
  }
}

TEST_CASE("an edge type without times draws from its whole row after one whose draws were made before their cut",
          "[temporal]") {
  // Node 0 reaches 1..100 along "to" at times 10..1000 (at 505 drawn before its stretch is
  // read) and 1 and 2 along "plain", which stores no times: the same hop draws both.
  GraphData g = LongRowGraph();
  EdgeTypeData plain;
  plain.src_type = plain.dst_type = "node";
  plain.relation = "plain";
  plain.src = {0, 0};
  plain.dst = {1, 2};
  g.edge_types.push_back(plain);
  TempDir dir;
  auto p = testing::WritePartition(g, dir.path());
  int plain_type = -1;
  for (int e = 0; e < static_cast<int>(p->edge_types().size()); ++e) {
    if (p->edge_type(e).times_data() == nullptr) plain_type = e;
  }
  REQUIRE(plain_type >= 0);
  auto s = Temporal(p.get(), {5});
  for (int64_t b = 0; b < 20; ++b) {
    testing::SampleAt at;
    const std::vector<int64_t> times{505};
    at.times = times.data();
    at.batch = b;
    const SampledSubgraph got = testing::RunSampler(*s, {0}, at);
    CHECK(testing::EdgePairs(*p, got, plain_type) == Pairs{{0, 1}, {0, 2}});
    const Pairs timed = testing::EdgePairs(*p, got, 1 - plain_type);
    CHECK(timed.size() == 5);
    for (const auto& [u, v] : timed) CHECK(v <= 50);
  }
}

TEST_CASE("node times: a seed takes its node's time, and nodes after a time are never reached", "[temporal]") {
  GraphData g = TimeGraph();
  g.edge_types[0].times.clear();  // times only on the nodes
  g.node_types[0].times = {25, 30, 20, 5, 100, 1, 24, 3};
  TempDir dir;
  auto p = testing::WritePartition(g, dir.path());
  // The stored edge time is the neighbour's time.
  REQUIRE(p->edge_type(0).times_data() != nullptr);
  REQUIRE(p->node_type(0).has_times);
  auto s = Temporal(p.get(), {-1, -1});
  testing::SampleAt at;  // no explicit times
  const Pairs got = testing::EdgePairs(*p, testing::RunSampler(*s, {0}, at), 0);
  // Seed 0 at 25 reaches 2 (20) and 3 (5), not 1 (30) or 4 (100); 2 reaches 5 (1) and 6 (24).
  CHECK(got == Pairs{{0, 2}, {0, 3}, {2, 5}, {2, 6}});
  // An explicit time overrides the node's.
  CHECK(Sample(*Temporal(p.get(), {-1}), *p, {0}, {200}).size() == 4);
}

// Edge time of every global edge id of edge type `e`.
std::map<int64_t, int64_t> EdgeTimes(const Partition& p, int e) {
  const EdgeTypeStore& et = p.edge_type(e);
  std::map<int64_t, int64_t> out;
  for (int64_t k = 0; k < et.num_local; ++k) out[et.EdgeId(k)] = et.times_data()[k];
  return out;
}

// Replays the earliest-reacher rule over a sampled subgraph (one node type, one edge type, rows
// are sources) from the times of its seeds (distinct, in order) and checks every edge is no newer
// than the time of the node that reached it, and that the batch reports these times: each seed's
// time, each node's stored time, and the time each node was sampled at. Returns the number of
// edges checked.
int64_t CheckNoFuture(const Partition& p, const SampledSubgraph& g, std::vector<int64_t> node_time) {
  REQUIRE(g.temporal);
  CHECK(g.nodes[0].seed_times == node_time);
  const auto times = EdgeTimes(p, 0);
  const SampledNodes& nodes = g.nodes[0];
  const SampledEdges& edges = g.edges[0];
  REQUIRE(edges.eids.size() == edges.rows.size());
  node_time.resize(nodes.ids.size(), INT64_MAX);
  size_t edge = 0;
  int64_t hop_end = nodes.num_sampled_nodes[0];
  for (size_t hop = 0; hop < edges.num_sampled_edges.size(); ++hop) {
    const int64_t next_end = hop_end + nodes.num_sampled_nodes[hop + 1];
    for (int64_t k = 0; k < edges.num_sampled_edges[hop]; ++k, ++edge) {
      const int32_t u = edges.rows[edge];
      const int32_t v = edges.cols[edge];
      INFO("hop " << hop << " edge " << nodes.ids[u] << " -> " << nodes.ids[v] << " eid " << edges.eids[edge]);
      REQUIRE(node_time[u] != INT64_MAX);
      REQUIRE(times.at(edges.eids[edge]) <= node_time[u]);
      if (v >= hop_end && v < next_end) node_time[v] = std::min(node_time[v], node_time[u]);
    }
    hop_end = next_end;
  }
  CHECK(nodes.sampled_times == node_time);
  REQUIRE(nodes.times.size() == nodes.ids.size());
  const int64_t* stored = p.node_type(0).own_times.data();  // one partition: a node's row is its id
  for (size_t i = 0; i < nodes.ids.size(); ++i) {
    INFO("node " << nodes.ids[i]);
    CHECK(nodes.times[i] == stored[nodes.ids[i]]);
    // A node is reached only from a time at or after its own.
    if (i >= static_cast<size_t>(nodes.num_sampled_nodes[0])) CHECK(nodes.times[i] <= nodes.sampled_times[i]);
  }
  return static_cast<int64_t>(edge);
}

TEST_CASE("a row's time fences narrow its search to the stretch that holds the cut", "[temporal]") {
  // Rows of every length up to 200 (16-bit fences, 8-bit fences, rows that search) with
  // runs of equal times; every time from the oldest up to the newest: the fenced search finds
  // the same cut as a search of the whole row.
  constexpr int64_t kRows = 200;
  std::vector<int64_t> indptr{0}, times;
  uint64_t state = 7;
  for (int64_t d = 1; d <= kRows; ++d) {
    int64_t t = static_cast<int64_t>(d) * 1000;
    for (int64_t k = 0; k < d; ++k) {
      state = Mix64(state);
      t += static_cast<int64_t>(state % 4 == 0 ? 0 : state % 5);  // a quarter repeat the previous time
      times.push_back(t);
    }
    indptr.push_back(static_cast<int64_t>(times.size()));
  }
  TimeRows index;
  const auto& rows = index.Get(indptr.data(), kRows, times.data());
  int64_t searches = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    const TimeRows::Row& row = rows[r];
    REQUIRE(row.begin == indptr[r]);
    REQUIRE(row.end == indptr[r + 1]);
    const int64_t* first = times.data() + row.begin;
    // Each fence holds the step of the time at its offset, at the width the row's length gives.
    for (int j = 0; j < TimeRows::Fences(row.end - row.begin); ++j) {
      CHECK(TimeRows::Fence(row, row.end - row.begin, j) ==
            TimeRows::Step(row, first[TimeRows::FencePosition(j + 1, row.end - row.begin)]));
    }
    for (int64_t t = row.oldest; t < row.newest; ++t) {
      const auto [lo, hi] = TimeRows::SearchRange(row, t);
      INFO("row " << r << " at " << t << ": stretch [" << lo << ", " << hi << ")");
      REQUIRE(lo >= 0);
      REQUIRE(hi <= row.end - row.begin);
      const int64_t want = std::upper_bound(first, first + (row.end - row.begin), t) - first;
      CHECK(std::upper_bound(first + lo, first + hi, t) - first == want);
      const int64_t d = row.end - row.begin;
      // The stretch lies between two fences, widened by one fence's gap for each fence in t's
      // own step (which says neither earlier nor later).
      int undecided = 0;
      for (int j = 0; j < TimeRows::Fences(d); ++j) undecided += TimeRows::Fence(row, d, j) == TimeRows::Step(row, t);
      if (row.shift == 0) undecided = 0;
      CHECK(hi - lo <= (undecided + 1) * (d / (TimeRows::Fences(d) + 1) + 1));
      // Up to 32 edges the fences are every time of the row: with steps of one time unit,
      // nothing is left to read.
      if (d <= TimeRows::kNarrowFences + 1 && row.shift == 0) CHECK(lo >= hi);
      if (d <= TimeRows::kWideRow) CHECK(row.shift == 0);
      ++searches;
    }
  }
  CHECK(searches > 1000);
}

TEST_CASE("a draw made before the cut is known is uniform among the allowed, and the same for every cut it allows",
          "[temporal][statistics]") {
  // Every shape the draw takes: the picks are distinct and allowed, and a draw settled over
  // [known, most) is the draw of every allowed prefix from known to most.
  std::vector<int64_t> out(64), again(64);
  int64_t settled = 0;
  for (uint64_t key = 0; key < 3000; ++key) {
    const int fanout = 1 + static_cast<int>(Mix64(key) % 40);
    const int64_t known = fanout + static_cast<int64_t>(Mix64(key + 1) % 40);
    const int64_t most = known + static_cast<int64_t>(Mix64(key + 2) % 8);
    INFO("fanout " << fanout << ", " << known << " to " << most << " allowed");
    for (int64_t allowed = known; allowed <= most; ++allowed) {
      DrawPositionsPast(key, known, allowed, fanout, out.data());
      const std::set<int64_t> picks(out.begin(), out.begin() + fanout);
      REQUIRE(picks.size() == static_cast<size_t>(fanout));
      REQUIRE(*picks.begin() >= 0);
      REQUIRE(*picks.rbegin() < allowed);
    }
    // The first draw's picks are DrawNeighborPositions' among the known ones.
    DrawPositionsPast(key, known, known, fanout, out.data());
    DrawNeighborPositions(key, known, fanout, false, again.data());
    REQUIRE(std::equal(out.begin(), out.begin() + fanout, again.begin()));
    if (!PastSettled(key, known, most, fanout)) {
      // Unsettled: some allowed prefix takes a position past the known ones.
      DrawPositionsPast(key, known, most, fanout, again.data());
      CHECK(!std::equal(out.begin(), out.begin() + fanout, again.begin()));
      continue;
    }
    ++settled;
    for (int64_t allowed = known + 1; allowed <= most; ++allowed) {
      DrawPositionsPast(key, known, allowed, fanout, again.data());
      REQUIRE(std::equal(out.begin(), out.begin() + fanout, again.begin()));
    }
  }
  CHECK(settled > 300);
  CHECK(settled < 2700);

  // Three of seven allowed, four of them known: each of the 35 subsets equally likely.
  std::map<std::set<int64_t>, int> subsets;
  const int trials = 35000;
  for (int k = 0; k < trials; ++k) {
    DrawPositionsPast(HashCombine(99, static_cast<uint64_t>(k)), 4, 7, 3, out.data());
    ++subsets[std::set<int64_t>(out.begin(), out.begin() + 3)];
  }
  CHECK(subsets.size() == 35);
  double chi2 = 0;
  for (const auto& [subset, count] : subsets) chi2 += (count - 1000.0) * (count - 1000.0) / 1000.0;
  INFO("chi-square " << chi2 << " on 34 degrees of freedom");
  CHECK(chi2 < 70);  // p < 0.0003 under the null
}

TEST_CASE("time fences keep the cut exact when a row's times span more than 16 bits", "[temporal]") {
  // Rows whose times span a few thousand units up to the whole int64 range, negative times
  // included: the fences keep 16-bit steps, and a time in a fence's own step searches past it.
  std::vector<int64_t> indptr{0}, times;
  std::vector<std::vector<int64_t>> probes;
  uint64_t state = 11;
  auto next = [&] { return state = Mix64(state); };
  const uint64_t spans[] = {1000, 70000, 1ull << 20, 1ull << 40, 1ull << 62, UINT64_MAX};
  for (uint64_t span : spans) {
    for (int64_t d : {2, 5, 16, 17, 32, 33, 40, 300}) {
      const int64_t oldest = span == UINT64_MAX ? INT64_MIN : -static_cast<int64_t>(span / 3);
      std::vector<int64_t> row(d);
      row[0] = oldest;
      row[d - 1] = static_cast<int64_t>(static_cast<uint64_t>(oldest) + span);
      for (int64_t k = 1; k + 1 < d; ++k) {
        row[k] = static_cast<int64_t>(static_cast<uint64_t>(oldest) + next() % span);
        if (k > 1 && next() % 4 == 0) row[k] = row[k - 1];  // runs of equal times
      }
      std::sort(row.begin(), row.end());
      // Probe every time of the row and its neighbours, and random times between.
      std::vector<int64_t> ts;
      for (int64_t x : row) {
        for (int64_t delta : {-1, 0, 1}) {
          if ((delta < 0 && x == INT64_MIN) || (delta > 0 && x == INT64_MAX)) continue;
          ts.push_back(x + delta);
        }
      }
      for (int k = 0; k < 200; ++k) ts.push_back(static_cast<int64_t>(static_cast<uint64_t>(oldest) + next() % span));
      times.insert(times.end(), row.begin(), row.end());
      indptr.push_back(static_cast<int64_t>(times.size()));
      probes.push_back(ts);
    }
  }
  TimeRows index;
  const int64_t num_rows = static_cast<int64_t>(probes.size());
  const auto& rows = index.Get(indptr.data(), num_rows, times.data());
  int64_t searches = 0, decided = 0;
  for (int64_t r = 0; r < num_rows; ++r) {
    const TimeRows::Row& row = rows[r];
    const int64_t d = row.end - row.begin;
    const int64_t* first = times.data() + row.begin;
    for (int64_t t : probes[r]) {
      if (t < row.oldest || t >= row.newest) continue;
      const auto [lo, hi] = TimeRows::SearchRange(row, t);
      INFO("row " << r << " (" << d << " edges, shift " << int{row.shift} << ") at " << t << ": stretch [" << lo
                  << ", " << hi << ")");
      REQUIRE(lo >= 1);
      REQUIRE(hi <= d);
      const int64_t want = std::upper_bound(first, first + d, t) - first;
      CHECK(std::upper_bound(first + lo, first + hi, t) - first == want);
      ++searches;
      decided += lo >= hi;
    }
  }
  CHECK(searches > 5000);
  WARN("decided " << decided << " of " << searches);
  CHECK(decided > searches / 4);  // short rows mostly need no read, even with wide steps
}

TEST_CASE("on a generated graph no sampled edge is newer than the node that reached it", "[temporal]") {
  auto p = Partition::Load(testing::GeneratedDataset(3000, 0, 4, 1, 5, /*times=*/true));
  REQUIRE(p.ok());
  const Partition& part = **p;
  REQUIRE(part.edge_type(0).times_data() != nullptr);
  const int64_t* node_times = part.node_type(0).own_times.data();  // one partition: a node's row is its id
  REQUIRE(node_times != nullptr);
  struct Mode {
    const char* name;
    TemporalStrategy strategy;
    bool replace, weighted;
  };
  for (const Mode& m : {Mode{"uniform", TemporalStrategy::kUniform, false, false},
                        Mode{"uniform, replace", TemporalStrategy::kUniform, true, false},
                        Mode{"last", TemporalStrategy::kLast, false, false},
                        Mode{"weighted", TemporalStrategy::kUniform, false, true},
                        Mode{"weighted, replace", TemporalStrategy::kUniform, true, true}}) {
    INFO(m.name);
    NeighborSamplerOptions o;
    o.fanouts = {6, 4, 3};
    o.temporal = m.strategy;
    o.replace = m.replace;
    if (m.weighted) o.weighted_edge_types = {"*"};
    o.with_edge_ids = true;
    o.with_node_times = true;
    auto s = NeighborSampler::Create(&part, o);
    REQUIRE(s.ok());
    int64_t checked = 0;
    for (int64_t b = 0; b < 40; ++b) {
      std::vector<int64_t> seeds, times;
      for (int64_t i = 0; i < 25; ++i) {
        const int64_t id = (b * 97 + i * 31) % 3000;
        if (std::find(seeds.begin(), seeds.end(), id) != seeds.end()) continue;
        seeds.push_back(id);
        // Some seeds at their node time, others later.
        times.push_back(node_times[id] + (i % 3) * 300000);
      }
      testing::SampleAt at;
      at.batch = b;
      at.times = times.data();
      const SampledSubgraph g = testing::RunSampler(**s, seeds, at);
      checked += CheckNoFuture(part, g, times);
    }
    CHECK(checked > 1000);  // the check saw real samples
  }
}

TEST_CASE("on a generated graph, LAST draws the newest allowed neighbours and uniform draws every allowed one",
          "[temporal]") {
  auto p = Partition::Load(testing::GeneratedDataset(3000, 0, 4, 1, 5, /*times=*/true));
  REQUIRE(p.ok());
  const Partition& part = **p;
  const EdgeTypeStore& et = part.edge_type(0);
  const int64_t* node_times = part.node_type(0).own_times.data();  // one partition: a node's row is its id
  auto last = Temporal(&part, {3}, TemporalStrategy::kLast);
  auto all = Temporal(&part, {-1});
  int64_t cut_rows = 0;
  for (int64_t id = 0; id < 3000; id += 7) {
    const int64_t t = node_times[id] + 400000;
    const int64_t* row = et.times_data() + et.indptr_data()[id];
    const int64_t degree = et.indptr_data()[id + 1] - et.indptr_data()[id];
    const int64_t allowed = std::upper_bound(row, row + degree, t) - row;
    cut_rows += allowed < degree && allowed > 0;
    Pairs want_all, want_last;
    for (int64_t k = 0; k < allowed; ++k) {
      const int64_t w = et.indices_data()[et.indptr_data()[id] + k];
      want_all.insert({id, w});
      if (k >= allowed - 3) want_last.insert({id, w});
    }
    INFO("node " << id << " at " << t << ": " << allowed << " of " << degree << " allowed");
    CHECK(Sample(*all, part, {id}, {t}) == want_all);
    CHECK(Sample(*last, part, {id}, {t}) == want_last);
  }
  CHECK(cut_rows > 20);  // the times really cut rows
}

TEST_CASE("link-prediction label nodes take their anchor's time", "[temporal]") {
  // Shop(): user u0 bought i0 [1], i1 [2], i2 [6]; u1 bought i1 [3], i2 [4]; u2 bought i3 [5];
  // users' times 3, 10, 10, so item -> user edges are visible from the user's time on.
  GraphData g = testing::Shop();
  g.node_types[0].times = {3, 10, 10};
  for (auto& e : g.edge_types) {
    if (e.relation == "buys" || e.relation == "rev_buys") e.times = {1, 2, 3, 4, 5, 6};
  }
  TempDir dir;
  auto p = testing::WritePartition(g, dir.path());
  auto labeler = AblpLabeler::Create(p.get(), testing::TrainInput(*p), {});
  REQUIRE(labeler.ok());
  AblpBatch batch;
  const std::vector<int64_t> anchors = {0};  // u0, labels i0 and i1
  REQUIRE((*labeler)->MakeBatch(anchors.data(), 1, 7, 0, 0, &batch).ok());
  for (bool temporal : {false, true}) {
    INFO("temporal " << temporal);
    NeighborSamplerOptions o;
    o.fanouts = {-1, -1};
    o.temporal = temporal ? TemporalStrategy::kUniform : TemporalStrategy::kNone;
    o.with_edge_ids = true;
    o.with_node_times = temporal;
    auto s = NeighborSampler::Create(p.get(), o);
    REQUIRE(s.ok());
    testing::SampleAt at;
    at.node_type = testing::TypeIndex(*p, "user");
    at.ablp = &batch;
    const SampledSubgraph out = testing::RunSampler(**s, anchors, at);
    const auto& users = out.nodes[testing::TypeIndex(*p, "user")].ids;
    // i1 -> u1 happened at 10 (u1's time), after u0's 3: only without time is u1 reached.
    CHECK((std::find(users.begin(), users.end(), 1) != users.end()) == !temporal);
    const SampledNodes& user_nodes = out.nodes[testing::TypeIndex(*p, "user")];
    const SampledNodes& item_nodes = out.nodes[testing::TypeIndex(*p, "item")];
    CHECK(out.temporal == temporal);
    if (!temporal) {
      CHECK(user_nodes.seed_times.empty());
      CHECK(user_nodes.sampled_times.empty());
      CHECK(user_nodes.times.empty());
    } else {
      // The anchor's time, as seed time and as the time it and its label nodes were sampled at;
      // stored times for users only (items store none).
      CHECK(user_nodes.seed_times == std::vector<int64_t>{3});
      CHECK(item_nodes.seed_times.empty());
      REQUIRE(user_nodes.times.size() == users.size());
      for (size_t i = 0; i < users.size(); ++i) CHECK(user_nodes.times[i] == g.node_types[0].times[users[i]]);
      CHECK(item_nodes.times.empty());
      REQUIRE(item_nodes.sampled_times.size() == item_nodes.ids.size());
      CHECK(user_nodes.sampled_times[0] == 3);
      for (int64_t k : out.ablp.positive) {
        if (k >= 0) CHECK(item_nodes.sampled_times[k] == 3);
      }
    }
    if (temporal) {
      for (size_t e = 0; e < out.edges.size(); ++e) {
        if (p->edge_type(static_cast<int>(e)).times_data() == nullptr) continue;
        const auto times = EdgeTimes(*p, static_cast<int>(e));
        for (int64_t eid : out.edges[e].eids) CHECK(times.at(eid) <= 3);
      }
    }
  }
}

TEST_CASE("temporal options a graph or a strategy cannot serve are refused, naming the option", "[temporal]") {
  TempDir plain;
  auto tiny = testing::WritePartition(testing::TinyGraph(), plain.path());
  NeighborSamplerOptions o;
  o.fanouts = {2};
  o.temporal = TemporalStrategy::kUniform;
  auto s = NeighborSampler::Create(tiny.get(), o);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("temporal_strategy: no edge type"));

  TempDir dir;
  GraphData g = TimeGraph();
  g.edge_types[0].weights.assign(g.edge_types[0].src.size(), 1.0f);
  auto p = testing::WritePartition(g, dir.path());
  o.temporal = TemporalStrategy::kLast;
  o.replace = true;
  s = NeighborSampler::Create(p.get(), o);
  REQUIRE(!s.ok());
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("replace"));
  o.replace = false;
  o.weighted_edge_types = {"*"};
  s = NeighborSampler::Create(p.get(), o);
  REQUIRE(!s.ok());
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("weighted_edge_types"));

  // Seeds without times on a graph without node times cannot be sampled temporally.
  auto sampler = Temporal(p.get(), {2});
  auto scratch = sampler->NewScratch();
  const std::vector<int64_t> seeds = {0};
  SeedBatch b;
  b.ids = seeds.data();
  b.size = 1;
  SampledSubgraph out;
  const absl::Status st = sampler->Sample(b, scratch.get(), &out);
  CHECK(st.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(st.message()), Catch::Contains("nodes.times"));

  // Stored node times cannot be gathered from a graph that has none.
  NeighborSamplerOptions gather;
  gather.fanouts = {2};
  gather.with_node_times = true;
  s = NeighborSampler::Create(p.get(), gather);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("with_node_times: no node type"));
}

TEST_CASE("stored node times are gathered when asked for, temporal or not", "[temporal]") {
  auto p = Partition::Load(testing::GeneratedDataset(3000, 0, 4, 1, 5, /*times=*/true));
  REQUIRE(p.ok());
  const Partition& part = **p;
  const int64_t* stored = part.node_type(0).own_times.data();  // one partition: a node's row is its id
  for (bool temporal : {false, true}) {
    for (bool asked : {false, true}) {
      INFO("temporal " << temporal << ", times asked for " << asked);
      NeighborSamplerOptions o;
      o.fanouts = {5, 3};
      o.temporal = temporal ? TemporalStrategy::kUniform : TemporalStrategy::kNone;
      o.with_node_times = asked;
      auto s = NeighborSampler::Create(&part, o);
      REQUIRE(s.ok());
      const SampledSubgraph g = testing::RunSampler(**s, {11, 12, 13});
      const SampledNodes& n = g.nodes[0];
      REQUIRE(n.ids.size() > 3);
      CHECK(g.node_times == asked);
      CHECK(g.temporal == temporal);
      CHECK(n.times.size() == (asked ? n.ids.size() : 0));
      for (size_t i = 0; i < n.times.size(); ++i) CHECK(n.times[i] == stored[n.ids[i]]);
      // The seeds at their node times.
      CHECK(n.seed_times ==
            (temporal ? std::vector<int64_t>{stored[11], stored[12], stored[13]} : std::vector<int64_t>{}));
      CHECK(n.sampled_times.size() == (temporal ? n.ids.size() : 0));
    }
  }
}

TEST_CASE("a partition whose times are unsorted, miscounted or before the neighbour's time is refused naming the file",
          "[temporal]") {
  GraphData g = TimeGraph();
  g.node_types[0].times = {0, 0, 0, 0, 0, 0, 0, 0};
  TempDir dir;
  REQUIRE(testing::WritePartition(g, dir.path()) != nullptr);
  const std::string file = EdgeDir(dir.path(), "node__to__node") + "/time.npy";
  auto good = MappedNpy::Open(file);
  REQUIRE(good.ok());
  const std::vector<int64_t> stored(good->data<int64_t>(), good->data<int64_t>() + good->num_elements());
  good = absl::InternalError("closed");

  std::vector<int64_t> unsorted = stored;
  std::swap(unsorted[0], unsorted[1]);  // row 0: 10, 20, ... -> 20, 10
  std::vector<int64_t> short_file(stored.begin(), stored.end() - 1);
  REQUIRE(WriteNpyVector(file, unsorted).ok());
  auto loaded = Partition::Load(dir.path());
  REQUIRE(!loaded.ok());
  CHECK_THAT(std::string(loaded.status().message()), Catch::Contains("time.npy") && Catch::Contains("sorted by time"));
  REQUIRE(WriteNpyVector(file, short_file).ok());
  loaded = Partition::Load(dir.path());
  REQUIRE(!loaded.ok());
  CHECK_THAT(std::string(loaded.status().message()), Catch::Contains("time.npy"));

  // Every edge must be visible no earlier than its neighbour: node 1 at 11 is after 0 -> 1 [10].
  REQUIRE(WriteNpyVector(file, stored).ok());
  std::vector<int64_t> node_times(8, 0);
  node_times[1] = 11;
  REQUIRE(WriteNpyVector(BookFile(dir.path(), "node", "time"), node_times).ok());
  loaded = Partition::Load(dir.path());
  REQUIRE(!loaded.ok());
  CHECK_THAT(std::string(loaded.status().message()), Catch::Contains("time.npy") && Catch::Contains("neighbour 1"));

  // Edge times of the wrong length are refused before anything is written.
  GraphData bad = TimeGraph();
  bad.edge_types[0].times.pop_back();
  TempDir out;
  const absl::Status s = WritePartitions(bad, Assignment{std::vector<int32_t>(8, 0)}, WriteOptions(), out.path());
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Catch::Contains("edge times"));
}

}  // namespace
}  // namespace graphstore
