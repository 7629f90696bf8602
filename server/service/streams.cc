#include "server/service/streams.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/util/log.h"

namespace graphstore {

namespace {

// Streams of one channel at most (StreamSampledMessagesRequest.num_stripes).
constexpr uint32_t kMaxStripes = 64;

// The request's stripe (every batch when it names none).
absl::StatusOr<scheduler::Stripe> StripeOf(const v1::StreamSampledMessagesRequest& req) {
  if (req.num_stripes() > kMaxStripes) {
    return absl::InvalidArgumentError(absl::StrCat("num_stripes must be <= ", kMaxStripes, ", got ", req.num_stripes()));
  }
  scheduler::Stripe stripe;
  stripe.count = static_cast<int>(std::max<uint32_t>(1, req.num_stripes()));
  if (req.stripe() >= static_cast<uint32_t>(stripe.count)) {
    return absl::InvalidArgumentError(
        absl::StrCat("stripe must be < num_stripes (", stripe.count, "), got ", req.stripe()));
  }
  stripe.index = static_cast<int>(req.stripe());
  return stripe;
}

// Whether channel `c` takes a stream of `stripe` beside those it has open: shared memory takes
// one stream, each stripe one at a time, and all of one count.
absl::Status CanOpen(const ChannelEntry& c, scheduler::Stripe stripe) {
  if (c.pool != nullptr && stripe.count > 1) {
    return absl::InvalidArgumentError(absl::StrCat("num_stripes: channel_id ", c.id,
                                                   " sends through shared memory, which takes one stream; got ",
                                                   stripe.count));
  }
  if (c.open_stripes.count({stripe.index, stripe.count})) {
    return absl::AlreadyExistsError(
        stripe.count == 1 ? absl::StrCat("channel_id ", c.id, " already has an open stream")
                          : absl::StrCat("channel_id ", c.id, " already has an open stream of stripe ", stripe.index,
                                         " of ", stripe.count));
  }
  if (!c.open_stripes.empty() && c.open_stripes.begin()->first.second != stripe.count) {
    return absl::AlreadyExistsError(absl::StrCat("channel_id ", c.id, " has open streams of ",
                                                 c.open_stripes.begin()->first.second, " stripes, not ",
                                                 stripe.count));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> Streams::StartOf(const ChannelEntry& c, const v1::StreamSampledMessagesRequest& req) {
  auto stats = c.backend->scheduler->Describe(c.id);
  if (!stats.ok()) return stats.status();
  if (stats->epoch != req.epoch()) {
    return absl::FailedPreconditionError(
        stats->epoch < 0 ? absl::StrCat("epoch ", req.epoch(), " has not been started; call StartEpoch first")
                         : absl::StrCat("epoch ", req.epoch(), " is not the channel's current epoch ", stats->epoch));
  }
  // A reconnecting reader resumes: from start_batch, or from the start of an epoch whose
  // earlier stream was cancelled or failed (a peer that was down may be back). Sampling is
  // deterministic, so it gets exactly those batches.
  const int64_t from = c.ChannelBatch(req.start_batch());
  const bool resume = from > 0 || stats->state == scheduler::ChannelState::kCancelled ||
                      stats->state == scheduler::ChannelState::kFailed;
  if (!resume) return -1;
  if (from > stats->num_batches) {
    return absl::InvalidArgumentError(absl::StrCat("start_batch ", req.start_batch(), " is past the channel's ",
                                                   stats->num_batches, " batches of the epoch"));
  }
  return from;
}

void Streams::NewSharedStreamLocked(ChannelEntry* c, bool reclaim_unreceived,
                                    std::vector<std::shared_ptr<SharedUse>>* lost,
                                    std::vector<std::pair<uint64_t, std::shared_ptr<scheduler::Backend>>>* wake) {
  const bool server_was_full = state_.shared_account.full();
  *lost = c->shared.NewStream(reclaim_unreceived);
  if (!lost->empty()) {
    Logger("core")->debug("channel {}: {} shared buffers sent on earlier streams never reached the client; freed",
                          c->id, lost->size());
  }
  if (server_was_full && !state_.shared_account.full()) {
    for (const auto& [id, other] : state_.registry.channels()) {
      if (other->pool != nullptr && other->streaming()) wake->emplace_back(id, other->backend->scheduler);
    }
  }
}

absl::StatusOr<StreamAttachment> Streams::AttachStream(const v1::StreamSampledMessagesRequest& req,
                                                    const Caller& caller) {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  if (req.epoch() < 0) return absl::InvalidArgumentError(absl::StrCat("epoch must be >= 0, got ", req.epoch()));
  if (req.start_batch() < 0) return absl::InvalidArgumentError("start_batch must be >= 0");
  auto parsed = StripeOf(req);
  if (!parsed.ok()) return parsed.status();
  const scheduler::Stripe stripe = *parsed;
  // Shared buffers lost with the channel's earlier streams, and the streams their files may
  // let go on: both handled after the lock is released.
  std::vector<std::shared_ptr<SharedUse>> lost;
  std::vector<std::pair<uint64_t, std::shared_ptr<scheduler::Backend>>> wake;
  struct AfterUnlock {
    decltype(lost)& uses;
    decltype(wake)& streams;
    ~AfterUnlock() {
      uses.clear();
      for (const auto& [id, backend] : streams) backend->Wake(id);
    }
  } after_unlock{lost, wake};
  StreamAttachment a;
  bool resume = false;
  int64_t from = -1;
  {
    absl::MutexLock lock(&state_.mu);
    if (state_.shutting_down) return absl::UnavailableError("the server is shutting down");
    Registry::Found found;
    std::shared_ptr<ChannelEntry> live = state_.registry.FindChannelFor(req.channel_id(), caller, false, &found);
    if (live == nullptr) return Registry::NotLive(req.channel_id(), found);
    ChannelEntry& c = *live;
    if (auto s = CanOpen(c, stripe); !s.ok()) return s;
    if (auto s = GrowStreamRoomLocked(&c, stripe.count); !s.ok()) return s;
    a.backend = c.backend->scheduler;
    a.channel_id = c.id;
    a.epoch = req.epoch();
    a.shared_memory = c.pool != nullptr;
    a.stripe = stripe;
    auto start = StartOf(c, req);
    if (!start.ok()) return start.status();
    from = *start;
    resume = from >= 0;
    if (c.pool != nullptr) NewSharedStreamLocked(&c, req.reclaim_unreceived(), &lost, &wake);
    // The stripe is the stream's from here: a second stream of it is refused while this one
    // resumes its epoch below.
    a.counters = std::make_shared<StreamCounters>();
    c.open_stripes.emplace(std::make_pair(stripe.index, stripe.count), a.counters);
    c.last_activity = ServiceState::Clock::now();
    ++state_.open_streams;
  }
  if (!resume) return a;
  // Resuming calls the channel's listeners, which call back into the core: never under its lock.
  if (absl::Status s = a.backend->ResumeEpoch(a.channel_id, req.epoch(), from, stripe); !s.ok()) {
    absl::MutexLock lock(&state_.mu);
    --state_.open_streams;
    if (auto c = state_.LiveChannel(a.channel_id); c.ok()) (*c)->open_stripes.erase({stripe.index, stripe.count});
    return s;
  }
  Logger("core")->info("channel {}: epoch {} resumed from batch {} (stripe {} of {})", a.channel_id, req.epoch(),
                       req.start_batch(), stripe.index, stripe.count);
  return a;
}

absl::Status Streams::GrowStreamRoomLocked(ChannelEntry* c, int streams) {
  if (streams <= c->room_streams) return absl::OkStatus();
  if (auto s = state_.quotas.CheckStreamRoom(*c, streams); !s.ok()) return s;
  state_.registry.GrowStreamRoom(c, streams);
  c->backend->scheduler->SetStreamRoom(c->id, streams);
  return absl::OkStatus();
}

void Streams::DetachStream(const StreamAttachment& a, bool cancelled) {
  const uint64_t channel_id = a.channel_id;
  const int64_t epoch = a.epoch;
  std::shared_ptr<scheduler::Backend> backend;
  {
    absl::MutexLock lock(&state_.mu);
    --state_.open_streams;
    auto c = state_.LiveChannel(channel_id);
    if (!c.ok()) return;
    (*c)->open_stripes.erase({a.stripe.index, a.stripe.count});
    (*c)->last_activity = ServiceState::Clock::now();
    if (cancelled) backend = (*c)->backend->scheduler;
  }
  if (backend) {
    // The client may have started the next epoch before this stream's end arrived: that one
    // is left alone.
    const auto s = backend->Describe(channel_id);
    if (backend->CancelEpoch(channel_id, epoch)) {
      if (s.ok() && s->epoch == epoch) state_.counters.batches_dropped += s->buffered_messages;
      Logger("core")->info("channel {}: epoch {} stream cancelled by the client; its remaining work is dropped",
                           channel_id, epoch);
    }
  }
}

void Streams::Sent(const StreamAttachment& a, int64_t bytes, const BatchCounts* batch_done) {
  const uint64_t channel_id = a.channel_id;
  const int transport = a.shared_memory ? 1 : 0;
  state_.counters.bytes_sent[transport].fetch_add(bytes, std::memory_order_relaxed);
  if (a.counters != nullptr) a.counters->bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
  if (batch_done == nullptr) return;
  state_.counters.batches_sent[transport].fetch_add(1, std::memory_order_relaxed);
  if (a.counters != nullptr) a.counters->batches_sent.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const ChannelSampling> sampling;
  {
    absl::MutexLock lock(&state_.mu);
    auto c = state_.LiveChannel(channel_id);
    if (c.ok()) sampling = (*c)->sampling;
  }
  if (sampling == nullptr) return;
  sampling->feature_rows_sent.fetch_add(batch_done->feature_rows, std::memory_order_relaxed);
  sampling->feature_rows_cached.fetch_add(batch_done->cached_feature_rows, std::memory_order_relaxed);
  sampling->other_partitions_rows_sent.fetch_add(batch_done->other_partitions_rows, std::memory_order_relaxed);
}

void Streams::Touch(uint64_t channel_id) {
  absl::MutexLock lock(&state_.mu);
  auto c = state_.LiveChannel(channel_id);
  if (c.ok()) (*c)->last_activity = ServiceState::Clock::now();
}

absl::StatusOr<bool> Streams::SharedHoldBack(uint64_t channel_id) {
  absl::MutexLock lock(&state_.mu);
  auto found = state_.LiveChannel(channel_id);
  if (!found.ok()) return false;
  ChannelEntry& c = **found;
  if (!c.unfreed_error.ok()) return c.unfreed_error;
  const SharedLedger::Hold hold = c.shared.HoldBack();
  if (hold != SharedLedger::Hold::kUnfreed) {
    c.unfreed_wait_since.reset();
  } else if (!c.unfreed_wait_since.has_value()) {
    c.unfreed_wait_since = ServiceState::Clock::now();
    Logger("core")->info("channel {}: stream paused, its client holds {} MiB of shared buffers it has not freed",
                         channel_id, c.shared.unfreed_bytes() >> 20);
  }
  return hold != SharedLedger::Hold::kNone;
}

void Streams::HandOff(uint64_t channel_id, std::shared_ptr<SharedUse> use) {
  absl::MutexLock lock(&state_.mu);
  auto c = state_.LiveChannel(channel_id);
  if (!c.ok()) return;  // destroyed: the file goes with the last reference
  (*c)->shared.Sent(std::move(use));
}

absl::Status Streams::ReleaseSharedBuffers(const v1::ReleaseSharedBuffersRequest& req,
                                        v1::ReleaseSharedBuffersResponse* resp, const Caller& caller) {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  for (const auto* ids : {&req.received_ids(), &req.freed_ids()}) {
    if (ids->size() > state_.options.max_ids_per_request) {
      return absl::ResourceExhaustedError(absl::StrCat(ids == &req.freed_ids() ? "freed_ids" : "received_ids",
                                                       " has ", ids->size(), " ids; the limit is ",
                                                       state_.options.max_ids_per_request));
    }
  }
  SharedLedger::Release release;
  // Streams that may go on: this channel's, and when the server drops below its shared-memory
  // limit, every shared-memory channel's.
  std::vector<std::pair<uint64_t, std::shared_ptr<scheduler::Backend>>> wake;
  {
    absl::MutexLock lock(&state_.mu);
    Registry::Found found;
    std::shared_ptr<ChannelEntry> c = state_.registry.FindChannelFor(req.channel_id(), caller, false, &found);
    if (found == Registry::Found::kDestroyed) return absl::OkStatus();  // its buffers are gone already
    if (c == nullptr) return Registry::NotLive(req.channel_id(), found);
    const bool server_was_full = state_.shared_account.full();
    release = c->shared.Apply(req.received_ids(), req.freed_ids());
    c->last_activity = ServiceState::Clock::now();
    if (release.freed_bytes > 0) {
      c->unfreed_wait_since.reset();
      c->unfreed_error = absl::OkStatus();  // a later stream of the channel may go on
    }
    if (release.unblocked || release.freed_bytes > 0) wake.emplace_back(c->id, c->backend->scheduler);
    if (server_was_full && !state_.shared_account.full()) {
      for (const auto& [id, other] : state_.registry.channels()) {
        if (other->pool != nullptr && other->streaming() && id != c->id) wake.emplace_back(id, other->backend->scheduler);
      }
    }
  }
  resp->set_freed(static_cast<int32_t>(release.freed.size()));
  release.freed.clear();  // files go back to the pool, outside the lock
  for (const auto& [id, backend] : wake) backend->Wake(id);  // a held-back stream may go on
  return absl::OkStatus();
}

}  // namespace graphstore
