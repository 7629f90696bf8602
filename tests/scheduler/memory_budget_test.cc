// The server-wide budget of unread sampled bytes, shared by backends, with the fake sampler.

#include <catch2/catch.hpp>

#include <memory>

#include "scheduler/memory_budget.h"
#include "tests/scheduler/fake_sampler.h"

namespace graphstore::scheduler {
namespace {

using namespace testing;

// Every channel of `b` is idle: nothing in flight and nothing it could start.
bool Settled(Backend& b) {
  const BackendStats s = b.Stats();
  if (s.num_runnable_channels != 0) return false;
  for (const auto& c : s.channels) {
    if (c.in_flight != 0) return false;
  }
  return true;
}

TEST_CASE("channels nobody reads stay within the server-wide budget, across backends", "[budget]") {
  FakeSampler fake;  // every batch is 100 bytes
  auto budget = std::make_shared<MemoryBudget>(1000);
  BackendOptions bo;
  bo.speculative_batches = 2;
  bo.max_buffered_messages = 100;
  bo.budget = budget;
  Backend a(bo, fake.fn()), b(bo, fake.fn());
  // 40 registered channels, never started: sampling ahead stops at half the budget (plus what
  // the workers had in flight), not at 40 x 2 batches.
  for (uint64_t id = 1; id <= 20; ++id) {
    REQUIRE(a.AddChannel(id, Seeds(100)).ok());
    REQUIRE(b.AddChannel(id, Seeds(100)).ok());
  }
  REQUIRE(graphstore::testing::PollUntil([&] { return budget->used() >= 500 && Settled(a) && Settled(b); }));
  CHECK(budget->used() <= 500 + 4 * 100);
  CHECK(a.Stats().buffered_bytes + b.Stats().buffered_bytes == budget->used());

  // Started and never read: each channel may hold its fair share (1000 / 40 < one batch, so
  // one batch for a channel holding none), not its buffer of 100 messages; the batches sampled
  // ahead (at most 900 bytes, above) are adopted by the epochs.
  for (uint64_t id = 1; id <= 20; ++id) {
    REQUIRE(a.StartEpoch(id, 0).ok());
    REQUIRE(b.StartEpoch(id, 0).ok());
  }
  auto all_hold_a_batch = [&] {
    for (Backend* x : {&a, &b}) {
      for (const auto& c : x->Stats().channels) {
        if (c.buffered_messages == 0) return false;
      }
    }
    return true;
  };
  REQUIRE(graphstore::testing::PollUntil([&] { return all_hold_a_batch() && Settled(a) && Settled(b); }));
  CHECK(!budget->HasRoom());
  // Below the limit channels sample freely; past it only those holding nothing do.
  CHECK(budget->used() <= 1000 + 40 * 100 + 4 * 100);
  for (const auto& c : a.Stats().channels) CHECK(c.buffered_messages < 15);

  // Readers catch up: popping frees room, and the budget's kick lets the channels go on;
  // one channel read to its end gets every batch.
  CHECK(Drain(a, 1, 0).size() == 100);
  // Removing channels frees their bytes.
  for (uint64_t id = 1; id <= 20; ++id) {
    a.RemoveChannel(id);
    b.RemoveChannel(id);
  }
  CHECK(budget->used() == 0);
  CHECK(budget->HasRoom());
}

TEST_CASE("a channel holding nothing always gets a batch, however full the budget", "[budget]") {
  FakeSampler fake;
  auto budget = std::make_shared<MemoryBudget>(150);
  BackendOptions bo;
  bo.budget = budget;
  Backend backend(bo, fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(50)).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  REQUIRE(graphstore::testing::PollUntil([&] { return !budget->HasRoom() && Settled(backend); }));
  REQUIRE(backend.AddChannel(2, Seeds(10)).ok());
  REQUIRE(backend.StartEpoch(2, 0).ok());
  CHECK(Drain(backend, 2, 0).size() == 10);  // the second channel runs to its end
  CHECK(Drain(backend, 1, 0).size() == 50);  // and so does the first, once read
  CHECK(budget->used() == 0);
}

}  // namespace
}  // namespace graphstore::scheduler
