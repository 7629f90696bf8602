#include "server/service/worker.h"

#include <algorithm>

#include "server/service/message.h"

namespace graphstore {

std::shared_ptr<SampledSubgraph> SubgraphPool::Acquire() {
  std::unique_ptr<SampledSubgraph> g;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      g = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (g == nullptr) g = std::make_unique<SampledSubgraph>();
  std::weak_ptr<SubgraphPool> pool = weak_from_this();
  return std::shared_ptr<SampledSubgraph>(g.release(), [pool](SampledSubgraph* p) {
    if (auto alive = pool.lock()) return alive->Return(p);
    delete p;
  });
}

void SubgraphPool::Return(SampledSubgraph* g) {
  std::unique_ptr<SampledSubgraph> owned(g);
  owned->feature_target = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(owned));
}

SamplingWorkers::SamplingWorkers(const Partition* partition, std::unique_ptr<Sampler> sampler, int num_workers,
                                 size_t part_bytes, size_t split_bytes)
    : partition_(partition),
      sampler_(std::move(sampler)),
      part_bytes_(part_bytes),
      split_bytes_(split_bytes),
      subgraphs_(std::make_shared<SubgraphPool>(2 * static_cast<size_t>(num_workers) + 2)),
      ablp_(num_workers),
      seed_ids_(num_workers),
      seed_times_(num_workers) {
  for (int i = 0; i < num_workers; ++i) scratch_.push_back(sampler_->NewScratch());
}

namespace {

BatchCounts CountFeatureRows(const SampledSubgraph& g) {
  BatchCounts c;
  for (const SampledNodes& n : g.nodes) {
    c.other_partitions_rows += n.other_partitions_rows;
    if (n.feature_dim == 0) continue;
    // Rows sent: the matrix's, less the empty places of rows left to owners where every node
    // keeps its row's place (in a shared buffer); the rest not left to owners the trainer caches.
    const auto nodes = static_cast<int64_t>(n.ids.size());
    const int64_t rows = std::min(n.feature_matrix_rows(), nodes - n.rows_left_to_owners);
    c.feature_rows += rows;
    c.cached_feature_rows += nodes - rows - n.rows_left_to_owners;
  }
  return c;
}

}  // namespace

absl::StatusOr<scheduler::Batch> SamplingWorkers::SampleAndEncode(const scheduler::BatchTask& t) {
  const auto* channel = SamplingOf(t);
  // The scheduler hands out positions in the channel's input (without an attachment, ids).
  const int64_t* ids = t.seeds;
  if (channel != nullptr) {
    std::vector<int64_t>& seeds = seed_ids_[t.worker];
    seeds.resize(t.num_seeds);
    channel->input.Ids(t.seeds, t.num_seeds, seeds.data());
    ids = seeds.data();
  }
  SeedBatch b;
  b.node_type = static_cast<int>(t.context);
  b.ids = ids;
  b.size = t.num_seeds;
  b.seed = t.seed;
  b.epoch = t.epoch;
  // Draws are keyed by the batch's number in the epoch, whichever share of the epoch's batches
  // the channel samples, so that batch b is the same subgraph on every server.
  b.batch_index = t.epoch_batch;
  std::shared_ptr<SampledSubgraph> subgraph = subgraphs_->Acquire();
  SampledSubgraph& g = *subgraph;
  if (channel != nullptr && channel->ablp != nullptr) {
    AblpBatch& labels = ablp_[t.worker];
    if (auto s = channel->ablp->MakeBatch(ids, t.num_seeds, t.seed, t.epoch, t.epoch_batch, &labels); !s.ok()) {
      return s;
    }
    b.ablp = &labels;
  }
  if (channel != nullptr) b.features = channel->features.get();
  if (channel != nullptr && !channel->input_times.empty()) {
    std::vector<int64_t>& times = seed_times_[t.worker];
    times.resize(t.num_seeds);
    for (size_t i = 0; i < t.num_seeds; ++i) times[i] = channel->input_times[t.seeds[i]];
    b.times = times.data();
  }
  SharedBufferPool* pool = channel != nullptr ? channel->pool.get() : nullptr;
  SharedLayout layout;
  if (pool != nullptr) GatherIntoSharedBuffer(pool, &g, &layout);
  absl::Status sampled = sampler_->Sample(b, scratch_[t.worker].get(), &g);
  g.feature_target = nullptr;
  if (!sampled.ok()) return sampled;
  if (channel != nullptr && channel->send_input_ids) {
    g.nodes[b.node_type].input_ids.assign(t.seeds, t.seeds + t.num_seeds);
  }

  auto wire = std::make_shared<WireMessage>();
  wire->counts = CountFeatureRows(g);
  WireHeader header;
  header.channel_id = t.channel_id;
  header.epoch = t.epoch;
  header.batch_index = t.epoch_batch;
  header.num_batches = t.num_epoch_batches;
  size_t bytes;
  if (pool != nullptr) {
    v1::SampledMessage msg;
    msg.set_channel_id(t.channel_id);
    msg.set_epoch(t.epoch);
    msg.set_batch_index(t.epoch_batch);
    msg.set_num_batches(t.num_epoch_batches);
    if (auto s = ToSharedSampledMessage(*partition_, g, pool, &layout, &msg); !s.ok()) return s;
    wire->encoded = EncodeWhole(msg);
    wire->shared = std::move(layout.use);
    bytes = wire->encoded->bytes + wire->shared->file->size();
  } else {
    // The parts point into the subgraph, which stays out of the pool until they are sent.
    constexpr size_t kCopyBelow = 4096;
    const size_t part = split_bytes_ > 0 && g.ByteSize() > split_bytes_ ? part_bytes_ : 0;
    wire->encoded = EncodeParts(header, MessageEntries(*partition_, g), part, kCopyBelow, subgraph);
    bytes = wire->encoded->bytes;
  }
  return scheduler::Batch{std::move(wire), bytes};
}

}  // namespace graphstore
