#include "client/batch_assembly.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/feature_rows.h"
#include "proto/type_names.h"

namespace graphstore::client {

namespace {

HostTensor View(const DecodedTensor& t) {
  HostTensor h;
  if (!t.defined()) return h;
  h.dtype = t.dtype;
  h.shape = t.shape;
  h.data = t.bytes > 0 ? t.data : nullptr;
  h.bytes = t.bytes;
  h.owner = t.buffer;
  return h;
}

// The int64 values of a small count tensor (num_sampled_nodes / _edges).
std::vector<int64_t> Counts(const HostTensor& t) {
  std::vector<int64_t> out;
  if (!t.defined() || t.data == nullptr) return out;
  const int64_t n = t.numel();
  out.resize(static_cast<size_t>(n));
  if (t.dtype == v1::DTYPE_INT64) {
    std::memcpy(out.data(), t.data, static_cast<size_t>(n) * 8);
  } else if (t.dtype == v1::DTYPE_INT32) {
    const auto* p = reinterpret_cast<const int32_t*>(t.data);
    for (int64_t i = 0; i < n; ++i) out[i] = p[i];
  }
  return out;
}

// The tensor field `number` of a message (NodeTensors, EdgeTensors), or null when absent: the
// tables name fields by number, and this is the one place a number becomes a field.
const v1::Tensor* WireField(const google::protobuf::Message& m, int number) {
  const google::protobuf::FieldDescriptor* field = m.GetDescriptor()->FindFieldByNumber(number);
  const google::protobuf::Reflection* r = m.GetReflection();
  if (field == nullptr || !r->HasField(m, field)) return nullptr;
  return static_cast<const v1::Tensor*>(&r->GetMessage(m, field));
}

// A wire tensor of a shared-memory message viewed in place; `owner` keeps the message and the
// mapping alive.
absl::StatusOr<HostTensor> ViewWire(const v1::Tensor& t, const std::shared_ptr<const void>& owner,
                                    const MappedBuffer* shared) {
  HostTensor h;
  h.dtype = t.dtype();
  h.shape.assign(t.shape().begin(), t.shape().end());
  auto bytes = TensorBytes(t, shared);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(), absl::StrCat("tensor of shape [", absl::StrJoin(h.shape, ", "),
                                                            "]: ", bytes.status().message()));
  }
  h.bytes = static_cast<size_t>(h.numel()) * DtypeSize(h.dtype);
  h.data = h.bytes > 0 ? *bytes : nullptr;
  h.owner = owner;
  return h;
}

// int64 [2, m] edge_index from a message's int32 rows and cols, `src` the row 0 (the sampled
// neighbours: message sources), in pooled memory.
HostTensor EdgeIndex(const HostTensor& src, const HostTensor& dst, BufferPool* pool) {
  const int64_t m = src.numel();
  HostTensor h;
  h.dtype = v1::DTYPE_INT64;
  h.shape = {2, m};
  h.bytes = static_cast<size_t>(2 * m) * 8;
  if (m == 0) return h;
  std::shared_ptr<Buffer> buffer = pool->Acquire(h.bytes);
  auto* out = reinterpret_cast<int64_t*>(buffer->data());
  auto widen = [m](const HostTensor& t, int64_t* to) {
    if (t.dtype == v1::DTYPE_INT64) {
      std::memcpy(to, t.data, static_cast<size_t>(m) * 8);
      return;
    }
    const auto* p = reinterpret_cast<const int32_t*>(t.data);
    for (int64_t i = 0; i < m; ++i) to[i] = p[i];
  };
  widen(src, out);
  widen(dst, out + m);
  h.data = buffer->data();
  h.owner = std::move(buffer);
  return h;
}

// The name the trainer sees an edge type by: with edge_dir "out" the stored type reversed, so
// that it names the direction messages flow (sampled neighbour to the node that drew it).
std::string TrainerEdgeType(const std::string& stored, bool out_edges) {
  return out_edges ? ReverseEdgeTypeName(stored) : stored;
}

// Which node and edge type come first (HostBatch::first_node_type, first_edge_type).
void SetFirstTypes(const std::string& node_type, const std::string* stored_edge_type, bool out_edges, HostBatch* b) {
  b->first_node_type = node_type;
  if (stored_edge_type != nullptr) b->first_edge_type = TrainerEdgeType(*stored_edge_type, out_edges);
}

// input_id in the loader's input, once `nodes` is filled: explicit seeds per server map back
// to LoaderOptions::seeds.
void SetInputId(const AssemblyContext& c, HostBatch* b) {
  if (!c.input_ids_are_positions) return;
  const std::vector<int64_t>* index = c.input_index != nullptr && !c.input_index->empty() ? c.input_index : nullptr;
  for (auto& [name, n] : b->nodes) {
    HostTensor& ids = n.input_id;
    if (!ids.defined()) continue;
    if (index != nullptr && ids.numel() > 0) {
      std::shared_ptr<Buffer> buffer = c.pool->Acquire(ids.bytes);
      auto* out = reinterpret_cast<int64_t*>(buffer->data());
      const auto* in = reinterpret_cast<const int64_t*>(ids.data);
      const int64_t count = ids.numel();
      for (int64_t i = 0; i < count; ++i) {
        out[i] = in[i] >= 0 && in[i] < static_cast<int64_t>(index->size()) ? (*index)[in[i]] : -1;
      }
      ids.data = buffer->data();
      ids.owner = std::move(buffer);
    }
    b->input_id = ids;
    b->input_type = name;
  }
}

// The bits of each code of features kept as they travelled (0: not codes).
int KeptCodeBits(v1::DType dtype, bool has_scale) { return IsCodes(dtype, has_scale) ? CodeBits(dtype) : 0; }

}  // namespace

HostBatch AssembleDecoded(const AssemblyContext& c, std::shared_ptr<const DecodedBatch> d) {
  HostBatch b;
  b.server = c.server;
  b.epoch = d->epoch;
  b.batch_index = d->batch_index;
  b.wire_bytes = d->wire_bytes;
  auto add = [&b](const DecodedTensor& t) {
    if (t.buffer != nullptr) b.memory.emplace_back(t.buffer->data(), t.buffer->size());
  };
  for (const DecodedNodes& n : d->nodes) {
    HostNodes& v = b.nodes[n.node_type];
    ZipNodeTensors(n, v, [&](const auto&, const DecodedTensor& from, HostTensor& to) {
      to = View(from);
      add(from);
    });
    v.batch_size = v.seeds.defined() ? v.seeds.numel() : 0;
    v.num_sampled_nodes = Counts(View(n.num_sampled_nodes));
    add(n.num_sampled_nodes);
    v.x_bits = n.feature_bits;
  }
  for (const DecodedEdges& e : d->edges) {
    HostEdges& v = b.edges[TrainerEdgeType(e.edge_type, c.out_edges)];
    v.stored_type = e.edge_type;
    ZipEdgeTensors(e, v, [&](const auto&, const DecodedTensor& from, HostTensor& to) {
      to = View(from);
      add(from);
    });
    v.num_sampled_edges = Counts(View(e.num_sampled_edges));
    add(e.num_sampled_edges);
  }
  if (d->ablp.has_value()) {
    b.ablp = HostAblp{View(d->ablp->anchors), View(d->ablp->positive), View(d->ablp->negative)};
    for (const DecodedTensor* t : {&d->ablp->anchors, &d->ablp->positive, &d->ablp->negative}) add(*t);
  }
  for (const DecodedPpr& p : d->ppr) {
    b.ppr.push_back(HostPpr{p.seed_type, p.node_type, View(p.seed_index), View(p.node_index), View(p.weight)});
  }
  SetFirstTypes(d->nodes.empty() ? std::string() : d->nodes[0].node_type,
                d->edges.empty() ? nullptr : &d->edges[0].edge_type, c.out_edges, &b);
  SetInputId(c, &b);
  return b;
}

absl::StatusOr<HostBatch> AssembleShared(const AssemblyContext& c, std::shared_ptr<const v1::SampledMessage> msg,
                                         std::shared_ptr<const MappedBuffer> shared, std::function<void()> freed) {
  HostBatch b;
  b.server = c.server;
  b.epoch = msg->epoch();
  b.batch_index = msg->batch_index();
  b.shared_memory = shared != nullptr;
  // Every tensor keeps the message and the mapping alive; when the last one goes, the use of
  // the shared buffer is freed and the server may put a later batch in the file.
  struct Owner {
    std::shared_ptr<const v1::SampledMessage> msg;
    std::shared_ptr<const MappedBuffer> shared;
    std::function<void()> freed;
    ~Owner() {
      if (shared != nullptr && freed) freed();
    }
  };
  auto owner = std::make_shared<Owner>();
  owner->msg = msg;
  owner->shared = shared;
  owner->freed = std::move(freed);
  const MappedBuffer* buf = shared.get();
  if (buf != nullptr) b.memory.emplace_back(buf->data(), buf->size());
  absl::Status failed;
  // A field absent from the message stays undefined, unless every message carries it.
  auto view = [&](const google::protobuf::Message& m, int number, bool always) {
    const v1::Tensor* t = WireField(m, number);
    if (t == nullptr && always) t = &v1::Tensor::default_instance();
    if (t == nullptr || !failed.ok()) return HostTensor();
    auto h = ViewWire(*t, owner, buf);
    if (!h.ok()) {
      failed = h.status();
      return HostTensor();
    }
    return *std::move(h);
  };
  for (const v1::NodeTensors& n : msg->nodes()) {
    HostNodes& v = b.nodes[n.node_type()];
    for (const auto& f : kNodeFields<HostTensor>) v.*f.member = view(n, f.wire, f.always);
    v.batch_size = v.seeds.numel();
    v.num_sampled_nodes = Counts(view(n, v1::NodeTensors::kNumSampledNodesFieldNumber, true));
    v.x_bits = KeptCodeBits(v.x.dtype, v.x_scale.defined());
  }
  for (const v1::EdgeTensors& e : msg->edges()) {
    HostEdges& v = b.edges[TrainerEdgeType(e.edge_type(), c.out_edges)];
    v.stored_type = e.edge_type();
    for (const auto& f : kEdgeFields<HostTensor>) {
      if (f.form != WireForm::kEdgeIndex) {
        v.*f.member = view(e, f.wire, f.always);
        continue;
      }
      const HostTensor rows = view(e, v1::EdgeTensors::kRowsFieldNumber, true);
      const HostTensor cols = view(e, v1::EdgeTensors::kColsFieldNumber, true);
      // Stored edges point from the CSR row to its neighbour with edge_dir "out": messages flow
      // from the column (the sampled neighbour) to the row.
      if (failed.ok()) v.*f.member = c.out_edges ? EdgeIndex(cols, rows, c.pool) : EdgeIndex(rows, cols, c.pool);
    }
    v.num_sampled_edges = Counts(view(e, v1::EdgeTensors::kNumSampledEdgesFieldNumber, true));
  }
  if (msg->has_ablp()) {
    const v1::AblpLabels& a = msg->ablp();
    b.ablp = HostAblp{view(a, v1::AblpLabels::kAnchorsFieldNumber, true),
                      view(a, v1::AblpLabels::kPositiveFieldNumber, true),
                      view(a, v1::AblpLabels::kNegativeFieldNumber, true)};
  }
  for (const v1::PprWeights& p : msg->ppr()) {
    b.ppr.push_back(HostPpr{p.seed_type(), p.node_type(), view(p, v1::PprWeights::kSeedIndexFieldNumber, true),
                            view(p, v1::PprWeights::kNodeIndexFieldNumber, true),
                            view(p, v1::PprWeights::kWeightFieldNumber, true)});
  }
  if (!failed.ok()) return failed;
  SetFirstTypes(msg->nodes_size() > 0 ? msg->nodes(0).node_type() : std::string(),
                msg->edges_size() > 0 ? &msg->edges(0).edge_type() : nullptr, c.out_edges, &b);
  SetInputId(c, &b);
  return b;
}

absl::StatusOr<DecodedBatch> SharedRowsForOwners(const v1::SampledMessage& msg, const MappedBuffer* shared,
                                                 const HostBatch& b) {
  // The batch's memory is this loader's mapping of the buffer, written where the server left
  // other partitions' rows (and labels) for their owners to fill.
  auto writable = [](const HostTensor& t, size_t bytes) {
    DecodedTensor d;
    d.dtype = t.dtype;
    d.shape = t.shape;
    d.data = const_cast<char*>(t.data);
    d.bytes = bytes;
    return d;
  };
  DecodedBatch out;
  out.epoch = msg.epoch();
  out.batch_index = msg.batch_index();
  for (const v1::NodeTensors& n : msg.nodes()) {
    if (!n.has_owners()) continue;
    if (shared == nullptr || n.has_cached()) {
      return absl::DataLossError(absl::StrCat("node type '", n.node_type(), "': rows left to their owners in a message "
                                              "without places for them in a shared buffer"));
    }
    auto owners = ViewWire(n.owners(), nullptr, shared);
    if (!owners.ok()) return owners.status();
    const HostNodes& h = b.nodes.at(n.node_type());
    DecodedNodes& d = out.nodes.emplace_back();
    d.node_type = n.node_type();
    d.n_id = writable(h.n_id, h.n_id.bytes);
    d.owners = writable(*owners, owners->bytes);
    d.x = writable(h.x, n.features().shared().length());  // packed rows too
    d.y = writable(h.y, h.y.bytes);
  }
  return out;
}

}  // namespace graphstore::client
