// The backend's channels: fair scheduling, bounded buffers, failures, listeners and shutdown, with a fake sampler.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
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

TEST_CASE("a huge channel does not starve small ones: each gets its fair share of batches",
          "[backend]") {
  FakeSampler fake;
  fake.delay_for = [](const BatchTask&) { return 50us; };
  BackendOptions bo;
  bo.num_workers = 2;
  bo.max_buffered_messages = 100000;
  Backend backend(bo, fake.fn());
  constexpr int kSmall = 20;
  fake.Close();
  REQUIRE(backend.AddChannel(1, Seeds(100 * kSmall)).ok());
  for (uint64_t c = 2; c <= 4; ++c) REQUIRE(backend.AddChannel(c, Seeds(kSmall)).ok());
  for (uint64_t c = 1; c <= 4; ++c) REQUIRE(backend.StartEpoch(c, 0).ok());
  fake.Open();
  for (uint64_t c = 2; c <= 4; ++c) CHECK(Drain(backend, c, 0).size() == kSmall);
  // Batches served (over all channels) by the time each small channel's last batch started.
  const auto started = fake.started();
  for (uint64_t c = 2; c <= 4; ++c) {
    int seen = 0;
    size_t served = 0;
    for (size_t i = 0; i < started.size() && seen < kSmall; ++i) {
      seen += started[i] == c;
      served = i + 1;
    }
    INFO("channel " << c << " finished after " << served << " batches served");
    CHECK(served <= static_cast<size_t>(1.1 * 4 * kSmall));
  }
  backend.Stop();
}
TEST_CASE("each worker thread runs the start hook once, before it samples", "[backend]") {
  std::mutex mu;
  std::map<std::thread::id, int> hooked;  // thread -> worker index
  std::set<std::thread::id> sampled_on;
  int sampled_unhooked = 0;
  BackendOptions bo;
  bo.num_workers = 3;
  bo.on_worker_start = [&](int worker) {
    std::lock_guard<std::mutex> lock(mu);
    hooked[std::this_thread::get_id()] = worker;
  };
  FakeSampler fake;
  auto inner = fake.fn();
  Backend backend(bo, [&](const BatchTask& t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      sampled_on.insert(std::this_thread::get_id());
      sampled_unhooked += hooked.count(std::this_thread::get_id()) == 0;
    }
    return inner(t);
  });
  REQUIRE(backend.AddChannel(1, Seeds(60)).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  CHECK(Drain(backend, 1, 0).size() == 60);
  backend.Stop();
  std::lock_guard<std::mutex> lock(mu);
  CHECK(sampled_unhooked == 0);
  CHECK(!sampled_on.empty());
  REQUIRE(hooked.size() == 3);
  std::set<int> indices;
  for (const auto& [thread, worker] : hooked) indices.insert(worker);
  CHECK(indices == std::set<int>{0, 1, 2});
}

TEST_CASE("a channel nobody reads fills its buffer and the others still finish", "[backend]") {
  FakeSampler fake;
  BackendOptions bo;
  bo.max_buffered_messages = 4;
  Backend backend(bo, fake.fn());
  REQUIRE(backend.AddChannel(9, Seeds(1000)).ok());
  REQUIRE(backend.StartEpoch(9, 0).ok());
  for (uint64_t c = 1; c <= 3; ++c) {
    REQUIRE(backend.AddChannel(c, Seeds(200)).ok());
    REQUIRE(backend.StartEpoch(c, 0).ok());
  }
  for (uint64_t c = 1; c <= 3; ++c) {
    Kind last;
    CHECK(Drain(backend, c, 0, &last).size() == 200);
    CHECK(last == Kind::kEndOfEpoch);
  }
  auto stats = backend.Describe(9);
  REQUIRE(stats.ok());
  CHECK(stats->buffered_messages == 4);
  CHECK(stats->batches_sampled == 4);
  CHECK(fake.calls(9) == 4);
  CHECK(!stats->runnable);
}
TEST_CASE("a buffer bounded in bytes stops a channel's sampling, per stream once stripes read it", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  ChannelOptions o = Seeds(100);
  o.max_buffered_bytes = 250;  // each fake batch is 100 bytes
  o.max_in_flight = 1;
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  REQUIRE(graphstore::testing::PollUntil([&] { return backend.Describe(1)->buffered_bytes >= 300; }));
  WaitIdle(backend, 1);
  RunWitnessEpoch(backend);
  auto stats = backend.Describe(1);
  REQUIRE(stats.ok());
  CHECK(stats->buffered_bytes == 300);
  CHECK(stats->batches_sampled == 3);

  // Room for three streams: sampling goes on to 3 x 250 bytes, and stops there.
  backend.SetStreamRoom(1, 3);
  REQUIRE(graphstore::testing::PollUntil([&] { return backend.Describe(1)->buffered_bytes >= 800; }));
  WaitIdle(backend, 1);
  backend.SetStreamRoom(1, 2);  // never shrinks
  backend.SetStreamRoom(99, 2);  // unknown: nothing happens
  RunWitnessEpoch(backend);
  stats = backend.Describe(1);
  REQUIRE(stats.ok());
  CHECK(stats->buffered_bytes == 800);
  CHECK(stats->batches_sampled == 8);
}
TEST_CASE("removing a channel mid-epoch frees all its state and cancels the rest", "[backend]") {
  FakeSampler fake;
  fake.delay_for = [](const BatchTask&) { return 2ms; };
  BackendOptions bo;
  bo.max_buffered_messages = 6;
  {
    Backend backend(bo, fake.fn());
    REQUIRE(backend.AddChannel(5, Seeds(1000)).ok());
    REQUIRE(backend.StartEpoch(5, 0).ok());
    std::atomic<int> notified{0};
    REQUIRE(backend.SetListener(5, [&] { ++notified; }).ok());
    for (int i = 0; i < 3; ++i) REQUIRE(backend.Pop(5, 0, 10s).kind == Kind::kMessage);
    CHECK(backend.RemoveChannel(5));
    CHECK(!backend.RemoveChannel(5));
    const int calls_at_removal = fake.calls(5);
    // In-flight batches finish and are discarded: nothing stays alive.
    CHECK(graphstore::testing::PollUntil([&] { return live_payloads.load() == 0; }));
    CHECK(backend.num_channels() == 0);
    CHECK(backend.Stats().buffered_bytes == 0);
    CHECK(fake.calls(5) <= calls_at_removal + bo.max_in_flight_per_channel);
    CHECK(notified.load() > 0);
    Delivery closed = backend.TryPop(5, 0);
    CHECK(closed.kind == Kind::kClosed);
    CHECK_THAT(std::string(closed.status.message()), Catch::Contains("destroyed"));
    CHECK(absl::IsNotFound(backend.StartEpoch(5, 1).status()));
    CHECK(absl::IsNotFound(backend.TryPop(6, 0).status));
  }
  CHECK(live_payloads.load() == 0);
}
TEST_CASE("a failing sample call fails its own channel only", "[backend]") {
  FakeSampler fake;
  fake.fail_channel = 2;
  fake.fail_batch = 3;
  Backend backend(BackendOptions(), fake.fn());
  for (uint64_t c = 1; c <= 3; ++c) {
    ChannelOptions o = Seeds(50, 5);
    o.ordered = true;
    REQUIRE(backend.AddChannel(c, o).ok());
    REQUIRE(backend.StartEpoch(c, 0).ok());
  }
  Kind last;
  auto got = Drain(backend, 2, 0, &last);
  CHECK(last == Kind::kFailed);
  CHECK(got.size() == 3);  // ordered: batches 0, 1, 2, then the failure of batch 3
  Delivery d = backend.TryPop(2, 0);
  CHECK(d.kind == Kind::kFailed);
  CHECK_THAT(std::string(d.status.message()), Catch::Contains("batch 3 of epoch 0"));
  CHECK_THAT(std::string(d.status.message()), Catch::Contains("injected failure"));
  CHECK(backend.Describe(2)->state == ChannelState::kFailed);
  for (uint64_t c : {1, 3}) {
    CHECK(Drain(backend, c, 0, &last).size() == 10);
    CHECK(last == Kind::kEndOfEpoch);
  }
  // A new epoch clears the failure (the injected failure is on batch 3 only of epoch 0... and 1).
  fake.fail_channel = 0;
  REQUIRE(backend.StartEpoch(2, 1).ok());
  CHECK(Drain(backend, 2, 1, &last).size() == 10);
  CHECK(last == Kind::kEndOfEpoch);
}
TEST_CASE("ordered delivery yields batches in order even when they finish out of order",
          "[backend]") {
  FakeSampler fake;
  fake.delay_for = [](const BatchTask& t) { return std::chrono::microseconds(t.batch_index % 2 == 0 ? 3000 : 0); };
  BackendOptions bo;
  bo.max_in_flight_per_channel = 2;
  Backend backend(bo, fake.fn());
  ChannelOptions o = Seeds(20, 1);
  o.ordered = true;
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  for (int64_t expect = 0; expect < 20; ++expect) {
    Delivery d = backend.Pop(1, 0, 10s);
    REQUIRE(d.kind == Kind::kMessage);
    CHECK(d.batch_index == expect);
  }
  CHECK(backend.Pop(1, 0, 10s).kind == Kind::kEndOfEpoch);
}
TEST_CASE("the listener fires for batches and the end of the epoch", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(4)).ok());
  std::mutex mu;
  std::condition_variable cv;
  int fired = 0;
  auto token = backend.SetListener(1, [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++fired;
    cv.notify_all();
  });
  REQUIRE(token.ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    CHECK(cv.wait_for(lock, 10s, [&] { return fired >= 5; }));
  }
  backend.ClearListener(1, *token);
  const int before = fired;
  REQUIRE(backend.StartEpoch(1, 1).ok());
  Drain(backend, 1, 1);
  CHECK(fired == before);
}
TEST_CASE("Stop closes live channels and joins the workers", "[backend]") {
  FakeSampler fake;
  fake.delay_for = [](const BatchTask&) { return 1ms; };
  Backend backend(BackendOptions(), fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(10000)).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  Kind last = Kind::kMessage;
  std::thread reader([&] { Drain(backend, 1, 0, &last); });  // no assertion off the main thread
  // Stop while the reader is mid-epoch.
  REQUIRE(graphstore::testing::PollUntil([&] { return backend.Describe(1)->batches_delivered > 0; }));
  backend.Stop();
  reader.join();
  CHECK(last == Kind::kClosed);
  backend.Stop();
  CHECK(absl::IsFailedPrecondition(backend.AddChannel(2, Seeds(1))));
  CHECK(live_payloads.load() == 0);
}
TEST_CASE("a listener cleared after removal is never called again", "[backend]") {
  FakeSampler fake;
  fake.delay_for = [](const BatchTask&) { return 5ms; };
  Backend backend(BackendOptions(), fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(100)).ok());
  std::atomic<int> calls{0};
  auto token = backend.SetListener(1, [&] { ++calls; });
  REQUIRE(token.ok());
  fake.Close();  // hold the batches in flight at the sampler
  REQUIRE(backend.StartEpoch(1, 0).ok());
  REQUIRE(graphstore::testing::PollUntil([&] { return backend.Describe(1)->in_flight > 0; }));
  backend.RemoveChannel(1);
  backend.ClearListener(1, *token);
  const int after = calls.load();
  fake.Open();  // the in-flight batches finish after the removal
  RunWitnessEpoch(backend);  // and have, once another channel's whole epoch went through
  CHECK(calls.load() == after);
}
TEST_CASE("two stripes read one channel in parallel, each its batches in order, and end apart", "[backend][stripes]") {
  FakeSampler fake;
  BackendOptions bo;
  bo.num_workers = 2;
  Backend backend(bo, fake.fn());
  ChannelOptions o = Seeds(9);
  o.ordered = true;
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  std::vector<int64_t> got[2];
  Kind last[2] = {Kind::kPending, Kind::kPending};
  std::vector<std::thread> readers;
  for (int k = 0; k < 2; ++k) {
    readers.emplace_back([&, k] {
      while (true) {
        Delivery d = backend.Pop(1, 0, 10s, Stripe{k, 2});
        if (d.kind != Kind::kMessage) {
          last[k] = d.kind;
          return;
        }
        got[k].push_back(d.batch_index);
      }
    });
  }
  for (auto& t : readers) t.join();
  CHECK(got[0] == std::vector<int64_t>{0, 2, 4, 6, 8});
  CHECK(got[1] == std::vector<int64_t>{1, 3, 5, 7});
  CHECK(last[0] == Kind::kEndOfEpoch);
  CHECK(last[1] == Kind::kEndOfEpoch);
  CHECK(backend.Describe(1)->state == ChannelState::kEpochDone);
  // An unordered channel: each stripe still gets only its own batches, all of them.
  REQUIRE(backend.AddChannel(2, Seeds(7)).ok());
  REQUIRE(backend.StartEpoch(2, 0).ok());
  std::set<int64_t> mine[3];
  for (int k = 0; k < 3; ++k) {
    while (true) {
      Delivery d = backend.Pop(2, 0, 10s, Stripe{k, 3});
      if (d.kind != Kind::kMessage) {
        CHECK(d.kind == Kind::kEndOfEpoch);
        break;
      }
      CHECK(d.batch_index % 3 == k);
      mine[k].insert(d.batch_index);
    }
  }
  CHECK(mine[0] == std::set<int64_t>{0, 3, 6});
  CHECK(mine[1] == std::set<int64_t>{1, 4});
  CHECK(mine[2] == std::set<int64_t>{2, 5});
  backend.Stop();
}
TEST_CASE("a stripe resumed where others already delivered restarts the epoch there for all", "[backend][stripes]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  ChannelOptions o = Seeds(10);
  o.ordered = true;
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  const Stripe first{0, 2}, second{1, 2};
  Delivery d = backend.Pop(1, 0, 10s, first);
  REQUIRE(d.kind == Kind::kMessage);
  CHECK(d.batch_index == 0);
  // The second stripe opening at the epoch's start, having received nothing: nothing redone.
  REQUIRE(backend.ResumeEpoch(1, 0, 0, second).ok());
  d = backend.Pop(1, 0, 10s, first);
  REQUIRE(d.kind == Kind::kMessage);
  CHECK(d.batch_index == 2);
  d = backend.Pop(1, 0, 10s, second);
  REQUIRE(d.kind == Kind::kMessage);
  CHECK(d.batch_index == 1);
  // The second stripe's reader lost its stream after batch 1 and the trainer's first missing
  // batch is 3: both stripes start again from there.
  REQUIRE(backend.ResumeEpoch(1, 0, 3, second).ok());
  std::vector<int64_t> got[2];
  for (int k = 0; k < 2; ++k) {
    for (Delivery e; (e = backend.Pop(1, 0, 10s, Stripe{k, 2})).kind == Kind::kMessage;) got[k].push_back(e.batch_index);
  }
  CHECK(got[0] == std::vector<int64_t>{4, 6, 8});
  CHECK(got[1] == std::vector<int64_t>{3, 5, 7, 9});
  backend.Stop();
}
TEST_CASE("a stripe's arithmetic: its first batch from a start and how many it holds", "[backend][stripes]") {
  const Stripe s{2, 3};
  CHECK(s.First(0) == 2);
  CHECK(s.First(2) == 2);
  CHECK(s.First(3) == 5);
  CHECK(s.Count(0, 9) == 3);
  CHECK(s.Count(3, 5) == 0);
  CHECK(s.Count(3, 6) == 1);
  CHECK(Stripe{}.Count(4, 10) == 6);
}
TEST_CASE("listeners are one per stream: clearing one leaves the others in place", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  REQUIRE(backend.AddChannel(1, Seeds(4)).ok());
  std::atomic<int> old_calls{0}, new_calls{0};
  auto old_token = backend.SetListener(1, [&] { ++old_calls; });
  REQUIRE(old_token.ok());
  auto new_token = backend.SetListener(1, [&] { ++new_calls; });
  REQUIRE(new_token.ok());
  CHECK(*new_token != *old_token);
  backend.ClearListener(1, *old_token);
  REQUIRE(backend.StartEpoch(1, 0).ok());
  Drain(backend, 1, 0);
  CHECK(new_calls.load() > 0);
  CHECK(old_calls.load() == 0);
}
TEST_CASE("a backend holds worker threads only while it has channels", "[backend]") {
  FakeSampler fake;
  BackendOptions bo;
  bo.num_workers = 3;
  Backend backend(bo, fake.fn());
  CHECK(backend.num_live_workers() == 0);
  REQUIRE(backend.AddChannel(1, Seeds(6)).ok());
  CHECK(backend.num_live_workers() == 3);
  REQUIRE(backend.StartEpoch(1, 0).ok());
  CHECK(Drain(backend, 1, 0).size() == 6);
  REQUIRE(backend.RemoveChannel(1));
  REQUIRE(graphstore::testing::PollUntil([&] { return backend.num_live_workers() == 0; }));
  // The next channel starts them again.
  REQUIRE(backend.AddChannel(2, Seeds(4)).ok());
  CHECK(backend.num_live_workers() == 3);
  REQUIRE(backend.StartEpoch(2, 0).ok());
  CHECK(Drain(backend, 2, 0).size() == 4);
  backend.Stop();
  CHECK(backend.num_live_workers() == 0);
}
TEST_CASE("bad options are rejected", "[backend]") {
  BackendOptions bo;
  bo.num_workers = 0;
  CHECK(absl::IsInvalidArgument(Backend::Validate(bo)));
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  CHECK(absl::IsInvalidArgument(backend.AddChannel(1, Seeds(10, 0))));
  REQUIRE(backend.AddChannel(1, Seeds(10)).ok());
  CHECK(absl::IsAlreadyExists(backend.AddChannel(1, Seeds(10))));
}
}  // namespace
}  // namespace graphstore::scheduler
