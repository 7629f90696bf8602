#ifndef GRAPHSTORE_SERVER_SAMPLING_NODE_TIMES_H_
#define GRAPHSTORE_SERVER_SAMPLING_NODE_TIMES_H_

// The stored times of nodes (temporal datasets), wherever they are owned. A server keeps the
// times of its own nodes (NodeTypeStore::own_times, 8 bytes an owned node); another partition's
// node's time is its owner's to answer, or the peer cache's once it came (kept as the cache
// keeps labels, within its budget), so nothing the size of the whole graph is held.

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "server/graph/partition.h"
#include "server/sampling/peer_sampling.h"
#include "server/sampling/remote_cache.h"

namespace graphstore {

/// Writes the stored time of each of `ids[0, n)` (nodes of `node_type`, which must store times)
/// into `out`: this partition's from its own times, the others' from `cache` (may be null) or
/// from their owners, one call per owner, all at once; the owners' answers go to the cache. FAILED_PRECONDITION naming a node when one is owned elsewhere and `peers`
/// is null; the first owner's failure, or DATA_LOSS when an owner answers another number of
/// times than it was asked for.
absl::Status LookUpNodeTimes(const Partition& partition, int node_type, const int64_t* ids, size_t n,
                             PeerSampling* peers, RemoteCache* cache, int64_t* out);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_NODE_TIMES_H_
