#ifndef GRAPHSTORE_SERVER_SERVICE_COUNTERS_H_
#define GRAPHSTORE_SERVER_SERVICE_COUNTERS_H_

// Monotonic counters of the service since start, for the metrics endpoint: what the workers
// sampled and how long it took per sampler kind, what the streams sent per transport, and what
// was dropped. Added to without a lock from workers and gRPC threads.

#include <array>
#include <atomic>
#include <cstdint>

#include "server/util/histogram.h"

namespace graphstore {

/// The kinds of sampling timed separately.
enum class SamplerKind { kNeighbor = 0, kAblp = 1, kPpr = 2, kSubgraph = 3 };
inline constexpr std::array<const char*, 4> kSamplerKindNames = {"neighbor", "ablp", "ppr", "subgraph"};

struct ServiceCounters {
  std::atomic<int64_t> batches_sampled{0};
  std::atomic<int64_t> sampling_failures{0};
  /// Nanoseconds workers spent sampling and encoding (utilisation = rate / workers).
  std::atomic<int64_t> worker_busy_ns{0};
  /// Sampled batches discarded unsent: buffered when their stream was cancelled or their
  /// channel destroyed.
  std::atomic<int64_t> batches_dropped{0};
  /// Whole batches and stream bytes written, by transport (0: socket, 1: shared memory; a
  /// shared-memory message carries byte ranges, its tensors travel in the shared buffer).
  std::array<std::atomic<int64_t>, 2> batches_sent{};
  std::array<std::atomic<int64_t>, 2> bytes_sent{};
  /// Node rows answered by GetNodeFeatures and labels by GetNodeLabels (to trainers and peers).
  std::atomic<int64_t> node_rows_answered{0};
  std::atomic<int64_t> node_labels_answered{0};
  /// Time to sample and encode one batch, per SamplerKind.
  std::array<LatencyHistogram, 4> sampling_seconds;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_COUNTERS_H_
