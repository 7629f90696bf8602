#ifndef GRAPHSTORE_SERVER_SAMPLING_NEIGHBOR_SAMPLER_H_
#define GRAPHSTORE_SERVER_SAMPLING_NEIGHBOR_SAMPLER_H_

// k-hop neighbour sampling (GraphSAGE / GLT's NeighborSampler) over one partition.
//
// At each hop, every node that entered the subgraph in the previous hop (the seeds at hop 0)
// is expanded along every edge type whose row type it has: up to `fanout` neighbours, drawn by
// DrawNeighbors with the key (seed, epoch, batch, hop, edge type, node id). New nodes get the
// next local id of their type in the order they are first met, so the output is a pure
// function of the seeds and those coordinates, and does not depend on the partitioning: a
// frontier node owned by another partition is expanded by its owner (PeerSampling) with the
// same key, and its neighbours are merged in frontier order.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/graph/partition.h"
#include "server/sampling/cross_partition_draw.h"
#include "server/sampling/peer_sampling.h"
#include "server/sampling/remote_cache.h"
#include "server/sampling/sampler.h"
#include "server/sampling/seeds.h"

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
  /// Edge types drawn in proportion to their stored weights ("*": all); each must store them.
  std::vector<std::string> weighted_edge_types;
  /// Temporal sampling: every node carries a time (seeds their own, a node reached the time of
  /// the earliest node that reached it in its hop) and only reaches neighbours at or before it
  /// along edge types that store times. kLast takes no `replace` and no weighted types.
  TemporalStrategy temporal = TemporalStrategy::kNone;
  /// Fill SampledEdges::eids.
  bool with_edge_ids = false;
  /// Gather node features.
  bool with_node_features = false;
  /// Gather node labels.
  bool with_labels = false;
  /// Gather the feature rows of the sampled edges.
  bool with_edge_features = false;
  /// Gather the nodes' stored times (SampledNodes::times) of the types that store them.
  bool with_node_times = false;
  /// The servers of the other partitions, for frontier nodes and node data held there; null on
  /// a single partition or a server outside a cluster (then such nodes fail the batch with
  /// FAILED_PRECONDITION). Not owned; must outlive the sampler.
  PeerSampling* peers = nullptr;
  /// Node data of other partitions kept once fetched (see RemoteCache); null: none. Not owned.
  RemoteCache* remote_cache = nullptr;
  /// A worker maps a batch's ids of a type of up to this many nodes with an array (4 bytes a
  /// node), of a larger type with a table of the batch's nodes (local_ids.h).
  int64_t dense_local_ids = LocalIdMap::kDenseNodes;
};

/// k-hop neighbour sampler.
class NeighborSampler : public Sampler {
 public:
  /// Resolves the options against the partition: InvalidArgument naming the field when an edge
  /// type does not exist or the graph lacks the weights, times, features or labels asked for.
  /// The fanouts' ranges and hop counts are the caller's to check (the service does, in
  /// server/service/config.cc): every list has the same number of hops, each entry >= -1.
  static absl::StatusOr<std::unique_ptr<NeighborSampler>> Create(const Partition* partition,
                                                                 NeighborSamplerOptions options);

  std::unique_ptr<SamplerScratch> NewScratch() const override;
  absl::Status Sample(const SeedBatch& batch, SamplerScratch* scratch, SampledSubgraph* out) const override;

  int num_hops() const { return num_hops_; }

 protected:
  /// Per-worker memory: the dense id maps and the staging of each hop.
  struct Scratch : SamplerScratch {
    LocalIds local_of;
    FrontierScratch frontier;
    /// Temporal sampling: how many nodes of each type the subgraph held when the current hop
    /// began. (The time of each node is kept in the subgraph's SampledNodes::sampled_times.)
    std::vector<size_t> hop_start;
  };

  NeighborSampler(const Partition* partition, NeighborSamplerOptions options)
      : partition_(partition), options_(std::move(options)) {}
  /// The checks Create documents; derives the per-type fanouts.
  absl::Status Init();
  // weighted_ from the options' weighted edge types, each of which must exist and store weights.
  absl::Status ResolveWeighted();
  // The indexes weighted and temporal draws use, built now rather than in the first batch's
  // draw (seconds on a large graph), once every option is known good.
  void BuildIndexes() const;
  /// Places the seeds and expands every hop into `out` (no node data yet); `s->local_of` maps
  /// every node of `out` until the caller's ScopedLocalIds resets it.
  absl::Status SampleHops(const SeedBatch& batch, Scratch* s, SampledSubgraph* out) const;
  /// Expands frontier [begin, end) of `edge_type`'s row type by one hop into `out`; nodes owned
  /// elsewhere are expanded by their owners with the same (coordinates, hop) key. With
  /// `add_nodes` false, only edges to nodes already in the subgraph are kept.
  absl::Status ExpandHop(int edge_type, int fanout, uint64_t hop_key, const SeedBatch& coordinates, int hop,
                         size_t begin, size_t end, bool add_nodes, Scratch* s, SampledSubgraph* out) const;
  /// What a hop of `edge_type` draws from frontier rows starting at `begin`: fanout, kind of
  /// draw, the batch's key, excluded label edges and, temporally, the rows' times.
  DrawSpec SpecFor(int edge_type, int fanout, uint64_t hop_key, const SeedBatch& coordinates, size_t begin,
                   SampledSubgraph* out) const;
  /// Gathers the node data the options ask for (stored times, features, labels), as the
  /// batch's FeatureOutput says.
  absl::Status GatherData(const SeedBatch& batch, SampledSubgraph* out) const;
  /// Temporal sampling: sets the batch's seed times (SampledNodes::seed_times) and the time of
  /// every node StartSubgraph placed (a seed's own; a label node's, its anchors' earliest) in
  /// SampledNodes::sampled_times, which each hop extends. FailedPrecondition for a seed without
  /// a time.
  absl::Status PlaceSeedTimes(const SeedBatch& batch, Scratch* s, SampledSubgraph* out) const;
  /// With with_node_times (GatherData's part): the nodes' stored times (SampledNodes::times),
  /// other partitions' nodes' from their owners.
  absl::Status GatherNodeTimes(SampledSubgraph* out) const;

  const Partition* partition_;
  NeighborSamplerOptions options_;

 private:
  int num_hops_ = 0;
  /// fanout_[edge type][hop].
  std::vector<std::vector<int>> fanout_;
  std::vector<uint64_t> edge_type_hash_;
  std::vector<bool> weighted_;  // per edge type: draw by stored weight
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_NEIGHBOR_SAMPLER_H_
