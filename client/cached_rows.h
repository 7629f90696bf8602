#ifndef GRAPHSTORE_CLIENT_CACHED_ROWS_H_
#define GRAPHSTORE_CLIENT_CACHED_ROWS_H_

// Stage 2's last step for a trainer with a feature cache: the rows a server left out of a batch
// as cached, written from the trainer's cache into the batch's feature matrix.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/decoded_batch.h"

namespace graphstore::client {

/// Writes the rows `cached` marks (one flag per node of `n`, `row_bytes` per row of `n->x`)
/// from `cache` (null: the trainer keeps none). A marked row the cache does not hold is left
/// to its owner when the batch names owners (owner_rows.h); otherwise it is DataLoss naming
/// `what`, as is a cache of rows of another width or dtype.
absl::Status FillCachedRows(const FeatureCache::Type* cache, const std::vector<uint8_t>& cached, size_t row_bytes,
                            DecodedNodes* n, const std::string& what);

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_CACHED_ROWS_H_
