#ifndef GRAPHSTORE_SERVER_SERVICE_INTROSPECTION_H_
#define GRAPHSTORE_SERVER_SERVICE_INTROSPECTION_H_

// What operators see of the service core: DescribeChannel, DescribeBackend, GetServerStats, the
// periodic state line, and the figures the metrics read at each scrape. No gRPC.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/service/caller.h"
#include "server/service/service_state.h"

namespace graphstore {

/// Lookups of other partitions' node data (rows and labels) and of their neighbour lists that
/// the peer cache answered and that went to their owner (0 outside a cluster).
struct PeerCacheLookups {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t list_hits = 0;
  int64_t list_misses = 0;
};

class Introspection {
 public:
  explicit Introspection(const ServiceState* state) : state_(*state) {}

  absl::Status DescribeChannel(const v1::DescribeChannelRequest& req, v1::ChannelStats* resp,
                               const Caller& caller) const ABSL_LOCKS_EXCLUDED(state_.mu);
  /// A caller that does not see everything sees a backend it created or has a channel on, and
  /// only its own channels in it; other backends are NOT_FOUND.
  absl::Status DescribeBackend(const v1::DescribeBackendRequest& req, v1::BackendStats* resp,
                               const Caller& caller) const ABSL_LOCKS_EXCLUDED(state_.mu);
  absl::Status GetServerStats(const v1::GetServerStatsRequest& req, v1::ServerStats* resp) const
      ABSL_LOCKS_EXCLUDED(state_.mu);
  /// One line summarising backends and channels (the periodic state log).
  std::string StateSummary() const ABSL_LOCKS_EXCLUDED(state_.mu);
  /// Live shared-memory pool bytes over every channel.
  int64_t shared_memory_bytes() const ABSL_LOCKS_EXCLUDED(state_.mu);
  PeerCacheLookups peer_cache_lookups() const ABSL_LOCKS_EXCLUDED(state_.mu);
  /// Channels registered and not destroyed.
  int num_channels() const ABSL_LOCKS_EXCLUDED(state_.mu);

 private:
  void FillChannelStats(const ChannelEntry& c, v1::ChannelStats* out) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // The backend's stats with the channels `caller` may see.
  void FillBackendStats(const BackendEntry& b, v1::BackendStats* out, const Caller& caller) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  const ServiceState& state_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_INTROSPECTION_H_
