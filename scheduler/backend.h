#ifndef GRAPHSTORE_SCHEDULER_BACKEND_H_
#define GRAPHSTORE_SCHEDULER_BACKEND_H_

// The shared sampling backend: a pool of worker threads serving many channels fairly.
//
// A channel is one consumer's registered seeds. StartEpoch puts them in the epoch's order (the
// channel's EpochOrder, e.g. a permutation keyed by the epoch) and splits them into batches.
// Workers take one batch from the channel at the head of a round-robin queue of *runnable*
// channels and put the channel back at the tail, so every runnable channel gets one batch per
// round. A channel is runnable while its epoch has unscheduled batches, it has fewer than
// max_in_flight batches being sampled, and its output buffer has room: a consumer that is slow
// or gone only stops its own channel. Results wait in the channel's bounded buffer until the
// consumer pops them; the consumer is told through a listener callback, never by polling.
//
// Plain C++ and abseil: no gRPC. The gRPC layer attaches a stream to a channel's listener.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/stats.h"
#include "scheduler/work.h"

namespace graphstore::scheduler {

/// What StartEpoch did.
enum class StartOutcome { kStarted, kAlreadyStarted, kStale };

/// The worker pool and its channels. Thread-safe.
// One epoch's sampling of a channel (backend_channel.h).
struct Run;

class Backend {
 public:
  /// A backend running `sample` on `options.num_workers` worker threads while it has channels:
  /// the first channel starts them, and they exit once the last is removed, so a backend
  /// without channels holds no thread.
  Backend(BackendOptions options, SampleFn sample);
  /// Stops (see Stop).
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  /// Validates `options` (InvalidArgument naming the field), then starts the backend. How many
  /// workers a caller may ask for is the caller's policy; the backend only needs one.
  static absl::StatusOr<std::shared_ptr<Backend>> Create(BackendOptions options, SampleFn sample);
  /// The checks of Create.
  static absl::Status Validate(const BackendOptions& options);

  /// Registers a channel under a caller-chosen id. AlreadyExists if the id is in use,
  /// InvalidArgument for bad options, FailedPrecondition after Stop.
  absl::Status AddChannel(uint64_t id, ChannelOptions options);

  /// Removes a channel: its buffer is freed now, batches in flight are discarded when they
  /// finish, unscheduled batches are never sampled, and its listener fires once with kClosed.
  /// Returns false when there was no such channel.
  bool RemoveChannel(uint64_t id);

  /// Starts `epoch` (>= 0) from batch `start_batch`: a repeated epoch is kAlreadyStarted and an
  /// older one kStale, both no-ops. A newer epoch abandons the current one (its stream closes).
  /// NotFound for an unknown channel; InvalidArgument for a negative epoch or start batch.
  absl::StatusOr<StartOutcome> StartEpoch(uint64_t id, int64_t epoch, int64_t start_batch = 0);

  /// Restarts the channel's current epoch `epoch` from batch `start_batch` (a consumer that
  /// reconnects after losing its stream of `stripe`): buffered and in-flight batches are
  /// dropped and batches start_batch.. are delivered again to every stripe, even if the epoch
  /// was cancelled or failed; an epoch that starts at `start_batch`, has failed nothing and has
  /// delivered nothing to `stripe` is left as it is (the streams of a channel's other stripes,
  /// opened from the same batch, go on). NotFound for an unknown channel; FailedPrecondition
  /// when `epoch` is not the current epoch; InvalidArgument for a negative start batch or one
  /// past the end.
  absl::Status ResumeEpoch(uint64_t id, int64_t epoch, int64_t start_batch, Stripe stripe = {});

  /// Abandons the channel's current epoch: batches not yet sampled never will be, buffered
  /// ones are freed, and a reader of the epoch sees kClosed. The channel stays registered and
  /// a later epoch starts normally. Given `epoch`, only that epoch: a channel that has moved on
  /// to another keeps it (the stream of an earlier epoch may end after the next one started).
  /// Returns false for an unknown id, or when the channel is not in `epoch`.
  bool CancelEpoch(uint64_t id, std::optional<int64_t> epoch = std::nullopt);

  /// Batches in `epoch` of the channel (its current epoch, or what the next would have).
  absl::StatusOr<int64_t> NumBatches(uint64_t id) const;

  /// Takes the next deliverable batch of `epoch` of the `stripe` without blocking (ordered:
  /// the stripe's batches in order; the end of the epoch: every batch of the stripe delivered).
  Delivery TryPop(uint64_t id, int64_t epoch, Stripe stripe = {});

  /// Like TryPop, but waits up to `timeout` for something other than kPending.
  Delivery Pop(uint64_t id, int64_t epoch, std::chrono::milliseconds timeout, Stripe stripe = {});

  /// Adds a function called (on a worker or the caller's thread, never under the backend's
  /// lock) whenever the channel may have something new to pop: a batch, the end of the epoch,
  /// a failure, or its removal. A channel has one listener per stream that reads it. Returns
  /// a token that names this listener; NotFound for an unknown id.
  absl::StatusOr<uint64_t> SetListener(uint64_t id, std::function<void()> listener);

  /// Removes the listener `token` names (others of the channel stay). When it returns, no call
  /// of that listener is running or will run.
  void ClearListener(uint64_t id, uint64_t token);

  /// Calls the channel's listener now (something outside the backend changed what its reader
  /// can do). No-op for an unknown channel.
  void Wake(uint64_t id);

  /// Gives channel `id` buffer room for `streams` readers: its byte limit
  /// (max_buffered_bytes) holds per stream, so that stripes read in parallel each find a batch
  /// ready even when one batch nearly fills the limit. Its message limit and in-flight cap
  /// stay the channel's. Room never shrinks; no-op for an unknown channel.
  void SetStreamRoom(uint64_t id, int streams);

  absl::StatusOr<ChannelStats> Describe(uint64_t id) const;
  BackendStats Stats() const;
  int num_channels() const;
  /// Worker threads held now (0 without channels).
  int num_live_workers() const;
  const BackendOptions& options() const { return options_; }

  /// Removes every channel, wakes every waiter, and joins the workers. Idempotent.
  void Stop();

 private:
  struct Channel;  // backend_channel.h: one channel's state, read and written under mu_
  using ChannelPtr = std::shared_ptr<Channel>;

  void WorkerLoop(int worker) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the workers unless they run.
  void StartWorkersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Looks at every channel again (the memory budget has room).
  void Kick() ABSL_LOCKS_EXCLUDED(mu_);
  void MaybeQueue(const ChannelPtr& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TryPop of a live channel, queueing it again when a batch left its buffer.
  Delivery PopLocked(const ChannelPtr& c, int64_t epoch, Stripe stripe) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kClosed for a channel that is not registered: destroyed, or never was.
  Delivery MissingLocked(uint64_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The live channel `id`, or null.
  ChannelPtr FindLocked(uint64_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const BackendOptions options_;
  const SampleFn sample_;
  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;   // work to take, or a reason to exit
  absl::CondVar ready_cv_;  // something to pop
  std::map<uint64_t, ChannelPtr> channels_ ABSL_GUARDED_BY(mu_);
  // Removed channels: their ids answer kClosed ("destroyed"), and ClearListener still reaches
  // a channel that an in-flight task keeps alive.
  std::map<uint64_t, std::weak_ptr<Channel>> removed_ ABSL_GUARDED_BY(mu_);
  std::deque<ChannelPtr> runnable_ ABSL_GUARDED_BY(mu_);
  // Channels that may sample ahead into their next epoch; served only when runnable_ is empty.
  std::deque<ChannelPtr> speculative_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t total_batches_sampled_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_listener_token_ ABSL_GUARDED_BY(mu_) = 1;
  int live_workers_ ABSL_GUARDED_BY(mu_) = 0;  // workers that have not decided to exit
  // Serialises Stop() so that workers are joined once.
  absl::Mutex stop_mu_;
  uint64_t budget_token_ ABSL_GUARDED_BY(stop_mu_) = 0;
  // The threads of the current spell (and exited ones of the last): started under mu_ by
  // AddChannel, joined by Stop once stopping_ keeps AddChannel from starting more.
  std::vector<std::thread> workers_;
};

}  // namespace graphstore::scheduler

#endif  // GRAPHSTORE_SCHEDULER_BACKEND_H_
