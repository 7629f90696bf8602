#include "client/cached_rows.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace graphstore::client {

absl::Status FillCachedRows(const FeatureCache::Type* cache, const std::vector<uint8_t>& cached, size_t row_bytes,
                            DecodedNodes* nodes, const std::string& what) {
  DecodedNodes& n = *nodes;
  // Without a trainer's cache every left-out row is its owner's to send (owner_rows.h).
  if (cache == nullptr && n.owners.defined()) return absl::OkStatus();
  const int64_t* ids = reinterpret_cast<const int64_t*>(n.n_id.data);
  const size_t num_ids = n.n_id.bytes / 8;
  for (size_t i = 0; i < cached.size(); ++i) {
    if (!cached[i]) continue;
    const int64_t id = i < num_ids ? ids[i] : -1;
    const int32_t slot =
        cache != nullptr && id >= 0 && id < static_cast<int64_t>(cache->slot_of.size()) ? cache->slot_of[id] : -1;
    if (slot < 0 && n.owners.defined()) continue;  // its owner sends it (owner_rows.h)
    if (slot < 0) {
      return absl::DataLossError(absl::StrCat(what, ": the server left out the row of node ", id,
                                              " as cached, but this trainer's cache does not hold it"));
    }
    if (cache->row_bytes != row_bytes || cache->dtype != n.x.dtype) {
      return absl::DataLossError(absl::StrCat(what, ": the trainer's cache holds rows of another width"));
    }
    std::memcpy(n.x.data + i * row_bytes, cache->rows.data() + slot * cache->row_bytes, row_bytes);
  }
  return absl::OkStatus();
}

}  // namespace graphstore::client
