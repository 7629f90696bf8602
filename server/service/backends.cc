#include "server/service/backends.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/service/config.h"
#include "server/service/worker.h"
#include "server/util/log.h"

namespace graphstore {
namespace {

// The request's own fields: its key and its lease.
absl::Status CheckBackendRequest(const v1::InitSamplingBackendRequest& req, const CoreOptions& options) {
  if (req.backend_key().empty()) return absl::InvalidArgumentError("backend_key is required");
  if (req.backend_key().size() > options.max_key_length) {
    return absl::ResourceExhaustedError(absl::StrCat("backend_key is longer than ", options.max_key_length, " bytes"));
  }
  if (req.lease_ms() < 0) return absl::InvalidArgumentError("lease_ms must be >= 0 (0 = server default)");
  if (req.lease_ms() > options.max_lease_ms) {
    return absl::ResourceExhaustedError(absl::StrCat("lease_ms ", req.lease_ms(), " exceeds the limit ", options.max_lease_ms));
  }
  return absl::OkStatus();
}

}  // namespace

void Backends::InitSamplingBackend(const v1::InitSamplingBackendRequest& req, v1::InitSamplingBackendResponse* resp,
                               std::function<void(absl::Status)> done, const Caller& caller) {
  if (auto s = CheckBackendRequest(req, state_.options); !s.ok()) return done(s);
  SamplerEnvironment env;
  env.partition = state_.partition.get();
  env.peers = state_.cluster.load();
  {
    absl::MutexLock lock(&state_.mu);
    // Refused before the sampler is built: a new one may build indexes for seconds.
    if (state_.shutting_down) return done(absl::UnavailableError("the server is shutting down"));
    env.remote_cache = state_.remote_cache.get();
  }
  auto sampler = BuildSampler(req.config(), state_.options, env);
  if (!sampler.ok()) return done(sampler.status());
  auto backend_options = BuildBackendOptions(req.options(), state_.options, req.backend_key());
  if (!backend_options.ok()) return done(backend_options.status());
  backend_options->budget = state_.budget;
  if (auto s = state_.SamplingOpen(); !s.ok()) return done(s);

  std::shared_ptr<BackendEntry> entry;
  std::function<void(absl::Status)> joined;  // answered once the lock is released
  {
    absl::MutexLock lock(&state_.mu);
    if (state_.shutting_down) return done(absl::UnavailableError("the server is shutting down"));
    if (std::shared_ptr<BackendEntry> e = state_.registry.FindBackendByKey(req.backend_key())) {
      if (!google::protobuf::util::MessageDifferencer::Equals(e->config, req.config())) {
        return done(absl::FailedPreconditionError(absl::StrCat(
            "backend_key '", req.backend_key(), "' already names backend ", e->id, " with a different config")));
      }
      // Joining renews the lease of a backend that has no channel yet, and keeps it from
      // stopping when its last channel leaves before this caller registers.
      e->last_activity = ServiceState::Clock::now();
      ++e->pending_joins;
      auto reply = [resp, done, id = e->id, lease = e->lease_ms](absl::Status s) {
        if (s.ok()) {
          resp->set_backend_id(id);
          resp->set_created(false);
          resp->set_lease_ms(lease);
        }
        done(s);
      };
      if (e->state == BackendEntry::State::kCreating) {
        e->waiters.push_back(std::move(reply));
        return;
      }
      joined = std::move(reply);
    } else {
      if (auto s = state_.quotas.CheckBackendRoom(caller, backend_options->num_workers); !s.ok()) return done(s);
      entry = state_.registry.AddBackend(req.backend_key(), req.config(), caller.identity);
      entry->worker_threads = backend_options->num_workers;
      entry->lease_ms = req.lease_ms() > 0 ? req.lease_ms() : state_.options.default_backend_lease_ms;
      entry->pending_joins = 1;
    }
  }
  if (joined) return joined(absl::OkStatus());

  FinishCreation(entry, BuildBackend(entry.get(), *std::move(sampler), *backend_options), resp, std::move(done));
}

void Backends::FinishCreation(const std::shared_ptr<BackendEntry>& entry, const absl::Status& status,
                          v1::InitSamplingBackendResponse* resp, std::function<void(absl::Status)> done) {
  std::vector<std::function<void(absl::Status)>> waiters;
  {
    absl::MutexLock lock(&state_.mu);
    waiters.swap(entry->waiters);
    if (status.ok()) {
      entry->state = BackendEntry::State::kReady;
    } else {
      // A failed creation leaves nothing behind; a later call may try again.
      state_.registry.RemoveBackend(entry->id);
    }
  }
  if (status.ok()) {
    Logger("core")->info("backend {} '{}' up: {} workers, batch size {}", entry->id, entry->key,
                         entry->workers->num_workers(), entry->config.batch_size());
    resp->set_backend_id(entry->id);
    resp->set_created(true);
    resp->set_lease_ms(entry->lease_ms);
  } else {
    Logger("core")->debug("backend '{}' failed: {}", entry->key, status.ToString());
  }
  done(status);
  for (auto& w : waiters) w(status);
}

absl::Status Backends::BuildBackend(BackendEntry* entry, std::unique_ptr<Sampler> sampler,
                                const scheduler::BackendOptions& options) {
  auto workers = std::make_shared<SamplingWorkers>(state_.partition.get(), std::move(sampler), options.num_workers,
                                                   state_.options.stream_part_bytes, state_.options.stream_split_bytes);
  // Runs on the backend's worker threads.
  SamplerKind kind = SamplerKind::kNeighbor;
  if (entry->config.kind() == v1::SAMPLER_KIND_PPR) kind = SamplerKind::kPpr;
  if (entry->config.kind() == v1::SAMPLER_KIND_SUBGRAPH) kind = SamplerKind::kSubgraph;
  ServiceCounters* counters = &state_.counters;
  auto backend = scheduler::Backend::Create(options, [workers, counters, kind](const scheduler::BatchTask& t) {
    const auto start = ServiceState::Clock::now();
    auto batch = workers->SampleAndEncode(t);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(ServiceState::Clock::now() - start).count();
    const auto* channel = SamplingOf(t);
    const SamplerKind k = channel != nullptr && channel->ablp != nullptr ? SamplerKind::kAblp : kind;
    counters->sampling_seconds[static_cast<int>(k)].Observe(static_cast<double>(ns) / 1e9);
    counters->worker_busy_ns.fetch_add(ns, std::memory_order_relaxed);
    (batch.ok() ? counters->batches_sampled : counters->sampling_failures).fetch_add(1, std::memory_order_relaxed);
    return batch;
  });
  if (!backend.ok()) return backend.status();
  entry->workers = std::move(workers);
  entry->scheduler = *std::move(backend);
  return absl::OkStatus();
}

}  // namespace graphstore
