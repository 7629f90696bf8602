#include "server/service/introspection.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace graphstore {

void Introspection::FillChannelStats(const ChannelEntry& c, v1::ChannelStats* out) const {
  out->set_channel_id(c.id);
  out->set_backend_id(c.backend->id);
  out->set_worker_key(c.worker_key);
  out->set_num_seeds(c.num_seeds);
  out->set_streaming(c.streaming());
  out->set_open_streams(static_cast<int32_t>(c.open_stripes.size()));
  for (const auto& [stripe, counters] : c.open_stripes) {
    v1::StreamStats* s = out->add_streams();
    s->set_stripe(static_cast<uint32_t>(stripe.first));
    s->set_num_stripes(static_cast<uint32_t>(stripe.second));
    s->set_batches_sent(counters->batches_sent.load(std::memory_order_relaxed));
    s->set_bytes_sent(counters->bytes_sent.load(std::memory_order_relaxed));
  }
  out->set_shared_memory(c.pool != nullptr);
  out->set_unreleased_buffers(c.shared.unreleased());
  out->set_unreceived_bytes(c.shared.unreceived_bytes());
  out->set_unfreed_bytes(c.shared.unfreed_bytes());
  out->set_waiting_for_release(c.unfreed_wait_since.has_value());
  if (c.pool != nullptr) {
    out->set_pooled_buffers(c.pool->num_files());
    out->set_pooled_bytes(c.pool->bytes());
  }
  out->set_feature_encoding(c.feature_encoding);
  out->set_feature_cache_rows(c.feature_cache_rows);
  if (c.sampling != nullptr) {
    const int64_t sent = c.sampling->feature_rows_sent.load(std::memory_order_relaxed);
    const int64_t cached = c.sampling->feature_rows_cached.load(std::memory_order_relaxed);
    out->set_feature_rows_sent(sent);
    out->set_feature_rows_cached(cached);
    out->set_feature_cache_hit_rate(sent + cached > 0 ? static_cast<double>(cached) / (sent + cached) : 0.0);
    out->set_rows_from_owners(c.sampling->features != nullptr && c.sampling->features->rows_from_owners);
    out->set_other_partitions_rows_sent(c.sampling->other_partitions_rows_sent.load(std::memory_order_relaxed));
    out->set_input_bytes(static_cast<int64_t>(c.sampling->input.OwnBytes()));
  }
  const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(ServiceState::Clock::now() - c.last_activity).count();
  out->set_lease_remaining_ms(c.streaming() ? c.lease_ms : std::max<int64_t>(0, c.lease_ms - idle));
  auto s = c.backend->scheduler->Describe(c.id);
  if (!s.ok()) return;
  out->set_state(scheduler::ChannelStateName(s->state));
  out->set_epoch(s->epoch);
  out->set_num_batches(s->num_batches);
  out->set_batches_sampled(s->batches_sampled);
  out->set_batches_delivered(s->batches_delivered);
  out->set_in_flight(s->in_flight);
  out->set_buffered_messages(s->buffered_messages);
  out->set_buffered_bytes(s->buffered_bytes);
  out->set_total_batches_sampled(s->total_batches_sampled);
  out->set_sampled_ahead(s->speculative_buffered);
  out->set_error(s->error);
}

void Introspection::FillBackendStats(const BackendEntry& b, v1::BackendStats* out, const Caller& caller) const {
  out->set_backend_id(b.id);
  out->set_backend_key(b.key);
  *out->mutable_config() = b.config;
  if (!b.scheduler) return;
  out->set_num_workers(b.workers->num_workers());
  const scheduler::BackendStats s = b.scheduler->Stats();
  out->set_num_channels(s.num_channels);
  out->set_num_active_channels(s.num_active_channels);
  out->set_num_runnable_channels(s.num_runnable_channels);
  out->set_total_batches_sampled(s.total_batches_sampled);
  for (const auto& [id, c] : state_.registry.channels()) {
    if (c->backend->id == b.id && (caller.sees_everything || c->owner == caller.identity)) {
      FillChannelStats(*c, out->add_channels());
    }
  }
}

absl::Status Introspection::DescribeChannel(const v1::DescribeChannelRequest& req, v1::ChannelStats* resp,
                                   const Caller& caller) const {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  absl::MutexLock lock(&state_.mu);
  Registry::Found found;
  std::shared_ptr<ChannelEntry> c = state_.registry.FindChannelFor(req.channel_id(), caller, true, &found);
  if (found == Registry::Found::kDestroyed) {
    resp->set_channel_id(req.channel_id());
    resp->set_state("destroyed");
    return absl::OkStatus();
  }
  if (c == nullptr) return Registry::NotLive(req.channel_id(), found);
  FillChannelStats(*c, resp);
  return absl::OkStatus();
}

absl::Status Introspection::DescribeBackend(const v1::DescribeBackendRequest& req, v1::BackendStats* resp,
                                   const Caller& caller) const {
  if (req.backend_id() == 0) return absl::InvalidArgumentError("backend_id is required");
  absl::MutexLock lock(&state_.mu);
  std::shared_ptr<BackendEntry> b = state_.registry.FindBackend(req.backend_id());
  bool visible = b != nullptr && (caller.sees_everything || b->creator == caller.identity);
  for (auto it = state_.registry.channels().begin(); b != nullptr && !visible && it != state_.registry.channels().end(); ++it) {
    visible = it->second->backend == b && it->second->owner == caller.identity;
  }
  if (!visible) return absl::NotFoundError(absl::StrCat("backend_id ", req.backend_id(), " does not exist"));
  FillBackendStats(*b, resp, caller);
  return absl::OkStatus();
}

absl::Status Introspection::GetServerStats(const v1::GetServerStatsRequest&, v1::ServerStats* resp) const {
  absl::MutexLock lock(&state_.mu);
  resp->set_uptime_seconds(std::chrono::duration<double>(ServiceState::Clock::now() - state_.started).count());
  int64_t bytes = 0;
  for (const auto& [id, b] : state_.registry.backends()) {
    auto* out = resp->add_backends();
    FillBackendStats(*b, out, Caller::Anonymous());
    for (const auto& c : out->channels()) bytes += c.buffered_bytes();
  }
  resp->set_buffered_bytes(bytes);
  resp->set_open_streams(state_.open_streams.load());
  resp->set_leases_expired(state_.leases_expired);
  resp->set_backend_leases_expired(state_.backend_leases_expired);
  resp->set_shared_unfreed_bytes(state_.shared_account.unfreed());
  resp->set_shared_unfreed_limit(state_.shared_account.limit());
  if (const Cluster* cluster = state_.cluster.load(); cluster != nullptr) cluster->FillStats(resp);
  if (state_.remote_cache != nullptr) {
    resp->set_peer_cache_bytes(state_.remote_cache->bytes());
    resp->set_peer_cache_chosen(state_.remote_cache->chosen());
  }
  int64_t index_bytes = 0;
  for (const EdgeTypeStore& e : state_.partition->edge_types()) {
    index_bytes += e.weight_index->bytes() + e.time_rows->bytes() + e.dst_degree_index->bytes();
  }
  resp->set_sampling_index_bytes(index_bytes);
  resp->set_node_rows_answered(state_.counters.node_rows_answered.load(std::memory_order_relaxed));
  resp->set_node_labels_answered(state_.counters.node_labels_answered.load(std::memory_order_relaxed));
  resp->set_input_set_bytes(static_cast<int64_t>(state_.input_sets.ByteSize()));
  return absl::OkStatus();
}

int64_t Introspection::shared_memory_bytes() const {
  absl::MutexLock lock(&state_.mu);
  int64_t bytes = 0;
  for (const auto& [id, c] : state_.registry.channels()) {
    if (c->pool != nullptr) bytes += c->pool->bytes();
  }
  return bytes;
}

PeerCacheLookups Introspection::peer_cache_lookups() const {
  absl::MutexLock lock(&state_.mu);
  if (state_.remote_cache == nullptr) return {};
  return {state_.remote_cache->hits(), state_.remote_cache->misses(), state_.remote_cache->list_hits(), state_.remote_cache->list_misses()};
}

int Introspection::num_channels() const {
  absl::MutexLock lock(&state_.mu);
  return static_cast<int>(state_.registry.channels().size());
}

std::string Introspection::StateSummary() const {
  absl::MutexLock lock(&state_.mu);
  std::string out = absl::StrCat(state_.registry.backends().size(), " backends, ", state_.registry.channels().size(),
                                 " channels, ", state_.open_streams.load(), " streams");
  for (const auto& [id, b] : state_.registry.backends()) {
    if (!b->scheduler) continue;
    const scheduler::BackendStats s = b->scheduler->Stats();
    absl::StrAppend(&out, "; backend ", id, " '", b->key, "': registered ", s.num_channels, ", active ",
                    s.num_active_channels, ", runnable ", s.num_runnable_channels, ", buffered ",
                    s.buffered_bytes, " B");
    for (const auto& c : s.channels) {
      absl::StrAppend(&out, " [ch ", c.channel_id, " ", scheduler::ChannelStateName(c.state), " epoch ", c.epoch, " ",
                      c.batches_delivered, "/", c.num_batches, "]");
    }
  }
  return out;
}

}  // namespace graphstore
