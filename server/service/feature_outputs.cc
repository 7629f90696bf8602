#include "server/service/feature_outputs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "proto/feature_codec.h"
#include "server/service/message.h"

namespace graphstore {

FeatureOutput::Encoding ToEncoding(v1::FeatureEncoding encoding) {
  switch (encoding) {
    case v1::FEATURE_ENCODING_FLOAT32: return FeatureOutput::Encoding::kFloat32;
    case v1::FEATURE_ENCODING_FLOAT16: return FeatureOutput::Encoding::kFloat16;
    case v1::FEATURE_ENCODING_BFLOAT16: return FeatureOutput::Encoding::kBfloat16;
    case v1::FEATURE_ENCODING_INT8: return FeatureOutput::Encoding::kInt8;
    case v1::FEATURE_ENCODING_INT4: return FeatureOutput::Encoding::kInt4;
    case v1::FEATURE_ENCODING_INT2: return FeatureOutput::Encoding::kInt2;
    case v1::FEATURE_ENCODING_INT1: return FeatureOutput::Encoding::kInt1;
    default: return FeatureOutput::Encoding::kAsStored;
  }
}

absl::Status FeatureOutputs::Range(int type, std::vector<float>* min, std::vector<float>* max) {
  const NodeTypeStore& t = partition_->node_type(type);
  const size_t dim = static_cast<size_t>(t.feature_dim);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranges_.find(type);
  if (it == ranges_.end()) {
    std::vector<float> lo(dim, 0.0f), hi(dim, 0.0f);
    if (t.feature_range.is_open()) {
      const float* r = t.feature_range.data<float>();
      lo.assign(r, r + dim);
      hi.assign(r + dim, r + 2 * dim);
    } else if (partition_->num_partitions() == 1) {
      // The whole graph is here: the range of its rows, once.
      const float* f = t.features.data<float>();
      for (int64_t v = 0; v < t.num_local; ++v) {
        for (size_t c = 0; c < dim; ++c) {
          const float x = f[v * dim + c];
          if (v == 0 || x < lo[c]) lo[c] = x;
          if (v == 0 || x > hi[c]) hi[c] = x;
        }
      }
    } else {
      return absl::FailedPreconditionError(absl::StrCat(
          "feature_encoding (quantized): node type '", t.name, "' has no ", NodeDir(partition_->dir(), t.name),
          "/feature_range.npy, so the servers of this cluster cannot agree on a scale (rewrite the dataset with "
          "graphstore-partition or graphstore-generate)"));
    }
    it = ranges_.emplace(type, std::make_pair(std::move(lo), std::move(hi))).first;
  }
  *min = it->second.first;
  *max = it->second.second;
  return absl::OkStatus();
}

absl::Status FeatureOutputs::QuantizationParameters(int type, int bits, std::vector<float>* scale,
                                                    std::vector<float>* offset) {
  std::vector<float> min, max;
  if (auto s = Range(type, &min, &max); !s.ok()) return s;
  codec::QuantizationParameters(min, max, bits, scale, offset);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const HotSet>> FeatureOutputs::HotNodes(int type, int64_t k) {
  const NodeTypeStore& t = partition_->node_type(type);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = hot_.find({type, k});
  if (it != hot_.end()) return it->second;
  if (!t.degree.is_open()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "feature_cache_rows: node type '", t.name, "' has no ", BookFile(partition_->dir(), t.name, "degree"),
        " to rank its nodes by (rewrite the dataset with graphstore-partition or graphstore-generate)"));
  }
  const int64_t* degree = t.degree.data<int64_t>();
  k = std::min(k, t.num_nodes);
  // The best k so far in a heap whose top is the coolest of them: (degree, id), a higher degree
  // hotter, then a lower id. Ids come in ascending order, so a node only displaces the top with
  // a higher degree.
  std::vector<std::pair<int64_t, int64_t>> best;
  best.reserve(static_cast<size_t>(k));
  auto hotter = [](const std::pair<int64_t, int64_t>& a, const std::pair<int64_t, int64_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  for (int64_t id = 0; id < t.num_nodes && k > 0; ++id) {
    if (static_cast<int64_t>(best.size()) < k) {
      best.emplace_back(degree[id], id);
      std::push_heap(best.begin(), best.end(), hotter);
    } else if (degree[id] > best.front().first) {
      std::pop_heap(best.begin(), best.end(), hotter);
      best.back() = {degree[id], id};
      std::push_heap(best.begin(), best.end(), hotter);
    }
  }
  t.degree.DropResident();
  std::vector<int64_t> ids;
  ids.reserve(best.size());
  for (const auto& [d, id] : best) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::shared_ptr<const HotSet> hot = HotSet::Of(std::move(ids), t.num_nodes);
  hot_.emplace(std::make_pair(type, k), hot);
  return hot;
}

absl::StatusOr<std::shared_ptr<const FeatureOutput>> FeatureOutputs::ForChannel(v1::FeatureEncoding encoding,
                                                                                int64_t cache_rows,
                                                                                OwnerRowsRule owner_rows) {
  if (!v1::FeatureEncoding_IsValid(encoding)) {
    return absl::InvalidArgumentError(absl::StrCat("feature_encoding ", encoding, " is unknown"));
  }
  if (cache_rows < 0) return absl::InvalidArgumentError("feature_cache_rows must be >= 0 (0: no cache)");
  // On one partition every node is owned here; a peer cache that holds everything sends the
  // rows itself; a trainer's cache through shared memory keeps whole batches.
  const bool rows_from_owners = owner_rows.asked && partition_->num_partitions() > 1 &&
                                !owner_rows.peer_cache_keeps_all && !(owner_rows.shared_memory && cache_rows > 0);
  if (encoding == v1::FEATURE_ENCODING_UNSPECIFIED && cache_rows == 0 && !rows_from_owners) return nullptr;
  const std::tuple<int, int64_t, bool> key{encoding, cache_rows, rows_from_owners};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = outputs_.find(key);
    if (it != outputs_.end()) return it->second;
  }
  auto out = std::make_shared<FeatureOutput>();
  out->encoding = ToEncoding(encoding);
  out->rows_from_owners = rows_from_owners;
  const int num_types = static_cast<int>(partition_->node_types().size());
  out->scale.resize(num_types);
  out->offset.resize(num_types);
  out->cached.resize(num_types);
  for (int type = 0; type < num_types; ++type) {
    const NodeTypeStore& t = partition_->node_type(type);
    if (t.feature_dim == 0) continue;
    if (out->encoding != FeatureOutput::Encoding::kAsStored && t.feature_dtype != NpyDtype::kFloat32) {
      return absl::FailedPreconditionError(absl::StrCat("feature_encoding: node type '", t.name, "' stores ",
                                                        DtypeName(t.feature_dtype),
                                                        " features; encodings convert float32 ones"));
    }
    if (out->bits() > 0) {
      if (auto s = QuantizationParameters(type, out->bits(), &out->scale[type], &out->offset[type]); !s.ok()) {
        return s;
      }
    }
    if (cache_rows > 0) {
      auto hot = HotNodes(type, cache_rows);
      if (!hot.ok()) return hot.status();
      out->cached[type] = *hot;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  return outputs_.emplace(key, std::move(out)).first->second;
}

void FeatureOutputs::Describe(const FeatureOutput& output, int64_t cache_rows,
                              v1::RegisterSamplingInputResponse* resp) const {
  for (int type = 0; type < static_cast<int>(partition_->node_types().size()); ++type) {
    const NodeTypeStore& t = partition_->node_type(type);
    if (t.feature_dim == 0) continue;
    if (output.bits() > 0) {
      v1::FeatureQuantization* q = resp->add_feature_quantization();
      q->set_node_type(t.name);
      SetTensor(v1::DTYPE_FLOAT32, {t.feature_dim}, output.scale[type].data(), 4 * output.scale[type].size(),
                q->mutable_scale());
      SetTensor(v1::DTYPE_FLOAT32, {t.feature_dim}, output.offset[type].data(), 4 * output.offset[type].size(),
                q->mutable_offset());
    }
    if (cache_rows > 0 && output.cached[type] != nullptr) {
      const std::vector<int64_t>& hot = output.cached[type]->ids;
      std::vector<int64_t> mine;
      for (int64_t id : hot) {
        if (t.Owner(id) == partition_->partition_id()) mine.push_back(id);
      }
      v1::FeatureCache* c = resp->add_feature_cache();
      c->set_node_type(t.name);
      SetInt64Tensor(mine, c->mutable_ids());
      c->set_total_rows(static_cast<int64_t>(hot.size()));
    }
  }
}

}  // namespace graphstore
