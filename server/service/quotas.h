#ifndef GRAPHSTORE_SERVER_SERVICE_QUOTAS_H_
#define GRAPHSTORE_SERVER_SERVICE_QUOTAS_H_

// The server's limits and each identity's quotas, checked before a backend, a channel or a
// channel's striped streams are added: backends and channels in all and per identity, buffer
// bytes per identity, and the worker threads of the backends that have channels. Each check is
// RESOURCE_EXHAUSTED naming the request field or the option that sets the limit. Reads the
// registry: the caller holds the lock that guards it (Core's).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/service/caller.h"
#include "server/service/options.h"
#include "server/service/registry.h"

namespace graphstore {

class Quotas {
 public:
  /// `options` and `registry` outlive the quotas; `max_worker_threads` is the server's
  /// resolved limit (CoreOptions::max_worker_threads, or its default).
  Quotas(const CoreOptions* options, const Registry* registry, int max_worker_threads)
      : options_(options), registry_(registry), max_worker_threads_(max_worker_threads) {}

  int max_worker_threads() const { return max_worker_threads_; }
  /// Worker threads the backends hold now: those with channels (scheduler/backend.h).
  int LiveWorkerThreads() const;

  /// Room for a new backend of `num_workers` created by `caller`: the server's backend limit,
  /// the caller's backend quota, the worker-thread limit.
  absl::Status CheckBackendRoom(const Caller& caller, int num_workers) const;
  /// Room for a channel registered by `caller` with `req` on `backend`: the server's channel
  /// limit, the caller's channel and buffer quotas, and, when it is the backend's first
  /// channel (which starts its workers), the worker-thread limit.
  absl::Status CheckChannelRoom(const Caller& caller, const v1::RegisterSamplingInputRequest& req,
                                const BackendEntry& backend) const;
  /// The caller's channel quota, and its buffer quota for `buffer_bytes` more.
  absl::Status CheckChannelQuota(const Caller& caller, int64_t buffer_bytes) const;
  /// Whether `more` buffer bytes fit `identity`'s buffer quota (anonymous callers have none).
  absl::Status CheckBufferQuota(const std::string& identity, int64_t more) const;
  /// Whether channel `c`'s owner may buffer for `streams` streams (its buffer_bytes each);
  /// the error names num_stripes.
  absl::Status CheckStreamRoom(const ChannelEntry& c, int streams) const;

 private:
  const CoreOptions* const options_;
  const Registry* const registry_;
  const int max_worker_threads_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_QUOTAS_H_
