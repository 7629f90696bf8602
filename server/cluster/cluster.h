#ifndef GRAPHSTORE_SERVER_CLUSTER_CLUSTER_H_
#define GRAPHSTORE_SERVER_CLUSTER_CLUSTER_H_

// The other servers of a cluster as the service core sees them. The gRPC implementation is
// Peers (server/cluster/peers.h); this interface keeps the core free of gRPC.

#include <functional>
#include <string>

#include "graphstore/v1/graphstore.pb.h"
#include "server/sampling/peer_sampling.h"
#include "server/util/histogram.h"

namespace graphstore {

/// The other servers of a cluster as the core uses them: sampling of nodes they own, whether
/// they all answer (sampling is refused until then), and what operators see of them.
class Cluster : public PeerSampling {
 public:
  virtual void FillStats(v1::ServerStats* out) const = 0;
  /// Calls `visit(partition, address, latency)` for each peer (metrics).
  virtual void VisitLatency(
      const std::function<void(int, const std::string&, const LatencyHistogram&)>& visit) const = 0;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_CLUSTER_CLUSTER_H_
