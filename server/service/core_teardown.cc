// Channels going away: destruction, the lease watchdog that reaps channels of vanished
// clients and backends nobody registers on (and joins the workers of backends whose last
// channel went), and shutdown.

#include "absl/strings/str_cat.h"
#include "server/service/core.h"
#include "server/util/log.h"

namespace graphstore {

bool Core::DestroyLocked(std::unique_lock<std::mutex>& lock, uint64_t channel_id) {
  std::shared_ptr<ChannelEntry> c = registry_.RemoveChannel(channel_id);
  if (c == nullptr) return false;
  std::shared_ptr<BackendEntry> b = c->backend;
  const bool last = b->num_channels == 0;
  if (last) {
    registry_.RemoveBackend(b->id);
    // Joining the workers may wait for a batch being sampled: the watchdog thread does it, so
    // that a gRPC reaction never blocks on it.
    retiring_.push_back(b);
    watchdog_cv_.notify_all();
  }
  // Backend calls notify listeners (streams), which may call back into the core.
  if (c->pool != nullptr) shared_account_.RemoveChannel();
  std::vector<std::shared_ptr<SharedUse>> sent = c->shared.TakeAll();
  if (c->pool != nullptr) c->pool->Close();  // a batch in flight must not reuse a file the client maps
  lock.unlock();
  if (auto s = b->scheduler->Describe(channel_id); s.ok()) counters_.batches_dropped += s->buffered_messages;
  b->scheduler->RemoveChannel(channel_id);
  sent.clear();  // with the pool closed, the channel's files are deleted with their last use
  lock.lock();
  return last;
}

void Core::StopRetired(std::unique_lock<std::mutex>& lock) {
  while (!retiring_.empty()) {
    std::vector<std::shared_ptr<BackendEntry>> batch;
    batch.swap(retiring_);
    lock.unlock();
    for (const auto& b : batch) {
      b->scheduler->Stop();
      Logger("core")->info("backend {} '{}' stopped", b->id, b->key);
    }
    lock.lock();
  }
}

void Core::WatchdogLoop() {
  auto last_log = Clock::now();
  std::string last_summary;
  std::unique_lock<std::mutex> lock(mu_);
  while (!shutting_down_) {
    watchdog_cv_.wait_for(lock, std::chrono::milliseconds(options_.lease_check_interval_ms));
    StopRetired(lock);
    if (shutting_down_) break;
    const auto now = Clock::now();
    std::vector<uint64_t> expired;
    for (const auto& [id, c] : registry_.channels()) {
      if (!c->streaming() && now - c->last_activity > std::chrono::milliseconds(c->lease_ms)) expired.push_back(id);
    }
    // A stream that has waited for its client to free shared buffers for too long ends.
    std::vector<std::pair<uint64_t, std::shared_ptr<scheduler::Backend>>> overdue;
    for (const auto& [id, c] : registry_.channels()) {
      if (c->unfreed_wait_since.has_value() && c->unfreed_error.ok() &&
          now - *c->unfreed_wait_since >= std::chrono::milliseconds(options_.shared_release_timeout_ms)) {
        c->unfreed_error = absl::ResourceExhaustedError(absl::StrCat(
            "channel ", id, " holds ", c->shared.unreleased(), " shared buffers (", c->shared.unfreed_bytes() >> 20,
            " MiB) that its client received and did not free for ", options_.shared_release_timeout_ms,
            " ms; the limit is ", options_.max_unfreed_shared_bytes_per_channel >> 20,
            " MiB per channel (--max_unfreed_shared_mb_per_channel) and ", shared_account_.limit() >> 20,
            " MiB for the server (--max_unfreed_shared_mb): free batches with ReleaseSharedBuffers.freed_ids"));
        Logger("core")->warn("{}", std::string(c->unfreed_error.message()));
        overdue.emplace_back(id, c->backend->scheduler);
      }
    }
    if (!overdue.empty()) {
      lock.unlock();
      for (const auto& [id, backend] : overdue) backend->Wake(id);  // its stream ends with the error
      lock.lock();
    }
    for (uint64_t id : expired) {
      Registry::Found found;
      if (registry_.FindChannel(id, &found) == nullptr) continue;  // destroyed meanwhile
      Logger("core")->warn("channel {}: lease expired, destroying it", id);
      DestroyLocked(lock, id);
      ++leases_expired_;
    }
    // A backend nobody registered on (or whose channels all went while it was being joined)
    // holds threads and a place under max_backends: it goes after its own lease.
    std::vector<std::shared_ptr<BackendEntry>> idle;
    for (const auto& [id, b] : registry_.backends()) {
      if (b->state == BackendEntry::State::kReady && b->num_channels == 0 &&
          now - b->last_activity > std::chrono::milliseconds(b->lease_ms)) {
        idle.push_back(b);
      }
    }
    for (const auto& b : idle) {
      Logger("core")->warn("backend {} '{}': no channel within its lease of {} ms, stopping it", b->id, b->key,
                           b->lease_ms);
      registry_.RemoveBackend(b->id);
      retiring_.push_back(b);
      ++backend_leases_expired_;
    }
    if (!idle.empty()) StopRetired(lock);
    if (options_.state_log_interval_s > 0 && now - last_log >= std::chrono::seconds(options_.state_log_interval_s)) {
      last_log = now;
      lock.unlock();
      std::string summary = StateSummary();
      if (summary != last_summary) Logger("core")->info("state: {}", summary);
      last_summary = std::move(summary);
      lock.lock();
    }
  }
}

int Core::Shutdown() {
  std::lock_guard<std::mutex> once(shutdown_mu_);
  std::vector<std::shared_ptr<BackendEntry>> idle_backends;
  int destroyed = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (shutting_down_ && !watchdog_.joinable()) return 0;
    shutting_down_ = true;
    while (!registry_.channels().empty()) {
      const uint64_t id = registry_.channels().begin()->first;
      Logger("core")->info("shutdown: destroying live channel {} ('{}')", id,
                           registry_.channels().begin()->second->worker_key);
      DestroyLocked(lock, id);
      ++destroyed;
    }
    for (const auto& [id, b] : registry_.backends()) idle_backends.push_back(b);
    for (const auto& b : idle_backends) registry_.RemoveBackend(b->id);
  }
  watchdog_cv_.notify_all();
  for (auto& b : idle_backends) {
    if (b->scheduler) b->scheduler->Stop();
  }
  if (watchdog_.joinable()) watchdog_.join();
  {
    // Backends retired after the watchdog's last round.
    std::unique_lock<std::mutex> lock(mu_);
    StopRetired(lock);
  }
  if (destroyed > 0 || !idle_backends.empty()) {
    Logger("core")->info("shutdown: destroyed {} live channels and stopped {} idle backends", destroyed,
                         idle_backends.size());
  }
  return destroyed;
}

}  // namespace graphstore
