#include "scheduler/backend.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/backend_channel.h"

namespace graphstore::scheduler {

absl::Status Backend::Validate(const BackendOptions& o) {
  if (o.num_workers < 1) return absl::InvalidArgumentError("num_workers must be >= 1");
  if (o.max_in_flight_per_channel < 1) {
    return absl::InvalidArgumentError("max_in_flight_per_channel must be >= 1");
  }
  if (o.max_buffered_messages < 1) return absl::InvalidArgumentError("max_buffered_messages must be >= 1");
  if (o.max_buffered_bytes < 1) return absl::InvalidArgumentError("max_buffered_bytes must be >= 1");
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Backend>> Backend::Create(BackendOptions options, SampleFn sample) {
  if (auto s = Validate(options); !s.ok()) return s;
  return std::make_shared<Backend>(std::move(options), std::move(sample));
}

Backend::Backend(BackendOptions options, SampleFn sample)
    : options_(std::move(options)), sample_(std::move(sample)) {
  if (options_.budget != nullptr) budget_token_ = options_.budget->Subscribe([this] { Kick(); });
}

void Backend::StartWorkersLocked() {
  if (live_workers_ > 0 || stopping_) return;
  // The threads of an earlier spell have decided to exit, under mu_, and need it no more.
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
  const int n = std::max(1, options_.num_workers);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
  live_workers_ = n;
}

void Backend::Kick() {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, c] : channels_) MaybeQueue(c);
}

Backend::~Backend() { Stop(); }

absl::Status Backend::AddChannel(uint64_t id, ChannelOptions options) {
  if (options.batch_size < 1) return absl::InvalidArgumentError("batch_size must be >= 1");
  if (options.batch_stride < 1 || options.batch_offset < 0 || options.batch_offset >= options.batch_stride) {
    return absl::InvalidArgumentError(absl::StrCat("batch_offset ", options.batch_offset, " must be in [0, batch_stride ",
                                                   options.batch_stride, ")"));
  }
  if (options.max_in_flight < 0 || options.max_buffered_messages < 0 || options.max_buffered_bytes < 0) {
    return absl::InvalidArgumentError("buffer and in-flight limits must be >= 0 (0 = default)");
  }
  auto c = std::make_shared<Channel>();
  c->id = id;
  c->max_in_flight = options.max_in_flight > 0 ? options.max_in_flight : options_.max_in_flight_per_channel;
  c->max_messages = options.max_buffered_messages > 0 ? options.max_buffered_messages : options_.max_buffered_messages;
  c->max_bytes = options.max_buffered_bytes > 0 ? options.max_buffered_bytes : options_.max_buffered_bytes;
  c->budget = options_.budget.get();
  c->opts = std::move(options);
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::FailedPreconditionError("the backend is stopped");
  auto [it, inserted] = channels_.emplace(id, std::move(c));
  if (!inserted) return absl::AlreadyExistsError(absl::StrCat("channel ", id, " already exists"));
  if (options_.budget != nullptr) options_.budget->AddChannel();
  StartWorkersLocked();
  MaybeQueue(it->second);  // may sample the first epoch's first batches ahead
  return absl::OkStatus();
}

bool Backend::RemoveChannel(uint64_t id) {
  ChannelPtr c;
  Freed freed;
  {
    absl::MutexLock lock(&mu_);
    auto it = channels_.find(id);
    if (it == channels_.end()) return false;
    c = std::move(it->second);
    channels_.erase(it);
    if (options_.budget != nullptr) options_.budget->RemoveChannel();
    removed_[id] = c;
    c->removed = true;
    c->cur.TakeBuffer(&freed);
    c->DropAhead(&freed);
    runnable_.erase(std::remove(runnable_.begin(), runnable_.end(), c), runnable_.end());
    speculative_.erase(std::remove(speculative_.begin(), speculative_.end(), c), speculative_.end());
    c->queued = false;
    c->queued_ahead = false;
  }
  ready_cv_.SignalAll();
  work_cv_.SignalAll();  // with the last channel gone, idle workers exit
  c->Notify();
  return true;
}

absl::StatusOr<StartOutcome> Backend::StartEpoch(uint64_t id, int64_t epoch, int64_t start_batch) {
  if (epoch < 0) return absl::InvalidArgumentError(absl::StrCat("epoch ", epoch, " is negative"));
  if (start_batch < 0) return absl::InvalidArgumentError(absl::StrCat("start_batch ", start_batch, " is negative"));
  ChannelPtr c;
  Freed freed;
  {
    absl::MutexLock lock(&mu_);
    auto it = channels_.find(id);
    if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
    c = it->second;
    if (epoch == c->cur.epoch) return StartOutcome::kAlreadyStarted;
    if (epoch < c->cur.epoch) return StartOutcome::kStale;
    c->cur.TakeBuffer(&freed);
    if (epoch == c->ahead.epoch && start_batch == 0 && !c->ahead_failed) {
      // Adopt what was sampled ahead: its generation makes its tasks in flight the epoch's.
      c->cur = std::move(c->ahead);
      c->ahead = Run();  // its bytes are the current run's now
      c->ResetProgress(0);
    } else {
      c->cur = c->NewRun(epoch);
      c->cur.next = std::min(start_batch, c->cur.num_batches);
      c->ResetProgress(c->cur.next);
    }
    c->DropAhead(&freed);
    MaybeQueue(c);
  }
  ready_cv_.SignalAll();
  c->Notify();
  return StartOutcome::kStarted;
}

absl::Status Backend::ResumeEpoch(uint64_t id, int64_t epoch, int64_t start_batch, Stripe stripe) {
  ChannelPtr c;
  Freed freed;
  {
    absl::MutexLock lock(&mu_);
    auto it = channels_.find(id);
    if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
    c = it->second;
    if (epoch != c->cur.epoch) {
      return absl::FailedPreconditionError(
          c->cur.epoch < 0 ? absl::StrCat("epoch ", epoch, " has not been started")
                           : absl::StrCat("epoch ", epoch, " is not the channel's current epoch ", c->cur.epoch));
    }
    if (start_batch < 0 || start_batch > c->cur.num_batches) {
      return absl::InvalidArgumentError(
          absl::StrCat("start_batch ", start_batch, " is outside [0, ", c->cur.num_batches, "]"));
    }
    // A stream opened where its epoch already starts, before anything went wrong or out to
    // its stripe: nothing to redo.
    if (!c->cancelled && c->error.ok() && c->start_batch == start_batch && c->ProgressOf(stripe).delivered == 0) {
      return absl::OkStatus();
    }
    c->cur.TakeBuffer(&freed);
    c->cur.generation = c->next_generation++;
    c->cur.next = start_batch;
    c->ResetProgress(start_batch);
    MaybeQueue(c);
  }
  ready_cv_.SignalAll();
  c->Notify();
  return absl::OkStatus();
}

bool Backend::CancelEpoch(uint64_t id, std::optional<int64_t> epoch) {
  ChannelPtr c;
  Freed freed;
  {
    absl::MutexLock lock(&mu_);
    auto it = channels_.find(id);
    if (it == channels_.end()) return false;
    c = it->second;
    if (epoch.has_value() && c->cur.epoch != *epoch) return false;
    if (c->cur.epoch < 0) return true;
    c->cancelled = true;
    c->cur.next = c->cur.num_batches;
    c->cur.TakeBuffer(&freed);
    c->DropAhead(&freed);
  }
  ready_cv_.SignalAll();
  c->Notify();
  return true;
}

absl::StatusOr<int64_t> Backend::NumBatches(uint64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = channels_.find(id);
  if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
  const Channel& c = *it->second;
  return c.cur.epoch >= 0 ? c.cur.num_batches : c.BatchesFor(c.opts.num_seeds());
}

void Backend::MaybeQueue(const ChannelPtr& c) {
  if (c->queued) return;
  if (c->Runnable(stopping_)) {
    c->queued = true;
    runnable_.push_back(c);
    work_cv_.Signal();
  } else if (!c->queued_ahead && c->SpeculationRunnable(stopping_, options_.speculative_batches)) {
    c->queued_ahead = true;
    speculative_.push_back(c);
    work_cv_.Signal();
  }
}

void Backend::WorkerLoop(int worker) {
  if (options_.on_worker_start) options_.on_worker_start(worker);
  std::vector<int64_t> seeds;  // this worker's batch seeds, filled outside the lock
  mu_.Lock();
  while (true) {
    while (!(stopping_ || !runnable_.empty() || !speculative_.empty() || channels_.empty())) work_cv_.Wait(&mu_);
    if (stopping_ || (channels_.empty() && runnable_.empty() && speculative_.empty())) {
      // Stopping, or no channel left: the thread goes; the next AddChannel starts the workers
      // again.
      --live_workers_;
      mu_.Unlock();
      return;
    }
    // Real work first; sampling ahead only when no channel's current epoch needs a worker.
    const bool speculative = runnable_.empty();
    std::deque<ChannelPtr>& queue = speculative ? speculative_ : runnable_;
    ChannelPtr c = std::move(queue.front());
    queue.pop_front();
    (speculative ? c->queued_ahead : c->queued) = false;
    if (speculative ? !c->SpeculationRunnable(stopping_, options_.speculative_batches) : !c->Runnable(stopping_)) {
      continue;
    }

    // One batch, then back to the tail of the queue: one batch per channel per round.
    if (speculative && c->ahead.epoch < 0) c->ahead = c->NewRun(c->cur.epoch + 1);
    Run& run = speculative ? c->ahead : c->cur;
    const int64_t b = run.next++;
    const uint64_t generation = run.generation;
    ++c->in_flight;
    BatchTask task = c->TaskFor(run, b, worker);
    MaybeQueue(c);
    mu_.Unlock();
    c->FillSeeds(&task, &seeds);

    absl::StatusOr<Batch> result = absl::InternalError("sampler threw an exception");
    try {
      result = sample_(task);
    } catch (const std::exception& e) {
      result = absl::InternalError(absl::StrCat("sampler threw: ", e.what()));
    } catch (...) {
    }

    mu_.Lock();
    --c->in_flight;
    if (c->Keep(generation, task, &result)) ++total_batches_sampled_;
    MaybeQueue(c);
    mu_.Unlock();
    ready_cv_.SignalAll();
    c->Notify();
    result = absl::CancelledError();  // drop a discarded payload outside the lock
    mu_.Lock();
  }
}

void Backend::Stop() {
  std::vector<ChannelPtr> removed;
  Freed freed;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, c] : channels_) {
      removed_[id] = c;
      c->removed = true;
      c->cur.TakeBuffer(&freed);
      c->ahead.TakeBuffer(&freed);
      if (options_.budget != nullptr) options_.budget->RemoveChannel();
      removed.push_back(c);
    }
    channels_.clear();
    runnable_.clear();
    speculative_.clear();
  }
  work_cv_.SignalAll();
  ready_cv_.SignalAll();
  // The listeners call back into the backend's owner: they hear of the stop with no lock of the
  // backend held.
  for (const auto& c : removed) c->Notify();
  absl::MutexLock stop_lock(&stop_mu_);
  if (budget_token_ != 0) {
    options_.budget->Unsubscribe(budget_token_);
    budget_token_ = 0;
  }
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
}

Backend::ChannelPtr Backend::FindLocked(uint64_t id) const {
  auto it = channels_.find(id);
  return it == channels_.end() ? nullptr : it->second;
}

Delivery Backend::MissingLocked(uint64_t id) const {
  Delivery d;
  d.kind = Delivery::Kind::kClosed;
  d.status = removed_.count(id) ? absl::CancelledError(absl::StrCat("channel ", id, " was destroyed"))
                                : absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
  return d;
}

Delivery Backend::PopLocked(const ChannelPtr& c, int64_t epoch, Stripe stripe) {
  Delivery d = c->Pop(epoch, stripe, stopping_);
  if (d.kind == Delivery::Kind::kMessage) MaybeQueue(c);
  return d;
}

Delivery Backend::TryPop(uint64_t id, int64_t epoch, Stripe stripe) {
  absl::MutexLock lock(&mu_);
  ChannelPtr c = FindLocked(id);
  return c == nullptr ? MissingLocked(id) : PopLocked(c, epoch, stripe);
}

Delivery Backend::Pop(uint64_t id, int64_t epoch, std::chrono::milliseconds timeout, Stripe stripe) {
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  absl::MutexLock lock(&mu_);
  while (true) {
    ChannelPtr c = FindLocked(id);
    if (c == nullptr) return MissingLocked(id);
    Delivery d = PopLocked(c, epoch, stripe);
    if (d.kind != Delivery::Kind::kPending) return d;
    if (ready_cv_.WaitWithDeadline(&mu_, deadline)) return PopLocked(c, epoch, stripe);
  }
}

absl::StatusOr<uint64_t> Backend::SetListener(uint64_t id, std::function<void()> listener) {
  ChannelPtr c;
  uint64_t token;
  {
    absl::MutexLock lock(&mu_);
    c = FindLocked(id);
    if (c == nullptr) return absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
    token = next_listener_token_++;
  }
  c->AddListener(token, std::move(listener));
  return token;
}

void Backend::ClearListener(uint64_t id, uint64_t token) {
  ChannelPtr c;
  {
    absl::MutexLock lock(&mu_);
    c = FindLocked(id);
    if (c == nullptr) {
      auto gone = removed_.find(id);
      if (gone != removed_.end()) c = gone->second.lock();
    }
    if (c == nullptr) return;  // nothing can call the listener any more
  }
  c->RemoveListener(token);
}

void Backend::Wake(uint64_t id) {
  ChannelPtr c;
  {
    absl::MutexLock lock(&mu_);
    c = FindLocked(id);
    if (c == nullptr) return;
  }
  c->Notify();
}

void Backend::SetStreamRoom(uint64_t id, int streams) {
  absl::MutexLock lock(&mu_);
  ChannelPtr c = FindLocked(id);
  if (c == nullptr || streams <= c->room_streams) return;
  c->room_streams = streams;
  MaybeQueue(c);
}

absl::StatusOr<ChannelStats> Backend::Describe(uint64_t id) const {
  absl::MutexLock lock(&mu_);
  ChannelPtr c = FindLocked(id);
  if (c == nullptr) return absl::NotFoundError(absl::StrCat("channel ", id, " does not exist"));
  return c->Describe(c->Runnable(stopping_));
}

BackendStats Backend::Stats() const {
  absl::MutexLock lock(&mu_);
  BackendStats s;
  s.num_workers = live_workers_;
  s.num_channels = static_cast<int>(channels_.size());
  s.total_batches_sampled = total_batches_sampled_;
  for (const auto& [id, c] : channels_) {
    ChannelStats cs = c->Describe(c->Runnable(stopping_));
    s.num_active_channels += cs.state == ChannelState::kRunning;
    s.num_runnable_channels += cs.runnable;
    s.buffered_bytes += cs.buffered_bytes;
    s.channels.push_back(std::move(cs));
  }
  return s;
}

int Backend::num_live_workers() const {
  absl::MutexLock lock(&mu_);
  return live_workers_;
}

int Backend::num_channels() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(channels_.size());
}

}  // namespace graphstore::scheduler
