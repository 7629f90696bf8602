#ifndef GRAPHSTORE_SERVER_SERVICE_WORKER_H_
#define GRAPHSTORE_SERVER_SERVICE_WORKER_H_

// What a backend's worker threads run for each batch: sample it, then encode the wire message
// there, off the gRPC threads, so a stream only has to write it.

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/backend.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/sampling/sampler.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// What the sample function needs to know of a channel: the scheduler hands it over as the
/// channel's attachment (BatchTask::attachment).
struct ChannelSampling {
  /// Set on shared-memory channels: the pool the message's tensors go into.
  std::shared_ptr<SharedBufferPool> pool;
  /// Set on link-prediction channels.
  std::shared_ptr<const AblpLabeler> ablp;
};

/// A backend's sampler and each worker's reusable memory. Worker i only touches entry i of
/// each vector, so workers never share state.
class SamplingWorkers {
 public:
  SamplingWorkers(const Partition* partition, std::unique_ptr<Sampler> sampler, int num_workers);

  /// Samples the batch of `task` and encodes it as the backend buffers it: a WireMessage (with
  /// the channel, epoch, batch index and number of batches set), and the bytes it holds. On a
  /// shared-memory channel the feature rows are gathered straight into a pooled buffer and the
  /// message carries byte ranges. Runs on worker `task.worker`; the sampler's status otherwise.
  absl::StatusOr<scheduler::Batch> SampleAndEncode(const scheduler::BatchTask& task);

  int num_workers() const { return static_cast<int>(scratch_.size()); }

 private:
  const Partition* const partition_;
  const std::unique_ptr<Sampler> sampler_;
  std::vector<std::unique_ptr<SamplerScratch>> scratch_;
  // The subgraph is copied into the message, so each worker reuses its own.
  std::vector<SampledSubgraph> subgraph_;
  std::vector<AblpBatch> ablp_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_WORKER_H_
