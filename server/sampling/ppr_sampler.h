#ifndef GRAPHSTORE_SERVER_SAMPLING_PPR_SAMPLER_H_
#define GRAPHSTORE_SERVER_SAMPLING_PPR_SAMPLER_H_

// Personalized-PageRank neighbourhoods (GiGL's DistPPRNeighborSampler): for each seed, forward
// push (Andersen, Chung, Lang) estimates the seed's PPR vector over every edge type (in the
// stored direction); the `max_nodes_per_seed` nodes of highest estimate, the seed itself left
// out, join the subgraph with their weights.
//
// Push runs in rounds over all seeds of a batch at once: in each round every node whose
// residual reached eps * degree is pushed, in the order it received residual, after one batched
// fetch of the neighbour lists not yet known (from peers for nodes owned elsewhere). The order
// depends only on the graph and the seeds, so the result is deterministic and the same on any
// partitioning.

#include <memory>

#include "absl/status/statusor.h"
#include "server/graph/partition.h"
#include "server/sampling/peer_sampling.h"
#include "proto/ppr_defaults.h"
#include "server/sampling/remote_cache.h"
#include "server/sampling/sampler.h"

namespace graphstore {

struct PprSamplerOptions {
  /// Restart probability, in (0, 1).
  double alpha = kPprAlpha;
  /// Residual threshold per unit of degree, > 0.
  double eps = kPprEps;
  /// Nodes kept per seed, >= 1.
  int max_nodes_per_seed = kPprMaxNodesPerSeed;
  bool with_node_features = false;
  bool with_labels = false;
  /// As NeighborSamplerOptions: the cluster's other servers and their cached node data.
  PeerSampling* peers = nullptr;
  RemoteCache* remote_cache = nullptr;
};

class PprSampler : public Sampler {
 public:
  /// InvalidArgument naming the field when the graph lacks the features or labels asked for.
  /// alpha, eps and max_nodes_per_seed are the caller's to check (the service does).
  static absl::StatusOr<std::unique_ptr<PprSampler>> Create(const Partition* partition, PprSamplerOptions options);

  std::unique_ptr<SamplerScratch> NewScratch() const override;
  absl::Status Sample(const SeedBatch& batch, SamplerScratch* scratch, SampledSubgraph* out) const override;

 private:
  struct Scratch;
  PprSampler(const Partition* partition, PprSamplerOptions options) : partition_(partition), options_(options) {}
  // The steps of Sample: every hop-0 node starts a push with residual 1; a round fetches the
  // neighbour lists its nodes need, then pushes; the top nodes per seed join the subgraph.
  void StartPush(const SampledSubgraph& out, Scratch* s) const;
  absl::Status FetchNeighbors(const SeedBatch& batch, Scratch* s) const;
  void PushRound(int round, Scratch* s) const;
  void KeepTop(Scratch* s, SampledSubgraph* out) const;

  const Partition* partition_;
  PprSamplerOptions options_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_PPR_SAMPLER_H_
