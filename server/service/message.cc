#include "server/service/message.h"

#include <cstring>

#include "absl/strings/str_cat.h"

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
  }
  return v1::DTYPE_UNSPECIFIED;
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

void FillMessage(const Partition& partition, const SampledSubgraph& g, TensorSink& sink, v1::SampledMessage* msg) {
  for (size_t t = 0; t < g.nodes.size(); ++t) {
    const SampledNodes& n = g.nodes[t];
    v1::NodeTensors* out = msg->add_nodes();
    out->set_node_type(partition.node_type(static_cast<int>(t)).name);
    sink.SetInt64(n.ids, out->mutable_ids());
    sink.SetInt64(n.num_sampled_nodes, out->mutable_num_sampled_nodes());
    sink.SetInt64(n.batch, out->mutable_batch());
    if (n.feature_bytes() > 0 || (n.feature_dim > 0 && n.ids.empty())) {
      sink.Set(ToProtoDtype(n.feature_dtype), {static_cast<int64_t>(n.ids.size()), n.feature_dim},
               n.feature_data(), n.feature_bytes(), out->mutable_features());
    }
    if (!n.labels.empty()) sink.SetInt64(n.labels, out->mutable_labels());
  }
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const SampledEdges& s = g.edges[e];
    v1::EdgeTensors* out = msg->add_edges();
    out->set_edge_type(partition.edge_type(static_cast<int>(e)).name);
    sink.SetInt64(s.rows, out->mutable_rows());
    sink.SetInt64(s.cols, out->mutable_cols());
    if (!s.eids.empty()) sink.SetInt64(s.eids, out->mutable_eids());
    sink.SetInt64(s.num_sampled_edges, out->mutable_num_sampled_edges());
    if (s.feature_dim > 0) {
      sink.Set(ToProtoDtype(s.feature_dtype), {static_cast<int64_t>(s.rows.size()), s.feature_dim},
               s.features.data(), s.features.size(), out->mutable_features());
    }
  }
  if (g.ablp.present) {
    const SampledAblp& a = g.ablp;
    v1::AblpLabels* out = msg->mutable_ablp();
    out->set_supervision_edge_type(partition.edge_type(a.supervision_edge_type).name);
    sink.SetInt64(a.anchors, out->mutable_anchors());
    const int64_t n = static_cast<int64_t>(a.anchors.size());
    sink.Set(v1::DTYPE_INT64, {n, a.max_positive}, a.positive.data(), a.positive.size() * 8, out->mutable_positive());
    sink.Set(v1::DTYPE_INT64, {n, a.max_negative}, a.negative.data(), a.negative.size() * 8, out->mutable_negative());
  }
  for (const SampledPpr& p : g.ppr) {
    v1::PprWeights* out = msg->add_ppr();
    out->set_seed_type(partition.node_type(p.seed_type).name);
    out->set_node_type(partition.node_type(p.node_type).name);
    sink.SetInt64(p.seed_index, out->mutable_seed_index());
    sink.SetInt64(p.node_index, out->mutable_node_index());
    sink.Set(v1::DTYPE_FLOAT32, {static_cast<int64_t>(p.weight.size())}, p.weight.data(), p.weight.size() * 4,
             out->mutable_weight());
  }
}

}  // namespace

void SetTensor(v1::DType dtype, const std::vector<int64_t>& shape, const void* data, size_t bytes,
               v1::Tensor* out) {
  TensorSink().Set(dtype, shape, data, bytes, out);
}

void SetInt64Tensor(const std::vector<int64_t>& values, v1::Tensor* out) { TensorSink().SetInt64(values, out); }

void ToSampledMessage(const Partition& partition, const SampledSubgraph& g, v1::SampledMessage* msg) {
  TensorSink sink;
  FillMessage(partition, g, sink, msg);
}

void GatherIntoSharedBuffer(SharedBufferPool* pool, SampledSubgraph* subgraph, SharedLayout* layout) {
  subgraph->feature_target = [pool, layout](const SampledSubgraph& g, const std::vector<size_t>& feature_bytes)
      -> absl::StatusOr<std::vector<char*>> {
    // Features first, then room for every other tensor: labels may follow, so each node type
    // gets room for one int64 per node beside its ids.
    std::vector<size_t> offsets;
    size_t size = 0;
    for (size_t b : feature_bytes) {
      offsets.push_back(size);
      size = AlignShared(size + b);
    }
    const size_t used = size;
    for (const SampledNodes& n : g.nodes) {
      size += AlignShared(n.ids.size() * 8) * 2 + AlignShared(n.num_sampled_nodes.size() * 8) +
              AlignShared(n.batch.size() * 8);
    }
    for (const SampledEdges& e : g.edges) {
      size += AlignShared(e.rows.size() * 8) + AlignShared(e.cols.size() * 8) + AlignShared(e.eids.size() * 8) +
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
  FillMessage(partition, g, sink, msg);
  return sink.Place(pool, msg);
}

}  // namespace graphstore
