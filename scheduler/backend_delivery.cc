// The consumer's side of a Backend: popping batches, listeners, and snapshots.

#include "absl/strings/str_cat.h"
#include "scheduler/backend.h"
#include "scheduler/backend_channel.h"

namespace graphstore::scheduler {

Delivery Backend::MissingLocked(uint64_t id) const {
  Delivery d;
  d.kind = Delivery::Kind::kClosed;
  d.status = removed_.count(id) ? absl::CancelledError(absl::StrCat("channel ", id, " was destroyed"))
                                : absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
  return d;
}

Delivery Backend::TryPopLocked(Channel& c, int64_t epoch, Stripe stripe) {
  Delivery d;
  if (c.removed || stopping_) {
    d.kind = Delivery::Kind::kClosed;
    d.status = absl::CancelledError(absl::StrCat("channel ", c.id, " was destroyed"));
    return d;
  }
  if (epoch == c.cur.epoch && c.cancelled) {
    d.kind = Delivery::Kind::kClosed;
    d.status = absl::CancelledError(absl::StrCat("epoch ", epoch, " was cancelled"));
    return d;
  }
  if (epoch != c.cur.epoch) {
    d.kind = Delivery::Kind::kClosed;
    d.status = epoch < c.cur.epoch
                   ? absl::AbortedError(absl::StrCat("epoch ", epoch, " was superseded by epoch ", c.cur.epoch))
                   : absl::FailedPreconditionError(absl::StrCat("epoch ", epoch, " has not been started"));
    return d;
  }
  Channel::StripeProgress& progress = c.ProgressOf(stripe);
  // The stripe's deliverable batch: in order, its next; otherwise its first buffered.
  auto it = c.cur.buffer.end();
  if (c.opts.ordered) {
    it = c.cur.buffer.find(progress.next);
  } else {
    for (it = c.cur.buffer.begin(); it != c.cur.buffer.end() && !stripe.Holds(it->first); ++it) {
    }
  }
  if (it != c.cur.buffer.end()) {
    d.kind = Delivery::Kind::kMessage;
    d.batch_index = it->first;
    d.batch = c.cur.Take(it);
    ++c.delivered;
    ++progress.delivered;
    if (c.opts.ordered) progress.next += stripe.count;
    return d;
  }
  if (!c.error.ok()) {
    // Report the failure only once every batch of the stripe that can still be delivered has
    // been: in order, those before the failed one; otherwise, everything already in flight.
    bool report = c.opts.ordered ? progress.next >= c.failed_batch : c.in_flight == 0;
    for (auto b = c.cur.buffer.begin(); report && !c.opts.ordered && b != c.cur.buffer.end(); ++b) {
      report = !stripe.Holds(b->first);
    }
    d.kind = report ? Delivery::Kind::kFailed : Delivery::Kind::kPending;
    d.status = report ? c.error : absl::OkStatus();
    return d;
  }
  if (progress.delivered == stripe.Count(c.start_batch, c.cur.num_batches)) {
    d.kind = Delivery::Kind::kEndOfEpoch;
    return d;
  }
  d.kind = Delivery::Kind::kPending;
  return d;
}

Delivery Backend::TryPop(uint64_t id, int64_t epoch, Stripe stripe) {
  ChannelPtr c;
  Delivery d;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = channels_.find(id);
    if (it == channels_.end()) return MissingLocked(id);
    c = it->second;
    d = TryPopLocked(*c, epoch, stripe);
    if (d.kind == Delivery::Kind::kMessage) MaybeQueue(c);
  }
  return d;
}

Delivery Backend::Pop(uint64_t id, int64_t epoch, std::chrono::milliseconds timeout, Stripe stripe) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    auto it = channels_.find(id);
    if (it == channels_.end()) return MissingLocked(id);
    ChannelPtr c = it->second;
    Delivery d = TryPopLocked(*c, epoch, stripe);
    if (d.kind == Delivery::Kind::kMessage) MaybeQueue(c);
    if (d.kind != Delivery::Kind::kPending) return d;
    if (ready_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      d = TryPopLocked(*c, epoch, stripe);
      if (d.kind == Delivery::Kind::kMessage) MaybeQueue(c);
      return d;
    }
  }
}

absl::StatusOr<uint64_t> Backend::SetListener(uint64_t id, std::function<void()> listener) {
  ChannelPtr c;
  uint64_t token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = channels_.find(id);
    if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
    c = it->second;
    token = next_listener_token_++;
  }
  std::lock_guard<std::mutex> guard(c->listener_mu);
  c->listeners.emplace(token, std::move(listener));
  return token;
}

void Backend::ClearListener(uint64_t id, uint64_t token) {
  ChannelPtr c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = channels_.find(id);
    if (it != channels_.end()) {
      c = it->second;
    } else {
      auto gone = removed_.find(id);
      if (gone != removed_.end()) c = gone->second.lock();
    }
    if (c == nullptr) return;  // nothing can call the listener any more
  }
  std::lock_guard<std::mutex> guard(c->listener_mu);
  c->listeners.erase(token);
}

void Backend::Wake(uint64_t id) {
  ChannelPtr c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = channels_.find(id);
    if (it == channels_.end()) return;
    c = it->second;
  }
  Notify(c);
}

void Backend::SetStreamRoom(uint64_t id, int streams) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(id);
  if (it == channels_.end() || streams <= it->second->room_streams) return;
  it->second->room_streams = streams;
  MaybeQueue(it->second);
}

void Backend::Notify(const ChannelPtr& c) {
  std::lock_guard<std::mutex> guard(c->listener_mu);
  for (const auto& [token, listener] : c->listeners) listener();
}

ChannelStats Backend::DescribeLocked(const Channel& c) const {
  ChannelStats s;
  s.channel_id = c.id;
  s.worker_key = c.opts.worker_key;
  s.epoch = c.cur.epoch;
  s.num_seeds = static_cast<int64_t>(c.opts.seeds.size());
  s.num_batches = c.cur.epoch >= 0 ? c.cur.num_batches : c.BatchesFor(s.num_seeds);
  s.batches_sampled = c.sampled;
  s.batches_delivered = c.delivered;
  s.in_flight = c.in_flight;
  s.buffered_messages = static_cast<int>(c.cur.buffer.size() + c.ahead.buffer.size());
  s.buffered_bytes = c.cur.bytes + c.ahead.bytes;
  s.speculative_buffered = static_cast<int>(c.ahead.buffer.size());
  s.speculative_epoch = c.ahead.epoch;
  s.total_batches_sampled = c.total_sampled;
  s.runnable = Runnable(c);
  if (c.cancelled) {
    s.state = ChannelState::kCancelled;
  } else if (!c.error.ok()) {
    s.state = ChannelState::kFailed;
    s.error = std::string(c.error.message());
  } else if (c.cur.epoch < 0) {
    s.state = ChannelState::kIdle;
  } else if (c.delivered == c.cur.num_batches - c.start_batch) {
    s.state = ChannelState::kEpochDone;
  } else {
    s.state = ChannelState::kRunning;
  }
  return s;
}

absl::StatusOr<ChannelStats> Backend::Describe(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(id);
  if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
  return DescribeLocked(*it->second);
}

BackendStats Backend::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BackendStats s;
  s.num_workers = live_workers_;
  s.num_channels = static_cast<int>(channels_.size());
  s.total_batches_sampled = total_batches_sampled_;
  for (const auto& [id, c] : channels_) {
    ChannelStats cs = DescribeLocked(*c);
    s.num_active_channels += cs.state == ChannelState::kRunning;
    s.num_runnable_channels += cs.runnable;
    s.buffered_bytes += cs.buffered_bytes;
    s.channels.push_back(std::move(cs));
  }
  return s;
}

int Backend::num_live_workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_workers_;
}

int Backend::num_channels() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(channels_.size());
}

}  // namespace graphstore::scheduler
