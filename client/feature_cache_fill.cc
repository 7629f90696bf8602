#include "client/feature_cache_fill.h"

#include <algorithm>
#include <cstring>

#include "client/feature_rows.h"

namespace graphstore::client {

namespace {

// Decodes the feature rows GetNodeFeatures answered into the cache's form, from slot `first`.
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

absl::Status FillFeatureCache(const v1::DatasetMeta& meta, const std::vector<ServerLink*>& links,
                              const std::vector<v1::RegisterSamplingInputResponse>& registered,
                              v1::FeatureEncoding encoding, bool decode, FeatureCache* cache) {
  constexpr int kIdsPerCall = 1 << 16;
  for (const v1::NodeTypeInfo& info : meta.node_types()) {
    if (info.features().dim() == 0) continue;
    FeatureCache::Type& type = cache->types[info.name()];
    type.slot_of.assign(info.num_nodes(), -1);
    type.dim = info.features().dim();
    // Rows travel in the channel's encoding; kept decoded to float32, or as they came (packed
    // codes as bytes).
    const v1::DType wire = WireDtype(encoding, info.features().dtype());
    const bool decoded = decode && wire != info.features().dtype();
    type.dtype = decoded ? v1::DTYPE_FLOAT32 : PackedBits(wire) > 0 ? v1::DTYPE_UINT8 : wire;
    type.row_bytes = decoded ? static_cast<size_t>(type.dim) * DtypeSize(type.dtype) : RowBytes(wire, type.dim);
    int32_t next = 0;
    for (size_t i = 0; i < links.size(); ++i) {
      for (const v1::FeatureCache& c : registered[i].feature_cache()) {
        if (c.node_type() != info.name()) continue;
        const auto* ids = reinterpret_cast<const int64_t*>(c.ids().data().data());
        const int n = static_cast<int>(c.ids().data().size() / 8);
        type.rows.resize((static_cast<size_t>(next) + n) * type.row_bytes);
        for (int begin = 0; begin < n; begin += kIdsPerCall) {
          v1::GetNodeFeaturesRequest req;
          req.set_node_type(info.name());
          req.set_encoding(encoding);
          const int end = std::min(n, begin + kIdsPerCall);
          req.mutable_ids()->Add(ids + begin, ids + end);
          auto rows = links[i]->client->GetNodeFeatures(req);
          if (!rows.ok()) return rows.status();
          DecodeCacheRows(*rows, decode, &type, next);
          for (int k = begin; k < end; ++k) type.slot_of[ids[k]] = next++;
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore::client
