#ifndef GRAPHSTORE_SERVER_CORE_H_
#define GRAPHSTORE_SERVER_CORE_H_

// The graphstore service logic for one partition: metadata and lookups, sampling backends,
// channels with their tombstones and leases, and stream attachment. Every method takes a
// request message and returns a status (TF Serving's *Impl shape); the gRPC layer
// (server/service.h) only translates. No gRPC here.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "scheduler/backend.h"
#include "server/sampling/ablp.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/graph/partition.h"
#include "server/cluster/cluster.h"
#include "server/sampling/remote_cache.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// Limits and defaults of the service. Every size a request can ask for is bounded here.
struct CoreOptions {
  /// Worker threads of a backend whose request leaves num_workers at 0.
  int default_num_workers = 2;
  /// Most worker threads one backend may ask for.
  int max_num_workers = 64;
  /// Batches of one channel sampled at once, unless the backend asks otherwise.
  int default_max_in_flight = 2;
  /// Output buffer of a channel in messages / bytes, unless the request asks otherwise.
  int default_buffer_messages = 8;
  int64_t default_buffer_bytes = 256LL << 20;
  /// Batches of each channel's next epoch sampled ahead while workers are otherwise idle, so
  /// that StartEpoch finds its first batches ready (see BackendOptions::speculative_batches).
  int sample_ahead_batches = 2;
  /// Largest output buffer a request may ask for, in messages / bytes.
  int max_buffer_messages = 1024;
  int64_t max_buffer_bytes = 4LL << 30;
  /// Largest batch_size.
  int max_batch_size = 1 << 20;
  /// Largest fanout at any hop (-1, "all", is always allowed).
  int max_fanout = 100000;
  /// Most generated negatives per anchor of a link-prediction input.
  int max_negatives = 1000;
  /// Most hops.
  int max_hops = 8;
  /// Most ids in one request (seeds, features, labels, lookups).
  int64_t max_ids_per_request = 50000000;
  /// Most live channels and backends.
  int max_channels = 100000;
  int max_backends = 1024;
  /// Longest backend_key / worker_key, in bytes.
  size_t max_key_length = 256;
  /// Lease of a channel whose request leaves lease_ms at 0, and the longest allowed, in ms.
  int64_t default_lease_ms = 10 * 60 * 1000;
  int64_t max_lease_ms = 7 * 24 * 3600 * 1000LL;
  /// How often the lease watchdog looks for expired channels, in ms.
  int64_t lease_check_interval_ms = 1000;
  /// Interval of the periodic scheduler-state log line, in seconds; 0 turns it off.
  int64_t state_log_interval_s = 30;
  /// In a cluster: bytes of other partitions' node data kept once fetched (0: none).
  int64_t peer_cache_bytes = 512LL << 20;
};

/// What a stream needs to read a channel's epoch.
struct StreamAttachment {
  std::shared_ptr<scheduler::Backend> backend;
  uint64_t channel_id = 0;
  int64_t epoch = 0;
  /// The channel's messages carry shared buffers (see Core::HandOff).
  bool shared_memory = false;
};

/// The service core. Thread-safe.
class Core {
 public:
  /// `shared_memory`, when given, is offered to clients on this host.
  Core(std::unique_ptr<Partition> partition, CoreOptions options,
       std::unique_ptr<SharedMemoryArea> shared_memory = nullptr);
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  const Partition& partition() const { return *partition_; }
  /// Joins a cluster whose servers are at `addresses` (partition order; DatasetMeta reports
  /// them): frontier nodes and node data of other partitions are sampled through `cluster`, and
  /// sampling is refused until cluster->Ready(). Call before the first backend is created;
  /// `cluster` must outlive the core.
  void SetCluster(Cluster* cluster, std::vector<std::string> addresses);
  const CoreOptions& options() const { return options_; }

  // Metadata and lookups.
  absl::Status GetDatasetMeta(const v1::GetDatasetMetaRequest& req, v1::DatasetMeta* resp) const;
  absl::Status LookupPartitions(const v1::LookupPartitionsRequest& req, v1::LookupPartitionsResponse* resp) const;
  absl::Status GetNodeIds(const v1::GetNodeIdsRequest& req, v1::GetNodeIdsResponse* resp) const;
  absl::Status GetNodeFeatures(const v1::GetNodeFeaturesRequest& req, v1::GetNodeFeaturesResponse* resp) const;
  absl::Status GetNodeLabels(const v1::GetNodeLabelsRequest& req, v1::GetNodeLabelsResponse* resp) const;
  absl::Status GetEdgeFeatures(const v1::GetEdgeFeaturesRequest& req, v1::GetEdgeFeaturesResponse* resp) const;
  absl::Status SampleNeighbors(const v1::SampleNeighborsRequest& req, v1::SampleNeighborsResponse* resp) const;
  absl::Status GetAblpInput(const v1::GetAblpInputRequest& req, v1::GetAblpInputResponse* resp) const;

  /// Creates or joins a backend. When another caller is creating the same key, `done` runs
  /// once that creation finishes, with its outcome; otherwise it runs before this returns.
  void InitSamplingBackend(const v1::InitSamplingBackendRequest& req, v1::InitSamplingBackendResponse* resp,
                           std::function<void(absl::Status)> done);
  absl::Status RegisterSamplingInput(const v1::RegisterSamplingInputRequest& req,
                                     v1::RegisterSamplingInputResponse* resp);
  absl::Status StartEpoch(const v1::StartEpochRequest& req, v1::StartEpochResponse* resp);
  absl::Status RenewLease(const v1::RenewLeaseRequest& req, v1::RenewLeaseResponse* resp);
  absl::Status DestroySamplingInput(const v1::DestroySamplingInputRequest& req,
                                    v1::DestroySamplingInputResponse* resp);
  absl::Status ReleaseSharedBuffers(const v1::ReleaseSharedBuffersRequest& req,
                                    v1::ReleaseSharedBuffersResponse* resp);

  /// Validates a stream request and marks the channel as streamed (one stream per channel).
  absl::StatusOr<StreamAttachment> AttachStream(const v1::StreamSampledMessagesRequest& req);
  /// Called when a stream ends; `cancelled` abandons the epoch's remaining work.
  void DetachStream(uint64_t channel_id, bool cancelled);
  /// Counts a delivered message as activity on the channel (renews its lease).
  void Touch(uint64_t channel_id);
  /// Whether a shared-memory channel's stream must hold back: its unreleased buffers have
  /// reached the channel's buffer limit in bytes.
  bool SharedBacklogFull(uint64_t channel_id) const;
  /// Records a use of a shared buffer as sent on the channel; it lives until the client frees
  /// it or the channel is destroyed.
  void HandOff(uint64_t channel_id, std::shared_ptr<SharedUse> use);

  absl::Status DescribeChannel(const v1::DescribeChannelRequest& req, v1::ChannelStats* resp) const;
  absl::Status DescribeBackend(const v1::DescribeBackendRequest& req, v1::BackendStats* resp) const;
  absl::Status GetServerStats(const v1::GetServerStatsRequest& req, v1::ServerStats* resp) const;

  /// Destroys every live channel and stops every backend; streams end. Returns the number of
  /// channels destroyed. Idempotent; later sampling calls fail with UNAVAILABLE.
  int Shutdown();

  /// Channels registered and not destroyed.
  int num_channels() const;

  /// One line summarising backends and channels (the periodic state log).
  std::string StateSummary() const;

 private:
  struct BackendEntry;
  struct ChannelEntry;

  absl::Status ValidateConfig(const v1::SamplingConfig& config, const v1::SamplerOptions& options) const;
  // The seeds of a registration and their node type; for an ablp input, its labels too.
  absl::StatusOr<std::vector<int64_t>> ResolveSeeds(const v1::RegisterSamplingInputRequest& req, int* node_type,
                                                    AblpInput* ablp) const;
  absl::StatusOr<std::vector<int64_t>> SplitIds(const std::string& node_type, const std::string& split,
                                                const v1::ServerSlice& slice, const std::string& field) const;
  absl::Status CheckOwnedIds(int node_type, const google::protobuf::RepeatedField<int64_t>& ids,
                             const std::string& field) const;
  // Removes a channel (mu_ held by the caller is released around backend calls); returns
  // whether its backend was stopped because it was the last channel.
  bool DestroyLocked(std::unique_lock<std::mutex>& lock, uint64_t channel_id);
  void FillChannelStats(const ChannelEntry& c, v1::ChannelStats* out) const;
  void FillBackendStats(const BackendEntry& b, v1::BackendStats* out) const;
  void WatchdogLoop();
  // Stops the backends in retiring_ (mu_ held on entry and exit; released while stopping).
  void StopRetired(std::unique_lock<std::mutex>& lock);
  // CSR positions of an edge type's edges ordered by global edge id; built on first use.
  const std::vector<int64_t>& EdgePositionsById(int edge_type) const;

  // UNAVAILABLE while a cluster's peers have not all answered.
  absl::Status SamplingOpen() const;

  std::unique_ptr<Partition> partition_;
  const CoreOptions options_;
  std::atomic<Cluster*> cluster_{nullptr};
  std::unique_ptr<RemoteCache> remote_cache_;  // set with the cluster
  std::vector<std::string> cluster_addresses_;  // guarded by mu_
  // Declared before the backends so that it outlives every buffer they hold.
  const std::unique_ptr<SharedMemoryArea> shared_memory_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  mutable std::mutex mu_;
  std::condition_variable watchdog_cv_;
  bool shutting_down_ = false;
  uint64_t next_backend_id_ = 1;
  uint64_t next_channel_id_ = 1;
  std::map<std::string, std::shared_ptr<BackendEntry>> backends_by_key_;
  std::map<uint64_t, std::shared_ptr<BackendEntry>> backends_;
  std::map<uint64_t, std::shared_ptr<ChannelEntry>> channels_;
  std::set<uint64_t> destroyed_;  // tombstones: ids are never reused
  // Backends whose last channel is gone, waiting for the watchdog to join their workers.
  std::vector<std::shared_ptr<BackendEntry>> retiring_;
  int64_t leases_expired_ = 0;
  std::atomic<int> open_streams_{0};
  // Serialises Shutdown() so the watchdog is joined once.
  std::mutex shutdown_mu_;
  std::thread watchdog_;
  mutable std::mutex edge_index_mu_;
  mutable std::map<int, std::vector<int64_t>> edge_index_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_CORE_H_
