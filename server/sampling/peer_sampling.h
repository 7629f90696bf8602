#ifndef GRAPHSTORE_SERVER_SAMPLING_PEER_SAMPLING_H_
#define GRAPHSTORE_SERVER_SAMPLING_PEER_SAMPLING_H_

// What samplers ask of the cluster's other servers. Plain C++: the gRPC implementation is
// server/cluster/peers.h, so the samplers stay free of any transport.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/sampling/draw.h"

namespace graphstore {

/// Work on nodes that other partitions own, done by their servers (the cluster's peers). A
/// sampler hands it the frontier nodes and node data it does not hold; the implementation
/// calls every owner at once, one batched call per owner.
class PeerSampling {
 public:
  /// One owner's share of a hop.
  struct NeighborCall {
    int partition = 0;
    std::vector<int64_t> ids;
    /// Filled when the call completes: per id its neighbour count, then the neighbours (and
    /// their edge ids, when asked for) concatenated in id order.
    std::vector<int64_t> counts;
    std::vector<int64_t> neighbors;
    std::vector<int64_t> edge_ids;
    /// Set before the call: (node, neighbour) pairs of `ids` the draw leaves out, flattened.
    std::vector<int64_t> excluded;
    /// Set before a temporal call: the time of each of `ids`.
    std::vector<int64_t> times;
    /// Filled when asked for: the drawn edges' feature rows, row-major.
    std::string edge_features;
  };
  /// One owner's share of a feature / label gather.
  struct NodeDataCall {
    int partition = 0;
    std::vector<int64_t> ids;
    /// Filled when the call completes: row-major feature rows and labels of `ids`.
    std::string features;
    std::vector<int64_t> labels;
  };
  /// One owner's share of a lookup of node times.
  struct NodeTimesCall {
    int partition = 0;
    std::vector<int64_t> ids;
    /// Filled when the call completes: the stored time of each of `ids`.
    std::vector<int64_t> times;
  };
  /// One range's share of a draw of degree negatives.
  struct DegreeNodesCall {
    int partition = 0;
    std::vector<int64_t> positions;
    /// Filled when the call completes: the destination node at each of `positions`.
    std::vector<int64_t> nodes;
  };
  /// What one hop draws: the draw of a node depends only on these and the node id, so the
  /// owner draws exactly what a single partition holding the whole graph would.
  struct Hop {
    std::string edge_type;
    int fanout = 0;
    bool replace = false;
    bool weighted = false;
    /// Temporal draws: each call carries its nodes' times.
    TemporalStrategy temporal = TemporalStrategy::kNone;
    bool with_edge_ids = false;
    bool with_edge_features = false;
    uint64_t seed = 0;
    int64_t epoch = 0;
    int64_t batch = 0;
    int hop = 0;
  };
  /// Calls under way. Wait blocks until every one is answered or has failed; destroying a
  /// Pending cancels what is left and waits for it.
  class Pending {
   public:
    virtual ~Pending() = default;
    /// OK, or the first failure with the peer named: UNAVAILABLE when a peer is down,
    /// unreachable or missed its deadline.
    virtual absl::Status Wait() = 0;
  };

  virtual ~PeerSampling() = default;
  /// OK once every peer has answered health; UNAVAILABLE naming the missing ones before.
  virtual absl::Status Ready() const = 0;
  /// Starts one call per entry of `calls` (distinct owners); `calls` must outlive the Pending.
  virtual std::unique_ptr<Pending> SampleNeighbors(const Hop& hop, std::vector<NeighborCall>* calls) = 0;
  /// Starts fetching features and / or labels of `node_type` nodes; same contract.
  virtual std::unique_ptr<Pending> FetchNodeData(const std::string& node_type, bool features, bool labels,
                                                 std::vector<NodeDataCall>* calls) = 0;
  /// Starts fetching the stored times of `node_type` nodes (GetNodeTimes); same contract.
  virtual std::unique_ptr<Pending> FetchNodeTimes(const std::string& node_type,
                                                  std::vector<NodeTimesCall>* calls) = 0;
  /// Starts finding the destination nodes of `edge_type` at positions of its running degree sum,
  /// each call's positions in its partition's range (FindDegreeNodes); same contract.
  virtual std::unique_ptr<Pending> FindDegreeNodes(const std::string& edge_type,
                                                   std::vector<DegreeNodesCall>* calls) = 0;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_PEER_SAMPLING_H_
