#ifndef GRAPHSTORE_TESTS_SCHEDULER_FAKE_SAMPLER_H_
#define GRAPHSTORE_TESTS_SCHEDULER_FAKE_SAMPLER_H_

// A fake sample function for the backend's tests, and helpers to register and drain channels.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "scheduler/backend.h"
#include "server/sampling/draw.h"
#include "tests/test_util.h"

namespace graphstore::scheduler::testing {

using namespace std::chrono_literals;
using Kind = Delivery::Kind;

inline std::atomic<int> live_payloads{0};

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
inline EpochOrder Shuffle(uint64_t seed) {
  return [seed](int64_t epoch, int64_t n, int64_t first, size_t count, int64_t* out) {
    EpochPositions(seed, epoch, n, first, count, out);
  };
}

inline ChannelOptions Seeds(int64_t n, int64_t batch_size = 1) {
  ChannelOptions o;
  for (int64_t i = 0; i < n; ++i) o.seeds.push_back(i);
  o.batch_size = batch_size;
  return o;
}

inline const FakePayload& P(const Delivery& d) { return *static_cast<const FakePayload*>(d.batch.payload.get()); }

// Pops an epoch to its end; returns the payloads' seeds per batch index.
inline std::map<int64_t, std::vector<int64_t>> Drain(Backend& b, uint64_t id, int64_t epoch, Kind* last = nullptr) {
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

// Waits until channel `id` has no batch being sampled.
inline void WaitIdle(Backend& b, uint64_t id) {
  REQUIRE(graphstore::testing::PollUntil([&] { return b.Describe(id)->in_flight == 0; }));
}

// Shows that the backend gives no work to channels that must be stopped: a witness channel's
// whole epoch runs through the same workers, which serve every runnable channel a batch per
// round; with sampling ahead on, the witness also waits for the `ahead` batches of its next
// epoch, which the workers sample round-robin with every channel that may sample ahead. A
// stopped channel whose sampling count did not move meanwhile is stopped, however slow the
// machine (no fixed sleep).
inline void RunWitnessEpoch(Backend& b, int ahead = 0) {
  constexpr uint64_t kWitness = 999999;
  REQUIRE(b.AddChannel(kWitness, Seeds(20)).ok());
  REQUIRE(b.StartEpoch(kWitness, 0).ok());
  REQUIRE(Drain(b, kWitness, 0).size() == 20);
  if (ahead > 0) {
    REQUIRE(graphstore::testing::PollUntil([&] { return b.Describe(kWitness)->speculative_buffered == ahead; }));
  }
  b.RemoveChannel(kWitness);
}

}  // namespace graphstore::scheduler::testing

#endif  // GRAPHSTORE_TESTS_SCHEDULER_FAKE_SAMPLER_H_
