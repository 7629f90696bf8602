#include "server/service/teardown.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/util/log.h"

namespace graphstore {

using Clock = ServiceState::Clock;

Teardown::Teardown(ServiceState* state, const Introspection* introspection)
    : state_(*state), introspection_(*introspection) {
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

Teardown::~Teardown() { Shutdown(); }

void Teardown::StopRetiredLocked() {
  while (!state_.retiring.empty()) {
    std::vector<std::shared_ptr<BackendEntry>> batch;
    batch.swap(state_.retiring);
    state_.mu.Unlock();
    for (const auto& b : batch) {
      b->scheduler->Stop();
      Logger("core")->info("backend {} '{}' stopped", b->id, b->key);
    }
    batch.clear();  // a backend's last reference: destroyed outside the lock
    state_.mu.Lock();
  }
}

void Teardown::ReapLocked(Clock::time_point now) {
  const CoreOptions& options = state_.options;
  std::vector<uint64_t> expired;
  for (const auto& [id, c] : state_.registry.channels()) {
    if (!c->streaming() && now - c->last_activity > std::chrono::milliseconds(c->lease_ms)) expired.push_back(id);
  }
  // A stream that has waited for its client to free shared buffers for too long ends.
  std::vector<std::pair<uint64_t, std::shared_ptr<scheduler::Backend>>> overdue;
  for (const auto& [id, c] : state_.registry.channels()) {
    if (c->unfreed_wait_since.has_value() && c->unfreed_error.ok() &&
        now - *c->unfreed_wait_since >= std::chrono::milliseconds(options.shared_release_timeout_ms)) {
      c->unfreed_error = absl::ResourceExhaustedError(absl::StrCat(
          "channel ", id, " holds ", c->shared.unreleased(), " shared buffers (", c->shared.unfreed_bytes() >> 20,
          " MiB) that its client received and did not free for ", options.shared_release_timeout_ms,
          " ms; the limit is ", options.max_unfreed_shared_bytes_per_channel >> 20,
          " MiB per channel (--max_unfreed_shared_mb_per_channel) and ", state_.shared_account.limit() >> 20,
          " MiB for the server (--max_unfreed_shared_mb): free batches with ReleaseSharedBuffers.freed_ids"));
      Logger("core")->warn("{}", std::string(c->unfreed_error.message()));
      overdue.emplace_back(id, c->backend->scheduler);
    }
  }
  if (!overdue.empty()) {
    state_.mu.Unlock();
    for (const auto& [id, backend] : overdue) backend->Wake(id);  // its stream ends with the error
    state_.mu.Lock();
  }
  for (uint64_t id : expired) {
    Registry::Found found;
    if (state_.registry.FindChannel(id, &found) == nullptr) continue;  // destroyed meanwhile
    Logger("core")->warn("channel {}: lease expired, destroying it", id);
    DestroyChannelLocked(state_, id);
    ++state_.leases_expired;
  }
  // A backend nobody registered on (or whose channels all went while it was being joined)
  // holds threads and a place under max_backends: it goes after its own lease.
  std::vector<std::shared_ptr<BackendEntry>> idle;
  for (const auto& [id, b] : state_.registry.backends()) {
    if (b->state == BackendEntry::State::kReady && b->num_channels == 0 &&
        now - b->last_activity > std::chrono::milliseconds(b->lease_ms)) {
      idle.push_back(b);
    }
  }
  for (const auto& b : idle) {
    Logger("core")->warn("backend {} '{}': no channel within its lease of {} ms, stopping it", b->id, b->key,
                         b->lease_ms);
    state_.registry.RemoveBackend(b->id);
    state_.retiring.push_back(b);
    ++state_.backend_leases_expired;
  }
  if (!idle.empty()) StopRetiredLocked();
}

void Teardown::WatchdogLoop() {
  const CoreOptions& options = state_.options;
  auto last_log = Clock::now();
  std::string last_summary;
  absl::MutexLock lock(&state_.mu);
  while (!state_.shutting_down) {
    state_.retire_cv.WaitWithTimeout(&state_.mu, absl::Milliseconds(options.lease_check_interval_ms));
    StopRetiredLocked();
    if (state_.shutting_down) break;
    const auto now = Clock::now();
    ReapLocked(now);
    if (options.state_log_interval_s > 0 && now - last_log >= std::chrono::seconds(options.state_log_interval_s)) {
      last_log = now;
      state_.mu.Unlock();
      std::string summary = introspection_.StateSummary();
      if (summary != last_summary) Logger("core")->info("state: {}", summary);
      last_summary = std::move(summary);
      state_.mu.Lock();
    }
  }
}

int Teardown::Shutdown() {
  absl::MutexLock once(&shutdown_mu_);
  std::vector<std::shared_ptr<BackendEntry>> idle_backends;
  int destroyed = 0;
  {
    absl::MutexLock lock(&state_.mu);
    if (state_.shutting_down && !watchdog_.joinable()) return 0;
    state_.shutting_down = true;
    while (!state_.registry.channels().empty()) {
      const uint64_t id = state_.registry.channels().begin()->first;
      Logger("core")->info("shutdown: destroying live channel {} ('{}')", id,
                           state_.registry.channels().begin()->second->worker_key);
      DestroyChannelLocked(state_, id);
      ++destroyed;
    }
    for (const auto& [id, b] : state_.registry.backends()) idle_backends.push_back(b);
    for (const auto& b : idle_backends) state_.registry.RemoveBackend(b->id);
    state_.retire_cv.SignalAll();
  }
  for (auto& b : idle_backends) {
    if (b->scheduler) b->scheduler->Stop();
  }
  if (watchdog_.joinable()) watchdog_.join();
  {
    // Backends retired after the watchdog's last round.
    absl::MutexLock lock(&state_.mu);
    StopRetiredLocked();
  }
  if (destroyed > 0 || !idle_backends.empty()) {
    Logger("core")->info("shutdown: destroyed {} live channels and stopped {} idle backends", destroyed,
                         idle_backends.size());
  }
  return destroyed;
}

}  // namespace graphstore
