#ifndef GRAPHSTORE_SERVER_SAMPLING_SUBGRAPH_SAMPLER_H_
#define GRAPHSTORE_SERVER_SAMPLING_SUBGRAPH_SAMPLER_H_

// Induced-subgraph sampling (the SUBGRAPH sampler kind): the nodes of a k-hop neighbour sample,
// with every stored edge between two of them instead of the edges the hops drew. Each edge
// type's edges come in local row order; a node owned elsewhere contributes its edges through
// its owner, so the answer is the same on any partitioning.

#include <memory>

#include "absl/status/statusor.h"
#include "server/sampling/neighbor_sampler.h"

namespace graphstore {

class SubgraphSampler : public NeighborSampler {
 public:
  /// Same options and checks as NeighborSampler::Create.
  static absl::StatusOr<std::unique_ptr<SubgraphSampler>> Create(const Partition* partition,
                                                                 NeighborSamplerOptions options);

  absl::Status Sample(const SeedBatch& batch, SamplerScratch* scratch, SampledSubgraph* out) const override;

 private:
  using NeighborSampler::NeighborSampler;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_SUBGRAPH_SAMPLER_H_
