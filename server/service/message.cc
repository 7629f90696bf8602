#include "server/service/message.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace graphstore {

v1::DType ToProtoDtype(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kInt64: return v1::DTYPE_INT64;
    case NpyDtype::kInt32: return v1::DTYPE_INT32;
    case NpyDtype::kFloat32: return v1::DTYPE_FLOAT32;
    case NpyDtype::kFloat16: return v1::DTYPE_FLOAT16;
    case NpyDtype::kFloat64: return v1::DTYPE_FLOAT64;
    case NpyDtype::kUint8: return v1::DTYPE_UINT8;
    case NpyDtype::kBool: return v1::DTYPE_BOOL;
    case NpyDtype::kBfloat16: return v1::DTYPE_BFLOAT16;
  }
  return v1::DTYPE_UNSPECIFIED;
}

v1::DType FeatureDtype(const SampledNodes& nodes) {
  switch (nodes.feature_bits) {
    case 4: return v1::DTYPE_UINT4;
    case 2: return v1::DTYPE_UINT2;
    case 1: return v1::DTYPE_UINT1;
    default: return ToProtoDtype(nodes.feature_dtype);
  }
}

namespace {

// Where tensor bytes go: into the message (copied at once), or collected to be laid out in a
// shared buffer afterwards.
class TensorSink {
 public:
  // Shared when `layout` is given.
  explicit TensorSink(SharedLayout* layout = nullptr) : layout_(layout), size_(layout != nullptr ? layout->used : 0) {}

  void Set(v1::DType dtype, const std::vector<int64_t>& shape, const void* data, size_t bytes, v1::Tensor* out) {
    out->set_dtype(dtype);
    out->clear_shape();
    for (int64_t d : shape) out->add_shape(d);
    if (layout_ == nullptr) {
      out->set_data(static_cast<const char*>(data), bytes);
      return;
    }
    // Bytes the sampler already gathered into the buffer stay where they are.
    const char* p = static_cast<const char*>(data);
    if (layout_->use != nullptr && bytes > 0 && p >= layout_->use->file->data() &&
        p + bytes <= layout_->use->file->data() + layout_->used) {
      out->mutable_shared()->set_offset(static_cast<uint64_t>(p - layout_->use->file->data()));
      out->mutable_shared()->set_length(bytes);
      return;
    }
    out->mutable_shared()->set_offset(size_);
    out->mutable_shared()->set_length(bytes);
    pending_.push_back({p, bytes, size_});
    size_ = AlignShared(size_ + bytes);
  }

  void SetInt64(const std::vector<int64_t>& values, v1::Tensor* out) {
    Set(v1::DTYPE_INT64, {static_cast<int64_t>(values.size())}, values.data(), values.size() * 8, out);
  }

  // Copies the collected tensors into the layout's buffer, or one of `pool`.
  absl::Status Place(SharedBufferPool* pool, v1::SampledMessage* msg) {
    if (layout_->use == nullptr) {
      auto use = pool->Acquire(size_);
      if (!use.ok()) return use.status();
      layout_->use = *std::move(use);
    }
    SharedBufferFile& f = *layout_->use->file;
    if (size_ > f.size()) {
      return absl::InternalError(absl::StrCat("shared buffer of ", f.size(), " bytes cannot hold ", size_));
    }
    for (const Pending& p : pending_) {
      if (p.bytes > 0) std::memcpy(f.data() + p.offset, p.data, p.bytes);
    }
    v1::SharedBuffer* sb = msg->mutable_shared_buffer();
    sb->set_id(layout_->use->id);
    sb->set_path(f.path());
    sb->set_size(f.size());
    for (std::string& path : pool->TakeRetired()) msg->add_retired_shared_paths(std::move(path));
    return absl::OkStatus();
  }

 private:
  struct Pending {
    const char* data;
    size_t bytes;
    size_t offset;
  };
  SharedLayout* const layout_;
  size_t size_;
  std::vector<Pending> pending_;
};

// Builds the protobuf message of `entries` (the shared-memory path and tests; sockets use the
// wire encoder).
void FillMessage(const std::vector<MessageEntry>& entries, TensorSink& sink, v1::SampledMessage* msg) {
  const google::protobuf::Reflection* reflection = msg->GetReflection();
  const google::protobuf::Descriptor* descriptor = msg->GetDescriptor();
  for (const MessageEntry& e : entries) {
    const google::protobuf::FieldDescriptor* field = descriptor->FindFieldByNumber(e.number);
    google::protobuf::Message* m =
        field->is_repeated() ? reflection->AddMessage(msg, field) : reflection->MutableMessage(msg, field);
    const google::protobuf::Reflection* r = m->GetReflection();
    for (const auto& [number, value] : e.strings) r->SetString(m, m->GetDescriptor()->FindFieldByNumber(number), value);
    for (const TensorField& t : e.tensors) {
      auto* out = static_cast<v1::Tensor*>(r->MutableMessage(m, m->GetDescriptor()->FindFieldByNumber(t.number)));
      sink.Set(t.dtype, t.shape, t.data, t.bytes, out);
    }
  }
}

// Adds tensor field `number` of `e` over `bytes` at `data` (`whole`: never split across parts).
void AddTensor(MessageEntry* e, int number, v1::DType dtype, std::vector<int64_t> shape, const void* data, size_t bytes,
               bool whole = false) {
  e->tensors.push_back({number, dtype, std::move(shape), static_cast<const char*>(data), bytes, whole});
}

void AddInt64s(MessageEntry* e, int number, const std::vector<int64_t>& v) {
  AddTensor(e, number, v1::DTYPE_INT64, {static_cast<int64_t>(v.size())}, v.data(), v.size() * 8);
}

// The NodeTensors of node type `t`, into `e`.
void NodeEntry(const Partition& partition, const SampledSubgraph& g, size_t t, MessageEntry* e) {
  const SampledNodes& n = g.nodes[t];
  e->number = v1::SampledMessage::kNodesFieldNumber;
  e->strings.emplace_back(v1::NodeTensors::kNodeTypeFieldNumber, partition.node_type(static_cast<int>(t)).name);
  AddInt64s(e, v1::NodeTensors::kIdsFieldNumber, n.ids);
  AddInt64s(e, v1::NodeTensors::kNumSampledNodesFieldNumber, n.num_sampled_nodes);
  AddInt64s(e, v1::NodeTensors::kBatchFieldNumber, n.batch);
  // The cached mask and INT8's scale and offset come before the rows, so that a streaming
  // decoder can place and decode each row as it arrives.
  if (!n.cached.empty()) {
    AddTensor(e, v1::NodeTensors::kCachedFieldNumber, v1::DTYPE_BOOL, {static_cast<int64_t>(n.cached.size())},
           n.cached.data(), n.cached.size());
  }
  // A byte an owner up to 256 partitions, four beyond.
  if (!n.owners.bytes.empty()) {
    AddTensor(e, v1::NodeTensors::kOwnersFieldNumber, v1::DTYPE_UINT8, {static_cast<int64_t>(n.owners.bytes.size())},
              n.owners.bytes.data(), n.owners.bytes.size());
  } else if (!n.owners.wide.empty()) {
    AddTensor(e, v1::NodeTensors::kOwnersFieldNumber, v1::DTYPE_INT32, {static_cast<int64_t>(n.owners.wide.size())},
              n.owners.wide.data(), 4 * n.owners.wide.size());
  }
  if (n.feature_scale != nullptr) {
    AddTensor(e, v1::NodeTensors::kFeatureScaleFieldNumber, v1::DTYPE_FLOAT32, {n.feature_dim}, n.feature_scale,
           4 * n.feature_dim, /*whole=*/true);
    AddTensor(e, v1::NodeTensors::kFeatureOffsetFieldNumber, v1::DTYPE_FLOAT32, {n.feature_dim}, n.feature_offset,
           4 * n.feature_dim, /*whole=*/true);
  }
  // A matrix of no rows still says the rows' dtype and dim when the others are left out.
  if (n.feature_bytes() > 0 ||
      (n.feature_dim > 0 && (n.ids.empty() || !n.cached.empty() || !n.owners.empty()))) {
    // [rows, dim] of the rows it holds, so that a part of it holds whole rows (EncodeParts cuts
    // at bytes / rows).
    AddTensor(e, v1::NodeTensors::kFeaturesFieldNumber, FeatureDtype(n), {n.feature_matrix_rows(), n.feature_dim},
           n.feature_data(), n.feature_bytes());
  }
  if (!n.labels.empty()) AddInt64s(e, v1::NodeTensors::kLabelsFieldNumber, n.labels);
  // Times, as the batch has them, for every type (empty ones for a type without nodes or
  // seeds in the batch); stored times for the types that store them.
  if (g.temporal) AddInt64s(e, v1::NodeTensors::kSeedTimesFieldNumber, n.seed_times);
  if (g.node_times && partition.node_type(static_cast<int>(t)).has_times) {
    AddInt64s(e, v1::NodeTensors::kTimesFieldNumber, n.times);
  }
  if (g.temporal) AddInt64s(e, v1::NodeTensors::kSampledTimesFieldNumber, n.sampled_times);
  if (!n.input_ids.empty()) AddInt64s(e, v1::NodeTensors::kInputIdsFieldNumber, n.input_ids);
}

// The EdgeTensors of edge type `k`.
void EdgeEntry(const Partition& partition, const SampledSubgraph& g, size_t k, MessageEntry* e) {
  const SampledEdges& s = g.edges[k];
  e->number = v1::SampledMessage::kEdgesFieldNumber;
  e->strings.emplace_back(v1::EdgeTensors::kEdgeTypeFieldNumber, partition.edge_type(static_cast<int>(k)).name);
  const int64_t m = static_cast<int64_t>(s.rows.size());
  AddTensor(e, v1::EdgeTensors::kRowsFieldNumber, v1::DTYPE_INT32, {m}, s.rows.data(), s.rows.size() * 4);
  AddTensor(e, v1::EdgeTensors::kColsFieldNumber, v1::DTYPE_INT32, {m}, s.cols.data(), s.cols.size() * 4);
  if (s.with_eids || !s.eids.empty()) AddInt64s(e, v1::EdgeTensors::kEidsFieldNumber, s.eids);
  AddInt64s(e, v1::EdgeTensors::kNumSampledEdgesFieldNumber, s.num_sampled_edges);
  if (s.feature_dim > 0) {
    AddTensor(e, v1::EdgeTensors::kFeaturesFieldNumber, ToProtoDtype(s.feature_dtype), {m, s.feature_dim},
           s.features.data(), s.features.size());
  }
}

// The link-prediction labels.
void AblpEntry(const Partition& partition, const SampledAblp& a, MessageEntry* e) {
  e->number = v1::SampledMessage::kAblpFieldNumber;
  e->strings.emplace_back(v1::AblpLabels::kSupervisionEdgeTypeFieldNumber,
                         partition.edge_type(a.supervision_edge_type).name);
  AddInt64s(e, v1::AblpLabels::kAnchorsFieldNumber, a.anchors);
  const int64_t n = static_cast<int64_t>(a.anchors.size());
  AddTensor(e, v1::AblpLabels::kPositiveFieldNumber, v1::DTYPE_INT64, {n, a.max_positive}, a.positive.data(),
         a.positive.size() * 8);
  AddTensor(e, v1::AblpLabels::kNegativeFieldNumber, v1::DTYPE_INT64, {n, a.max_negative}, a.negative.data(),
         a.negative.size() * 8);
}

// One PprWeights.
void PprEntry(const Partition& partition, const SampledPpr& p, MessageEntry* e) {
  e->number = v1::SampledMessage::kPprFieldNumber;
  e->strings.emplace_back(v1::PprWeights::kSeedTypeFieldNumber, partition.node_type(p.seed_type).name);
  e->strings.emplace_back(v1::PprWeights::kNodeTypeFieldNumber, partition.node_type(p.node_type).name);
  AddInt64s(e, v1::PprWeights::kSeedIndexFieldNumber, p.seed_index);
  AddInt64s(e, v1::PprWeights::kNodeIndexFieldNumber, p.node_index);
  AddTensor(e, v1::PprWeights::kWeightFieldNumber, v1::DTYPE_FLOAT32, {static_cast<int64_t>(p.weight.size())},
         p.weight.data(), p.weight.size() * 4);
}

}  // namespace

void SetTensor(v1::DType dtype, const std::vector<int64_t>& shape, const void* data, size_t bytes,
               v1::Tensor* out) {
  TensorSink().Set(dtype, shape, data, bytes, out);
}

void SetInt64Tensor(const std::vector<int64_t>& values, v1::Tensor* out) { TensorSink().SetInt64(values, out); }

void SetIdTensor(const std::vector<int64_t>& values, bool compact, v1::Tensor* out) {
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  if (!compact || (!values.empty() && (*lo < std::numeric_limits<int32_t>::min() ||
                                       *hi > std::numeric_limits<int32_t>::max()))) {
    SetInt64Tensor(values, out);
    return;
  }
  // Narrowed straight into the tensor's bytes (little endian, as the wire is).
  out->Clear();
  out->set_dtype(v1::DTYPE_INT32);
  out->add_shape(static_cast<int64_t>(values.size()));
  std::string* data = out->mutable_data();
  data->resize(values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) {
    const auto v = static_cast<int32_t>(values[i]);
    std::memcpy(data->data() + 4 * i, &v, 4);
  }
}

void SetCountTensor(const std::vector<int64_t>& counts, bool narrow, bool compact, v1::Tensor* out) {
  if (!narrow || !std::all_of(counts.begin(), counts.end(), [](int64_t c) { return c >= 0 && c < 256; })) {
    SetIdTensor(counts, compact, out);
    return;
  }
  out->Clear();
  out->set_dtype(v1::DTYPE_UINT8);
  out->add_shape(static_cast<int64_t>(counts.size()));
  out->mutable_data()->assign(counts.begin(), counts.end());  // each count's one byte
}

std::vector<MessageEntry> MessageEntries(const Partition& partition, const SampledSubgraph& g) {
  std::vector<MessageEntry> entries;
  for (size_t t = 0; t < g.nodes.size(); ++t) NodeEntry(partition, g, t, &entries.emplace_back());
  for (size_t k = 0; k < g.edges.size(); ++k) EdgeEntry(partition, g, k, &entries.emplace_back());
  if (g.ablp.present) AblpEntry(partition, g.ablp, &entries.emplace_back());
  for (const SampledPpr& p : g.ppr) PprEntry(partition, p, &entries.emplace_back());
  return entries;
}

void ToSampledMessage(const Partition& partition, const SampledSubgraph& g, v1::SampledMessage* msg) {
  TensorSink sink;
  FillMessage(MessageEntries(partition, g), sink, msg);
}

void GatherIntoSharedBuffer(SharedBufferPool* pool, SampledSubgraph* subgraph, SharedLayout* layout) {
  subgraph->feature_target = [pool, layout](const SampledSubgraph& g, const std::vector<size_t>& feature_bytes)
      -> absl::StatusOr<std::vector<char*>> {
    // Features first, then room for every other tensor: labels may follow, so each node type
    // gets room for one int64 per node beside its ids, and input ids one per seed.
    std::vector<size_t> offsets;
    size_t size = 0;
    for (size_t b : feature_bytes) {
      offsets.push_back(size);
      size = AlignShared(size + b);
    }
    const size_t used = size;
    for (const SampledNodes& n : g.nodes) {
      size += AlignShared(n.ids.size() * 8) * 2 + AlignShared(n.num_sampled_nodes.size() * 8) +
              2 * AlignShared(n.batch.size() * 8) + AlignShared(n.ids.size()) + AlignShared(4 * n.ids.size()) +
              2 * AlignShared(4 * n.feature_dim) +
              AlignShared(n.seed_times.size() * 8) + AlignShared(n.times.size() * 8) +
              AlignShared(n.sampled_times.size() * 8);
    }
    for (const SampledEdges& e : g.edges) {
      size += AlignShared(e.rows.size() * 4) + AlignShared(e.cols.size() * 4) + AlignShared(e.eids.size() * 8) +
              AlignShared(e.num_sampled_edges.size() * 8) + AlignShared(e.features.size());
    }
    size += AlignShared(g.ablp.anchors.size() * 8) + AlignShared(g.ablp.positive.size() * 8) +
            AlignShared(g.ablp.negative.size() * 8);
    for (const SampledPpr& p : g.ppr) {
      size += AlignShared(p.seed_index.size() * 8) + AlignShared(p.node_index.size() * 8) +
              AlignShared(p.weight.size() * 4);
    }
    auto use = pool->Acquire(size);
    if (!use.ok()) return use.status();
    layout->use = *std::move(use);
    layout->used = used;
    std::vector<char*> out;
    for (size_t i = 0; i < feature_bytes.size(); ++i) {
      out.push_back(feature_bytes[i] > 0 ? layout->use->file->data() + offsets[i] : nullptr);
    }
    return out;
  };
}

absl::Status ToSharedSampledMessage(const Partition& partition, const SampledSubgraph& g, SharedBufferPool* pool,
                                    SharedLayout* layout, v1::SampledMessage* msg) {
  TensorSink sink(layout);
  FillMessage(MessageEntries(partition, g), sink, msg);
  return sink.Place(pool, msg);
}

}  // namespace graphstore
