// IdSet and ChannelInput: what a channel's positions stand for, without a list per seed.

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "server/service/channel_input.h"

namespace graphstore {
namespace {

// A set of about `density` of [0, universe), and its members ascending.
std::vector<int64_t> RandomMembers(int64_t universe, double density, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution in(density);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < universe; ++i) {
    if (in(rng)) ids.push_back(i);
  }
  return ids;
}

TEST_CASE("a set selects its members in ascending order, dense or sparse") {
  for (double density : {1.0, 0.5, 0.01, 0.0005}) {
    CAPTURE(density);
    const int64_t universe = 300'001;
    std::vector<int64_t> want = RandomMembers(universe, density, 7);
    std::vector<int64_t> shuffled = want;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(3));
    IdSet set(universe);
    REQUIRE(set.Add(shuffled).ok());
    set.Seal();
    REQUIRE(set.size() == static_cast<int64_t>(want.size()));
    bool all = true;
    for (size_t k = 0; k < want.size(); ++k) all = all && set.Select(static_cast<int64_t>(k)) == want[k];
    CHECK(all);
    CHECK(set.ByteSize() <= static_cast<size_t>(0.15 * universe) + 64);
  }
}

TEST_CASE("a set selects members bunched unevenly, past where their spread would put them") {
  // A dense run, a sparse tail, another run: the guess from the hints is far off in places.
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 20'000; ++i) want.push_back(i);
  for (int64_t i = 20'000; i < 2'000'000; i += 997) want.push_back(i);
  for (int64_t i = 2'000'000; i < 2'030'000; ++i) want.push_back(i);
  IdSet set(2'100'000);
  REQUIRE(set.Add(want).ok());
  set.Seal();
  REQUIRE(set.size() == static_cast<int64_t>(want.size()));
  bool all = true;
  for (size_t k = 0; k < want.size(); ++k) all = all && set.Select(static_cast<int64_t>(k)) == want[k];
  CHECK(all);
}

TEST_CASE("a set refuses an id outside its universe, naming it") {
  IdSet set(10);
  const std::vector<int64_t> bad{3, 10};
  absl::Status s = set.Add(bad);
  CHECK(s.code() == absl::StatusCode::kOutOfRange);
  CHECK(std::string(s.message()) == "id 10 is outside [0, 10)");
}

TEST_CASE("a channel's positions stand for a list, every node, or a set's members") {
  const std::vector<int64_t> positions{2, 0, 1};
  std::vector<int64_t> out(3);
  ChannelInput listed = ChannelInput::Listed({40, 10, 30});
  listed.Ids(positions.data(), positions.size(), out.data());
  CHECK(out == std::vector<int64_t>{30, 40, 10});
  CHECK(listed.OwnBytes() == 24);
  ChannelInput every = ChannelInput::Every(1'000'000'000);
  every.Ids(positions.data(), positions.size(), out.data());
  CHECK(out == positions);
  CHECK(every.size() == 1'000'000'000);
  CHECK(every.OwnBytes() == 0);
  auto set = std::make_shared<IdSet>(100);
  REQUIRE(set->Add(std::vector<int64_t>{99, 5, 50}).ok());
  set->Seal();
  ChannelInput members = ChannelInput::Members(set);
  members.Ids(positions.data(), positions.size(), out.data());
  CHECK(out == std::vector<int64_t>{99, 5, 50});
  CHECK(members.size() == 3);
  CHECK(members.OwnBytes() == 0);
}

TEST_CASE("the server's sets are built once while a channel holds them") {
  InputSets sets;
  int builds = 0;
  auto build = [&]() -> absl::StatusOr<std::shared_ptr<IdSet>> {
    ++builds;
    auto set = std::make_shared<IdSet>(64);
    if (auto s = set->Add(std::vector<int64_t>{1, 2}); !s.ok()) return s;
    return set;
  };
  auto a = sets.Get(0, "train", build);
  auto b = sets.Get(0, "train", build);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->get() == b->get());
  CHECK(builds == 1);
  CHECK((*a)->size() == 2);
  CHECK(sets.ByteSize() == (*a)->ByteSize());
  a->reset();
  b->reset();
  CHECK(sets.ByteSize() == 0);
  auto c = sets.Get(0, "train", build);
  CHECK(builds == 2);
  auto failing = [&]() -> absl::StatusOr<std::shared_ptr<IdSet>> { return absl::UnavailableError("peer gone"); };
  CHECK(sets.Get(1, "train", failing).status().code() == absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace graphstore
