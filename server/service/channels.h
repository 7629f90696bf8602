#ifndef GRAPHSTORE_SERVER_SERVICE_CHANNELS_H_
#define GRAPHSTORE_SERVER_SERVICE_CHANNELS_H_

// The service core's channels through their life: registering one on a backend (what the
// request resolves to, registration.h, turned into the registry's entry and the scheduler's
// channel), starting its epochs, renewing its lease, and destroying it -- by its trainer, by
// the lease watchdog, at shutdown. No gRPC.

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/service/caller.h"
#include "server/service/service_state.h"

namespace graphstore {

/// Removes a live channel, releasing the lock around the backend's calls (they notify the
/// channel's streams, which may call back into the core); returns whether its backend was
/// stopped because it was the last channel. For the trainer's DestroySamplingInput, the lease
/// watchdog and shutdown alike.
bool DestroyChannelLocked(ServiceState& state, uint64_t channel_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu);

class Channels {
 public:
  explicit Channels(ServiceState* state) : state_(*state) {}

  /// The channel belongs to the caller; RESOURCE_EXHAUSTED past the caller's quotas.
  absl::Status RegisterSamplingInput(const v1::RegisterSamplingInputRequest& req,
                                     v1::RegisterSamplingInputResponse* resp, const Caller& caller)
      ABSL_LOCKS_EXCLUDED(state_.mu);
  absl::Status StartEpoch(const v1::StartEpochRequest& req, v1::StartEpochResponse* resp, const Caller& caller)
      ABSL_LOCKS_EXCLUDED(state_.mu);
  absl::Status RenewLease(const v1::RenewLeaseRequest& req, v1::RenewLeaseResponse* resp, const Caller& caller)
      ABSL_LOCKS_EXCLUDED(state_.mu);
  absl::Status DestroySamplingInput(const v1::DestroySamplingInputRequest& req,
                                    v1::DestroySamplingInputResponse* resp, const Caller& caller)
      ABSL_LOCKS_EXCLUDED(state_.mu);

 private:
  // A new channel entry for `req` on `backend`.
  std::shared_ptr<ChannelEntry> NewChannel(const v1::RegisterSamplingInputRequest& req,
                                           std::shared_ptr<BackendEntry> backend)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // What a registration answers about its new channel: ids, counts, lease, feature encoding.
  void DescribeRegistration(const ChannelEntry& channel, int64_t cache_rows,
                            v1::RegisterSamplingInputResponse* resp) const;

  ServiceState& state_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_CHANNELS_H_
