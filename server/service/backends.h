#ifndef GRAPHSTORE_SERVER_SERVICE_BACKENDS_H_
#define GRAPHSTORE_SERVER_SERVICE_BACKENDS_H_

// The service core's sampling backends: creating or joining one (InitSamplingBackend; one
// creation per key at a time, later callers wait for its answer), building its sampler and
// worker pool outside the lock, and the worker threads the backends hold against
// --max_worker_threads. No gRPC.

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "graphstore/v1/graphstore.pb.h"
#include "scheduler/work.h"
#include "server/sampling/sampler.h"
#include "server/service/caller.h"
#include "server/service/service_state.h"

namespace graphstore {

class Backends {
 public:
  explicit Backends(ServiceState* state) : state_(*state) {}

  /// Creates or joins a backend. When another caller is creating the same key, `done` runs
  /// once that creation finishes, with its outcome; otherwise it runs before this returns.
  /// The backend is charged to the caller that creates it.
  void InitSamplingBackend(const v1::InitSamplingBackendRequest& req, v1::InitSamplingBackendResponse* resp,
                           std::function<void(absl::Status)> done, const Caller& caller) ABSL_LOCKS_EXCLUDED(state_.mu);

 private:
  // Marks a creation ready (or removes it when `status` failed) and answers its caller and
  // every caller that waited for it.
  void FinishCreation(const std::shared_ptr<BackendEntry>& entry, const absl::Status& status,
                      v1::InitSamplingBackendResponse* resp, std::function<void(absl::Status)> done)
      ABSL_LOCKS_EXCLUDED(state_.mu);
  // Builds a new backend's workers and scheduler outside the lock; callers of the same key
  // wait in its waiters.
  absl::Status BuildBackend(BackendEntry* entry, std::unique_ptr<Sampler> sampler,
                            const scheduler::BackendOptions& options);

  ServiceState& state_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_BACKENDS_H_
