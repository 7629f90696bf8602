#ifndef GRAPHSTORE_SERVER_SERVICE_SERVICE_STATE_H_
#define GRAPHSTORE_SERVER_SERVICE_SERVICE_STATE_H_

// What the units of the service core share (core.h composes them): the partition and its
// queries, the options, the memory budgets, the cluster, and -- under one lock -- the registry of
// backends and channels with what is tied to it. Each unit (backends.h, channels.h, streams.h,
// introspection.h, teardown.h) holds this by reference; the lock's annotations make the compiler
// check that what it guards is touched with it held (clang's -Wthread-safety, run by the tests).
// No gRPC.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/memory_budget.h"
#include "server/cluster/cluster.h"
#include "server/graph/partition.h"
#include "server/sampling/remote_cache.h"
#include "server/service/channel_input.h"
#include "server/service/counters.h"
#include "server/service/feature_outputs.h"
#include "server/service/options.h"
#include "server/service/queries.h"
#include "server/service/quotas.h"
#include "server/service/registry.h"
#include "server/service/shared_ledger.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

struct ServiceState {
  using Clock = std::chrono::steady_clock;

  /// `shared_memory`, when given, is offered to clients on this host.
  ServiceState(std::unique_ptr<Partition> partition, CoreOptions options,
               std::unique_ptr<SharedMemoryArea> shared_memory);

  const std::unique_ptr<Partition> partition;
  const CoreOptions options;
  /// Added to without the lock.
  mutable ServiceCounters counters;
  /// Computes ranges and hot sets once, on demand. Thread-safe.
  mutable FeatureOutputs feature_outputs;
  /// The partition's own queries: stateless, answered without the lock.
  const PartitionQueries queries;
  /// The cluster joined, or null (Core::SetCluster).
  std::atomic<Cluster*> cluster{nullptr};
  /// Cluster-wide splits that channels with global batches are registered on. Thread-safe.
  mutable InputSets input_sets;
  /// Declared before the registry so that it outlives every buffer the backends hold.
  const std::unique_ptr<SharedMemoryArea> shared_memory;
  const Clock::time_point started = Clock::now();
  /// Sampled-but-unread bytes of every backend (options.max_buffered_bytes_total resolved).
  const std::shared_ptr<scheduler::MemoryBudget> budget;
  std::atomic<int> open_streams{0};

  mutable absl::Mutex mu;
  /// Signalled when a backend is left to retire, and when the server shuts down.
  absl::CondVar retire_cv;
  bool shutting_down ABSL_GUARDED_BY(mu) = false;
  Registry registry ABSL_GUARDED_BY(mu);
  /// The limits and quotas, read against `registry`: call them with `mu` held.
  const Quotas quotas;
  /// Shared buffers sent and not yet freed over every channel (kept by the channels' ledgers),
  /// their limit, and the channels that have shared memory.
  SharedMemoryAccount shared_account ABSL_GUARDED_BY(mu);
  /// The cluster's servers in partition order (DatasetMeta), and the cache of other
  /// partitions' rows and lists (set with the cluster).
  std::vector<std::string> cluster_addresses ABSL_GUARDED_BY(mu);
  std::unique_ptr<RemoteCache> remote_cache ABSL_GUARDED_BY(mu);
  /// Backends whose last channel is gone, waiting for the watchdog to join their workers.
  std::vector<std::shared_ptr<BackendEntry>> retiring ABSL_GUARDED_BY(mu);
  int64_t leases_expired ABSL_GUARDED_BY(mu) = 0;
  int64_t backend_leases_expired ABSL_GUARDED_BY(mu) = 0;

  /// UNAVAILABLE while a cluster's peers have not all answered.
  absl::Status SamplingOpen() const;
  /// The live channel `id`, or the status for an id that is not (Registry::NotLive).
  absl::StatusOr<std::shared_ptr<ChannelEntry>> LiveChannel(uint64_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_SERVICE_STATE_H_
