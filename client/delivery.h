#ifndef GRAPHSTORE_CLIENT_DELIVERY_H_
#define GRAPHSTORE_CLIENT_DELIVERY_H_

// The trainer's fifth stage, deliver in order: the readers of every server's streams hand their
// batches here, and the trainer's thread takes them -- in arrival order, or (ordered global
// batches) in the trainer's batch order, a batch that arrives early held in a reorder window
// until the ones before it are out. A reader that runs `prefetch` batches ahead of the trainer
// waits here, so a server that is ahead runs only so far. Stopping the readers (a new epoch,
// an error, Close) wakes every wait of theirs, the waits between retries included. No gRPC, no
// LibTorch.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/host_batch.h"

namespace graphstore::client {

/// How an epoch's batches are handed out.
struct DeliveryOptions {
  /// Hand out in the trainer's order (global batches only); else in arrival order.
  bool ordered = false;
  /// Batches each server's readers may run ahead of the trainer (ordered: per server, of the
  /// window).
  int prefetch = 4;
  /// The trainer's order with global batches: epoch batch b is its (b - rank) / world_size-th.
  bool global = false;
  int rank = 0;
  int world_size = 1;
};

/// What the trainer's side takes: a batch, a stream's end, or a stream's failure.
struct Delivered {
  int server = 0;
  std::optional<HostBatch> batch;  // nullopt: that server's stream ended, or failed (`status`)
  absl::Status status;
};

/// Thread-safe: readers call Hand and the waits, the trainer's thread Take.
class Delivery {
 public:
  explicit Delivery(DeliveryOptions options) : options_(options) {}

  /// A new epoch read over `streams` streams of `num_servers` servers: nothing held, nothing
  /// stopped. Call while no reader runs.
  void Begin(int num_servers, int streams);
  /// Hands server `server`'s batch, or (nullopt) its stream's end or `status`, waiting while its
  /// reader is a prefetch window ahead; false when the readers are to stop (the batch is
  /// dropped) or the stream is done. The wait also ends (the batch kept) once `stale` says the
  /// reader's stream is no longer worth reading on, checked whenever Wake is called.
  bool Hand(int server, std::optional<HostBatch> batch, const absl::Status& status,
            const std::function<bool()>& stale = nullptr);
  /// Has the readers waiting in Hand check `stale` again (a server's channel was replaced).
  void Wake();
  /// Waits at most `timeout` for the next thing to hand out: nullopt when nothing came in time.
  /// A stream's end counts once the batches before it are out; every stream ended while a
  /// batch of the trainer's order is still missing is DataLoss.
  std::optional<Delivered> Take(std::chrono::milliseconds timeout);

  /// Stops every reader's wait here (Hand returns false, WaitStopped true) until Clear or Begin.
  void Stop();
  bool stopping() const;
  /// Waits `wait` unless the readers are told to stop first; true when they are.
  bool WaitStopped(std::chrono::milliseconds wait);
  /// Drops what was handed and not taken, and ends the stop (the readers are gone).
  void Clear();

  /// Streams of the epoch that have not ended.
  int open_streams() const;
  /// Callers of Take blocked right now, and a wait until one is (at most `timeout`).
  int num_waiting() const;
  bool WaitForWaiting(std::chrono::milliseconds timeout);
  /// Batches held in the reorder window before their turn, and a wait until `n` are.
  int num_held() const;
  bool WaitUntilHeld(int n, std::chrono::milliseconds timeout);

 private:
  int64_t Position(int64_t batch_index) const;
  bool ReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int HeldLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Delivered TakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DeliveryOptions options_;
  mutable absl::Mutex mu_;
  absl::CondVar changed_;  // anything below changed
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int open_streams_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  // Arrival order; or, ordered, batches by their position and the streams' ends apart.
  std::deque<Delivered> queue_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, Delivered> reorder_ ABSL_GUARDED_BY(mu_);
  int64_t next_position_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> in_queue_ ABSL_GUARDED_BY(mu_);  // per server: batches handed and not taken
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_DELIVERY_H_
