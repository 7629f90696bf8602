#ifndef GRAPHSTORE_SERVER_GRAPH_PARTITION_VERIFY_H_
#define GRAPHSTORE_SERVER_GRAPH_PARTITION_VERIFY_H_

// What Partition::Load checks of the arrays it maps, apart from the mapping itself: every
// failure is DATA_LOSS naming the file and the entry.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "server/util/progress.h"

namespace graphstore {

/// DATA_LOSS "<file>: <what>".
absl::Status Corrupt(const MappedNpy& file, const std::string& what);

/// A node type's owned ids (ascending, in range, owned by partition `part` of `num_parts` per
/// the book), its label and time columns and its splits. Counts the entries read on `progress`.
absl::Status VerifyNodeType(const NodeTypeStore& t, int part, int num_parts, Progress* progress);

/// An edge type's indptr over `rows` rows: starts at 0, never decreases, ends at the edge
/// count. O(rows); always run, since a bad indptr would send the samplers out of bounds.
absl::Status CheckIndptr(const EdgeTypeStore& e, int64_t rows);

/// Every entry of an edge type: neighbour and edge ids in range, rows sorted (by time, id,
/// then edge id), edge times not before their neighbour's, weights finite and >= 0, label
/// edges owned and sorted, degrees not negative. `nodes` are the partition's node types.
absl::Status VerifyEdgeType(const EdgeTypeStore& e, const std::vector<NodeTypeStore>& nodes, int part,
                            Progress* progress);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_PARTITION_VERIFY_H_
