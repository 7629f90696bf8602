// The trainer's feature cache: the rows of the nodes every server lists at registration,
// fetched once in the channel's encoding and kept as batches need them (decoded, or encoded).

#include <algorithm>
#include <cstring>

#include "client/feature_rows.h"
#include "client/loader_core.h"
#include "client/loader_server.h"

namespace graphstore::client {

namespace {

// Decodes `rows` feature rows as GetNodeFeatures answered them into the cache's form.
void DecodeCacheRows(const v1::GetNodeFeaturesResponse& r, bool decode, FeatureCache::Type* type, int32_t first) {
  const v1::Tensor& f = r.features();
  const size_t rows = static_cast<size_t>(f.shape(0));
  char* dst = type->rows.data() + static_cast<size_t>(first) * type->row_bytes;
  if (!decode || f.dtype() == type->dtype) {
    std::memcpy(dst, f.data().data(), rows * type->row_bytes);
    return;
  }
  DecodeFeatureRows(f.dtype(), f.data().data(), rows, static_cast<size_t>(type->dim),
                    reinterpret_cast<const float*>(r.feature_scale().data().data()),
                    reinterpret_cast<const float*>(r.feature_offset().data().data()), reinterpret_cast<float*>(dst));
}

}  // namespace

void LoaderCore::FillFeatureCache(const std::vector<v1::RegisterSamplingInputResponse>& registered) {
  // Every server lists the cached nodes it owns; their rows come from it, in the channel's
  // encoding, kept as batches need them (decoded, or encoded).
  constexpr int kIdsPerCall = 1 << 16;
  for (const v1::NodeTypeInfo& info : meta_.node_types()) {
    if (info.features().dim() == 0) continue;
    FeatureCache::Type& type = cache_.types[info.name()];
    type.slot_of.assign(info.num_nodes(), -1);
    type.dim = info.features().dim();
    // Rows travel in the channel's encoding; kept decoded to float32, or as they came (packed
    // codes as bytes).
    const v1::DType wire = WireDtype(options_.feature_encoding, info.features().dtype());
    const bool decoded = options_.decode_features && wire != info.features().dtype();
    type.dtype = decoded ? v1::DTYPE_FLOAT32 : PackedBits(wire) > 0 ? v1::DTYPE_UINT8 : wire;
    type.row_bytes = decoded ? static_cast<size_t>(type.dim) * DtypeSize(type.dtype) : RowBytes(wire, type.dim);
    int32_t next = 0;
    for (size_t i = 0; i < servers_.size(); ++i) {
      for (const v1::FeatureCache& c : registered[i].feature_cache()) {
        if (c.node_type() != info.name()) continue;
        const auto* ids = reinterpret_cast<const int64_t*>(c.ids().data().data());
        const int n = static_cast<int>(c.ids().data().size() / 8);
        type.rows.resize((static_cast<size_t>(next) + n) * type.row_bytes);
        for (int begin = 0; begin < n; begin += kIdsPerCall) {
          v1::GetNodeFeaturesRequest req;
          req.set_node_type(info.name());
          req.set_encoding(options_.feature_encoding);
          const int end = std::min(n, begin + kIdsPerCall);
          req.mutable_ids()->Add(ids + begin, ids + end);
          auto rows = servers_[i]->client->GetNodeFeatures(req);
          if (!rows.ok()) throw Error(rows.status());
          DecodeCacheRows(*rows, options_.decode_features, &type, next);
          for (int k = begin; k < end; ++k) type.slot_of[ids[k]] = next++;
        }
      }
    }
  }
}

}  // namespace graphstore::client
