// Temporal sampling on real timestamps: MovieLens 100k (read in place from the shared data)
// converted with its rating times. The times land where the raw file has them, and a user seen
// at a time reaches only ratings made by then, over both hops and both edge types; `last`
// takes exactly the user's most recent ratings.

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/neighbor_sampler.h"
#include "tests/sampling/sampling_fixtures.h"
#include "tests/test_util.h"
#include "tools/movielens.h"

namespace graphstore {
namespace {

using testing::TempDir;

struct Rating {
  int64_t time, movie, rating;
  bool operator<(const Rating& o) const { return std::tie(time, movie) < std::tie(o.time, o.movie); }
};

// u.data read again: each user's ratings in (time, movie) order.
std::map<int64_t, std::vector<Rating>> RawRatings() {
  std::ifstream in(testing::SharedDataPath("ml-100k/u.data"));
  REQUIRE(in);
  std::map<int64_t, std::vector<Rating>> by_user;
  int64_t u, m, r, t;
  while (in >> u >> m >> r >> t) by_user[u - 1].push_back({t, m - 1, r});
  for (auto& [user, list] : by_user) std::sort(list.begin(), list.end());
  return by_user;
}

const GraphData& TimedMovieLens() {
  static GraphData* g = [] {
    MovieLensOptions o;
    o.times = true;
    auto r = ReadMovieLens(testing::SharedDataPath("ml-100k"), o);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    return new GraphData(*std::move(r));
  }();
  return *g;
}

// The stored time of every edge of a type, by edge id.
std::unordered_map<int64_t, int64_t> TimesById(const Partition& p, int edge_type) {
  const EdgeTypeStore& et = p.edge_type(edge_type);
  REQUIRE(et.times_data() != nullptr);
  std::unordered_map<int64_t, int64_t> out;
  for (int64_t pos = 0; pos < et.num_local; ++pos) out[et.EdgeId(pos)] = et.times_data()[pos];
  return out;
}

TEST_CASE("MovieLens with times: each rating keeps its timestamp, each node its first rating", "[movielens][temporal]") {
  const auto raw = RawRatings();
  const GraphData& g = TimedMovieLens();
  REQUIRE(g.edge_types.size() == 2);
  const EdgeTypeData& rates = g.edge_types[0];
  const EdgeTypeData& rev = g.edge_types[1];
  REQUIRE(rates.times.size() == rates.src.size());
  CHECK(rev.times == rates.times);
  // (user, movie) pairs are unique in ml-100k, so each edge's time is that rating's.
  std::map<std::pair<int64_t, int64_t>, int64_t> when;
  std::map<int64_t, int64_t> first_of_movie;
  for (const auto& [user, list] : raw) {
    for (const Rating& r : list) {
      when[{user, r.movie}] = r.time;
      auto it = first_of_movie.find(r.movie);
      if (it == first_of_movie.end() || r.time < it->second) first_of_movie[r.movie] = r.time;
    }
  }
  for (size_t k = 0; k < rates.src.size(); ++k) {
    INFO("edge " << k << ": user " << rates.src[k] << " -> movie " << rates.dst[k]);
    REQUIRE(rates.times[k] == when.at({rates.src[k], rates.dst[k]}));
  }
  const NodeTypeData& users = g.node_types[0];
  const NodeTypeData& movies = g.node_types[1];
  REQUIRE(users.times.size() == 943);
  REQUIRE(movies.times.size() == 1682);
  for (const auto& [user, list] : raw) CHECK(users.times[user] == list.front().time);
  for (const auto& [movie, t] : first_of_movie) CHECK(movies.times[movie] == t);
}

TEST_CASE("MovieLens with times: a user seen at a time reaches only ratings made by then; LAST takes the latest",
          "[movielens][temporal]") {
  const auto raw = RawRatings();
  TempDir dir;
  const std::string path = dir / "ml";
  WriteOptions w;
  REQUIRE(WritePartitions(TimedMovieLens(), RandomAssignment(TimedMovieLens(), 1, 1), w, path).ok());
  auto loaded = Partition::Load(path);
  INFO(loaded.status().ToString());
  REQUIRE(loaded.ok());
  const Partition& p = **loaded;
  const int user_type = testing::TypeIndex(p, "user");
  const int rates = testing::EdgeTypeIndex(p, "user__rates__movie");
  const int rev = testing::EdgeTypeIndex(p, "movie__rev_rates__user");
  const auto rates_time = TimesById(p, rates);
  const auto rev_time = TimesById(p, rev);

  auto make = [&](std::vector<int> fanouts, TemporalStrategy strategy) {
    NeighborSamplerOptions o;
    o.fanouts = std::move(fanouts);
    o.temporal = strategy;
    o.with_edge_ids = true;
    auto s = NeighborSampler::Create(&p, o);
    INFO(s.status().ToString());
    REQUIRE(s.ok());
    return *std::move(s);
  };
  auto uniform = make({-1, 8}, TemporalStrategy::kUniform);
  auto last = make({5}, TemporalStrategy::kLast);

  int64_t checked = 0, cut = 0, users = 0;
  for (const auto& [user, list] : raw) {
    if (user % 19 != 0) continue;
    ++users;
    // The user halfway through their training ratings (the graph holds the first 80 %).
    const size_t n_train = list.size() * 8 / 10;
    const int64_t t = list[n_train / 2].time;
    testing::SampleAt at;
    at.node_type = user_type;
    at.times = &t;
    at.batch = user;
    // Every node of a one-seed batch takes the seed's time: no edge of either type is newer.
    const SampledSubgraph g = testing::RunSampler(*uniform, {user}, at);
    for (const auto& [type, times] : {std::make_pair(rates, &rates_time), std::make_pair(rev, &rev_time)}) {
      for (int64_t eid : g.edges[type].eids) {
        INFO("user " << user << " at " << t << ", edge type " << type << ", edge " << eid);
        REQUIRE(times->at(eid) <= t);
        ++checked;
      }
    }
    const int64_t hop1 = g.edges[rates].num_sampled_edges[0];
    // All of the user's ratings at or before t (fanout -1), and only those.
    std::set<int64_t> allowed, latest;
    std::vector<int64_t> in_order;
    for (size_t k = 0; k < n_train; ++k) {
      if (list[k].time <= t) in_order.push_back(list[k].movie);
    }
    allowed.insert(in_order.begin(), in_order.end());
    CHECK(hop1 == static_cast<int64_t>(allowed.size()));
    cut += hop1 < static_cast<int64_t>(n_train);
    // LAST: the five most recent of them, ties broken by movie id as the rows are sorted.
    for (size_t k = in_order.size() - std::min<size_t>(5, in_order.size()); k < in_order.size(); ++k) {
      latest.insert(in_order[k]);
    }
    std::set<int64_t> got;
    for (const auto& [u, m] : testing::EdgePairs(p, testing::RunSampler(*last, {user}, at), rates)) {
      CHECK(u == user);
      got.insert(m);
    }
    INFO("user " << user << " at " << t);
    CHECK(got == latest);
  }
  CHECK(users >= 40);
  CHECK(cut == users);     // halfway through, every user's row is cut
  CHECK(checked > 5000);   // the check saw real samples
}

}  // namespace
}  // namespace graphstore
