#ifndef GRAPHSTORE_SCHEDULER_BACKEND_CHANNEL_H_
#define GRAPHSTORE_SCHEDULER_BACKEND_CHANNEL_H_

// The state of one channel of a Backend, private to the backend (backend.cc), and what a
// channel does on its own (backend_channel.cc): hand its consumer the next batch of a stripe,
// describe itself, call its listeners. Every field but the listeners is read and written with
// the backend's lock held: Backend's functions that take a Channel are annotated as needing
// it (the analysis cannot name another object's lock on these fields).

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/backend.h"
#include "scheduler/memory_budget.h"

namespace graphstore::scheduler {

// Buffers taken out of channels under the lock, destroyed by the caller after releasing it.
using Freed = std::vector<std::map<int64_t, Batch>>;

// One epoch's schedule: the seed order, how far it is scheduled, and what it has buffered. A
// channel has its current run and, while sampling ahead, the next epoch's.
struct Run {
  int64_t epoch = -1;
  // Tasks carry the generation they were scheduled under; a result is kept only while its run
  // still has that generation. Every (re)start takes a new one.
  uint64_t generation = 0;
  int64_t num_batches = 0;
  int64_t next = 0;  // the next batch to schedule
  std::map<int64_t, Batch> buffer;
  int64_t bytes = 0;  // held by `buffer`
  // The server-wide budget `bytes` is charged to (may be null).
  MemoryBudget* budget = nullptr;

  void Keep(int64_t b, Batch batch) {
    bytes += static_cast<int64_t>(batch.bytes);
    if (budget != nullptr) budget->Charge(static_cast<int64_t>(batch.bytes));
    buffer.emplace(b, std::move(batch));
  }
  Batch Take(std::map<int64_t, Batch>::iterator it) {
    Batch batch = std::move(it->second);
    buffer.erase(it);
    bytes -= static_cast<int64_t>(batch.bytes);
    if (budget != nullptr) budget->Release(static_cast<int64_t>(batch.bytes));
    return batch;
  }
  void TakeBuffer(Freed* freed) {
    freed->push_back(std::move(buffer));
    buffer.clear();
    if (budget != nullptr) budget->Release(bytes);
    bytes = 0;
  }
};


struct Backend::Channel {
  uint64_t id = 0;
  ChannelOptions opts;
  int max_in_flight = 0;
  int max_messages = 0;
  int64_t max_bytes = 0;
  int room_streams = 1;  // SetStreamRoom
  MemoryBudget* budget = nullptr;

  // The byte limit of what it buffers: max_bytes per stream.
  int64_t ByteLimit() const { return max_bytes * room_streams; }

  // Guarded by Backend::mu_.
  bool removed = false;
  bool queued = false;        // in runnable_
  bool queued_ahead = false;  // in speculative_
  uint64_t next_generation = 1;
  Run cur;
  int64_t start_batch = 0;
  // What each stripe (index, count) read since the run (re)started: its next batch in order
  // (ordered delivery) and how many it took.
  struct StripeProgress {
    int64_t next = 0;
    int64_t delivered = 0;
  };
  std::map<std::pair<int, int>, StripeProgress> stripes;
  int64_t sampled = 0;
  int64_t delivered = 0;
  int in_flight = 0;  // tasks of both runs
  absl::Status error;
  int64_t failed_batch = -1;  // lowest failed batch index of the epoch
  bool cancelled = false;     // the current epoch was abandoned
  int64_t total_sampled = 0;

  // Sampling ahead: the run of epoch cur.epoch + 1, or none (epoch -1).
  Run ahead;
  bool ahead_failed = false;  // a batch failed; the real epoch samples it again and reports it

  // Serialises listener calls with their removal.
  absl::Mutex listener_mu;
  std::map<uint64_t, std::function<void()>> listeners ABSL_GUARDED_BY(listener_mu);  // by token

  // What the consumer of `stripe` gets from `epoch` now (backend_channel.cc); `stopping`: the
  // backend is stopping.
  Delivery Pop(int64_t epoch, Stripe stripe, bool stopping);
  // Whether a worker may sample the current epoch's next batch now (`stopping`: the backend
  // is stopping): room in flight, in the buffer and in the memory budget.
  bool Runnable(bool stopping) const;
  // Whether a worker may sample the next epoch ahead, up to `speculative_batches` of it: only
  // once the current epoch has nothing left to schedule, within a buffer of its own.
  bool SpeculationRunnable(bool stopping, int speculative_batches) const;
  // The task of batch `b` of `run`, without its seeds (under the lock); FillSeeds computes them
  // from the epoch's order into `buffer` (the worker's, outside the lock: opts never change).
  BatchTask TaskFor(const Run& run, int64_t b, int worker) const;
  void FillSeeds(BatchTask* task, std::vector<int64_t>* buffer) const;
  // Keeps a worker's result for `task` in the run of `generation`, or records its error; true
  // when a batch was kept. A result for a run that has gone is left in *result, to be dropped
  // outside the lock.
  bool Keep(uint64_t generation, const BatchTask& task, absl::StatusOr<Batch>* result);
  // The channel's stats; `runnable` as the backend sees it.
  ChannelStats Describe(bool runnable) const;
  void AddListener(uint64_t token, std::function<void()> listener) ABSL_LOCKS_EXCLUDED(listener_mu);
  void RemoveListener(uint64_t token) ABSL_LOCKS_EXCLUDED(listener_mu);
  // Calls every listener; never with the backend's lock held (a listener may call back).
  void Notify() ABSL_LOCKS_EXCLUDED(listener_mu);

  StripeProgress& ProgressOf(Stripe s) {
    auto [it, added] = stripes.try_emplace({s.index, s.count});
    if (added) it->second.next = s.First(start_batch);
    return it->second;
  }

  // The epoch's batches over `n` seeds, and how many of them are the channel's.
  int64_t EpochBatchesFor(int64_t n) const {
    const int64_t bs = opts.batch_size;
    return opts.drop_last ? n / bs : (n + bs - 1) / bs;
  }
  int64_t BatchesFor(int64_t n) const {
    const int64_t total = EpochBatchesFor(n);
    return total > opts.batch_offset ? (total - opts.batch_offset - 1) / opts.batch_stride + 1 : 0;
  }
  // The epoch's number of the channel's batch `b`.
  int64_t EpochBatch(int64_t b) const { return opts.batch_offset + opts.batch_stride * b; }

  // A fresh run of epoch `e`, nothing scheduled: its order is computed batch by batch.
  Run NewRun(int64_t e) {
    Run r;
    r.budget = budget;
    r.epoch = e;
    r.generation = next_generation++;
    r.num_batches = BatchesFor(opts.num_seeds());
    return r;
  }

  // The delivery counters and failure state of the current run, delivering from batch `from`
  // on (what its buffer already holds counts as sampled).
  void ResetProgress(int64_t from) {
    start_batch = from;
    stripes.clear();
    sampled = static_cast<int64_t>(cur.buffer.size());
    delivered = 0;
    error = absl::OkStatus();
    failed_batch = -1;
    cancelled = false;
  }

  void DropAhead(Freed* freed) {
    ahead.TakeBuffer(freed);
    ahead = Run();
    ahead_failed = false;
  }
};

}  // namespace graphstore::scheduler

#endif  // GRAPHSTORE_SCHEDULER_BACKEND_CHANNEL_H_
