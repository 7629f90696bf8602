#include "client/delivery.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace graphstore::client {

void Delivery::Begin(int num_servers, int streams) {
  absl::MutexLock lock(&mu_);
  stopping_ = false;
  open_streams_ = streams;
  next_position_ = 0;
  queue_.clear();
  reorder_.clear();
  in_queue_.assign(static_cast<size_t>(num_servers), 0);
}

int64_t Delivery::Position(int64_t batch_index) const {
  return options_.global ? (batch_index - options_.rank) / options_.world_size : batch_index;
}

bool Delivery::Hand(int server, std::optional<HostBatch> batch, const absl::Status& status,
                    const std::function<bool()>& stale) {
  absl::MutexLock lock(&mu_);
  if (!batch.has_value()) {
    queue_.push_back(Delivered{server, std::nullopt, status});
    changed_.SignalAll();
    return false;
  }
  if (stopping_) return false;
  int& queued = in_queue_[static_cast<size_t>(server)];
  ++queued;
  if (options_.ordered) {
    // A batch waits for those before it; the reader goes on while its batches are within
    // `prefetch` of the trainer's per server.
    const int64_t position = Position(batch->batch_index);
    const int64_t window = options_.prefetch * static_cast<int64_t>(in_queue_.size());
    reorder_.emplace(position, Delivered{server, std::move(batch), absl::OkStatus()});
    changed_.SignalAll();
    while (!(position < next_position_ + window || stopping_ || (stale && stale()))) changed_.Wait(&mu_);
  } else {
    queue_.push_back(Delivered{server, std::move(batch), absl::OkStatus()});
    changed_.SignalAll();
    while (!(queued < options_.prefetch || stopping_ || (stale && stale()))) changed_.Wait(&mu_);
  }
  return !stopping_;
}

void Delivery::Wake() {
  absl::MutexLock lock(&mu_);
  changed_.SignalAll();
}

bool Delivery::ReadyLocked() const {
  if (!queue_.empty()) return true;
  return options_.ordered && !reorder_.empty() && reorder_.begin()->first == next_position_;
}

Delivered Delivery::TakeLocked() {
  // In order, a batch before the streams' ends and failures: a failure is reported as soon as
  // it arrives, an end only once the batches before it are out.
  Delivered item;
  if (options_.ordered && !reorder_.empty() && reorder_.begin()->first == next_position_) {
    item = std::move(reorder_.begin()->second);
    reorder_.erase(reorder_.begin());
    ++next_position_;
  } else {
    item = std::move(queue_.front());
    queue_.pop_front();
  }
  if (item.batch.has_value()) --in_queue_[static_cast<size_t>(item.server)];
  return item;
}

std::optional<Delivered> Delivery::Take(std::chrono::milliseconds timeout) {
  const absl::Time give_up = absl::Now() + absl::FromChrono(timeout);
  absl::MutexLock lock(&mu_);
  while (true) {
    if (open_streams_ == 0 && !ReadyLocked()) {
      if (!reorder_.empty()) {
        return Delivered{-1, std::nullopt,
                         absl::DataLossError(absl::StrCat("every stream ended but batch ", next_position_,
                                                          " of this trainer's epoch never arrived"))};
      }
      return Delivered{-1, std::nullopt, absl::OkStatus()};
    }
    ++waiting_;
    changed_.SignalAll();
    bool timed_out = false;
    while (!ReadyLocked() && !timed_out) timed_out = changed_.WaitWithDeadline(&mu_, give_up);
    --waiting_;
    if (!ReadyLocked()) return std::nullopt;
    Delivered item = TakeLocked();
    changed_.SignalAll();
    if (item.batch.has_value() || !item.status.ok()) return item;
    --open_streams_;  // one stream ended; the others go on
  }
}

void Delivery::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  changed_.SignalAll();
}

bool Delivery::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool Delivery::WaitStopped(std::chrono::milliseconds wait) {
  const absl::Time until = absl::Now() + absl::FromChrono(wait);
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (changed_.WaitWithDeadline(&mu_, until)) break;
  }
  return stopping_;
}

void Delivery::Clear() {
  absl::MutexLock lock(&mu_);
  stopping_ = false;
  queue_.clear();
  reorder_.clear();
  for (int& n : in_queue_) n = 0;
  open_streams_ = 0;
}

int Delivery::open_streams() const {
  absl::MutexLock lock(&mu_);
  return open_streams_;
}

int Delivery::num_waiting() const {
  absl::MutexLock lock(&mu_);
  return waiting_;
}

bool Delivery::WaitForWaiting(std::chrono::milliseconds timeout) {
  const absl::Time until = absl::Now() + absl::FromChrono(timeout);
  absl::MutexLock lock(&mu_);
  while (waiting_ == 0) {
    if (changed_.WaitWithDeadline(&mu_, until)) break;
  }
  return waiting_ > 0;
}

int Delivery::HeldLocked() const {
  int held = 0;
  for (const auto& [position, item] : reorder_) held += position != next_position_;
  return held;
}

int Delivery::num_held() const {
  absl::MutexLock lock(&mu_);
  return HeldLocked();
}

bool Delivery::WaitUntilHeld(int n, std::chrono::milliseconds timeout) {
  const absl::Time until = absl::Now() + absl::FromChrono(timeout);
  absl::MutexLock lock(&mu_);
  while (HeldLocked() < n) {
    if (changed_.WaitWithDeadline(&mu_, until)) break;
  }
  return HeldLocked() >= n;
}

}  // namespace graphstore::client
