#ifndef GRAPHSTORE_SERVER_CLUSTER_PEERS_H_
#define GRAPHSTORE_SERVER_CLUSTER_PEERS_H_

// The other servers of a cluster, as one server sees them: a gRPC channel to each, a health
// monitor that opens sampling once every peer has answered, and the batched per-owner calls
// that cross-partition sampling makes (SampleNeighbors, GetNodeFeatures, GetNodeLabels,
// GetNodeTimes, FindDegreeNodes), each with a deadline. A failed call names the peer.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "common/security.h"
#include "graphstore/v1/graphstore.grpc.pb.h"
#include "grpc_health/v1/health.grpc.pb.h"
#include "server/cluster/cluster.h"
#include "server/util/histogram.h"

namespace graphstore {

struct PeerOptions {
  /// host:port of every server of the cluster, in partition order (this one's included).
  std::vector<std::string> addresses;
  /// This server's partition.
  int self = 0;
  /// Deadline of every call to a peer.
  int64_t call_timeout_ms = 10000;
  /// How often the health monitor asks a peer, in ms.
  int64_t health_interval_ms = 500;
  /// Largest message sent to or received from a peer.
  int max_message_bytes = 512 << 20;
  /// Runs once, on the monitor thread, when every peer has answered health.
  std::function<void()> on_ready;
  /// TLS and credentials of the calls to the peers (their role there is `peer`).
  ChannelSecurity security;
};

/// Channels to the peers. Thread-safe.
class Peers : public Cluster {
 public:
  /// InvalidArgument when the addresses do not fit (`self` outside them, an empty entry).
  static absl::StatusOr<std::unique_ptr<Peers>> Create(PeerOptions options);
  /// StopMonitor()s; calls still under way are cancelled by their Pending.
  ~Peers() override;
  /// Ends the health monitor: on_ready does not run after this returns. Idempotent.
  void StopMonitor();
  void VisitLatency(const std::function<void(int, const std::string&, const LatencyHistogram&)>& visit) const override;

  absl::Status Ready() const override;
  absl::StatusOr<std::vector<int64_t>> SplitIds(int partition, const std::string& node_type,
                                                const std::string& split) override;
  std::unique_ptr<Pending> SampleNeighbors(const Hop& hop, std::vector<NeighborCall>* calls) override;
  std::unique_ptr<Pending> FetchNodeTimes(const std::string& node_type, std::vector<NodeTimesCall>* calls) override;
  std::unique_ptr<Pending> FetchNodeData(const std::string& node_type, bool features, bool labels,
                                         std::vector<NodeDataCall>* calls) override;
  std::unique_ptr<Pending> FindDegreeNodes(const std::string& edge_type, std::vector<DegreeNodesCall>* calls) override;
  void FillStats(v1::ServerStats* out) const override;

  /// "partition K (host:port)".
  std::string Name(int partition) const;

  /// Traffic with one peer.
  struct Counters {
    std::atomic<int64_t> calls{0};
    std::atomic<int64_t> failed_calls{0};
    std::atomic<int64_t> bytes_sent{0};
    std::atomic<int64_t> bytes_received{0};
    /// Time from issuing a call to its answer.
    LatencyHistogram latency;
  };

 private:
  struct Peer;
  Peers(PeerOptions options, std::vector<std::shared_ptr<grpc::Channel>> channels);
  void MonitorLoop();
  // One health check; OK when the peer reports SERVING.
  absl::Status Check(Peer& peer);
  // A call slot to `partition` whose issue runs `rpc(stub->async(), ctx, request, response, done)`.
  template <typename S, typename Rpc>
  std::unique_ptr<S> NewSlot(int partition, const char* method, typename S::CallType* call, Rpc rpc);

  const PeerOptions options_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by partition; null for this server
  std::atomic<bool> ready_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::string> missing_;  // why each missing peer is missing, for Ready()
  std::thread monitor_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_CLUSTER_PEERS_H_
