#include "server/message.h"

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

void SetTensor(v1::DType dtype, const std::vector<int64_t>& shape, const void* data, size_t bytes,
               v1::Tensor* out) {
  out->set_dtype(dtype);
  out->clear_shape();
  for (int64_t d : shape) out->add_shape(d);
  out->set_data(static_cast<const char*>(data), bytes);
}

void SetInt64Tensor(const std::vector<int64_t>& values, v1::Tensor* out) {
  SetTensor(v1::DTYPE_INT64, {static_cast<int64_t>(values.size())}, values.data(), values.size() * 8, out);
}

void ToSampledMessage(const Partition& partition, const SampledSubgraph& g, v1::SampledMessage* msg) {
  for (size_t t = 0; t < g.nodes.size(); ++t) {
    const SampledNodes& n = g.nodes[t];
    v1::NodeTensors* out = msg->add_nodes();
    out->set_node_type(partition.node_type(static_cast<int>(t)).name);
    SetInt64Tensor(n.ids, out->mutable_ids());
    SetInt64Tensor(n.num_sampled_nodes, out->mutable_num_sampled_nodes());
    SetInt64Tensor(n.batch, out->mutable_batch());
    if (!n.features.empty() || (n.feature_dim > 0 && n.ids.empty())) {
      SetTensor(ToProtoDtype(n.feature_dtype), {static_cast<int64_t>(n.ids.size()), n.feature_dim},
                n.features.data(), n.features.size(), out->mutable_features());
    }
    if (!n.labels.empty()) SetInt64Tensor(n.labels, out->mutable_labels());
  }
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const SampledEdges& s = g.edges[e];
    v1::EdgeTensors* out = msg->add_edges();
    out->set_edge_type(partition.edge_type(static_cast<int>(e)).name);
    SetInt64Tensor(s.rows, out->mutable_rows());
    SetInt64Tensor(s.cols, out->mutable_cols());
    if (!s.eids.empty()) SetInt64Tensor(s.eids, out->mutable_eids());
    SetInt64Tensor(s.num_sampled_edges, out->mutable_num_sampled_edges());
  }
}

}  // namespace graphstore
