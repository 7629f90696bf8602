// The backend's epochs: seed order, sampling ahead, resume and cancellation, with a fake sampler.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "scheduler/backend.h"
#include "tests/scheduler/fake_sampler.h"

namespace graphstore::scheduler {
namespace {

using namespace std::chrono_literals;
using namespace testing;
using Kind = Delivery::Kind;

// Waits until the channel holds `n` batches sampled ahead.
void WaitForSpeculation(Backend& b, uint64_t id, int n) {
  REQUIRE(graphstore::testing::PollUntil([&] { return b.Describe(id)->speculative_buffered >= n; }));
  REQUIRE(b.Describe(id)->speculative_buffered == n);
}
TEST_CASE("every seed is delivered exactly once per epoch, shuffled or not", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  for (bool shuffle : {false, true}) {
    INFO("shuffle " << shuffle);
    const uint64_t id = shuffle ? 2 : 1;
    ChannelOptions o;
    for (int64_t i = 0; i < 1000; ++i) o.seeds.push_back(3 * i + 7);
    o.batch_size = 64;
    if (shuffle) o.order = Shuffle(99);
    REQUIRE(backend.AddChannel(id, o).ok());
    std::vector<std::vector<int64_t>> orders;
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      REQUIRE(*backend.StartEpoch(id, epoch) == StartOutcome::kStarted);
      Kind last;
      auto batches = Drain(backend, id, epoch, &last);
      CHECK(last == Kind::kEndOfEpoch);
      REQUIRE(batches.size() == 16);  // ceil(1000 / 64)
      CHECK(batches.at(15).size() == 1000 - 15 * 64);
      std::vector<int64_t> all;
      for (const auto& [b, seeds] : batches) all.insert(all.end(), seeds.begin(), seeds.end());
      orders.push_back(all);
      std::sort(all.begin(), all.end());
      CHECK(all == o.seeds);
    }
    if (shuffle) {
      CHECK(orders[0] != orders[1]);
      CHECK(orders[0] != o.seeds);
    } else {
      CHECK(orders[0] == o.seeds);
    }
  }
}
TEST_CASE("shuffles depend only on the channel seed and the epoch", "[backend]") {
  FakeSampler fake;
  BackendOptions one;
  one.num_workers = 1;
  BackendOptions two;
  two.num_workers = 2;
  Backend a(one, fake.fn());
  Backend b(two, fake.fn());
  ChannelOptions o = Seeds(500, 50);
  o.order = Shuffle(1234);
  REQUIRE(a.AddChannel(1, o).ok());
  REQUIRE(b.AddChannel(77, o).ok());
  REQUIRE(a.StartEpoch(1, 4).ok());
  REQUIRE(b.StartEpoch(77, 4).ok());
  CHECK(Drain(a, 1, 4) == Drain(b, 77, 4));
}
TEST_CASE("drop_last drops only a short final batch", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  ChannelOptions o = Seeds(100, 30);
  o.drop_last = true;
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(*backend.NumBatches(1) == 3);
  REQUIRE(backend.StartEpoch(1, 0).ok());
  auto batches = Drain(backend, 1, 0);
  CHECK(batches.size() == 3);
  for (const auto& [b, seeds] : batches) CHECK(seeds.size() == 30);
}
TEST_CASE("StartEpoch ignores a repeated or stale epoch; an empty epoch ends at once", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(10, 5)).ok());
  CHECK(*backend.StartEpoch(1, 2) == StartOutcome::kStarted);
  CHECK(*backend.StartEpoch(1, 2) == StartOutcome::kAlreadyStarted);
  CHECK(*backend.StartEpoch(1, 1) == StartOutcome::kStale);
  CHECK(Drain(backend, 1, 2).size() == 2);
  CHECK(absl::IsInvalidArgument(backend.StartEpoch(1, -1).status()));
  CHECK(absl::IsNotFound(backend.StartEpoch(42, 0).status()));

  REQUIRE(backend.AddChannel(2, Seeds(0)).ok());
  REQUIRE(backend.StartEpoch(2, 0).ok());
  CHECK(backend.TryPop(2, 0).kind == Kind::kEndOfEpoch);
  // Asking for an epoch that is not current closes with a reason.
  CHECK(backend.TryPop(1, 1).kind == Kind::kClosed);
  CHECK(absl::IsFailedPrecondition(backend.TryPop(1, 3).status));
}
TEST_CASE("an epoch started from a batch delivers exactly the remaining batches", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  ChannelOptions o = Seeds(100, 10);
  o.order = Shuffle(5);
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(backend.AddChannel(2, o).ok());
  REQUIRE(backend.StartEpoch(1, 3).ok());
  REQUIRE(backend.StartEpoch(2, 3, 6).ok());
  auto full = Drain(backend, 1, 3);
  auto rest = Drain(backend, 2, 3);
  REQUIRE(rest.size() == 4);
  for (const auto& [b, seeds] : rest) CHECK(seeds == full.at(b));
}
TEST_CASE("batches sampled ahead are adopted by the next epoch and equal a fresh sampling", "[backend]") {
  FakeSampler fake;
  BackendOptions ahead;
  ahead.speculative_batches = 2;
  Backend backend(ahead, fake.fn());
  Backend plain(BackendOptions(), fake.fn());
  ChannelOptions o = Seeds(50, 5);
  o.order = Shuffle(11);
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(plain.AddChannel(1, o).ok());

  // Before the first epoch: its first two batches are prepared, and nothing more.
  WaitForSpeculation(backend, 1, 2);
  WaitIdle(backend, 1);
  RunWitnessEpoch(backend, 2);
  CHECK(backend.Describe(1)->speculative_epoch == 0);
  CHECK(backend.Describe(1)->total_batches_sampled == 2);
  fake.Close();  // no sampling from here: only adopted batches can be delivered
  REQUIRE(backend.StartEpoch(1, 0).ok());
  std::set<int64_t> first;
  for (int i = 0; i < 2; ++i) {
    Delivery d = backend.TryPop(1, 0);
    REQUIRE(d.kind == Kind::kMessage);
    first.insert(d.batch_index);
  }
  CHECK(first == std::set<int64_t>{0, 1});
  fake.Open();
  Kind last;
  auto got0 = Drain(backend, 1, 0, &last);
  CHECK(last == Kind::kEndOfEpoch);
  CHECK(got0.size() == 8);

  // The next epoch's batches are prepared while the consumer is between epochs.
  WaitForSpeculation(backend, 1, 2);
  CHECK(backend.Describe(1)->speculative_epoch == 1);
  REQUIRE(backend.StartEpoch(1, 1).ok());
  CHECK(backend.Describe(1)->speculative_buffered == 0);
  auto got1 = Drain(backend, 1, 1);
  REQUIRE(plain.StartEpoch(1, 1).ok());
  auto want1 = Drain(plain, 1, 1);
  CHECK(got1.size() == 10);
  for (const auto& [b, seeds] : want1) CHECK(got1.at(b) == seeds);
}
TEST_CASE("an epoch other than the prepared one discards what was sampled ahead", "[backend]") {
  FakeSampler fake;
  BackendOptions ahead;
  ahead.speculative_batches = 3;
  Backend backend(ahead, fake.fn());
  Backend plain(BackendOptions(), fake.fn());
  ChannelOptions o = Seeds(40, 4);
  o.order = Shuffle(3);
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(plain.AddChannel(1, o).ok());
  WaitForSpeculation(backend, 1, 3);
  const int before = live_payloads.load();
  fake.Close();  // hold new sampling at the gate
  REQUIRE(backend.StartEpoch(1, 5).ok());  // epoch 0 was prepared; 5 is asked for
  CHECK(live_payloads.load() == before - 3);  // the prepared ones are gone
  fake.Open();
  auto got = Drain(backend, 1, 5);
  REQUIRE(plain.StartEpoch(1, 5).ok());
  CHECK(got == Drain(plain, 1, 5));
  // Resuming from a batch never reuses the prepared batch 0 either.
  WaitForSpeculation(backend, 1, 3);
  REQUIRE(backend.StartEpoch(1, 6, 8).ok());
  auto rest = Drain(backend, 1, 6);
  REQUIRE(plain.StartEpoch(1, 6).ok());
  auto full = Drain(plain, 1, 6);
  REQUIRE(rest.size() == 2);
  for (const auto& [b, seeds] : rest) CHECK(seeds == full.at(b));
}
TEST_CASE("a cancelled channel samples nothing ahead, and removal frees what it had", "[backend]") {
  FakeSampler fake;
  BackendOptions ahead;
  ahead.speculative_batches = 2;
  Backend backend(ahead, fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(20, 2)).ok());
  REQUIRE(backend.AddChannel(2, Seeds(20, 2)).ok());
  WaitForSpeculation(backend, 1, 2);
  WaitForSpeculation(backend, 2, 2);
  REQUIRE(backend.StartEpoch(1, 0).ok());
  REQUIRE(backend.Pop(1, 0, 10s).kind == Kind::kMessage);
  CHECK(backend.CancelEpoch(1));
  WaitIdle(backend, 1);
  const int calls = fake.calls(1);
  RunWitnessEpoch(backend, 2);
  CHECK(backend.Describe(1)->speculative_buffered == 0);
  CHECK(fake.calls(1) == calls);
  const int before = live_payloads.load();
  CHECK(backend.RemoveChannel(2));
  CHECK(live_payloads.load() == before - 2);
}
TEST_CASE("resuming an epoch from a batch delivers exactly the rest, even after a cancel", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  ChannelOptions o = Seeds(60, 6);
  o.order = Shuffle(9);
  o.ordered = true;
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(backend.StartEpoch(1, 2).ok());
  auto full = Drain(backend, 1, 2);
  REQUIRE(full.size() == 10);
  REQUIRE(backend.StartEpoch(1, 3).ok());
  for (int i = 0; i < 3; ++i) REQUIRE(backend.Pop(1, 3, 10s).kind == Kind::kMessage);
  CHECK(backend.CancelEpoch(1));
  REQUIRE(backend.ResumeEpoch(1, 3, 3).ok());
  std::vector<int64_t> order;
  while (true) {
    Delivery d = backend.Pop(1, 3, 10s);
    if (d.kind != Kind::kMessage) {
      CHECK(d.kind == Kind::kEndOfEpoch);
      break;
    }
    order.push_back(d.batch_index);
  }
  CHECK(order == std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9});
  CHECK(backend.ResumeEpoch(1, 2, 0).code() == absl::StatusCode::kFailedPrecondition);
  CHECK(backend.ResumeEpoch(1, 3, 11).code() == absl::StatusCode::kInvalidArgument);
  CHECK(backend.ResumeEpoch(1, 3, -1).code() == absl::StatusCode::kInvalidArgument);
  CHECK(backend.ResumeEpoch(7, 3, 0).code() == absl::StatusCode::kNotFound);
  REQUIRE(backend.ResumeEpoch(1, 3, 10).ok());
  CHECK(backend.Pop(1, 3, 10s).kind == Kind::kEndOfEpoch);
}
TEST_CASE("cancelling an epoch frees its buffer and stops its sampling", "[backend]") {
  FakeSampler fake;
  BackendOptions bo;
  bo.max_buffered_messages = 3;
  Backend backend(bo, fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(100)).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  REQUIRE(backend.Pop(1, 0, 10s).kind == Kind::kMessage);
  CHECK(backend.CancelEpoch(1));
  WaitIdle(backend, 1);
  const int calls = fake.calls(1);
  RunWitnessEpoch(backend);
  CHECK(fake.calls(1) == calls);
  Delivery d = backend.TryPop(1, 0);
  CHECK(d.kind == Kind::kClosed);
  CHECK(absl::IsCancelled(d.status));
  CHECK(backend.Describe(1)->buffered_messages == 0);
  CHECK(backend.Describe(1)->state == ChannelState::kCancelled);
  REQUIRE(backend.StartEpoch(1, 1).ok());
  CHECK(Drain(backend, 1, 1).size() == 100);
  CHECK(!backend.CancelEpoch(2));
}
TEST_CASE("cancelling an epoch the channel has left leaves its current epoch alone", "[backend]") {
  // A stream of epoch 0 that ends after the trainer started epoch 1 cancels nothing.
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(100)).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  REQUIRE(backend.Pop(1, 0, 10s).kind == Kind::kMessage);
  REQUIRE(backend.StartEpoch(1, 1).ok());
  CHECK(!backend.CancelEpoch(1, 0));
  CHECK(backend.Describe(1)->state != ChannelState::kCancelled);
  CHECK(Drain(backend, 1, 1).size() == 100);
  // Its own epoch is cancelled as CancelEpoch(id) would.
  REQUIRE(backend.StartEpoch(1, 2).ok());
  CHECK(backend.CancelEpoch(1, 2));
  CHECK(backend.Describe(1)->state == ChannelState::kCancelled);
  CHECK(backend.TryPop(1, 2).kind == Kind::kClosed);
  CHECK(!backend.CancelEpoch(2, 0));
}
TEST_CASE("a channel over positions holds no list of its seeds: epochs of 10^11 start at once", "[backend]") {
  // A list of 10^11 positions, or an epoch's order of them, would be 800 GB: the channel holds
  // the count, and each batch's seeds are computed from the order when it is sampled.
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  ChannelOptions o;
  o.num_positions = 100'000'000'000;
  o.batch_size = 4;
  o.order = Shuffle(21);
  REQUIRE(backend.AddChannel(1, o).ok());
  auto stats = backend.Describe(1);
  REQUIRE(stats.ok());
  CHECK(stats->num_seeds == o.num_positions);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    REQUIRE(backend.StartEpoch(1, epoch).ok());
    std::vector<int64_t> seen;
    for (int k = 0; k < 3; ++k) {
      Delivery d = backend.Pop(1, epoch, 10s);
      REQUIRE(d.kind == Kind::kMessage);
      CHECK(P(d).seeds.size() == 4);
      for (int64_t s : P(d).seeds) {
        CHECK((s >= 0 && s < o.num_positions));
        seen.push_back(s);
      }
    }
    std::sort(seen.begin(), seen.end());
    CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    REQUIRE(backend.CancelEpoch(1, epoch));
  }
  backend.Stop();
}
}  // namespace
}  // namespace graphstore::scheduler
