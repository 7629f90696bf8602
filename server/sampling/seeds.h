#ifndef GRAPHSTORE_SERVER_SAMPLING_SEEDS_H_
#define GRAPHSTORE_SERVER_SAMPLING_SEEDS_H_

// The start of every sampler's Sample: the batch's seeds placed at hop 0 of the subgraph, with
// the dense global -> local id maps that every sampler keeps per worker.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/graph/partition.h"
#include "server/sampling/sampler.h"

namespace graphstore {

/// Per-worker dense global -> local id maps, one per node type of the partition (-1: not in the
/// subgraph). Sized on first use; entries are reset after each batch by ScopedLocalIds.
using LocalIds = std::vector<std::vector<int32_t>>;

/// Resets the entries of `maps` that `subgraph`'s nodes set, when it goes out of scope, so the
/// maps are clean for the next batch however Sample returns.
class ScopedLocalIds {
 public:
  ScopedLocalIds(LocalIds* maps, const SampledSubgraph* subgraph) : maps_(maps), subgraph_(subgraph) {}
  ~ScopedLocalIds();
  ScopedLocalIds(const ScopedLocalIds&) = delete;
  ScopedLocalIds& operator=(const ScopedLocalIds&) = delete;

 private:
  LocalIds* maps_;
  const SampledSubgraph* subgraph_;
};

/// Checks the seed type, Resets `out` for the partition's types, sizes the maps (-1
/// everywhere) and places the batch's seeds: the seeds, checked (ids of the seed type owned
/// here) and de-duplicated in order of first appearance, then on a link-prediction batch its
/// label nodes, with out->ablp filled. Every node added gets its map entry.
absl::Status StartSubgraph(const Partition& partition, const SeedBatch& batch, LocalIds* local_of,
                           SampledSubgraph* out);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_SEEDS_H_
