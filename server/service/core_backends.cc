// The core's sampling backends: creating or joining one (InitSamplingBackend; one creation per
// key at a time, later callers wait for its answer), building its sampler and worker pool, and
// the worker threads the backends hold against --max_worker_threads.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/service/config.h"
#include "server/service/core.h"
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

void Core::InitSamplingBackend(const v1::InitSamplingBackendRequest& req, v1::InitSamplingBackendResponse* resp,
                               std::function<void(absl::Status)> done, const Caller& caller) {
  if (auto s = CheckBackendRequest(req, options_); !s.ok()) return done(s);
  SamplerEnvironment env;
  env.partition = partition_.get();
  env.peers = cluster_.load();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Refused before the sampler is built: a new one may build indexes for seconds.
    if (shutting_down_) return done(absl::UnavailableError("the server is shutting down"));
    env.remote_cache = remote_cache_.get();
  }
  auto sampler = BuildSampler(req.config(), options_, env);
  if (!sampler.ok()) return done(sampler.status());
  auto backend_options = BuildBackendOptions(req.options(), options_, req.backend_key());
  if (!backend_options.ok()) return done(backend_options.status());
  backend_options->budget = budget_;
  if (auto s = SamplingOpen(); !s.ok()) return done(s);

  std::shared_ptr<BackendEntry> entry;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (shutting_down_) return done(absl::UnavailableError("the server is shutting down"));
    if (std::shared_ptr<BackendEntry> e = registry_.FindBackendByKey(req.backend_key())) {
      if (!google::protobuf::util::MessageDifferencer::Equals(e->config, req.config())) {
        return done(absl::FailedPreconditionError(absl::StrCat(
            "backend_key '", req.backend_key(), "' already names backend ", e->id, " with a different config")));
      }
      // Joining renews the lease of a backend that has no channel yet.
      e->last_activity = Clock::now();
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
      lock.unlock();
      return reply(absl::OkStatus());
    }
    if (auto s = quotas_.CheckBackendRoom(caller, backend_options->num_workers); !s.ok()) return done(s);
    entry = registry_.AddBackend(req.backend_key(), req.config(), caller.identity);
    entry->worker_threads = backend_options->num_workers;
    entry->lease_ms = req.lease_ms() > 0 ? req.lease_ms() : options_.default_backend_lease_ms;
  }

  FinishCreation(entry, BuildBackend(entry.get(), *std::move(sampler), *backend_options), resp, std::move(done));
}

void Core::FinishCreation(const std::shared_ptr<BackendEntry>& entry, const absl::Status& status,
                          v1::InitSamplingBackendResponse* resp, std::function<void(absl::Status)> done) {
  std::vector<std::function<void(absl::Status)>> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters.swap(entry->waiters);
    if (status.ok()) {
      entry->state = BackendEntry::State::kReady;
    } else {
      // A failed creation leaves nothing behind; a later call may try again.
      registry_.RemoveBackend(entry->id);
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

absl::Status Core::BuildBackend(BackendEntry* entry, std::unique_ptr<Sampler> sampler,
                                const scheduler::BackendOptions& options) {
  auto workers = std::make_shared<SamplingWorkers>(partition_.get(), std::move(sampler), options.num_workers,
                                                   options_.stream_part_bytes, options_.stream_split_bytes);
  // Runs on the backend's worker threads.
  SamplerKind kind = SamplerKind::kNeighbor;
  if (entry->config.kind() == v1::SAMPLER_KIND_PPR) kind = SamplerKind::kPpr;
  if (entry->config.kind() == v1::SAMPLER_KIND_SUBGRAPH) kind = SamplerKind::kSubgraph;
  ServiceCounters* counters = &counters_;
  auto backend = scheduler::Backend::Create(options, [workers, counters, kind](const scheduler::BatchTask& t) {
    const auto start = Clock::now();
    auto batch = workers->SampleAndEncode(t);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
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
