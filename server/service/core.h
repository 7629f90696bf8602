#ifndef GRAPHSTORE_SERVER_SERVICE_CORE_H_
#define GRAPHSTORE_SERVER_SERVICE_CORE_H_

// The graphstore service logic for one partition, behind the gRPC adapter
// (server/rpc/grpc_service.h): every method takes a request message and returns a status (TF
// Serving's *Impl shape). It composes the units of this package: partition queries
// (queries.h), the one config layer (config.h), what a registration resolves to
// (registration.h), the registry of backends and channels (registry.h), the limits and quotas
// (quotas.h), each backend's workers
// (worker.h) and each shared-memory channel's ledger (shared_ledger.h). Its own code is the
// sampling lifecycle (core.cc), stream attachment (core_streams.cc), introspection
// (core_stats.cc), and leases and teardown (core_teardown.cc). No gRPC here.
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

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "scheduler/backend.h"
#include "scheduler/memory_budget.h"
#include "server/cluster/cluster.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/sampling/remote_cache.h"
#include "server/service/caller.h"
#include "server/service/counters.h"
#include "server/service/feature_outputs.h"
#include "server/service/options.h"
#include "server/service/queries.h"
#include "server/service/quotas.h"
#include "server/service/registry.h"
#include "server/service/stream_host.h"
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

  const Partition& partition() const { return *partition_; }
  const CoreOptions& options() const { return options_; }
  /// Joins a cluster whose servers are at `addresses` (partition order; DatasetMeta reports
  /// them): frontier nodes and node data of other partitions are sampled through `cluster`, and
  /// sampling is refused until cluster->Ready(). Call before the first backend is created;
  /// `cluster` must outlive the core.
  void SetCluster(Cluster* cluster, std::vector<std::string> addresses);

  /// The partition's own queries (lookups, features, labels, ABLP input and the one-hop draws
  /// peers ask for): stateless, answered without the core's lock.
  const PartitionQueries& queries() const { return queries_; }
  /// The partition's DatasetMeta, with this server's transport and cluster.
  absl::Status GetDatasetMeta(const v1::GetDatasetMetaRequest& req, v1::DatasetMeta* resp) const;

  /// Creates or joins a backend. When another caller is creating the same key, `done` runs
  /// once that creation finishes, with its outcome; otherwise it runs before this returns.
  /// The backend is charged to the caller that creates it.
  void InitSamplingBackend(const v1::InitSamplingBackendRequest& req, v1::InitSamplingBackendResponse* resp,
                           std::function<void(absl::Status)> done, const Caller& caller = Caller::Anonymous());
  /// The channel belongs to the caller; RESOURCE_EXHAUSTED past the caller's quotas.
  absl::Status RegisterSamplingInput(const v1::RegisterSamplingInputRequest& req,
                                     v1::RegisterSamplingInputResponse* resp,
                                     const Caller& caller = Caller::Anonymous());
  absl::Status StartEpoch(const v1::StartEpochRequest& req, v1::StartEpochResponse* resp,
                          const Caller& caller = Caller::Anonymous());
  absl::Status RenewLease(const v1::RenewLeaseRequest& req, v1::RenewLeaseResponse* resp,
                          const Caller& caller = Caller::Anonymous());
  absl::Status DestroySamplingInput(const v1::DestroySamplingInputRequest& req,
                                    v1::DestroySamplingInputResponse* resp,
                                    const Caller& caller = Caller::Anonymous());
  absl::Status ReleaseSharedBuffers(const v1::ReleaseSharedBuffersRequest& req,
                                    v1::ReleaseSharedBuffersResponse* resp,
                                    const Caller& caller = Caller::Anonymous());

  /// Validates a stream request and attaches it to the channel: one stream per stripe of the
  /// channel's batches (up to 64 with striped connections), one in all for shared memory.
  absl::StatusOr<StreamAttachment> AttachStream(const v1::StreamSampledMessagesRequest& req,
                                                const Caller& caller = Caller::Anonymous());
  // StreamHost: the calls of a stream attached to a channel.
  void DetachStream(const StreamAttachment& attachment, bool cancelled) override;
  void Touch(uint64_t channel_id) override;
  /// SharedLedger::HoldBack of the channel against the server-wide limit; the error of a
  /// client that freed nothing for shared_release_timeout_ms while its stream waited.
  absl::StatusOr<bool> SharedHoldBack(uint64_t channel_id) override;
  void HandOff(uint64_t channel_id, std::shared_ptr<SharedUse> use) override;
  void Sent(const StreamAttachment& a, int64_t bytes, const BatchCounts* batch_done) override;

  /// What was sampled, sent and dropped since start (metrics).
  const ServiceCounters& counters() const { return counters_; }
  /// Live shared-memory pool bytes over every channel.
  int64_t shared_memory_bytes() const;
  /// Lookups of other partitions' node data (rows and labels) and of their neighbour lists that
  /// the peer cache answered and that went to their owner (0 outside a cluster).
  struct PeerCacheLookups {
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t list_hits = 0;
    int64_t list_misses = 0;
  };
  PeerCacheLookups peer_cache_lookups() const;
  /// The cluster joined, or null.
  const Cluster* cluster() const { return cluster_.load(); }

  absl::Status DescribeChannel(const v1::DescribeChannelRequest& req, v1::ChannelStats* resp,
                               const Caller& caller = Caller::Anonymous()) const;
  /// A caller that does not see everything sees a backend it created or has a channel on, and
  /// only its own channels in it; other backends are NOT_FOUND.
  absl::Status DescribeBackend(const v1::DescribeBackendRequest& req, v1::BackendStats* resp,
                               const Caller& caller = Caller::Anonymous()) const;
  absl::Status GetServerStats(const v1::GetServerStatsRequest& req, v1::ServerStats* resp) const;

  /// Destroys every live channel and stops every backend; streams end. Returns the number of
  /// channels destroyed. Idempotent; later sampling calls fail with UNAVAILABLE.
  int Shutdown();

  /// Channels registered and not destroyed.
  int num_channels() const;

  /// One line summarising backends and channels (the periodic state log).
  std::string StateSummary() const;

 private:
  using Clock = std::chrono::steady_clock;

  // UNAVAILABLE while a cluster's peers have not all answered.
  absl::Status SamplingOpen() const;
  // Marks a creation ready (or removes it when `status` failed) and answers its caller and
  // every caller that waited for it.
  void FinishCreation(const std::shared_ptr<BackendEntry>& entry, const absl::Status& status,
                      v1::InitSamplingBackendResponse* resp, std::function<void(absl::Status)> done);
  // Builds a new backend's workers and scheduler outside the lock; callers of the same key
  // wait in its waiters.
  absl::Status BuildBackend(BackendEntry* entry, std::unique_ptr<Sampler> sampler,
                            const scheduler::BackendOptions& options);
  // A new channel entry for `req` on `backend` (mu_ held).
  std::shared_ptr<ChannelEntry> NewChannel(const v1::RegisterSamplingInputRequest& req,
                                           std::shared_ptr<BackendEntry> backend);
  // The live channel `id` with mu_ held, or the status for an id that is not.
  absl::StatusOr<std::shared_ptr<ChannelEntry>> LiveChannel(uint64_t id) const;
  // What a registration answers about its new channel: ids, counts, lease, feature encoding.
  void DescribeRegistration(const ChannelEntry& channel, int64_t cache_rows,
                            v1::RegisterSamplingInputResponse* resp) const;
  // Raises channel `c`'s buffer room to `streams` streams (its buffer_bytes per stream), or
  // RESOURCE_EXHAUSTED naming num_stripes when its owner's quota has no room for it. Needs mu_.
  absl::Status GrowStreamRoomLocked(ChannelEntry* c, int streams);
  // Removes a channel (mu_ held by the caller is released around backend calls); returns
  // whether its backend was stopped because it was the last channel.
  bool DestroyLocked(std::unique_lock<std::mutex>& lock, uint64_t channel_id);
  void FillChannelStats(const ChannelEntry& c, v1::ChannelStats* out) const;
  // The backend's stats with the channels `caller` may see.
  void FillBackendStats(const BackendEntry& b, v1::BackendStats* out, const Caller& caller) const;
  void WatchdogLoop();
  // Stops the backends in retiring_ (mu_ held on entry and exit; released while stopping).
  void StopRetired(std::unique_lock<std::mutex>& lock);

  std::unique_ptr<Partition> partition_;
  const CoreOptions options_;
  mutable FeatureOutputs feature_outputs_;  // computes ranges and hot sets once, on demand
  const PartitionQueries queries_;
  std::atomic<Cluster*> cluster_{nullptr};
  std::unique_ptr<RemoteCache> remote_cache_;   // set with the cluster
  std::vector<std::string> cluster_addresses_;  // guarded by mu_
  // Declared before the backends so that it outlives every buffer they hold.
  const std::unique_ptr<SharedMemoryArea> shared_memory_;
  const Clock::time_point started_ = Clock::now();

  // Sampled-but-unread bytes of every backend (options_.max_buffered_bytes_total resolved).
  const std::shared_ptr<scheduler::MemoryBudget> budget_;
  // Shared buffers sent and not yet freed over every channel (kept by the channels' ledgers),
  // their limit, and the channels that have shared memory. Guarded by mu_.
  SharedMemoryAccount shared_account_;

  mutable std::mutex mu_;
  std::condition_variable watchdog_cv_;
  bool shutting_down_ = false;
  Registry registry_;
  // The limits and quotas, checked against registry_ (mu_ held).
  const Quotas quotas_;
  // Backends whose last channel is gone, waiting for the watchdog to join their workers.
  std::vector<std::shared_ptr<BackendEntry>> retiring_;
  int64_t leases_expired_ = 0;
  int64_t backend_leases_expired_ = 0;
  mutable ServiceCounters counters_;
  std::atomic<int> open_streams_{0};
  // Serialises Shutdown() so the watchdog is joined once.
  std::mutex shutdown_mu_;
  std::thread watchdog_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_CORE_H_
