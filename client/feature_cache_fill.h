#ifndef GRAPHSTORE_CLIENT_FEATURE_CACHE_FILL_H_
#define GRAPHSTORE_CLIENT_FEATURE_CACHE_FILL_H_

// The trainer's feature cache, filled once at registration: every server lists the cached
// nodes it owns (RegisterSamplingInputResponse.feature_cache); their rows come from it in the
// channel's encoding and are kept as batches need them (decoded to float32, or encoded), so
// that the decoder fills the rows a server left out as cached (client/wire_decoder.h). No LibTorch.

#include <vector>

#include "absl/status/status.h"
#include "client/decoded_batch.h"
#include "client/server_link.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// Fills `cache` for every node type of `meta` with features: server i's listing in
/// `registered[i]`, its rows asked of `links[i]` in `encoding`, kept decoded when `decode`.
/// The first failed call's status.
absl::Status FillFeatureCache(const v1::DatasetMeta& meta, const std::vector<ServerLink*>& links,
                              const std::vector<v1::RegisterSamplingInputResponse>& registered,
                              v1::FeatureEncoding encoding, bool decode, FeatureCache* cache);

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_FEATURE_CACHE_FILL_H_
