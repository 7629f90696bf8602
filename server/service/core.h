#ifndef GRAPHSTORE_SERVER_SERVICE_CORE_H_
#define GRAPHSTORE_SERVER_SERVICE_CORE_H_

// The graphstore service logic for one partition, behind the gRPC adapter
// (server/rpc/grpc_service.h): every method takes a request message and returns a status (TF
// Serving's *Impl shape). Core composes the units of this package, each with a header of its
// own, over the state they share (service_state.h: the partition, the options, the budgets and,
// under one lock, the registry of backends and channels):
//
//   backends.h       creating and joining sampling backends
//   channels.h       registering channels, their epochs and leases, destroying them
//   streams.h        attaching and detaching streams, and shared-memory bookkeeping
//   introspection.h  DescribeChannel, DescribeBackend, GetServerStats, the state line
//   teardown.h       the lease watchdog and shutdown
//
// and the stateless partition queries (queries.h), answered without the lock. Its own code is
// only the dataset's metadata and joining a cluster. No gRPC here.
//
// A channel id that is not live is answered the same way by every RPC (see Registry::NotLive):
// NOT_FOUND when it was never given out; when it was destroyed, calls that only end or inspect
// a channel succeed and say so (StartEpoch: DESTROYED, DestroySamplingInput: destroyed false,
// ReleaseSharedBuffers: nothing freed, DescribeChannel: state "destroyed"), and calls that need
// a live channel (StreamSampledMessages, RenewLease) fail with FAILED_PRECONDITION.
//
// Channel methods take the Caller: a channel of another identity answers exactly as an id never
// given out (NOT_FOUND), except to callers that see everything when they only describe it.
// Without authentication every caller is Caller::Anonymous() and owns everything.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/cluster/cluster.h"
#include "server/graph/partition.h"
#include "server/service/backends.h"
#include "server/service/caller.h"
#include "server/service/channels.h"
#include "server/service/counters.h"
#include "server/service/introspection.h"
#include "server/service/options.h"
#include "server/service/queries.h"
#include "server/service/service_state.h"
#include "server/service/stream_host.h"
#include "server/service/streams.h"
#include "server/service/teardown.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// The service core. Thread-safe.
class Core : public StreamHost {
 public:
  /// `shared_memory`, when given, is offered to clients on this host.
  Core(std::unique_ptr<Partition> partition, CoreOptions options,
       std::unique_ptr<SharedMemoryArea> shared_memory = nullptr);
  ~Core() override;
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  const Partition& partition() const { return *state_.partition; }
  const CoreOptions& options() const { return state_.options; }
  /// Joins a cluster whose servers are at `addresses` (partition order; DatasetMeta reports
  /// them): frontier nodes and node data of other partitions are sampled through `cluster`, and
  /// sampling is refused until cluster->Ready(). Call before the first backend is created;
  /// `cluster` must outlive the core.
  void SetCluster(Cluster* cluster, std::vector<std::string> addresses);

  /// The partition's own queries (lookups, features, labels, ABLP input and the one-hop draws
  /// peers ask for): stateless, answered without the core's lock.
  const PartitionQueries& queries() const { return state_.queries; }
  /// The partition's DatasetMeta, with this server's transport and cluster.
  absl::Status GetDatasetMeta(const v1::GetDatasetMetaRequest& req, v1::DatasetMeta* resp) const;

  /// backends.h.
  void InitSamplingBackend(const v1::InitSamplingBackendRequest& req, v1::InitSamplingBackendResponse* resp,
                           std::function<void(absl::Status)> done, const Caller& caller = Caller::Anonymous()) {
    backends_.InitSamplingBackend(req, resp, std::move(done), caller);
  }
  /// channels.h.
  absl::Status RegisterSamplingInput(const v1::RegisterSamplingInputRequest& req,
                                     v1::RegisterSamplingInputResponse* resp,
                                     const Caller& caller = Caller::Anonymous()) {
    return channels_.RegisterSamplingInput(req, resp, caller);
  }
  absl::Status StartEpoch(const v1::StartEpochRequest& req, v1::StartEpochResponse* resp,
                          const Caller& caller = Caller::Anonymous()) {
    return channels_.StartEpoch(req, resp, caller);
  }
  absl::Status RenewLease(const v1::RenewLeaseRequest& req, v1::RenewLeaseResponse* resp,
                          const Caller& caller = Caller::Anonymous()) {
    return channels_.RenewLease(req, resp, caller);
  }
  absl::Status DestroySamplingInput(const v1::DestroySamplingInputRequest& req,
                                    v1::DestroySamplingInputResponse* resp,
                                    const Caller& caller = Caller::Anonymous()) {
    return channels_.DestroySamplingInput(req, resp, caller);
  }
  /// streams.h.
  absl::Status ReleaseSharedBuffers(const v1::ReleaseSharedBuffersRequest& req,
                                    v1::ReleaseSharedBuffersResponse* resp,
                                    const Caller& caller = Caller::Anonymous()) {
    return streams_.ReleaseSharedBuffers(req, resp, caller);
  }
  absl::StatusOr<StreamAttachment> AttachStream(const v1::StreamSampledMessagesRequest& req,
                                                const Caller& caller = Caller::Anonymous()) {
    return streams_.AttachStream(req, caller);
  }
  void DetachStream(const StreamAttachment& attachment, bool cancelled) override {
    streams_.DetachStream(attachment, cancelled);
  }
  void Touch(uint64_t channel_id) override { streams_.Touch(channel_id); }
  absl::StatusOr<bool> SharedHoldBack(uint64_t channel_id) override { return streams_.SharedHoldBack(channel_id); }
  void HandOff(uint64_t channel_id, std::shared_ptr<SharedUse> use) override {
    streams_.HandOff(channel_id, std::move(use));
  }
  void Sent(const StreamAttachment& a, int64_t bytes, const BatchCounts* batch_done) override {
    streams_.Sent(a, bytes, batch_done);
  }

  /// introspection.h.
  absl::Status DescribeChannel(const v1::DescribeChannelRequest& req, v1::ChannelStats* resp,
                               const Caller& caller = Caller::Anonymous()) const {
    return introspection_.DescribeChannel(req, resp, caller);
  }
  absl::Status DescribeBackend(const v1::DescribeBackendRequest& req, v1::BackendStats* resp,
                               const Caller& caller = Caller::Anonymous()) const {
    return introspection_.DescribeBackend(req, resp, caller);
  }
  absl::Status GetServerStats(const v1::GetServerStatsRequest& req, v1::ServerStats* resp) const {
    return introspection_.GetServerStats(req, resp);
  }
  std::string StateSummary() const { return introspection_.StateSummary(); }
  int num_channels() const { return introspection_.num_channels(); }
  int64_t shared_memory_bytes() const { return introspection_.shared_memory_bytes(); }
  using PeerCacheLookups = graphstore::PeerCacheLookups;
  PeerCacheLookups peer_cache_lookups() const { return introspection_.peer_cache_lookups(); }
  /// What was sampled, sent and dropped since start (metrics).
  const ServiceCounters& counters() const { return state_.counters; }
  /// The cluster joined, or null.
  const Cluster* cluster() const { return state_.cluster.load(); }

  /// teardown.h.
  int Shutdown() { return teardown_.Shutdown(); }

 private:
  ServiceState state_;
  Backends backends_{&state_};
  Channels channels_{&state_};
  Streams streams_{&state_};
  Introspection introspection_{&state_};
  Teardown teardown_{&state_, &introspection_};  // last: its watchdog uses the others
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_CORE_H_
