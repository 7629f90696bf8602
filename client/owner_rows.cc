#include "client/owner_rows.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/feature_rows.h"
#include "client/wire_reader.h"

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

// A GetNodeFeaturesResponse as received: each tensor where its bytes lie. A message field that
// occurs more than once is merged, as protobuf does (the server sends the rows' bytes in a
// second occurrence of `features`).
struct WireAnswer {
  wire::WireTensor features, labels, scale, offset;
};

bool ParseAnswer(const std::vector<Span>& spans, WireAnswer* a) {
  return wire::ForEachField(wire::Reader(&spans), [a](int number, uint32_t type, wire::Reader& in) {
    wire::WireTensor* t = number == v1::GetNodeFeaturesResponse::kFeaturesFieldNumber      ? &a->features
                          : number == v1::GetNodeFeaturesResponse::kLabelsFieldNumber      ? &a->labels
                          : number == v1::GetNodeFeaturesResponse::kFeatureScaleFieldNumber ? &a->scale
                          : number == v1::GetNodeFeaturesResponse::kFeatureOffsetFieldNumber ? &a->offset
                                                                                              : nullptr;
    if (t == nullptr) return wire::Handled::kSkip;
    wire::Reader sub{nullptr};
    return wire::LengthDelimited(type, in, &sub) && wire::ParseTensor(sub, t) ? wire::Handled::kDone
                                                                               : wire::Handled::kError;
  });
}

// A quantised encoding's per-column floats, `dim` of them (empty when the answer has none).
absl::Status ColumnFloats(wire::WireTensor t, size_t dim, const std::string& type, std::vector<float>* out) {
  if (!t.has_data) return absl::OkStatus();
  if (t.length() != dim * 4) {
    return absl::DataLossError(absl::StrCat("an owner answered ", t.length() / 4, " column scales for '", type,
                                            "', whose rows have ", dim, " columns"));
  }
  out->resize(dim);
  t.data.Copy(reinterpret_cast<char*>(out->data()), dim * 4);
  return absl::OkStatus();
}

// Writes the answer's rows at nodes `at` of `n`, read where they arrived.
absl::Status PlaceRows(const WireAnswer& a, const std::vector<size_t>& at, bool decode, DecodedNodes* n) {
  wire::WireTensor f = a.features;
  const size_t k = at.size();
  const size_t nodes = n->ids.bytes / 8;
  const size_t out_row = nodes > 0 ? n->features.bytes / nodes : 0;
  if (f.shape.size() != 2 || static_cast<size_t>(f.shape[0]) != k || f.length() % std::max<size_t>(1, k) != 0) {
    return absl::DataLossError(absl::StrCat("an owner answered ", f.shape.empty() ? 0 : f.shape[0], " rows of '",
                                            n->node_type, "' for ", k, " nodes"));
  }
  const size_t in_row = k > 0 ? f.length() / k : 0;
  // Rows that come as codes, float16 or bfloat16 and are handed out as float32 are decoded;
  // the others are copied as they came.
  const bool widen = decode && f.dtype != n->features.dtype;
  if (!widen && in_row != out_row) {
    return absl::DataLossError(absl::StrCat("an owner answered rows of ", in_row, " bytes for '", n->node_type,
                                            "', whose batch rows have ", out_row));
  }
  const size_t dim = static_cast<size_t>(f.shape[1]);
  if (widen && dim * 4 != out_row) {
    return absl::DataLossError(absl::StrCat("an owner answered rows of ", dim, " columns for '", n->node_type, "'"));
  }
  std::vector<float> scale, offset;
  if (widen) {
    for (auto [t, out] : {std::pair{&a.scale, &scale}, {&a.offset, &offset}}) {
      if (auto s = ColumnFloats(*t, dim, n->node_type, out); !s.ok()) return s;
    }
  }
  const bool codes = PackedBits(f.dtype) > 0 || f.dtype == v1::DTYPE_UINT8;
  if (widen && codes && (scale.empty() || offset.empty())) {
    return absl::DataLossError(absl::StrCat("an owner answered codes for '", n->node_type, "' without their scales"));
  }
  std::vector<char> scratch(in_row);
  for (size_t j = 0; j < k; ++j) {
    char* dst = n->features.data + at[j] * out_row;
    const char* row = f.data.Contiguous(in_row, scratch.data());
    if (widen) {
      DecodeFeatureRows(f.dtype, row, 1, dim, scale.data(), offset.data(), reinterpret_cast<float*>(dst));
    } else {
      CopyRowUncached(dst, row, out_row);
    }
  }
  FinishRowCopies();
  return absl::OkStatus();
}

// Writes `labels` (int64, one per node of `at`) into `n`.
absl::Status PlaceLabels(wire::WireTensor labels, const std::vector<size_t>& at, DecodedNodes* n) {
  if (labels.length() != at.size() * 8) {
    return absl::DataLossError(absl::StrCat("an owner answered ", labels.length() / 8, " labels of '",
                                            n->node_type, "' for ", at.size(), " nodes"));
  }
  std::vector<int64_t> in(at.size());
  labels.data.Copy(reinterpret_cast<char*>(in.data()), in.size() * 8);
  auto* out = reinterpret_cast<int64_t*>(n->labels.data);
  for (size_t j = 0; j < at.size(); ++j) out[at[j]] = in[j];
  return absl::OkStatus();
}

// The labels GetNodeLabels answered, as a tensor to place.
wire::WireTensor LabelsOf(const v1::GetNodeLabelsResponse& r, std::vector<Span>* spans) {
  *spans = {Span{r.labels().data().data(), r.labels().data().size()}};
  wire::WireTensor t;
  t.has_data = true;
  t.data = wire::Reader(spans);
  return t;
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
    req.mutable_ids()->Reserve(static_cast<int>(at.size()));
    for (size_t i : at) req.mutable_ids()->AddAlreadyReserved(ids[i]);
    absl::Status placed;
    absl::Status s = owner->ReadNodeFeatures(req, [&](const std::vector<Span>& answer) {
      WireAnswer a;
      if (!ParseAnswer(answer, &a)) {
        placed = absl::DataLossError(absl::StrCat("an owner's answer for '", n->node_type, "' is malformed"));
      } else if (placed = PlaceRows(a, at, options.decode_features, n); placed.ok() && n->labels.defined()) {
        placed = PlaceLabels(a.labels, at, n);
      }
      return placed;
    });
    if (!placed.ok()) return placed;
    if (!s.ok()) return Annotated(s, partition, n->node_type);
  }
  for (size_t begin = 0; begin < asks.labels.size(); begin += kIdsPerCall) {
    at.assign(asks.labels.begin() + begin, asks.labels.begin() + std::min(asks.labels.size(), begin + kIdsPerCall));
    v1::GetNodeLabelsRequest req;
    req.set_node_type(n->node_type);
    for (size_t i : at) req.add_ids(ids[i]);
    auto r = owner->GetNodeLabels(req);
    if (!r.ok()) return Annotated(r.status(), partition, n->node_type);
    std::vector<Span> spans;
    if (auto s = PlaceLabels(LabelsOf(*r, &spans), at, n); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FetchOwnerRows(const OwnerRowsOptions& options, int sender, DecodedNodes* nodes) {
  DecodedNodes& n = *nodes;
  if (!n.owners.defined()) return absl::OkStatus();
  const size_t count = n.ids.bytes / 8;
  if (n.owners.dtype != v1::DTYPE_INT32 || n.owners.bytes != count * 4) {
    return absl::DataLossError(absl::StrCat("node type '", n.node_type, "': owners do not match ids"));
  }
  const bool rows = n.features.defined();
  if (!rows && !n.labels.defined()) return absl::OkStatus();
  const FeatureCache::Type* cached = options.cache != nullptr ? options.cache->Find(n.node_type) : nullptr;
  const auto* ids = reinterpret_cast<const int64_t*>(n.ids.data);
  const auto* owners = reinterpret_cast<const int32_t*>(n.owners.data);
  // Per owner (partitions are few and numbered from 0).
  std::vector<Asks> by_owner;
  for (size_t i = 0; i < count; ++i) {
    if (owners[i] == sender) continue;
    if (owners[i] < 0 || owners[i] > (1 << 16)) {
      return absl::DataLossError(absl::StrCat("node type '", n.node_type, "': node ", ids[i], " has owner ", owners[i]));
    }
    if (static_cast<size_t>(owners[i]) >= by_owner.size()) by_owner.resize(owners[i] + 1);
    const bool in_cache = cached != nullptr && ids[i] >= 0 && ids[i] < static_cast<int64_t>(cached->slot_of.size()) &&
                          cached->slot_of[ids[i]] >= 0;
    if (rows && !in_cache) {
      by_owner[owners[i]].rows.push_back(i);
    } else if (n.labels.defined()) {
      by_owner[owners[i]].labels.push_back(i);
    }
  }
  std::vector<int> asked;
  for (size_t k = 0; k < by_owner.size(); ++k) {
    if (!by_owner[k].rows.empty() || !by_owner[k].labels.empty()) asked.push_back(static_cast<int>(k));
  }
  // The owners answer at once (the last on this thread), each writing its own nodes' rows; the
  // first error is kept.
  std::vector<absl::Status> status(by_owner.size());
  std::vector<std::thread> others;
  for (size_t j = 0; j < asked.size(); ++j) {
    const int k = asked[j];
    auto ask = [&options, &n, &status, &by_owner, k] { status[k] = AskOwner(options, k, by_owner[k], &n); };
    if (j + 1 < asked.size()) {
      others.emplace_back(ask);
    } else {
      ask();
    }
  }
  for (std::thread& t : others) t.join();
  for (const absl::Status& st : status) {
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status FetchOwnerRows(const OwnerRowsOptions& options, int sender, DecodedBatch* batch) {
  for (DecodedNodes& n : batch->nodes) {
    if (auto s = FetchOwnerRows(options, sender, &n); !s.ok()) return s;
  }
  return absl::OkStatus();
}

OwnerRowsInFlight::OwnerRowsInFlight(const OwnerRowsOptions& options, int sender, const DecodedNodes& nodes)
    : nodes_(nodes) {
  // The labels go aside: the batch's own labels tensor may still be on its way, and would be
  // written over them.
  if (nodes_.labels.defined()) {
    labels_.resize(nodes_.labels.bytes / 8);
    nodes_.labels.buffer.reset();
    nodes_.labels.data = reinterpret_cast<char*>(labels_.data());
  }
  thread_ = std::thread([this, options, sender] { status_ = FetchOwnerRows(options, sender, &nodes_); });
}

OwnerRowsInFlight::~OwnerRowsInFlight() {
  if (thread_.joinable()) thread_.join();
}

absl::Status OwnerRowsInFlight::Finish(int sender, DecodedNodes* batch_nodes) {
  if (thread_.joinable()) thread_.join();
  if (!status_.ok()) return status_;
  const DecodedNodes& n = *batch_nodes;
  if (n.node_type != nodes_.node_type || n.features.data != nodes_.features.data ||
      n.labels.defined() != nodes_.labels.defined() || n.owners.data != nodes_.owners.data) {
    return absl::FailedPreconditionError(absl::StrCat("node type '", n.node_type, "' changed while its rows were asked"));
  }
  if (n.labels.defined()) {
    const auto* owners = reinterpret_cast<const int32_t*>(n.owners.data);
    auto* out = reinterpret_cast<int64_t*>(n.labels.data);
    for (size_t i = 0; i < labels_.size(); ++i) {
      if (owners[i] != sender) out[i] = labels_[i];
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore::client
