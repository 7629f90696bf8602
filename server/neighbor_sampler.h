#ifndef GRAPHSTORE_SERVER_NEIGHBOR_SAMPLER_H_
#define GRAPHSTORE_SERVER_NEIGHBOR_SAMPLER_H_

// k-hop neighbour sampling (GraphSAGE / GLT's NeighborSampler) over one partition.
//
// At each hop, every node that entered the subgraph in the previous hop (the seeds at hop 0)
// is expanded along every edge type whose row type it has: up to `fanout` neighbours, drawn by
// DrawNeighborPositions with the key (seed, epoch, batch, hop, edge type, node id). New nodes
// get the next local id of their type in the order they are first met, so the output is a pure
// function of the seeds and those coordinates, and does not depend on the partitioning: a
// frontier node owned by another partition is expanded by its owner (PeerSampling) with the
// same key, and its neighbours are merged in frontier order.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/partition.h"
#include "server/remote_cache.h"
#include "server/sampler.h"

namespace graphstore {

/// What a neighbour sampler returns.
struct NeighborSamplerOptions {
  /// Fanout per hop applied to every edge type; -1 takes all neighbours.
  std::vector<int> fanouts;
  /// Fanouts per hop for named edge types ("src__rel__dst"); overrides `fanouts` for that
  /// type. Every list must have the same number of hops; 0 skips the type at that hop.
  std::map<std::string, std::vector<int>> fanouts_by_type;
  /// Draw with replacement.
  bool replace = false;
  /// Fill SampledEdges::eids.
  bool with_edge_ids = false;
  /// Gather node features.
  bool with_node_features = false;
  /// Gather node labels.
  bool with_labels = false;
  /// The servers of the other partitions, for frontier nodes and node data held there; null on
  /// a single partition or a server outside a cluster (then such nodes fail the batch with
  /// FAILED_PRECONDITION). Not owned; must outlive the sampler.
  PeerSampling* peers = nullptr;
  /// Node data of other partitions kept once fetched (see RemoteCache); null: none. Not owned.
  RemoteCache* remote_cache = nullptr;
};

/// k-hop neighbour sampler.
class NeighborSampler : public Sampler {
 public:
  /// Checks the options against the partition (edge types exist, hop counts agree, fanouts
  /// >= -1, features/labels present when asked for). InvalidArgument naming the field.
  static absl::StatusOr<std::unique_ptr<NeighborSampler>> Create(const Partition* partition,
                                                                 NeighborSamplerOptions options);

  std::unique_ptr<SamplerScratch> NewScratch() const override;
  absl::Status Sample(const SeedBatch& batch, SamplerScratch* scratch,
                      SampledSubgraph* out) const override;

  int num_hops() const { return num_hops_; }

 private:
  NeighborSampler(const Partition* partition, NeighborSamplerOptions options)
      : partition_(partition), options_(std::move(options)) {}
  // Expands frontier [begin, end) of `edge_type`'s row type by one hop into `out`; nodes owned
  // elsewhere are expanded by their owners with the same (coordinates, hop) key.
  absl::Status ExpandHop(int edge_type, int fanout, uint64_t hop_key, const SeedBatch& coordinates, int hop,
                         size_t begin, size_t end, SamplerScratch* scratch, SampledSubgraph* out) const;

  const Partition* partition_;
  NeighborSamplerOptions options_;
  int num_hops_ = 0;
  /// fanout_[edge type][hop].
  std::vector<std::vector<int>> fanout_;
  std::vector<uint64_t> edge_type_hash_;
};

/// Neighbours drawn for nodes a partition owns, and the memory the draw reuses.
struct NeighborDraw {
  /// Per node its number of neighbours drawn; the neighbours' global ids (and edge ids, when
  /// asked for) concatenated in node order.
  std::vector<int64_t> counts;
  std::vector<int64_t> neighbors;
  std::vector<int64_t> edge_ids;
  /// Staging, kept for reuse.
  std::vector<int64_t> base, degree, positions, picked;
};

/// Draws up to `fanout` neighbours (-1: all) along `edge_type` for each of `ids`, which
/// `partition` owns (rows of the edge type's row type); node id's draw is keyed by
/// HashCombine(hop_key, id). This is the one place a hop's draw happens, whether the sampler
/// expands its own frontier or a peer's SampleNeighbors asks, so every server draws alike.
void DrawOwnedNeighbors(const Partition& partition, int edge_type, const int64_t* ids, size_t n, int fanout,
                        bool replace, bool with_edge_ids, uint64_t hop_key, NeighborDraw* out);

/// Copies the feature rows and labels of `nodes->ids` into `nodes`; feature rows go to
/// `feature_dst` instead when it is not null (it must hold them all). Rows of nodes owned by
/// other partitions come from `cache` when it has them, else from `peers` (then they are added
/// to `cache`); FAILED_PRECONDITION when they are needed and `peers` is null.
absl::Status GatherNodeData(const Partition& partition, int node_type, bool features, bool labels,
                            char* feature_dst, SampledNodes* nodes, PeerSampling* peers = nullptr,
                            RemoteCache* cache = nullptr);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_NEIGHBOR_SAMPLER_H_
