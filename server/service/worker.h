#ifndef GRAPHSTORE_SERVER_SERVICE_WORKER_H_
#define GRAPHSTORE_SERVER_SERVICE_WORKER_H_

// What a backend's worker threads run for each batch: sample it, then encode the wire message
// there, off the gRPC threads, so a stream only has to write it.

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "scheduler/backend.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/sampling/sampler.h"
#include "server/service/channel_input.h"
#include "server/service/stream_host.h"
#include "server/service/wire_encoder.h"
#include "server/service/wire_message.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// What the sample function needs to know of a channel: the scheduler hands it over as the
/// channel's attachment (BatchTask::attachment). The scheduler orders positions in `input`, not
/// ids: a batch's seeds are input[p] for its positions p, which are also its input_ids.
struct ChannelSampling : scheduler::ChannelAttachment {
  /// The channel's input: its seeds' global ids, in the order the registration gives them.
  ChannelInput input;
  /// Temporal channels registered with explicit seed times: the time of each input entry.
  std::vector<int64_t> input_times;
  /// Messages carry each seed's position in `input` (NodeTensors.input_ids).
  bool send_input_ids = false;
  /// Set on shared-memory channels: the pool the message's tensors go into.
  std::shared_ptr<SharedBufferPool> pool;
  /// Set on link-prediction channels.
  std::shared_ptr<const AblpLabeler> ablp;
  /// Set on channels with a feature encoding or a trainer-side cache.
  std::shared_ptr<const FeatureOutput> features;
  /// Feature rows in the messages sent to the client, and rows left out of them because the
  /// trainer caches them (counted as each batch's last part is written, not when it is sampled).
  mutable std::atomic<int64_t> feature_rows_sent{0};
  mutable std::atomic<int64_t> feature_rows_cached{0};
  /// Feature rows and labels of nodes other partitions own in the messages sent (counted so too).
  mutable std::atomic<int64_t> other_partitions_rows_sent{0};
};

/// The ChannelSampling of the channel a task belongs to: every channel the service adds to a
/// scheduler carries one (Core::RegisterSamplingInput); null for a channel without one.
inline const ChannelSampling* SamplingOf(const scheduler::BatchTask& task) {
  return static_cast<const ChannelSampling*>(task.attachment);
}

/// Sampled subgraphs kept for reuse: a batch's encoded parts point into its subgraph until they
/// are sent, and a reused subgraph keeps its vectors' memory, so a steady stream does not
/// allocate (and page in) new memory per batch. Thread-safe.
class SubgraphPool : public std::enable_shared_from_this<SubgraphPool> {
 public:
  /// Keeps at most `max_idle` subgraphs between uses.
  explicit SubgraphPool(size_t max_idle) : max_idle_(max_idle) {}
  /// A subgraph that returns to the pool when its last reference goes.
  std::shared_ptr<SampledSubgraph> Acquire();

 private:
  void Return(SampledSubgraph* g);

  const size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<SampledSubgraph>> idle_;
};

/// A backend's sampler and each worker's reusable memory. Worker i only touches entry i of
/// each vector, so workers never share state.
class SamplingWorkers {
 public:
  /// Batches larger than `split_bytes` are encoded in parts of about `part_bytes`; smaller
  /// ones, or all when either is 0, in one part.
  SamplingWorkers(const Partition* partition, std::unique_ptr<Sampler> sampler, int num_workers,
                  size_t part_bytes = 1 << 20, size_t split_bytes = 8 << 20);

  /// Samples the batch of `task` and encodes it as the backend buffers it: a WireMessage (with
  /// the channel, epoch, batch index and number of batches set), and the bytes it holds. The
  /// parts reference the sampled tensors without a copy. On a shared-memory channel the
  /// feature rows are gathered straight into a pooled buffer and the message carries byte
  /// ranges. Runs on worker `task.worker`; the sampler's status otherwise.
  absl::StatusOr<scheduler::Batch> SampleAndEncode(const scheduler::BatchTask& task);

  int num_workers() const { return static_cast<int>(scratch_.size()); }

 private:
  const Partition* const partition_;
  const std::unique_ptr<Sampler> sampler_;
  const size_t part_bytes_;
  const size_t split_bytes_;
  std::vector<std::unique_ptr<SamplerScratch>> scratch_;
  std::shared_ptr<SubgraphPool> subgraphs_;
  std::vector<AblpBatch> ablp_;
  // Per worker: the batch's seed ids and, for explicit times, their times.
  std::vector<std::vector<int64_t>> seed_ids_;
  std::vector<std::vector<int64_t>> seed_times_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_WORKER_H_
