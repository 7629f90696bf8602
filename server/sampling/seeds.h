#ifndef GRAPHSTORE_SERVER_SAMPLING_SEEDS_H_
#define GRAPHSTORE_SERVER_SAMPLING_SEEDS_H_

// The start of every sampler's Sample: the batch's seeds placed at hop 0 of the subgraph, with
// the global -> local id maps that every sampler keeps per worker (local_ids.h).

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/graph/partition.h"
#include "server/sampling/local_ids.h"
#include "server/sampling/sampler.h"

namespace graphstore {

/// Empties `maps` when it goes out of scope, so they are clean for the next batch however Sample
/// returns.
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

/// Checks the seed type, Resets `out` for the partition's types, makes a map per type and places
/// the batch's seeds: the seeds, checked (ids of the seed type owned
/// here) and de-duplicated in order of first appearance, then on a link-prediction batch its
/// label nodes, with out->ablp filled. Every node added gets its map entry.
/// `dense_nodes`: types of up to that many nodes map ids with an array, larger ones with a table
/// (LocalIdMap::Reset), decided when the maps are first made.
absl::Status StartSubgraph(const Partition& partition, const SeedBatch& batch, LocalIds* local_of,
                           SampledSubgraph* out, int64_t dense_nodes = LocalIdMap::kDenseNodes);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_SEEDS_H_
