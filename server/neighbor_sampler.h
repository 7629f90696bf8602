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
#include "server/graph/partition.h"
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
  /// Gather the feature rows of the sampled edges.
  bool with_edge_features = false;
  /// After the hops, replace the sampled edges with the subgraph induced by all sampled nodes:
  /// every edge of every type between two of them (the SUBGRAPH sampler).
  bool induced = false;
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
  // elsewhere are expanded by their owners with the same (coordinates, hop) key. With
  // `add_nodes` false, only edges to nodes already in the subgraph are kept.
  absl::Status ExpandHop(int edge_type, int fanout, uint64_t hop_key, const SeedBatch& coordinates, int hop,
                         size_t begin, size_t end, bool add_nodes, SamplerScratch* scratch,
                         SampledSubgraph* out) const;

  const Partition* partition_;
  NeighborSamplerOptions options_;
  int num_hops_ = 0;
  /// fanout_[edge type][hop].
  std::vector<std::vector<int>> fanout_;
  std::vector<uint64_t> edge_type_hash_;
};

/// Puts a batch's seeds at hop 0 of `out` (already Reset): the seeds, checked (ids of the seed
/// type owned here) and de-duplicated in order of first appearance, then on a link-prediction
/// batch its label nodes, with out->ablp filled. `local_of` is the dense global -> local map of
/// each node type (-1: absent), updated for every node added.
absl::Status PlaceSeeds(const Partition& partition, const SeedBatch& batch,
                        std::vector<std::vector<int32_t>>* local_of, SampledSubgraph* out);

/// The start of every sampler's Sample: checks the seed type, Resets `out` for the partition's
/// types, sizes the dense maps (-1 everywhere) and places the seeds (PlaceSeeds).
absl::Status StartSubgraph(const Partition& partition, const SeedBatch& batch,
                           std::vector<std::vector<int32_t>>* local_of, SampledSubgraph* out);

/// Neighbours drawn for a list of nodes, and the memory the draw reuses.
struct NeighborDraw {
  /// Per node its number of neighbours drawn; the neighbours' global ids (and edge ids and edge
  /// feature rows, when asked for) concatenated in node order.
  std::vector<int64_t> counts;
  std::vector<int64_t> neighbors;
  std::vector<int64_t> edge_ids;
  std::vector<char> edge_features;
  /// Staging, kept for reuse.
  std::vector<int64_t> base, degree, positions, picked, candidates;
};

/// How one hop draws.
struct DrawSpec {
  /// Neighbours per node; -1 takes all.
  int fanout = -1;
  bool replace = false;
  bool with_edge_ids = false;
  bool with_edge_features = false;
  /// Node id's draw is keyed by HashCombine(hop_key, id).
  uint64_t hop_key = 0;
  /// Sorted (node, neighbour) global id pairs never drawn (the batch's label edges); null: none.
  const std::vector<std::pair<int64_t, int64_t>>* excluded = nullptr;
};

/// Draws neighbours along `edge_type` for each of `ids`, which `partition` owns (rows of the
/// edge type's row type). A node with excluded neighbours draws among the others. This is the
/// one place a hop's draw happens, whether the sampler expands its own frontier or a peer's
/// SampleNeighbors asks, so every server draws alike.
void DrawOwnedNeighbors(const Partition& partition, int edge_type, const int64_t* ids, size_t n,
                        const DrawSpec& spec, NeighborDraw* out);

/// Memory of DrawNeighbors, kept for reuse.
struct FrontierScratch {
  NeighborDraw local;
  NeighborDraw merged;
  std::vector<int64_t> owned;
  std::vector<int32_t> remote;
  std::vector<int32_t> call_of;
};

/// Draws for `ids` wherever they are owned: this partition's nodes with DrawOwnedNeighbors,
/// the others by their owners through `peers` (one call per owner, concurrently, asking for the
/// same `spec` at the coordinates (seed, epoch, batch index) of `batch` and `hop`, which must be
/// what gave `spec.hop_key`). Returns the draw in `ids` order (pointing into `scratch`).
/// FAILED_PRECONDITION when a node is owned elsewhere and `peers` is null; the peers' errors as
/// they come.
absl::StatusOr<const NeighborDraw*> DrawNeighbors(const Partition& partition, PeerSampling* peers, int edge_type,
                                                  const int64_t* ids, size_t n, const DrawSpec& spec,
                                                  const SeedBatch& batch, int hop, FrontierScratch* scratch);

/// Copies the feature rows and labels of `nodes->ids` into `nodes`; feature rows go to
/// `feature_dst` instead when it is not null (it must hold them all). Rows of nodes owned by
/// other partitions come from `cache` when it has them, else from `peers` (then they are added
/// to `cache`); FAILED_PRECONDITION when they are needed and `peers` is null.
absl::Status GatherNodeData(const Partition& partition, int node_type, bool features, bool labels,
                            char* feature_dst, SampledNodes* nodes, PeerSampling* peers = nullptr,
                            RemoteCache* cache = nullptr);

/// GatherNodeData for every node type of `out`, into the memory out->feature_target supplies
/// when it is set (called once, with every type's feature bytes).
absl::Status GatherSubgraphData(const Partition& partition, bool features, bool labels, PeerSampling* peers,
                                RemoteCache* cache, SampledSubgraph* out);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_NEIGHBOR_SAMPLER_H_
