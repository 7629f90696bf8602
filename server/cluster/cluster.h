#ifndef GRAPHSTORE_SERVER_CLUSTER_CLUSTER_H_
#define GRAPHSTORE_SERVER_CLUSTER_CLUSTER_H_

// The other servers of a cluster as the service core sees them. The gRPC implementation is
// Peers (server/cluster/peers.h); this interface keeps the core free of gRPC.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/sampling/peer_sampling.h"
#include "server/util/histogram.h"

namespace graphstore {

/// The other servers of a cluster as the core uses them: sampling of nodes they own, whether
/// they all answer (sampling is refused until then), and what operators see of them.
class Cluster : public PeerSampling {
 public:
  /// The ids of `node_type` nodes in `split` ("" for all) that partition `partition` owns,
  /// ascending (GetNodeIds on its server; a registration with global batches gathers a split).
  virtual absl::StatusOr<std::vector<int64_t>> SplitIds(int partition, const std::string& node_type,
                                                        const std::string& split) = 0;
  virtual void FillStats(v1::ServerStats* out) const = 0;
  /// Calls `visit(partition, address, latency)` for each peer (metrics).
  virtual void VisitLatency(
      const std::function<void(int, const std::string&, const LatencyHistogram&)>& visit) const = 0;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_CLUSTER_CLUSTER_H_
