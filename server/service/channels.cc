#include "server/service/channels.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "server/sampling/ablp.h"
#include "server/sampling/draw.h"
#include "server/service/config.h"
#include "server/service/message.h"
#include "server/service/registration.h"
#include "server/util/log.h"

namespace graphstore {
namespace {

using Clock = ServiceState::Clock;

// The scheduler's view of a new channel: positions into its input (the workers look the ids
// up), in its backend's batch shape and order, carrying `sampling` to the workers.
scheduler::ChannelOptions SchedulerOptionsOf(const v1::RegisterSamplingInputRequest& req, const ChannelEntry& channel,
                                             const v1::SamplingConfig& config, std::shared_ptr<ChannelSampling> sampling) {
  scheduler::ChannelOptions co;
  co.num_positions = channel.num_seeds;
  co.batch_size = config.batch_size();
  co.batch_stride = channel.batch_stride;
  co.batch_offset = channel.batch_offset;
  if (config.shuffle()) {
    co.order = [seed = req.seed()](int64_t epoch, int64_t n, int64_t first, size_t count, int64_t* out) {
      EpochPositions(seed, epoch, n, first, count, out);
    };
  }
  co.drop_last = config.drop_last();
  co.seed = req.seed();
  co.ordered = req.ordered();
  co.max_buffered_messages = req.buffer().max_messages();
  co.max_buffered_bytes = req.buffer().max_bytes();
  co.context = channel.node_type;
  co.attachment = std::move(sampling);
  co.worker_key = req.worker_key();
  return co;
}

}  // namespace

std::shared_ptr<ChannelEntry> Channels::NewChannel(const v1::RegisterSamplingInputRequest& req,
                                               std::shared_ptr<BackendEntry> backend) {
  const auto& buf = req.buffer();
  const int messages = buf.max_messages() > 0 ? buf.max_messages() : state_.options.default_buffer_messages;
  auto channel = std::make_shared<ChannelEntry>(
      messages, buf.max_bytes() > 0 ? buf.max_bytes() : state_.options.default_buffer_bytes,
      state_.options.max_unfreed_shared_bytes_per_channel, &state_.shared_account);
  channel->id = state_.registry.ReserveChannelId();
  channel->backend = std::move(backend);
  channel->worker_key = req.worker_key();
  channel->lease_ms = req.lease_ms() > 0 ? req.lease_ms() : state_.options.default_lease_ms;
  channel->last_activity = Clock::now();
  if (req.shared_memory()) {
    // Idle files are kept for as many batches as the channel can have alive (buffered or in
    // flight, sampled ahead, being written, sent and not yet received, with the trainer), so
    // that a steady stream reuses its files instead of making new ones.
    const int live = 2 * messages + state_.options.sample_ahead_batches + 3;
    channel->pool = std::make_shared<SharedBufferPool>(state_.shared_memory.get(), live);
  }
  return channel;
}

absl::Status Channels::RegisterSamplingInput(const v1::RegisterSamplingInputRequest& req,
                                         v1::RegisterSamplingInputResponse* resp, const Caller& caller) {
  if (auto s = CheckRegistration(req, state_.options, state_.shared_memory != nullptr); !s.ok()) return s;
  if (!state_.budget->HasRoom()) {
    return absl::ResourceExhaustedError(absl::StrCat("the server holds ", state_.budget->used() >> 20, " MiB of sampled batches that no one has "
                               "read yet (limit ", state_.budget->limit() >> 20,
                               " MiB, --max_buffered_mb); register again once trainers have caught up"));
  }
  // The backend is looked up once; its config decides what the input needs (negatives, times).
  RegistrationContext context{{state_.partition.get(), &state_.queries, state_.cluster.load(), &state_.input_sets},
                              &state_.options,
                              state_.shared_memory != nullptr,
                              &state_.feature_outputs};
  auto not_found = [&] { return absl::NotFoundError(absl::StrCat("backend_id ", req.backend_id(), " does not exist")); };
  std::shared_ptr<BackendEntry> backend;
  v1::SamplingConfig config;
  {
    absl::MutexLock lock(&state_.mu);
    backend = state_.registry.FindBackend(req.backend_id());
    if (backend == nullptr || backend->state != BackendEntry::State::kReady) return not_found();
    config = backend->config;
    context.peer_cache_keeps_all = state_.remote_cache != nullptr && state_.remote_cache->keeps_all();
  }
  auto plan = PlanRegistration(context, req, config);
  if (!plan.ok()) return plan.status();

  std::shared_ptr<ChannelEntry> channel;
  {
    absl::MutexLock lock(&state_.mu);
    if (state_.shutting_down) return absl::UnavailableError("the server is shutting down");
    if (backend->state != BackendEntry::State::kReady) return not_found();  // (removed meanwhile)
    if (auto s = state_.quotas.CheckChannelRoom(caller, req, *backend); !s.ok()) return s;
    backend->last_activity = Clock::now();
    channel = NewChannel(req, backend);
    channel->owner = caller.identity;
    channel->node_type = plan->node_type;
    channel->num_seeds = plan->seeds.size();
    if (req.has_global_batches()) {
      channel->batch_stride = req.global_batches().stride();
      channel->batch_offset = req.global_batches().offset();
    }
    auto sampling = std::make_shared<ChannelSampling>();
    sampling->input = std::move(plan->seeds);
    sampling->input_times = std::move(plan->seed_times);
    sampling->send_input_ids = !req.has_ablp();
    sampling->pool = channel->pool;
    sampling->ablp = std::move(plan->labeler);
    sampling->features = std::move(plan->features);
    channel->sampling = sampling;
    channel->feature_encoding = req.feature_encoding();
    channel->feature_cache_rows = req.feature_cache_rows();
    scheduler::ChannelOptions co = SchedulerOptionsOf(req, *channel, backend->config, std::move(sampling));
    if (auto s = backend->scheduler->AddChannel(channel->id, std::move(co)); !s.ok()) return s;
    state_.registry.AddChannel(channel);
    if (channel->pool != nullptr) state_.shared_account.AddChannel();
  }
  DescribeRegistration(*channel, req.feature_cache_rows(), resp);
  Logger("core")->info("channel {} registered on backend {} by '{}': {} seeds", channel->id, channel->backend->id,
                       channel->worker_key, channel->num_seeds);
  return absl::OkStatus();
}

void Channels::DescribeRegistration(const ChannelEntry& channel, int64_t cache_rows,
                                v1::RegisterSamplingInputResponse* resp) const {
  resp->set_channel_id(channel.id);
  resp->set_num_seeds(channel.num_seeds);
  resp->set_num_batches_per_epoch(*channel.backend->scheduler->NumBatches(channel.id));
  resp->set_num_epoch_batches(channel.batch_stride == 1 ? resp->num_batches_per_epoch()
                                                        : EpochBatches(channel.num_seeds, channel.backend->config));
  resp->set_lease_ms(channel.lease_ms);
  if (channel.sampling->features != nullptr) state_.feature_outputs.Describe(*channel.sampling->features, cache_rows, resp);
}

absl::Status Channels::StartEpoch(const v1::StartEpochRequest& req, v1::StartEpochResponse* resp, const Caller& caller) {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  if (req.epoch() < 0) return absl::InvalidArgumentError(absl::StrCat("epoch must be >= 0, got ", req.epoch()));
  if (req.start_batch() < 0) return absl::InvalidArgumentError(absl::StrCat("start_batch must be >= 0, got ", req.start_batch()));
  if (auto s = state_.SamplingOpen(); !s.ok()) return s;
  std::shared_ptr<scheduler::Backend> backend;
  int64_t start = 0;  // the channel's own number of the first batch
  {
    absl::MutexLock lock(&state_.mu);
    Registry::Found found;
    std::shared_ptr<ChannelEntry> c = state_.registry.FindChannelFor(req.channel_id(), caller, false, &found);
    if (found == Registry::Found::kDestroyed) {
      resp->set_outcome(v1::StartEpochResponse::DESTROYED);
      return absl::OkStatus();
    }
    if (c == nullptr) return Registry::NotLive(req.channel_id(), found);
    c->last_activity = Clock::now();
    backend = c->backend->scheduler;
    start = c->ChannelBatch(req.start_batch());
  }
  auto outcome = backend->StartEpoch(req.channel_id(), req.epoch(), start);
  if (!outcome.ok()) {
    // Destroyed between the lookup and the call.
    if (absl::IsNotFound(outcome.status())) {
      resp->set_outcome(v1::StartEpochResponse::DESTROYED);
      return absl::OkStatus();
    }
    return outcome.status();
  }
  switch (*outcome) {
    case scheduler::StartOutcome::kStarted: resp->set_outcome(v1::StartEpochResponse::STARTED); break;
    case scheduler::StartOutcome::kAlreadyStarted: resp->set_outcome(v1::StartEpochResponse::ALREADY_STARTED); break;
    case scheduler::StartOutcome::kStale: resp->set_outcome(v1::StartEpochResponse::STALE); break;
  }
  auto n = backend->NumBatches(req.channel_id());
  resp->set_num_batches(n.ok() ? *n : 0);
  if (*outcome == scheduler::StartOutcome::kStarted) {
    Logger("core")->info("channel {} epoch {} started: {} batches", req.channel_id(), req.epoch(), resp->num_batches());
  }
  return absl::OkStatus();
}

absl::Status Channels::RenewLease(const v1::RenewLeaseRequest& req, v1::RenewLeaseResponse* resp, const Caller& caller) {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  absl::MutexLock lock(&state_.mu);
  Registry::Found found;
  std::shared_ptr<ChannelEntry> c = state_.registry.FindChannelFor(req.channel_id(), caller, false, &found);
  if (c == nullptr) return Registry::NotLive(req.channel_id(), found);
  c->last_activity = Clock::now();
  resp->set_lease_ms(c->lease_ms);
  return absl::OkStatus();
}

absl::Status Channels::DestroySamplingInput(const v1::DestroySamplingInputRequest& req,
                                        v1::DestroySamplingInputResponse* resp, const Caller& caller) {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  absl::MutexLock lock(&state_.mu);
  Registry::Found found;
  state_.registry.FindChannelFor(req.channel_id(), caller, false, &found);
  if (found == Registry::Found::kDestroyed) {
    resp->set_destroyed(false);
    return absl::OkStatus();
  }
  if (found == Registry::Found::kUnknown) return Registry::NotLive(req.channel_id(), found);
  resp->set_backend_stopped(DestroyChannelLocked(state_, req.channel_id()));
  resp->set_destroyed(true);
  Logger("core")->info("channel {} destroyed", req.channel_id());
  return absl::OkStatus();
}

bool DestroyChannelLocked(ServiceState& state, uint64_t channel_id) {
  std::shared_ptr<ChannelEntry> c = state.registry.RemoveChannel(channel_id);
  if (c == nullptr) return false;
  std::shared_ptr<BackendEntry> b = c->backend;
  // A backend another caller joined and has not registered on yet stays, on its lease.
  const bool last = b->num_channels == 0 && b->pending_joins == 0;
  if (b->num_channels == 0 && !last) b->last_activity = ServiceState::Clock::now();
  if (last) {
    state.registry.RemoveBackend(b->id);
    // Joining the workers may wait for a batch being sampled: the watchdog thread does it, so
    // that a gRPC reaction never blocks on it.
    state.retiring.push_back(b);
    state.retire_cv.SignalAll();
  }
  // Backend calls notify listeners (streams), which may call back into the core.
  if (c->pool != nullptr) state.shared_account.RemoveChannel();
  std::vector<std::shared_ptr<SharedUse>> sent = c->shared.TakeAll();
  if (c->pool != nullptr) c->pool->Close();  // a batch in flight must not reuse a file the client maps
  state.mu.Unlock();
  if (auto s = b->scheduler->Describe(channel_id); s.ok()) state.counters.batches_dropped += s->buffered_messages;
  b->scheduler->RemoveChannel(channel_id);
  sent.clear();  // with the pool closed, the channel's files are deleted with their last use
  // The watchdog may have stopped the backend meanwhile: these may be its last references, and
  // a backend is destroyed outside the lock (its workers are joined, its listeners called).
  c.reset();
  b.reset();
  state.mu.Lock();
  return last;
}

}  // namespace graphstore
