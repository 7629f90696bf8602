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
#include "server/sampling/draw.h"

namespace graphstore::scheduler {
namespace {

using namespace std::chrono_literals;
using Kind = Delivery::Kind;

std::atomic<int> live_payloads{0};

// What the fake sampler returns: the batch's coordinates and seeds.
struct FakePayload {
  uint64_t channel;
  int64_t epoch;
  int64_t batch;
  std::vector<int64_t> seeds;
  FakePayload() { ++live_payloads; }
  ~FakePayload() { --live_payloads; }
};

// A sampler that records the order in which batches start, can be held at a gate, can be made
// slow, and fails where told to.
class FakeSampler {
 public:
  SampleFn fn() {
    return [this](const BatchTask& t) -> absl::StatusOr<Batch> {
      {
        std::unique_lock<std::mutex> lock(mu_);
        gate_cv_.wait(lock, [&] { return open_; });
        started_.push_back(t.channel_id);
        ++calls_[t.channel_id];
      }
      if (delay_for) std::this_thread::sleep_for(delay_for(t));
      if (fail_channel == t.channel_id && fail_batch == t.batch_index) {
        return absl::InternalError("injected failure");
      }
      auto p = std::make_shared<FakePayload>();
      p->channel = t.channel_id;
      p->epoch = t.epoch;
      p->batch = t.batch_index;
      p->seeds.assign(t.seeds, t.seeds + t.num_seeds);
      return Batch{p, 100};
    };
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    gate_cv_.notify_all();
  }
  std::vector<uint64_t> started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  int calls(uint64_t channel) {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_[channel];
  }

  std::function<std::chrono::microseconds(const BatchTask&)> delay_for;
  uint64_t fail_channel = 0;
  int64_t fail_batch = -1;

 private:
  std::mutex mu_;
  std::condition_variable gate_cv_;
  bool open_ = true;
  std::vector<uint64_t> started_;
  std::map<uint64_t, int> calls_;
};

// The keyed permutation the service gives its channels.
EpochOrder Shuffle(uint64_t seed) {
  return [seed](int64_t epoch, std::vector<int64_t>* seeds) { ShuffleForEpoch(seed, epoch, seeds); };
}

ChannelOptions Seeds(int64_t n, int64_t batch_size = 1) {
  ChannelOptions o;
  for (int64_t i = 0; i < n; ++i) o.seeds.push_back(i);
  o.batch_size = batch_size;
  return o;
}

const FakePayload& P(const Delivery& d) { return *static_cast<const FakePayload*>(d.batch.payload.get()); }

// Pops an epoch to its end; returns the payloads' seeds per batch index.
std::map<int64_t, std::vector<int64_t>> Drain(Backend& b, uint64_t id, int64_t epoch, Kind* last = nullptr) {
  std::map<int64_t, std::vector<int64_t>> out;
  while (true) {
    Delivery d = b.Pop(id, epoch, 10s);
    if (d.kind != Kind::kMessage) {
      if (last != nullptr) *last = d.kind;
      return out;
    }
    REQUIRE(P(d).epoch == epoch);
    REQUIRE(out.emplace(d.batch_index, P(d).seeds).second);
  }
}

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

TEST_CASE("a buffer bounded in bytes stops a channel's sampling", "[backend]") {
  FakeSampler fake;
  Backend backend(BackendOptions(), fake.fn());
  ChannelOptions o = Seeds(100);
  o.max_buffered_bytes = 250;  // each fake batch is 100 bytes
  o.max_in_flight = 1;
  REQUIRE(backend.AddChannel(1, o).ok());
  REQUIRE(backend.StartEpoch(1, 0).ok());
  std::this_thread::sleep_for(50ms);
  auto stats = backend.Describe(1);
  REQUIRE(stats.ok());
  CHECK(stats->buffered_bytes == 300);
  CHECK(stats->batches_sampled == 3);
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
    std::this_thread::sleep_for(10ms);
    CHECK(backend.RemoveChannel(5));
    CHECK(!backend.RemoveChannel(5));
    const int calls_at_removal = fake.calls(5);
    // In-flight batches finish and are discarded: nothing stays alive.
    for (int i = 0; i < 200 && live_payloads.load() > 0; ++i) std::this_thread::sleep_for(5ms);
    CHECK(live_payloads.load() == 0);
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

// Waits until the channel holds `n` batches sampled ahead.
void WaitForSpeculation(Backend& b, uint64_t id, int n) {
  for (int i = 0; i < 1000 && b.Describe(id)->speculative_buffered < n; ++i) std::this_thread::sleep_for(2ms);
  REQUIRE(b.Describe(id)->speculative_buffered == n);
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
  std::this_thread::sleep_for(20ms);
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
  std::this_thread::sleep_for(30ms);
  CHECK(backend.Describe(1)->speculative_buffered == 0);
  const int calls = fake.calls(1);
  std::this_thread::sleep_for(30ms);
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
  std::this_thread::sleep_for(20ms);
  CHECK(backend.CancelEpoch(1));
  const int calls = fake.calls(1);
  std::this_thread::sleep_for(20ms);
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
  std::thread reader([&] {
    Kind last;
    Drain(backend, 1, 0, &last);
    CHECK(last == Kind::kClosed);
  });
  std::this_thread::sleep_for(20ms);
  backend.Stop();
  reader.join();
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
  REQUIRE(backend.StartEpoch(1, 0).ok());
  std::this_thread::sleep_for(2ms);  // batches in flight
  backend.RemoveChannel(1);
  backend.ClearListener(1, *token);
  const int after = calls.load();
  std::this_thread::sleep_for(30ms);  // the in-flight batches finish
  CHECK(calls.load() == after);
}

TEST_CASE("clearing a replaced listener leaves the newer one in place", "[backend]") {
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
