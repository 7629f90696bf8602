#ifndef GRAPHSTORE_SERVER_SAMPLING_GATHER_H_
#define GRAPHSTORE_SERVER_SAMPLING_GATHER_H_

// Gathering the feature rows and labels of a subgraph's nodes, wherever they are owned: this
// partition's rows from its mapped arrays, other partitions' from the remote cache or their
// servers.

#include "absl/status/status.h"
#include "server/graph/partition.h"
#include "server/sampling/peer_sampling.h"
#include "server/sampling/remote_cache.h"
#include "server/sampling/sampler.h"

namespace graphstore {

/// InvalidArgument naming the option when node features, labels or edge features are asked for
/// and the dataset has none of them.
absl::Status CheckGatherable(const Partition& partition, bool node_features, bool labels, bool edge_features);

/// Copies the feature rows and labels of `nodes->ids` into `nodes`; feature rows go to
/// `feature_dst` instead when it is not null (it must hold them all). `output` (null: as
/// stored) says how rows are encoded and which the trainer caches: those are left out and
/// flagged in nodes->cached. Rows of nodes owned by other partitions come from `cache` when it
/// has them, else from `peers` (then they are added to `cache`); FAILED_PRECONDITION when they
/// are needed and `peers` is null. Encodings other than as stored need float32 features.
/// With output->rows_from_owners the rows and labels of other partitions' nodes are left to
/// their owners: over a socket nodes->labels then holds this partition's nodes' labels alone,
/// in node order; `in_place` (a shared buffer, written in place by its client; implied by
/// `feature_dst`) keeps every node's place, with -1 for the others' labels.
absl::Status GatherNodeData(const Partition& partition, int node_type, bool features, bool labels,
                            const FeatureOutput* output, char* feature_dst, SampledNodes* nodes,
                            PeerSampling* peers = nullptr, RemoteCache* cache = nullptr, bool in_place = false);

/// GatherNodeData for every node type of `out`, into the memory out->feature_target supplies
/// when it is set (called once, with every type's feature bytes).
absl::Status GatherSubgraphData(const Partition& partition, bool features, bool labels, const FeatureOutput* output,
                                PeerSampling* peers, RemoteCache* cache, SampledSubgraph* out);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_GATHER_H_
