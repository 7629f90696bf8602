#include "client/owner_rows.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/feature_rows.h"
#include "client/wire_reader.h"

namespace graphstore::client {

namespace {

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
  const size_t nodes = n->n_id.bytes / 8;
  const size_t out_row = nodes > 0 ? n->x.bytes / nodes : 0;
  if (f.shape.size() != 2 || static_cast<size_t>(f.shape[0]) != k || f.length() % std::max<size_t>(1, k) != 0) {
    return absl::DataLossError(absl::StrCat("an owner answered ", f.shape.empty() ? 0 : f.shape[0], " rows of '",
                                            n->node_type, "' for ", k, " nodes"));
  }
  const size_t in_row = k > 0 ? f.length() / k : 0;
  // Rows that come as codes, float16 or bfloat16 and are handed out as float32 are decoded;
  // the others are copied as they came.
  const bool widen = decode && f.dtype != n->x.dtype;
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
    char* dst = n->x.data + at[j] * out_row;
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
  auto* out = reinterpret_cast<int64_t*>(n->y.data);
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

// Splits `all` into the calls that ask for them.
std::vector<std::shared_ptr<const std::vector<size_t>>> Chunks(const std::vector<size_t>& all) {
  std::vector<std::shared_ptr<const std::vector<size_t>>> out;
  for (size_t begin = 0; begin < all.size(); begin += kIdsPerCall) {
    out.push_back(std::make_shared<const std::vector<size_t>>(
        all.begin() + begin, all.begin() + std::min(all.size(), begin + kIdsPerCall)));
  }
  return out;
}

}  // namespace

OwnerRows::OwnerRows(const OwnerRowsOptions& options, int sender) : options_(options), sender_(sender) {}

OwnerRows::~OwnerRows() {
  absl::MutexLock lock(&mu_);
  while (pending_ > 0) idle_.Wait(&mu_);
}

int64_t OwnerRows::rows_asked() const {
  absl::MutexLock lock(&mu_);
  return rows_asked_;
}

int64_t OwnerRows::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

void OwnerRows::Begin() {
  absl::MutexLock lock(&mu_);
  ++pending_;
  ++calls_;
}

void OwnerRows::Done(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (!status.ok() && status_.ok()) status_ = status;
  if (--pending_ == 0) idle_.SignalAll();
}

void OwnerRows::Start(const DecodedNodes& nodes) {
  started_.push_back(Started{nodes, {}});
  Ask(&started_.back());
}

void OwnerRows::Ask(Started* type) {
  DecodedNodes& n = type->nodes;
  if (!n.owners.defined()) return;
  if (!n.OwnersMatchIds()) {
    Begin();
    return Done(absl::DataLossError(absl::StrCat("node type '", n.node_type, "': owners do not match ids")));
  }
  if (!n.x.defined() && !n.y.defined()) return;
  if (n.y.defined()) {
    // The owners' labels go aside, to be written into the batch's own once it is whole.
    type->labels.resize(n.y.bytes / 8);
    n.y.buffer.reset();
    n.y.data = reinterpret_cast<char*>(type->labels.data());
  }
  std::vector<Asks> by_owner;
  if (auto s = ByOwner(n, &by_owner); !s.ok()) {
    Begin();
    return Done(s);
  }
  for (size_t k = 0; k < by_owner.size(); ++k) {
    const Asks& asks = by_owner[k];
    if (asks.rows.empty() && asks.labels.empty()) continue;
    const int partition = static_cast<int>(k);
    {
      absl::MutexLock lock(&mu_);
      rows_asked_ += static_cast<int64_t>(asks.rows.size() + asks.labels.size());
    }
    Client* owner = options_.owner(partition);
    if (owner == nullptr) {
      Begin();
      Done(absl::FailedPreconditionError(absl::StrCat("the batch has nodes of '", n.node_type, "' that partition ",
                                                      partition, " owns, and this loader has no server for it")));
      continue;
    }
    AskOwner(owner, partition, asks, &n);
  }
}

absl::Status OwnerRows::ByOwner(const DecodedNodes& n, std::vector<Asks>* by_owner) const {
  const FeatureCache::Type* cached = options_.cache != nullptr ? options_.cache->Find(n.node_type) : nullptr;
  const auto* ids = reinterpret_cast<const int64_t*>(n.n_id.data);
  const bool rows = n.x.defined();
  const size_t count = n.n_id.bytes / 8;
  // Per owner (partitions are few and numbered from 0).
  for (size_t i = 0; i < count; ++i) {
    const int32_t owner = n.OwnerAt(i);
    if (owner == sender_) continue;
    if (owner < 0 || owner > (1 << 16)) {
      return absl::DataLossError(absl::StrCat("node type '", n.node_type, "': node ", ids[i], " has owner ", owner));
    }
    if (static_cast<size_t>(owner) >= by_owner->size()) by_owner->resize(owner + 1);
    const bool in_cache = cached != nullptr && ids[i] >= 0 && ids[i] < static_cast<int64_t>(cached->slot_of.size()) &&
                          cached->slot_of[ids[i]] >= 0;
    if (rows && !in_cache) {
      (*by_owner)[owner].rows.push_back(i);
    } else if (n.y.defined()) {
      (*by_owner)[owner].labels.push_back(i);
    }
  }
  return absl::OkStatus();
}

void OwnerRows::AskOwner(Client* owner, int partition, const Asks& asks, DecodedNodes* nodes) {
  DecodedNodes& n = *nodes;
  const auto* ids = reinterpret_cast<const int64_t*>(n.n_id.data);
  const bool decode = options_.decode_features;
  for (std::shared_ptr<const std::vector<size_t>> at : Chunks(asks.rows)) {
    v1::GetNodeFeaturesRequest req;
    req.set_node_type(n.node_type);
    req.set_encoding(options_.encoding);
    req.set_with_labels(n.y.defined());
    req.mutable_ids()->Reserve(static_cast<int>(at->size()));
    for (size_t i : *at) req.mutable_ids()->AddAlreadyReserved(ids[i]);
    // An answer that does not fit is reported as it is; a failed call names its owner.
    auto misfit = std::make_shared<bool>(false);
    Begin();
    owner->ReadNodeFeaturesAsync(
        req,
        [this, &n, at, decode, misfit, partition](const std::vector<Span>& answer) {
          if (options_.received) {
            int64_t bytes = 0;
            for (const Span& s : answer) bytes += static_cast<int64_t>(s.size);
            options_.received(partition, bytes);
          }
          WireAnswer a;
          absl::Status placed =
              ParseAnswer(answer, &a)
                  ? PlaceRows(a, *at, decode, &n)
                  : absl::DataLossError(absl::StrCat("an owner's answer for '", n.node_type, "' is malformed"));
          if (placed.ok() && n.y.defined()) placed = PlaceLabels(a.labels, *at, &n);
          *misfit = !placed.ok();
          return placed;
        },
        [this, misfit, partition, &n](absl::Status s) {
          Done(s.ok() || *misfit ? s : Annotated(s, partition, n.node_type));
        });
  }
  for (std::shared_ptr<const std::vector<size_t>> at : Chunks(asks.labels)) {
    v1::GetNodeLabelsRequest req;
    req.set_node_type(n.node_type);
    for (size_t i : *at) req.add_ids(ids[i]);
    Begin();
    owner->GetNodeLabelsAsync(req, [this, at, partition, &n](absl::StatusOr<v1::GetNodeLabelsResponse> r) {
      if (!r.ok()) return Done(Annotated(r.status(), partition, n.node_type));
      if (options_.received) options_.received(partition, static_cast<int64_t>(r->ByteSizeLong()));
      std::vector<Span> spans;
      Done(PlaceLabels(LabelsOf(*r, &spans), *at, &n));
    });
  }
}

absl::Status OwnerRows::Finish(DecodedBatch* batch) {
  for (DecodedNodes& n : batch->nodes) {
    const bool asked = std::any_of(started_.begin(), started_.end(),
                                   [&n](const Started& s) { return s.nodes.node_type == n.node_type; });
    if (!asked && n.owners.defined()) Start(n);
  }
  {
    absl::MutexLock lock(&mu_);
    while (pending_ > 0) idle_.Wait(&mu_);
    if (!status_.ok()) return status_;
  }
  for (const Started& s : started_) {
    auto it = std::find_if(batch->nodes.begin(), batch->nodes.end(),
                           [&s](const DecodedNodes& n) { return n.node_type == s.nodes.node_type; });
    if (it == batch->nodes.end() || it->x.data != s.nodes.x.data || it->y.defined() != s.nodes.y.defined() ||
        it->owners.data != s.nodes.owners.data) {
      return absl::FailedPreconditionError(
          absl::StrCat("node type '", s.nodes.node_type, "' changed while its rows were asked"));
    }
    if (s.labels.empty()) continue;
    auto* out = reinterpret_cast<int64_t*>(it->y.data);
    for (size_t i = 0; i < s.labels.size(); ++i) {
      if (it->OwnerAt(i) != sender_) out[i] = s.labels[i];
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore::client
