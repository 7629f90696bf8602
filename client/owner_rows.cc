#include "client/owner_rows.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/feature_rows.h"

namespace graphstore::client {

namespace {

// The nodes of one type to ask one owner about: rows (with labels, when the batch has them)
// and labels alone.
struct Asks {
  std::vector<size_t> rows, labels;
};

absl::Status Annotated(const absl::Status& s, int partition, const std::string& type) {
  return absl::Status(s.code(), absl::StrCat("the rows of '", type, "' nodes that partition ", partition,
                                             " owns: ", s.message()));
}

// Writes the answer's rows and labels at nodes `at` of `n`.
absl::Status PlaceRows(const v1::GetNodeFeaturesResponse& r, const std::vector<size_t>& at, bool decode,
                       DecodedNodes* n) {
  const v1::Tensor& f = r.features();
  const size_t k = at.size();
  const size_t nodes = n->ids.bytes / 8;
  const size_t out_row = nodes > 0 ? n->features.bytes / nodes : 0;
  if (f.shape_size() != 2 || static_cast<size_t>(f.shape(0)) != k || f.data().size() % std::max<size_t>(1, k) != 0) {
    return absl::DataLossError(absl::StrCat("an owner answered ", f.shape_size() > 0 ? f.shape(0) : 0, " rows of '",
                                            n->node_type, "' for ", k, " nodes"));
  }
  const size_t in_row = k > 0 ? f.data().size() / k : 0;
  const char* src = f.data().data();
  // Rows that come as codes, float16 or bfloat16 and are handed out as float32 are decoded;
  // the others are copied as they came.
  const bool widen = decode && f.dtype() != n->features.dtype;
  if (!widen && in_row != out_row) {
    return absl::DataLossError(absl::StrCat("an owner answered rows of ", in_row, " bytes for '", n->node_type,
                                            "', whose batch rows have ", out_row));
  }
  const size_t dim = static_cast<size_t>(f.shape(1));
  if (widen && dim * 4 != out_row) {
    return absl::DataLossError(absl::StrCat("an owner answered rows of ", dim, " columns for '", n->node_type, "'"));
  }
  const auto* scale = reinterpret_cast<const float*>(r.feature_scale().data().data());
  const auto* offset = reinterpret_cast<const float*>(r.feature_offset().data().data());
  for (size_t j = 0; j < k; ++j) {
    char* dst = n->features.data + at[j] * out_row;
    if (widen) {
      DecodeFeatureRows(f.dtype(), src + j * in_row, 1, dim, scale, offset, reinterpret_cast<float*>(dst));
    } else {
      std::memcpy(dst, src + j * in_row, out_row);
    }
  }
  return absl::OkStatus();
}

// Writes `labels` (int64, one per node of `at`) into `n`.
absl::Status PlaceLabels(const v1::Tensor& labels, const std::vector<size_t>& at, DecodedNodes* n) {
  if (labels.data().size() != at.size() * 8) {
    return absl::DataLossError(absl::StrCat("an owner answered ", labels.data().size() / 8, " labels of '",
                                            n->node_type, "' for ", at.size(), " nodes"));
  }
  auto* out = reinterpret_cast<int64_t*>(n->labels.data);
  const char* src = labels.data().data();
  for (size_t j = 0; j < at.size(); ++j) std::memcpy(out + at[j], src + j * 8, 8);
  return absl::OkStatus();
}

// Ids per call: a call's answer stays well within a message's limit.
constexpr size_t kIdsPerCall = 1 << 16;

absl::Status AskOwner(const OwnerRowsOptions& options, int partition, const Asks& asks, DecodedNodes* n) {
  Client* owner = options.owner(partition);
  if (owner == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("the batch has nodes of '", n->node_type, "' that partition ",
                                                      partition, " owns, and this loader has no server for it"));
  }
  const auto* ids = reinterpret_cast<const int64_t*>(n->ids.data);
  std::vector<size_t> at;
  for (size_t begin = 0; begin < asks.rows.size(); begin += kIdsPerCall) {
    at.assign(asks.rows.begin() + begin, asks.rows.begin() + std::min(asks.rows.size(), begin + kIdsPerCall));
    v1::GetNodeFeaturesRequest req;
    req.set_node_type(n->node_type);
    req.set_encoding(options.encoding);
    req.set_with_labels(n->labels.defined());
    for (size_t i : at) req.add_ids(ids[i]);
    auto r = owner->GetNodeFeatures(req);
    if (!r.ok()) return Annotated(r.status(), partition, n->node_type);
    if (auto s = PlaceRows(*r, at, options.decode_features, n); !s.ok()) return s;
    if (n->labels.defined()) {
      if (auto s = PlaceLabels(r->labels(), at, n); !s.ok()) return s;
    }
  }
  for (size_t begin = 0; begin < asks.labels.size(); begin += kIdsPerCall) {
    at.assign(asks.labels.begin() + begin, asks.labels.begin() + std::min(asks.labels.size(), begin + kIdsPerCall));
    v1::GetNodeLabelsRequest req;
    req.set_node_type(n->node_type);
    for (size_t i : at) req.add_ids(ids[i]);
    auto r = owner->GetNodeLabels(req);
    if (!r.ok()) return Annotated(r.status(), partition, n->node_type);
    if (auto s = PlaceLabels(r->labels(), at, n); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FetchOwnerRows(const OwnerRowsOptions& options, int sender, DecodedBatch* batch) {
  for (DecodedNodes& n : batch->nodes) {
    if (!n.owners.defined()) continue;
    const size_t nodes = n.ids.bytes / 8;
    if (n.owners.dtype != v1::DTYPE_INT32 || n.owners.bytes != nodes * 4) {
      return absl::DataLossError(absl::StrCat("node type '", n.node_type, "': owners do not match ids"));
    }
    const bool rows = n.features.defined();
    if (!rows && !n.labels.defined()) continue;
    const FeatureCache::Type* cached = options.cache != nullptr ? options.cache->Find(n.node_type) : nullptr;
    const auto* ids = reinterpret_cast<const int64_t*>(n.ids.data);
    const auto* owners = reinterpret_cast<const int32_t*>(n.owners.data);
    std::map<int, Asks> asks;
    for (size_t i = 0; i < nodes; ++i) {
      if (owners[i] == sender) continue;
      const bool in_cache = cached != nullptr && ids[i] >= 0 &&
                            ids[i] < static_cast<int64_t>(cached->slot_of.size()) && cached->slot_of[ids[i]] >= 0;
      if (rows && !in_cache) {
        asks[owners[i]].rows.push_back(i);
      } else if (n.labels.defined()) {
        asks[owners[i]].labels.push_back(i);
      }
    }
    // The owners answer at once, each writing its own nodes' rows; the first error is kept.
    std::vector<absl::Status> status(asks.size());
    std::vector<std::thread> others;
    size_t k = 0;
    for (auto it = asks.begin(); it != asks.end(); ++it, ++k) {
      auto ask = [&options, &n, &status, it, k] { status[k] = AskOwner(options, it->first, it->second, &n); };
      if (k + 1 < asks.size()) {
        others.emplace_back(ask);
      } else {
        ask();
      }
    }
    for (std::thread& t : others) t.join();
    for (const absl::Status& s : status) {
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore::client
