// What operators see of the core: DescribeChannel, DescribeBackend, GetServerStats and the
// periodic state line.

#include "absl/strings/str_cat.h"
#include "server/service/core.h"

namespace graphstore {

void Core::FillChannelStats(const ChannelEntry& c, v1::ChannelStats* out) const {
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
  }
  const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - c.last_activity).count();
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

void Core::FillBackendStats(const BackendEntry& b, v1::BackendStats* out, const Caller& caller) const {
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
  for (const auto& [id, c] : registry_.channels()) {
    if (c->backend->id == b.id && (caller.sees_everything || c->owner == caller.identity)) {
      FillChannelStats(*c, out->add_channels());
    }
  }
}

absl::Status Core::DescribeChannel(const v1::DescribeChannelRequest& req, v1::ChannelStats* resp,
                                   const Caller& caller) const {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  std::lock_guard<std::mutex> lock(mu_);
  Registry::Found found;
  std::shared_ptr<ChannelEntry> c = registry_.FindChannelFor(req.channel_id(), caller, true, &found);
  if (found == Registry::Found::kDestroyed) {
    resp->set_channel_id(req.channel_id());
    resp->set_state("destroyed");
    return absl::OkStatus();
  }
  if (c == nullptr) return Registry::NotLive(req.channel_id(), found);
  FillChannelStats(*c, resp);
  return absl::OkStatus();
}

absl::Status Core::DescribeBackend(const v1::DescribeBackendRequest& req, v1::BackendStats* resp,
                                   const Caller& caller) const {
  if (req.backend_id() == 0) return absl::InvalidArgumentError("backend_id is required");
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<BackendEntry> b = registry_.FindBackend(req.backend_id());
  bool visible = b != nullptr && (caller.sees_everything || b->creator == caller.identity);
  for (auto it = registry_.channels().begin(); b != nullptr && !visible && it != registry_.channels().end(); ++it) {
    visible = it->second->backend == b && it->second->owner == caller.identity;
  }
  if (!visible) return absl::NotFoundError(absl::StrCat("backend_id ", req.backend_id(), " does not exist"));
  FillBackendStats(*b, resp, caller);
  return absl::OkStatus();
}

absl::Status Core::GetServerStats(const v1::GetServerStatsRequest&, v1::ServerStats* resp) const {
  std::lock_guard<std::mutex> lock(mu_);
  resp->set_uptime_seconds(std::chrono::duration<double>(Clock::now() - started_).count());
  int64_t bytes = 0;
  for (const auto& [id, b] : registry_.backends()) {
    auto* out = resp->add_backends();
    FillBackendStats(*b, out, Caller::Anonymous());
    for (const auto& c : out->channels()) bytes += c.buffered_bytes();
  }
  resp->set_buffered_bytes(bytes);
  resp->set_open_streams(open_streams_.load());
  resp->set_leases_expired(leases_expired_);
  resp->set_backend_leases_expired(backend_leases_expired_);
  resp->set_shared_unfreed_bytes(shared_account_.unfreed());
  resp->set_shared_unfreed_limit(shared_account_.limit());
  if (const Cluster* cluster = cluster_.load(); cluster != nullptr) cluster->FillStats(resp);
  if (remote_cache_ != nullptr) resp->set_peer_cache_bytes(remote_cache_->bytes());
  int64_t index_bytes = 0;
  for (const EdgeTypeStore& e : partition_->edge_types()) index_bytes += e.weight_index->bytes() + e.time_rows->bytes();
  resp->set_sampling_index_bytes(index_bytes);
  return absl::OkStatus();
}

int64_t Core::shared_memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t bytes = 0;
  for (const auto& [id, c] : registry_.channels()) {
    if (c->pool != nullptr) bytes += c->pool->bytes();
  }
  return bytes;
}

Core::PeerCacheLookups Core::peer_cache_lookups() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (remote_cache_ == nullptr) return {};
  return {remote_cache_->hits(), remote_cache_->misses(), remote_cache_->list_hits(), remote_cache_->list_misses()};
}

int Core::num_channels() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(registry_.channels().size());
}

std::string Core::StateSummary() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = absl::StrCat(registry_.backends().size(), " backends, ", registry_.channels().size(),
                                 " channels, ", open_streams_.load(), " streams");
  for (const auto& [id, b] : registry_.backends()) {
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
