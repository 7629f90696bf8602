// What a channel of a Backend does on its own: hand its consumer the next batch of a stripe,
// describe itself, call its listeners (backend_channel.h).

#include "scheduler/backend_channel.h"

#include <numeric>

#include "absl/strings/str_cat.h"

namespace graphstore::scheduler {

Delivery Backend::Channel::Pop(int64_t epoch, Stripe stripe, bool stopping) {
  Delivery d;
  if (removed || stopping) {
    d.kind = Delivery::Kind::kClosed;
    d.status = absl::CancelledError(absl::StrCat("channel ", id, " was destroyed"));
    return d;
  }
  if (epoch == cur.epoch && cancelled) {
    d.kind = Delivery::Kind::kClosed;
    d.status = absl::CancelledError(absl::StrCat("epoch ", epoch, " was cancelled"));
    return d;
  }
  if (epoch != cur.epoch) {
    d.kind = Delivery::Kind::kClosed;
    d.status = epoch < cur.epoch
                   ? absl::AbortedError(absl::StrCat("epoch ", epoch, " was superseded by epoch ", cur.epoch))
                   : absl::FailedPreconditionError(absl::StrCat("epoch ", epoch, " has not been started"));
    return d;
  }
  StripeProgress& progress = ProgressOf(stripe);
  // The stripe's deliverable batch: in order, its next; otherwise its first buffered.
  auto it = cur.buffer.end();
  if (opts.ordered) {
    it = cur.buffer.find(progress.next);
  } else {
    for (it = cur.buffer.begin(); it != cur.buffer.end() && !stripe.Holds(it->first); ++it) {
    }
  }
  if (it != cur.buffer.end()) {
    d.kind = Delivery::Kind::kMessage;
    d.batch_index = it->first;
    d.batch = cur.Take(it);
    ++delivered;
    ++progress.delivered;
    if (opts.ordered) progress.next += stripe.count;
    return d;
  }
  if (!error.ok()) {
    // Report the failure only once every batch of the stripe that can still be delivered has
    // been: in order, those before the failed one; otherwise, everything already in flight.
    bool report = opts.ordered ? progress.next >= failed_batch : in_flight == 0;
    for (auto b = cur.buffer.begin(); report && !opts.ordered && b != cur.buffer.end(); ++b) {
      report = !stripe.Holds(b->first);
    }
    d.kind = report ? Delivery::Kind::kFailed : Delivery::Kind::kPending;
    d.status = report ? error : absl::OkStatus();
    return d;
  }
  if (progress.delivered == stripe.Count(start_batch, cur.num_batches)) {
    d.kind = Delivery::Kind::kEndOfEpoch;
    return d;
  }
  d.kind = Delivery::Kind::kPending;
  return d;
}

ChannelStats Backend::Channel::Describe(bool runnable) const {
  ChannelStats s;
  s.channel_id = id;
  s.worker_key = opts.worker_key;
  s.epoch = cur.epoch;
  s.num_seeds = opts.num_seeds();
  s.num_batches = cur.epoch >= 0 ? cur.num_batches : BatchesFor(s.num_seeds);
  s.batches_sampled = sampled;
  s.batches_delivered = delivered;
  s.in_flight = in_flight;
  s.buffered_messages = static_cast<int>(cur.buffer.size() + ahead.buffer.size());
  s.buffered_bytes = cur.bytes + ahead.bytes;
  s.speculative_buffered = static_cast<int>(ahead.buffer.size());
  s.speculative_epoch = ahead.epoch;
  s.total_batches_sampled = total_sampled;
  s.runnable = runnable;
  if (cancelled) {
    s.state = ChannelState::kCancelled;
  } else if (!error.ok()) {
    s.state = ChannelState::kFailed;
    s.error = std::string(error.message());
  } else if (cur.epoch < 0) {
    s.state = ChannelState::kIdle;
  } else if (delivered == cur.num_batches - start_batch) {
    s.state = ChannelState::kEpochDone;
  } else {
    s.state = ChannelState::kRunning;
  }
  return s;
}

void Backend::Channel::AddListener(uint64_t token, std::function<void()> listener) {
  absl::MutexLock guard(&listener_mu);
  listeners.emplace(token, std::move(listener));
}

void Backend::Channel::RemoveListener(uint64_t token) {
  absl::MutexLock guard(&listener_mu);
  listeners.erase(token);
}

void Backend::Channel::Notify() {
  absl::MutexLock guard(&listener_mu);
  for (const auto& [token, listener] : listeners) listener();
}

bool Backend::Channel::Runnable(bool stopping) const {
  return !removed && !stopping && cur.epoch >= 0 && error.ok() && cur.next < cur.num_batches &&
         in_flight < max_in_flight && in_flight + static_cast<int>(cur.buffer.size() + ahead.buffer.size()) < max_messages &&
         cur.bytes + ahead.bytes < ByteLimit() &&
         (budget == nullptr || budget->AllowsBatch(cur.bytes + ahead.bytes, in_flight));
}

bool Backend::Channel::SpeculationRunnable(bool stopping, int speculative_batches) const {
  if (speculative_batches <= 0 || removed || stopping || !error.ok() || cancelled || ahead_failed) return false;
  // Only once the current epoch has nothing left to schedule (or before the first epoch).
  if (cur.epoch >= 0 && cur.next < cur.num_batches) return false;
  const int64_t limit = std::min<int64_t>(speculative_batches, BatchesFor(opts.num_seeds()));
  // Its own budget, the size of the buffer's, so that it overlaps the tail of the epoch whose
  // last batches still fill the buffer.
  return ahead.next < limit && in_flight < max_in_flight &&
         static_cast<int>(ahead.buffer.size()) < max_messages && ahead.bytes < ByteLimit() &&
         (budget == nullptr || budget->AllowsSpeculation());
}

BatchTask Backend::Channel::TaskFor(const Run& run, int64_t b, int worker) const {
  const int64_t bs = opts.batch_size;
  BatchTask task;
  task.channel_id = id;
  task.context = opts.context;
  task.attachment = opts.attachment.get();
  task.seed = opts.seed;
  task.epoch = run.epoch;
  task.batch_index = b;
  task.num_batches = run.num_batches;
  task.epoch_batch = EpochBatch(b);
  const int64_t n = opts.num_seeds();
  task.num_epoch_batches = EpochBatchesFor(n);
  task.num_seeds = static_cast<size_t>(std::min<int64_t>(bs, n - task.epoch_batch * bs));
  task.worker = worker;
  return task;
}

void Backend::Channel::FillSeeds(BatchTask* task, std::vector<int64_t>* buffer) const {
  const int64_t n = opts.num_seeds();
  const int64_t first = task->epoch_batch * opts.batch_size;
  buffer->resize(task->num_seeds);
  if (opts.order) {
    opts.order(task->epoch, n, first, task->num_seeds, buffer->data());
  } else {
    std::iota(buffer->begin(), buffer->end(), first);
  }
  if (!opts.seeds.empty()) {
    for (int64_t& s : *buffer) s = opts.seeds[static_cast<size_t>(s)];
  }
  task->seeds = buffer->data();
}

bool Backend::Channel::Keep(uint64_t generation, const BatchTask& task, absl::StatusOr<Batch>* result) {
  const int64_t b = task.batch_index;
  // Generations are never 0 and never reused, so they alone say which run a result is for.
  if (!removed && generation == ahead.generation) {
    if (!result->ok()) {
      ahead_failed = true;  // sampled again if the epoch starts, which reports the error
      return false;
    }
    ahead.Keep(b, *std::move(*result));
    ++total_sampled;
    return true;
  }
  if (removed || generation != cur.generation || cancelled) return false;
  if (!result->ok()) {
    if (error.ok() || b < failed_batch) {
      failed_batch = b;
      error = absl::Status(result->status().code(), absl::StrCat("sampling batch ", b, " of epoch ", task.epoch,
                                                                 " failed: ", result->status().message()));
    }
    return false;
  }
  cur.Keep(b, *std::move(*result));
  ++sampled;
  ++total_sampled;
  return true;
}

}  // namespace graphstore::scheduler
