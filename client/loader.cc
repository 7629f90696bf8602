// The LibTorch Loader: LoaderCore's host batches viewed as at::Tensors (declared in loader.h).

#include "client/loader.h"  // LibTorch first (see loader.h)

#include <utility>

#include "absl/strings/str_cat.h"

namespace graphstore::client {
namespace {

c10::ScalarType TorchType(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT64: return torch::kInt64;
    case v1::DTYPE_INT32: return torch::kInt32;
    case v1::DTYPE_FLOAT32: return torch::kFloat32;
    case v1::DTYPE_FLOAT16: return torch::kFloat16;
    case v1::DTYPE_BFLOAT16: return torch::kBFloat16;
    case v1::DTYPE_FLOAT64: return torch::kFloat64;
    case v1::DTYPE_UINT8: return torch::kUInt8;
    case v1::DTYPE_BOOL: return torch::kBool;
    default: break;
  }
  throw Error(absl::DataLossError(absl::StrCat("tensor has unknown dtype ", static_cast<int>(d))));
}

NodeView ToNodeView(const HostNodes& n) {
  NodeView v;
  ZipNodeTensors(n, v, [](const auto&, const HostTensor& from, at::Tensor& to) { to = ToTensor(from); });
  v.x_bits = n.x_bits;
  v.batch_size = n.batch_size;
  v.num_sampled_nodes = n.num_sampled_nodes;
  return v;
}

EdgeView ToEdgeView(const HostEdges& e) {
  EdgeView v;
  ZipEdgeTensors(e, v, [](const auto&, const HostTensor& from, at::Tensor& to) { to = ToTensor(from); });
  v.stored_type = e.stored_type;
  v.num_sampled_edges = e.num_sampled_edges;
  return v;
}

}  // namespace

at::Tensor ToTensor(const HostTensor& t) {
  if (!t.defined()) return at::Tensor();
  const c10::ScalarType type = TorchType(t.dtype);
  if (t.data == nullptr || t.numel() == 0) return torch::empty(t.shape, torch::TensorOptions().dtype(type));
  // The bytes stay where the core put them; the deleter keeps them alive.
  std::shared_ptr<const void> owner = t.owner;
  return torch::from_blob(const_cast<char*>(t.data), t.shape, [owner](void*) mutable { owner.reset(); },
                          torch::TensorOptions().dtype(type));
}

Batch Loader::ToBatch(const HostBatch& h) {
  Batch b;
  b.epoch = h.epoch;
  b.batch_index = h.batch_index;
  b.server = h.server;
  b.shared_memory = h.shared_memory;
  b.memory = h.memory;
  for (const auto& [name, n] : h.nodes) b.nodes.emplace(name, ToNodeView(n));
  for (const auto& [name, e] : h.edges) b.edges.emplace(name, ToEdgeView(e));
  if (h.ablp.has_value()) {
    b.ablp = AblpView{ToTensor(h.ablp->anchors), ToTensor(h.ablp->positive), ToTensor(h.ablp->negative)};
  }
  for (const HostPpr& p : h.ppr) {
    b.ppr.push_back(PprView{p.seed_type, p.node_type, ToTensor(p.seed_index), ToTensor(p.node_index),
                            ToTensor(p.weight)});
  }
  auto n = b.nodes.find(h.first_node_type);
  if (n != b.nodes.end()) {
    static_cast<NodeTensorsOf<at::Tensor>&>(b) = n->second;
    b.x_bits = n->second.x_bits;
    b.batch_size = n->second.batch_size;
    b.num_sampled_nodes = n->second.num_sampled_nodes;
  }
  b.input_id = ToTensor(h.input_id);
  b.input_type = h.input_type;
  auto e = b.edges.find(h.first_edge_type);
  if (e != b.edges.end()) {
    static_cast<EdgeTensorsOf<at::Tensor>&>(b) = e->second;
    b.num_sampled_edges = e->second.num_sampled_edges;
  }
  return b;
}

std::optional<Batch> Loader::Next() {
  std::optional<HostBatch> h = core_.Next();
  if (!h.has_value()) return std::nullopt;
  return ToBatch(*h);
}

bool Loader::NextFor(std::chrono::milliseconds timeout, std::optional<Batch>* out) {
  std::optional<HostBatch> h;
  if (!core_.NextFor(timeout, &h)) return false;
  if (h.has_value()) {
    *out = ToBatch(*h);
  } else {
    out->reset();
  }
  return true;
}

}  // namespace graphstore::client
