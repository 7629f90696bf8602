#ifndef GRAPHSTORE_SCHEDULER_WORK_H_
#define GRAPHSTORE_SCHEDULER_WORK_H_

// What a caller of the scheduler gives it (scheduler/backend.h): the backend's options and its
// sample function, each channel's options and attachment, and the task and batch the sample
// function takes and returns; and what a consumer popping a channel gets back. Plain C++ and
// abseil: nothing of graphs.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphstore::scheduler {

/// A sampled batch: an opaque payload and the bytes it holds (counted by buffer limits).
struct Batch {
  std::shared_ptr<const void> payload;
  size_t bytes = 0;
};

/// What the scheduler's caller keeps with a channel and gets back with each of its tasks. The
/// scheduler never looks inside: the caller derives its own type from this one.
struct ChannelAttachment {
  virtual ~ChannelAttachment() = default;
};

/// One unit of work handed to the sample function.
struct BatchTask {
  uint64_t channel_id = 0;
  /// The opaque value given to AddChannel (e.g. the seeds' node type).
  int64_t context = 0;
  /// The channel's ChannelOptions::attachment (may be null).
  const ChannelAttachment* attachment = nullptr;
  uint64_t seed = 0;
  int64_t epoch = 0;
  /// The channel's own number of the batch, and its number of batches in the epoch.
  int64_t batch_index = 0;
  int64_t num_batches = 0;
  /// The batch among all of the epoch's batches (ChannelOptions::batch_stride / _offset), and
  /// how many those are: with a stride of 1, batch_index and num_batches.
  int64_t epoch_batch = 0;
  int64_t num_epoch_batches = 0;
  /// The batch's seeds; valid for the duration of the call.
  const int64_t* seeds = nullptr;
  size_t num_seeds = 0;
  /// Index of the worker thread running the task, in [0, num_workers).
  int worker = 0;
};

/// Samples one batch. Runs on a worker thread, concurrently with other calls; must not throw.
using SampleFn = std::function<absl::StatusOr<Batch>(const BatchTask&)>;

/// Options of a Backend.
struct BackendOptions {
  /// Worker threads.
  int num_workers = 2;
  /// Batches of one channel being sampled at once, unless the channel says otherwise.
  int max_in_flight_per_channel = 2;
  /// Output buffer bound in messages, unless the channel says otherwise.
  int max_buffered_messages = 8;
  /// Output buffer bound in bytes, unless the channel says otherwise. A channel is not given
  /// new work while its buffer holds this much; batches already in flight may overshoot it.
  int64_t max_buffered_bytes = 256LL << 20;
  /// Batches of a channel's next epoch sampled ahead, while workers have nothing else to do,
  /// once the current epoch has no batch left to schedule (or before the first epoch). Sampling
  /// is deterministic in (seed, epoch, batch), so StartEpoch of that epoch adopts them and the
  /// first batches are ready at once. They have a budget of their own, of the size of the
  /// channel's buffer (so a channel may hold up to twice its buffer); 0 turns it off.
  int speculative_batches = 0;
  /// Runs first on each worker thread, with the worker's index (e.g. to lower its priority).
  std::function<void(int worker)> on_worker_start;
  /// Name for logs.
  std::string name = "backend";
  /// The server-wide budget of buffered bytes this backend shares with others (null: none;
  /// see scheduler/memory_budget.h). It must outlive the backend.
  std::shared_ptr<class MemoryBudget> budget;
};

/// The order of one epoch's `n` seeds, computed a batch at a time: writes to `out` the
/// registration positions (in [0, n)) that positions [first, first + count) of the epoch's order
/// hold, a bijection of [0, n) for each epoch (e.g. a keyed permutation), so that no epoch's order
/// is ever stored. It must depend only on the epoch and what the caller bound into it: an epoch
/// started again, resumed or sampled ahead must get the same batches.
using EpochOrder = std::function<void(int64_t epoch, int64_t n, int64_t first, size_t count, int64_t* out)>;

/// Options of one channel.
struct ChannelOptions {
  /// The seeds, in registration order; or, left empty, `num_positions` seeds that are their
  /// own positions 0 .. num_positions-1 (the caller looks its ids up), held as a count.
  std::vector<int64_t> seeds;
  int64_t num_positions = 0;
  int64_t num_seeds() const { return seeds.empty() ? num_positions : static_cast<int64_t>(seeds.size()); }
  /// Seeds per batch, >= 1.
  int64_t batch_size = 1;
  /// The order of every epoch's seeds; null keeps registration order.
  EpochOrder order;
  /// Drop a final batch smaller than batch_size.
  bool drop_last = false;
  /// The epoch's batches this channel takes, of those the ordered seeds make: b with
  /// b mod batch_stride == batch_offset, in increasing order (one trainer's share of batches
  /// formed over a whole cluster). The channel numbers them 0, 1, ... (the batch indices of
  /// StartEpoch, ResumeEpoch and Delivery); BatchTask carries both numbers. 0 <= offset < stride.
  int64_t batch_stride = 1;
  int64_t batch_offset = 0;
  /// Seed of the channel's sampling, passed through BatchTask.
  uint64_t seed = 0;
  /// Deliver batches in batch order (otherwise as they complete).
  bool ordered = false;
  /// 0 takes the backend's value.
  int max_in_flight = 0;
  /// 0 takes the backend's value.
  int max_buffered_messages = 0;
  /// 0 takes the backend's value. Per stream: see SetStreamRoom.
  int64_t max_buffered_bytes = 0;
  /// Passed through to every BatchTask of the channel.
  int64_t context = 0;
  /// Caller data of the channel, kept alive with it and passed to every BatchTask.
  std::shared_ptr<const ChannelAttachment> attachment;
  /// Name for logs and stats.
  std::string worker_key;
};

/// A stream's share of a channel's batches: the channel's batch j (its own numbering, that of
/// Delivery::batch_index) belongs to stripe j mod count. {0, 1}, the default, is every batch.
/// Several streams can read one channel, each its own stripe, in parallel.
struct Stripe {
  int index = 0;
  int count = 1;
  bool Holds(int64_t j) const { return j % count == index; }
  /// The first batch >= from of the stripe.
  int64_t First(int64_t from) const { return from + ((index - from % count) % count + count) % count; }
  /// How many of batches [from, end) are the stripe's.
  int64_t Count(int64_t from, int64_t end) const {
    const int64_t first = First(from);
    return first < end ? (end - first - 1) / count + 1 : 0;
  }
};

/// The result of popping from a channel.
struct Delivery {
  enum class Kind {
    /// `batch` holds batch `batch_index` of the epoch.
    kMessage,
    /// Nothing ready yet; the listener fires when something is.
    kPending,
    /// Every batch of the epoch has been delivered.
    kEndOfEpoch,
    /// Sampling failed; `status` says why. Reported after every batch before the failed one
    /// (ordered delivery) or every batch already sampled (otherwise) has been delivered.
    kFailed,
    /// The channel is gone or the epoch was superseded; `status` says which.
    kClosed,
  };
  Kind kind = Kind::kPending;
  Batch batch;
  int64_t batch_index = -1;
  absl::Status status;
};

}  // namespace graphstore::scheduler

#endif  // GRAPHSTORE_SCHEDULER_WORK_H_
