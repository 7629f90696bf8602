#include "server/service/worker.h"

#include "server/service/message.h"

namespace graphstore {

SamplingWorkers::SamplingWorkers(const Partition* partition, std::unique_ptr<Sampler> sampler, int num_workers)
    : partition_(partition), sampler_(std::move(sampler)), subgraph_(num_workers), ablp_(num_workers) {
  for (int i = 0; i < num_workers; ++i) scratch_.push_back(sampler_->NewScratch());
}

absl::StatusOr<scheduler::Batch> SamplingWorkers::SampleAndEncode(const scheduler::BatchTask& t) {
  SeedBatch b;
  b.node_type = static_cast<int>(t.context);
  b.ids = t.seeds;
  b.size = t.num_seeds;
  b.seed = t.seed;
  b.epoch = t.epoch;
  b.batch_index = t.batch_index;
  SampledSubgraph& g = subgraph_[t.worker];
  const auto* channel = static_cast<const ChannelSampling*>(t.attachment);
  if (channel != nullptr && channel->ablp != nullptr) {
    AblpBatch& labels = ablp_[t.worker];
    if (auto s = channel->ablp->MakeBatch(t.seeds, t.num_seeds, t.seed, t.epoch, t.batch_index, &labels); !s.ok()) {
      return s;
    }
    b.ablp = &labels;
  }
  SharedBufferPool* pool = channel != nullptr ? channel->pool.get() : nullptr;
  SharedLayout layout;
  if (pool != nullptr) GatherIntoSharedBuffer(pool, &g, &layout);
  absl::Status sampled = sampler_->Sample(b, scratch_[t.worker].get(), &g);
  g.feature_target = nullptr;
  if (!sampled.ok()) return sampled;

  auto wire = std::make_shared<WireMessage>();
  v1::SampledMessage* msg = &wire->msg;
  msg->set_channel_id(t.channel_id);
  msg->set_epoch(t.epoch);
  msg->set_batch_index(t.batch_index);
  msg->set_num_batches(t.num_batches);
  size_t bytes;
  if (pool != nullptr) {
    if (auto s = ToSharedSampledMessage(*partition_, g, pool, &layout, msg); !s.ok()) return s;
    wire->shared = std::move(layout.use);
    bytes = msg->ByteSizeLong() + wire->shared->file->size();
  } else {
    ToSampledMessage(*partition_, g, msg);
    bytes = msg->ByteSizeLong();
  }
  return scheduler::Batch{std::move(wire), bytes};
}

}  // namespace graphstore
