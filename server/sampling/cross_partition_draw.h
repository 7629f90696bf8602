#ifndef GRAPHSTORE_SERVER_SAMPLING_CROSS_PARTITION_DRAW_H_
#define GRAPHSTORE_SERVER_SAMPLING_CROSS_PARTITION_DRAW_H_

// One hop's draw for a frontier that spans partitions: this partition's nodes drawn here
// (DrawOwnedNeighbors), other partitions' from the neighbour lists the peer cache keeps, the
// rest by their owners through PeerSampling (the hop travels as server/sampling/hop_codec.h
// writes it), merged back in frontier order.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "server/graph/partition.h"
#include "server/sampling/neighbor_draw.h"
#include "server/sampling/owner_split.h"
#include "server/sampling/peer_sampling.h"
#include "server/sampling/remote_cache.h"
#include "server/sampling/sampler.h"

namespace graphstore {

/// Memory of DrawNeighbors, kept for reuse.
struct FrontierScratch {
  NeighborDraw local;
  NeighborDraw merged;
  NeighborDraw kept;  // draws from whole lists the owners sent
  std::vector<int64_t> owned, owned_times;
  // Per node, where its cached neighbour list lies (RemoteCache::FindList; null: none).
  std::vector<const int64_t*> list;
  OwnerSplit<PeerSampling::NeighborCall> split;
};

/// Draws for `ids` wherever they are owned: this partition's nodes with DrawOwnedNeighbors,
/// the others by their owners through `peers` (one call per owner, concurrently, asking for the
/// same `spec` at the coordinates (seed, epoch, batch index) of `batch` and `hop`, which must be
/// what gave `spec.hop_key`). With a `cache`, a uniform draw of neighbour ids alone (nothing
/// weighted, temporal, excluded, no edge ids or features) is made here from the neighbour lists
/// the cache holds, the same draw the owner would make; while the cache has room, owners are
/// asked for the whole lists of the others, which are kept and drawn from (and, when whole
/// lists would pass the message limit, for their draws after all). Returns the draw in `ids`
/// order (pointing into `scratch`). FAILED_PRECONDITION when a node is owned elsewhere and
/// `peers` is null; the peers' errors as they come.
absl::StatusOr<const NeighborDraw*> DrawNeighbors(const Partition& partition, PeerSampling* peers, RemoteCache* cache,
                                                  int edge_type, const int64_t* ids, size_t n, const DrawSpec& spec,
                                                  const SeedBatch& batch, int hop, FrontierScratch* scratch);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_CROSS_PARTITION_DRAW_H_
