// Batches built from what a server sent: views of a decoded batch (socket) or of a message and
// its mapped shared buffer (shared memory), and the homogeneous fields and input_id over them.

#include <memory>
#include <string>
#include <vector>

#include "client/loader.h"
#include "client/loader_server.h"

namespace graphstore::client {
namespace {

std::vector<int64_t> Values(const at::Tensor& t) {
  if (!t.defined()) return {};
  at::Tensor c = t.to(torch::kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace

Batch Loader::FromDecoded(int server, std::shared_ptr<const DecodedBatch> d) const {
  Batch b;
  b.server = server;
  b.epoch = d->epoch;
  b.batch_index = d->batch_index;
  b.decoded = d;
  for (const DecodedNodes& n : d->nodes) {
    NodeView& v = b.nodes[n.node_type];
    v.n_id = ToTensor(n.ids);
    v.seeds = ToTensor(n.batch);
    v.batch_size = v.seeds.defined() ? v.seeds.numel() : 0;
    v.num_sampled_nodes = Values(ToTensor(n.num_sampled_nodes));
    v.x = ToTensor(n.features);
    v.y = ToTensor(n.labels);
    v.x_scale = ToTensor(n.feature_scale);
    v.x_offset = ToTensor(n.feature_offset);
    v.x_bits = n.feature_bits;
    v.seed_time = ToTensor(n.seed_times);
    v.time = ToTensor(n.times);
    v.sampled_time = ToTensor(n.sampled_times);
  }
  const bool out_edges = meta_.edge_dir() != v1::EDGE_DIRECTION_IN;
  for (const DecodedEdges& e : d->edges) {
    EdgeView& v = b.edges[out_edges ? ReverseEdgeTypeName(e.edge_type) : e.edge_type];
    v.stored_type = e.edge_type;
    v.edge_index = ToTensor(e.edge_index);
    v.e_id = ToTensor(e.eids);
    v.edge_attr = ToTensor(e.features);
    v.num_sampled_edges = Values(ToTensor(e.num_sampled_edges));
  }
  if (d->ablp.has_value()) {
    b.ablp = AblpView{ToTensor(d->ablp->anchors), ToTensor(d->ablp->positive), ToTensor(d->ablp->negative)};
  }
  for (const DecodedPpr& p : d->ppr) {
    b.ppr.push_back(PprView{p.seed_type, p.node_type, ToTensor(p.seed_index), ToTensor(p.node_index),
                            ToTensor(p.weight)});
  }
  const std::string first_node = d->nodes.empty() ? std::string() : d->nodes[0].node_type;
  const std::string first_edge =
      d->edges.empty() ? std::string() : (out_edges ? ReverseEdgeTypeName(d->edges[0].edge_type) : d->edges[0].edge_type);
  Finish(&b, first_node, first_edge);
  return b;
}

Batch Loader::FromMessage(int server, std::shared_ptr<const v1::SampledMessage> msg,
                          std::shared_ptr<const MappedBuffer> shared) const {
  Batch b;
  b.server = server;
  b.epoch = msg->epoch();
  b.batch_index = msg->batch_index();
  b.message = msg;
  b.shared = shared;
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
  auto view = [&](const v1::Tensor& t) { return ToTensor(t, owner, buf); };
  for (const v1::NodeTensors& n : msg->nodes()) {
    NodeView& v = b.nodes[n.node_type()];
    v.n_id = view(n.ids());
    v.seeds = view(n.batch());
    v.batch_size = v.seeds.numel();
    v.num_sampled_nodes = Values(view(n.num_sampled_nodes()));
    if (n.has_features()) v.x = view(n.features());
    if (n.has_labels()) v.y = view(n.labels());
    if (n.has_seed_times()) v.seed_time = view(n.seed_times());
    if (n.has_times()) v.time = view(n.times());
    if (n.has_sampled_times()) v.sampled_time = view(n.sampled_times());
  }
  const bool out_edges = meta_.edge_dir() != v1::EDGE_DIRECTION_IN;
  for (const v1::EdgeTensors& e : msg->edges()) {
    EdgeView& v = b.edges[out_edges ? ReverseEdgeTypeName(e.edge_type()) : e.edge_type()];
    v.stored_type = e.edge_type();
    at::Tensor rows = view(e.rows()).to(torch::kInt64);
    at::Tensor cols = view(e.cols()).to(torch::kInt64);
    v.edge_index = out_edges ? torch::stack({cols, rows}) : torch::stack({rows, cols});
    v.num_sampled_edges = Values(view(e.num_sampled_edges()));
    if (e.has_eids()) v.e_id = view(e.eids());
    if (e.has_features()) v.edge_attr = view(e.features());
  }
  if (msg->has_ablp()) {
    b.ablp = AblpView{view(msg->ablp().anchors()), view(msg->ablp().positive()), view(msg->ablp().negative())};
  }
  for (const v1::PprWeights& p : msg->ppr()) {
    b.ppr.push_back(
        PprView{p.seed_type(), p.node_type(), view(p.seed_index()), view(p.node_index()), view(p.weight())});
  }
  const std::string first_node = msg->nodes_size() > 0 ? msg->nodes(0).node_type() : std::string();
  const std::string first_edge =
      msg->edges_size() == 0
          ? std::string()
          : (out_edges ? ReverseEdgeTypeName(msg->edges(0).edge_type()) : msg->edges(0).edge_type());
  Finish(&b, first_node, first_edge);
  return b;
}

void Loader::Finish(Batch* b, const std::string& first_node_type, const std::string& first_edge_key) const {
  auto n = b->nodes.find(first_node_type);
  if (n != b->nodes.end()) {
    const NodeView& v = n->second;
    b->n_id = v.n_id;
    b->x = v.x;
    b->y = v.y;
    b->x_scale = v.x_scale;
    b->x_offset = v.x_offset;
    b->x_bits = v.x_bits;
    b->seeds = v.seeds;
    b->seed_time = v.seed_time;
    b->time = v.time;
    b->sampled_time = v.sampled_time;
    b->batch_size = v.batch_size;
    b->num_sampled_nodes = v.num_sampled_nodes;
  }
  auto e = b->edges.find(first_edge_key);
  if (e != b->edges.end()) {
    b->edge_index = e->second.edge_index;
    b->e_id = e->second.e_id;
    b->edge_attr = e->second.edge_attr;
    b->num_sampled_edges = e->second.num_sampled_edges;
  }
  if (!input_position_.empty() && n != b->nodes.end() && n->second.seeds.defined()) {
    const std::vector<int64_t> seeds = Values(n->second.seeds);
    std::vector<int64_t> positions(seeds.size(), -1);
    for (size_t i = 0; i < seeds.size(); ++i) {
      auto it = input_position_.find(seeds[i]);
      if (it != input_position_.end()) positions[i] = it->second;
    }
    b->input_id = torch::tensor(positions, torch::kInt64);
  }
}

}  // namespace graphstore::client
