// Batches built from what a server sent: views of a decoded batch (socket) or of a message and
// its mapped shared buffer (shared memory), and input_id over them. Also HostTensor's and
// HostBatch's own helpers (client/host_batch.h).

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/loader_core.h"
#include "client/loader_server.h"
#include "proto/type_names.h"

namespace graphstore::client {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const HostNodes* HostBatch::first_nodes() const {
  auto it = nodes.find(first_node_type);
  return it == nodes.end() ? nullptr : &it->second;
}

const HostEdges* HostBatch::first_edges() const {
  auto it = edges.find(first_edge_type);
  return it == edges.end() ? nullptr : &it->second;
}

size_t HostDtypeSize(v1::DType dtype) { return DtypeSize(dtype); }

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

}  // namespace

HostBatch LoaderCore::FromDecoded(int server, std::shared_ptr<const DecodedBatch> d) const {
  HostBatch b;
  b.server = server;
  b.epoch = d->epoch;
  b.batch_index = d->batch_index;
  b.wire_bytes = d->wire_bytes;
  for (const DecodedNodes& n : d->nodes) {
    HostNodes& v = b.nodes[n.node_type];
    v.n_id = View(n.ids);
    v.seeds = View(n.batch);
    v.batch_size = v.seeds.defined() ? v.seeds.numel() : 0;
    v.num_sampled_nodes = Counts(View(n.num_sampled_nodes));
    v.x = View(n.features);
    v.y = View(n.labels);
    v.x_scale = View(n.feature_scale);
    v.x_offset = View(n.feature_offset);
    v.x_bits = n.feature_bits;
    v.seed_time = View(n.seed_times);
    v.time = View(n.times);
    v.sampled_time = View(n.sampled_times);
    v.input_id = View(n.input_ids);
  }
  const bool out_edges = meta_.edge_dir() != v1::EDGE_DIRECTION_IN;
  for (const DecodedEdges& e : d->edges) {
    HostEdges& v = b.edges[TrainerEdgeType(e.edge_type, out_edges)];
    v.stored_type = e.edge_type;
    v.edge_index = View(e.edge_index);
    v.e_id = View(e.eids);
    v.edge_attr = View(e.features);
    v.num_sampled_edges = Counts(View(e.num_sampled_edges));
  }
  if (d->ablp.has_value()) b.ablp = HostAblp{View(d->ablp->anchors), View(d->ablp->positive), View(d->ablp->negative)};
  for (const DecodedPpr& p : d->ppr) {
    b.ppr.push_back(HostPpr{p.seed_type, p.node_type, View(p.seed_index), View(p.node_index), View(p.weight)});
  }
  SetFirstTypes(d->nodes.empty() ? std::string() : d->nodes[0].node_type,
                d->edges.empty() ? nullptr : &d->edges[0].edge_type, out_edges, &b);
  auto add = [&b](const DecodedTensor& t) {
    if (t.buffer != nullptr) b.memory.emplace_back(t.buffer->data(), t.buffer->size());
  };
  for (const DecodedNodes& n : d->nodes) {
    for (const DecodedTensor* t : {&n.ids, &n.num_sampled_nodes, &n.batch, &n.labels, &n.features, &n.feature_scale,
                                   &n.feature_offset, &n.seed_times, &n.times, &n.sampled_times, &n.input_ids}) {
      add(*t);
    }
  }
  for (const DecodedEdges& e : d->edges) {
    for (const DecodedTensor* t : {&e.edge_index, &e.eids, &e.num_sampled_edges, &e.features}) add(*t);
  }
  if (d->ablp.has_value()) {
    for (const DecodedTensor* t : {&d->ablp->anchors, &d->ablp->positive, &d->ablp->negative}) add(*t);
  }
  SetInputId(&b);
  return b;
}

absl::StatusOr<HostBatch> LoaderCore::FromMessage(int server, std::shared_ptr<const v1::SampledMessage> msg,
                                                  std::shared_ptr<const MappedBuffer> shared) const {
  HostBatch b;
  b.server = server;
  b.epoch = msg->epoch();
  b.batch_index = msg->batch_index();
  b.shared_memory = shared != nullptr;
  // Every tensor keeps the message and the mapping alive; when the last one goes, the use of
  // the shared buffer is freed and the server may put a later batch in the file.
  struct Owner {
    std::shared_ptr<const v1::SampledMessage> msg;
    std::shared_ptr<const MappedBuffer> shared;
    std::shared_ptr<FreedUses> freed;
    ~Owner() {
      if (shared != nullptr) freed->Push(msg->shared_buffer().id());
    }
  };
  auto owner = std::make_shared<Owner>();
  owner->msg = msg;
  owner->shared = shared;
  owner->freed = servers_[server]->freed;
  const MappedBuffer* buf = shared.get();
  if (buf != nullptr) b.memory.emplace_back(buf->data(), buf->size());
  absl::Status failed;
  // An absent field stays undefined.
  auto view = [&](bool present, const v1::Tensor& t) {
    if (!present || !failed.ok()) return HostTensor();
    auto h = ViewWire(t, owner, buf);
    if (!h.ok()) {
      failed = h.status();
      return HostTensor();
    }
    return *std::move(h);
  };
  for (const v1::NodeTensors& n : msg->nodes()) {
    HostNodes& v = b.nodes[n.node_type()];
    v.n_id = view(true, n.ids());
    v.seeds = view(true, n.batch());
    v.batch_size = v.seeds.numel();
    v.num_sampled_nodes = Counts(view(true, n.num_sampled_nodes()));
    v.x = view(n.has_features(), n.features());
    v.y = view(n.has_labels(), n.labels());
    v.seed_time = view(n.has_seed_times(), n.seed_times());
    v.time = view(n.has_times(), n.times());
    v.sampled_time = view(n.has_sampled_times(), n.sampled_times());
    v.input_id = view(n.has_input_ids(), n.input_ids());
  }
  const bool out_edges = meta_.edge_dir() != v1::EDGE_DIRECTION_IN;
  for (const v1::EdgeTensors& e : msg->edges()) {
    HostEdges& v = b.edges[TrainerEdgeType(e.edge_type(), out_edges)];
    v.stored_type = e.edge_type();
    const HostTensor rows = view(true, e.rows());
    const HostTensor cols = view(true, e.cols());
    // Stored edges point from the CSR row to its neighbour with edge_dir "out": messages flow
    // from the column (the sampled neighbour) to the row.
    if (failed.ok()) v.edge_index = out_edges ? EdgeIndex(cols, rows, pool_.get()) : EdgeIndex(rows, cols, pool_.get());
    v.num_sampled_edges = Counts(view(true, e.num_sampled_edges()));
    v.e_id = view(e.has_eids(), e.eids());
    v.edge_attr = view(e.has_features(), e.features());
  }
  if (msg->has_ablp()) {
    b.ablp = HostAblp{view(true, msg->ablp().anchors()), view(true, msg->ablp().positive()),
                      view(true, msg->ablp().negative())};
  }
  for (const v1::PprWeights& p : msg->ppr()) {
    b.ppr.push_back(HostPpr{p.seed_type(), p.node_type(), view(true, p.seed_index()), view(true, p.node_index()),
                            view(true, p.weight())});
  }
  if (!failed.ok()) return failed;
  SetFirstTypes(msg->nodes_size() > 0 ? msg->nodes(0).node_type() : std::string(),
                msg->edges_size() > 0 ? &msg->edges(0).edge_type() : nullptr, out_edges, &b);
  SetInputId(&b);
  return b;
}

absl::Status LoaderCore::SharedOwnerRows(int index, const v1::SampledMessage& msg, const MappedBuffer* shared,
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
  for (const v1::NodeTensors& n : msg.nodes()) {
    if (!n.has_owners()) continue;
    if (shared == nullptr || n.has_cached()) {
      return absl::DataLossError(absl::StrCat("node type '", n.node_type(), "': rows left to their owners in a message "
                                              "without places for them in a shared buffer"));
    }
    auto owners = ViewWire(n.owners(), nullptr, shared);
    if (!owners.ok()) return owners.status();
    const HostNodes& h = b.nodes.at(n.node_type());
    DecodedNodes d;
    d.node_type = n.node_type();
    d.ids = writable(h.n_id, h.n_id.bytes);
    d.owners = writable(*owners, owners->bytes);
    d.features = writable(h.x, n.features().shared().length());  // packed rows too
    d.labels = writable(h.y, h.y.bytes);
    if (auto s = FetchOwnerRows(owner_rows_, index, &d); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void LoaderCore::SetInputId(HostBatch* b) const {
  const Server& s = *servers_[static_cast<size_t>(b->server)];
  // Positions in the server's input: with global batches, or for split seeds per server,
  // the loader's own; explicit seeds per server map back to LoaderOptions::seeds.
  if (!global_ && s.input_index.empty()) return;
  for (auto& [name, n] : b->nodes) {
    HostTensor& ids = n.input_id;
    if (!ids.defined()) continue;
    if (!s.input_index.empty() && ids.numel() > 0) {
      std::shared_ptr<Buffer> buffer = pool_->Acquire(ids.bytes);
      auto* out = reinterpret_cast<int64_t*>(buffer->data());
      const auto* in = reinterpret_cast<const int64_t*>(ids.data);
      const int64_t count = ids.numel();
      for (int64_t i = 0; i < count; ++i) {
        out[i] = in[i] >= 0 && in[i] < static_cast<int64_t>(s.input_index.size()) ? s.input_index[in[i]] : -1;
      }
      ids.data = buffer->data();
      ids.owner = std::move(buffer);
    }
    b->input_id = ids;
    b->input_type = name;
  }
}

}  // namespace graphstore::client
