// Trains a heterogeneous GraphSAGE link predictor (anchor-based, as GiGL's ABLP) through
// graphstore on a user -> item graph such as MovieLens 100k (graphstore-movielens): each batch
// brings anchors, their positive and negative label items and the neighbourhood of all of
// them, with the batch's label edges left out of message passing. After every epoch it embeds
// every user and item through graphstore and reports validation recall@20 and MRR, beside a
// popularity baseline.
//
// The evaluation, shared with python/examples/train_link_pred.py (a test compares the two
// baselines): each val user's val label items are the truth; the items the user rated in the
// train split are excluded from its ranking; the popularity baseline ranks items by their
// number of train ratings, ties by lower item id.
//
//   train_link_pred --servers=127.0.0.1:PORT --epochs=25

#include "client/loader.h"  // LibTorch first (see loader.h)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/flags.h"

namespace graphstore {
namespace {

// Mean of the source rows over each destination's incoming edges.
torch::Tensor MeanOver(const torch::Tensor& h_src, const torch::Tensor& edge_index, int64_t num_dst) {
  auto out = torch::zeros({num_dst, h_src.size(1)}, h_src.options());
  if (!edge_index.defined() || edge_index.size(1) == 0) return out;
  auto src = edge_index[0];
  auto dst = edge_index[1];
  out.index_add_(0, dst, h_src.index_select(0, src));
  auto deg = torch::zeros({num_dst}, h_src.options()).index_add_(0, dst, torch::ones({dst.size(0)}, h_src.options()));
  return out / deg.clamp_min(1).unsqueeze(1);
}

// Two node types, one relation each way: h'_t = W_self h_t + W_neigh mean(h of the other type).
struct BipartiteSageImpl : torch::nn::Module {
  BipartiteSageImpl(int64_t user_dim, int64_t item_dim, int64_t num_users, int64_t num_items, int64_t hidden)
      : user_in(register_module("user_in", torch::nn::Linear(user_dim, hidden))),
        item_in(register_module("item_in", torch::nn::Linear(item_dim, hidden))),
        user_emb(register_module("user_emb", torch::nn::Embedding(num_users, hidden))),
        item_emb(register_module("item_emb", torch::nn::Embedding(num_items, hidden))) {
    for (int l = 0; l < 2; ++l) {
      user_self.push_back(register_module(absl::StrCat("user_self", l), torch::nn::Linear(hidden, hidden)));
      user_neigh.push_back(register_module(absl::StrCat("user_neigh", l), torch::nn::Linear(hidden, hidden)));
      item_self.push_back(register_module(absl::StrCat("item_self", l), torch::nn::Linear(hidden, hidden)));
      item_neigh.push_back(register_module(absl::StrCat("item_neigh", l), torch::nn::Linear(hidden, hidden)));
    }
    torch::nn::init::normal_(user_emb->weight, 0, 0.1);
    torch::nn::init::normal_(item_emb->weight, 0, 0.1);
  }

  // Embeddings of every user and item node of a batch.
  std::pair<torch::Tensor, torch::Tensor> forward(const client::Batch& b, const std::string& user_type,
                                                  const std::string& item_type, const std::string& to_item,
                                                  const std::string& to_user) {
    const client::NodeView& u = b.nodes.at(user_type);
    const client::NodeView& i = b.nodes.at(item_type);
    auto hu = user_in(u.x) + user_emb(u.n_id);
    auto hi = item_in(i.x) + item_emb(i.n_id);
    const auto e_ui = b.edges.count(to_item) ? b.edges.at(to_item).edge_index : torch::Tensor();
    const auto e_iu = b.edges.count(to_user) ? b.edges.at(to_user).edge_index : torch::Tensor();
    for (int l = 0; l < 2; ++l) {
      auto nu = user_self[l](hu) + user_neigh[l](MeanOver(hi, e_iu, hu.size(0)));
      auto ni = item_self[l](hi) + item_neigh[l](MeanOver(hu, e_ui, hi.size(0)));
      hu = l == 0 ? torch::relu(nu) : nu;
      hi = l == 0 ? torch::relu(ni) : ni;
    }
    return {hu, hi};
  }

  torch::nn::Linear user_in, item_in;
  torch::nn::Embedding user_emb, item_emb;
  std::vector<torch::nn::Linear> user_self, user_neigh, item_self, item_neigh;
};
TORCH_MODULE(BipartiteSage);

std::vector<int64_t> Int64s(const v1::Tensor& t) {
  const auto* p = reinterpret_cast<const int64_t*>(t.data().data());
  return std::vector<int64_t>(p, p + t.data().size() / 8);
}

// Label items per anchor of a split, from every server.
std::map<int64_t, std::vector<int64_t>> Labels(const std::vector<std::string>& servers, const std::string& split,
                                               const std::string& anchor_type, const std::string& edge_type) {
  std::map<int64_t, std::vector<int64_t>> out;
  for (const auto& address : servers) {
    client::ClientOptions o;
    o.address = address;
    auto c = client::Client::Connect(o);
    if (!c.ok()) throw client::Error(c.status());
    v1::GetAblpInputRequest req;
    req.set_split(split);
    req.set_node_type(anchor_type);
    req.set_supervision_edge_type(edge_type);
    auto r = (*c)->GetAblpInput(req);
    if (!r.ok()) throw client::Error(r.status());
    const auto anchors = Int64s(r->anchors());
    const auto pos = Int64s(r->positive_labels());
    const int64_t width = r->positive_labels().shape(1);
    for (size_t a = 0; a < anchors.size(); ++a) {
      for (int64_t k = 0; k < width; ++k) {
        if (pos[a * width + k] >= 0) out[anchors[a]].push_back(pos[a * width + k]);
      }
    }
  }
  return out;
}

// recall@k and MRR of `scores` [users, items] (seen items already at -inf) against `truth`.
std::pair<double, double> RecallMrr(const torch::Tensor& scores, const std::map<int64_t, std::vector<int64_t>>& truth,
                                    int k) {
  auto top = std::get<1>(scores.topk(k, 1)).contiguous();
  auto order = scores.argsort(1, /*descending=*/true).contiguous();
  const int64_t num_items = scores.size(1);
  auto rank_of = torch::empty_like(order);
  rank_of.scatter_(1, order, torch::arange(num_items, order.options()).expand_as(order).contiguous());
  auto top_a = top.accessor<int64_t, 2>();
  auto rank_a = rank_of.accessor<int64_t, 2>();
  double recall = 0, mrr = 0;
  for (const auto& [u, items] : truth) {
    std::set<int64_t> want(items.begin(), items.end());
    int hits = 0;
    for (int j = 0; j < k; ++j) hits += want.count(top_a[u][j]);
    recall += static_cast<double>(hits) / std::min<size_t>(k, want.size());
    int64_t best = num_items;
    for (int64_t i : want) best = std::min(best, rank_a[u][i]);
    mrr += 1.0 / static_cast<double>(best + 1);
  }
  const double n = std::max<size_t>(1, truth.size());
  return {recall / n, mrr / n};
}

// The task's node and edge types and sizes.
struct Task {
  std::string user_type, item_type;
  /// user__REL__item and its reverse.
  std::string supervision, reverse;
  int64_t num_users = 0, num_items = 0, user_dim = 0, item_dim = 0;
  int64_t hidden = 0;
};

client::LoaderOptions BaseOptions(const Flags& flags, const Task& task) {
  client::LoaderOptions base;
  base.servers = SplitList(flags.Get("servers"), ',');
  base.config.set_batch_size(static_cast<int>(*flags.GetInt("batch_size")));
  for (const std::string& et : {task.supervision, task.reverse}) {
    auto& f = (*base.config.mutable_num_neighbors_by_type())[et];
    for (const auto& n : SplitList(flags.Get("fanouts"), ',')) f.add_per_hop(std::stoi(n));
  }
  base.config.set_with_node_features(true);
  base.seed = static_cast<uint64_t>(*flags.GetInt("seed"));
  base.feature_encoding = client::ParseFeatureEncoding(flags.Get("feature_encoding")).value_or(base.feature_encoding);
  return base;
}

// Anchors of the train split with their positives and generated negatives.
client::LoaderOptions TrainOptions(client::LoaderOptions o, const Flags& flags, const Task& task) {
  o.backend_key = "train_link_pred/train";
  o.worker_key = "train_link_pred:train";
  o.config.set_shuffle(true);
  o.config.set_num_negatives(static_cast<int>(*flags.GetInt("negatives")));
  o.config.set_negative_sampling(flags.Get("negative_sampling") == "degree" ? v1::NEGATIVE_SAMPLING_DEGREE
                                                                            : v1::NEGATIVE_SAMPLING_UNIFORM);
  v1::GetAblpInputRequest ablp;
  ablp.set_split("train");
  ablp.set_node_type(task.user_type);
  ablp.set_supervision_edge_type(task.supervision);
  o.ablp = ablp;
  return o;
}

// Every node of one type, through the same fanouts, for embedding them all.
client::LoaderOptions EmbedOptions(client::LoaderOptions o, const std::string& node_type) {
  o.backend_key = "train_link_pred/embed";
  o.worker_key = absl::StrCat("train_link_pred:", node_type);
  o.config.set_batch_size(256);
  o.node_type = node_type;
  o.split = "";
  return o;
}

// The node counts and feature widths of the task's types; false when the dataset lacks them.
bool Describe(const v1::DatasetMeta& meta, Task* task) {
  for (const auto& t : meta.node_types()) {
    if (t.name() == task->user_type) task->num_users = t.num_nodes(), task->user_dim = t.features().dim();
    if (t.name() == task->item_type) task->num_items = t.num_nodes(), task->item_dim = t.features().dim();
  }
  return task->num_users > 0 && task->num_items > 0 && task->user_dim > 0 && task->item_dim > 0;
}

// What each user rated in the train split (never recommended again) and each item's score in
// the popularity baseline: its number of train ratings, ties by lower item id.
std::pair<torch::Tensor, torch::Tensor> RatedItems(const std::map<int64_t, std::vector<int64_t>>& train,
                                                   const Task& task) {
  auto seen = torch::zeros({task.num_users, task.num_items}, torch::kBool);
  auto popularity = torch::zeros({task.num_items}, torch::kFloat64);
  for (const auto& [u, items] : train) {
    auto i = torch::tensor(items, torch::kInt64);
    seen.index_put_({torch::full({i.size(0)}, u, torch::kInt64), i}, true);
    popularity.index_add_(0, i, torch::ones({i.size(0)}, torch::kFloat64));
  }
  popularity -= torch::arange(task.num_items, torch::kFloat64) / static_cast<double>(task.num_items + 1);
  return {seen, popularity.to(torch::kFloat32)};
}

// Embeds every user and item (the `epoch`th pass of the two loaders).
std::pair<torch::Tensor, torch::Tensor> EmbedAll(BipartiteSage& model, client::Loader& users, client::Loader& items,
                                                 const Task& task, int64_t epoch) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto user_h = torch::zeros({task.num_users, task.hidden});
  auto item_h = torch::zeros({task.num_items, task.hidden});
  for (auto* loader : {&users, &items}) {
    const bool is_users = loader == &users;
    loader->StartEpoch(epoch);
    while (auto b = loader->Next()) {
      auto [hu, hi] = model->forward(*b, task.user_type, task.item_type, task.supervision, task.reverse);
      const auto& seeds = b->nodes.at(is_users ? task.user_type : task.item_type);
      const int64_t s = seeds.batch_size;
      (is_users ? user_h : item_h).index_copy_(0, seeds.n_id.narrow(0, 0, s), (is_users ? hu : hi).narrow(0, 0, s));
    }
  }
  return {user_h, item_h};
}

// BPR over every (positive, negative) pair of each anchor of a batch.
torch::Tensor BprLoss(const torch::Tensor& hu, const torch::Tensor& hi, const client::AblpView& a) {
  auto anchor = hu.index_select(0, a.anchors);  // [a, H]
  auto pos_mask = a.positive.ge(0);             // [a, P]
  auto neg_mask = a.negative.ge(0);             // [a, Q]
  auto pos = hi.index_select(0, a.positive.clamp_min(0).flatten()).view({a.positive.size(0), a.positive.size(1), -1});
  auto neg = hi.index_select(0, a.negative.clamp_min(0).flatten()).view({a.negative.size(0), a.negative.size(1), -1});
  auto sp = (pos * anchor.unsqueeze(1)).sum(-1);  // [a, P]
  auto sn = (neg * anchor.unsqueeze(1)).sum(-1);  // [a, Q]
  auto pair_mask = pos_mask.unsqueeze(2).logical_and(neg_mask.unsqueeze(1)).to(torch::kFloat32);
  auto pair_loss = -torch::log_sigmoid(sp.unsqueeze(2) - sn.unsqueeze(1));
  return (pair_loss * pair_mask).sum() / pair_mask.sum().clamp_min(1);
}

// One training epoch; returns (mean loss, batches).
std::pair<double, int64_t> TrainEpoch(BipartiteSage& model, torch::optim::Optimizer& opt, client::Loader& train,
                                      const Task& task, int64_t epoch) {
  model->train();
  train.StartEpoch(epoch);
  double loss_sum = 0;
  int64_t batches = 0;
  while (auto b = train.Next()) {
    auto [hu, hi] = model->forward(*b, task.user_type, task.item_type, task.supervision, task.reverse);
    auto loss = BprLoss(hu, hi, *b->ablp);
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss_sum += loss.item<double>();
    ++batches;
  }
  return {loss_sum / std::max<int64_t>(1, batches), batches};
}

void DefineFlags(Flags* flags) {
  flags->Define("servers", "", "comma-separated host:port of every server, in partition order");
  flags->Define("epochs", "25", "training epochs");
  flags->Define("batch_size", "64", "anchors per batch");
  flags->Define("fanouts", "10,5", "neighbours per hop and edge type");
  flags->Define("negatives", "16", "generated negatives per anchor");
  flags->Define("negative_sampling", "uniform", "uniform or degree");
  flags->Define("hidden", "64", "hidden units");
  flags->Define("lr", "0.005", "Adam learning rate");
  flags->Define("user_type", "user", "anchor node type");
  flags->Define("item_type", "movie", "label node type");
  flags->Define("relation", "rates", "supervision relation: user__REL__item");
  flags->Define("seed", "0", "sampling and initialisation seed");
  flags->Define("feature_encoding", "", "feature rows on the wire: float32, float16, bfloat16, int8, int4, int2 or int1");
  flags->Define("shutdown_servers", "false", "call Exit on every server when done");
}

int Run(int argc, char** argv) {
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "train_link_pred", "Trains a link predictor through graphstore.")) {
    return *exit;
  }
  if (flags.Get("servers").empty()) {
    std::fprintf(stderr, "train_link_pred: --servers is required (see --help)\n");
    return 2;
  }
  if (auto e = client::ParseFeatureEncoding(flags.Get("feature_encoding")); !e.ok()) {
    std::fprintf(stderr, "train_link_pred: --feature_encoding: %s\n", std::string(e.status().message()).c_str());
    return 2;
  }
  Task task;
  task.user_type = flags.Get("user_type");
  task.item_type = flags.Get("item_type");
  task.supervision = absl::StrCat(task.user_type, "__", flags.Get("relation"), "__", task.item_type);
  task.reverse = client::ReverseEdgeTypeName(task.supervision);
  task.hidden = *flags.GetInt("hidden");
  torch::manual_seed(*flags.GetInt("seed"));
  torch::set_num_threads(1);
  const client::LoaderOptions base = BaseOptions(flags, task);
  try {
    client::Loader train(TrainOptions(base, flags, task));
    client::Loader users(EmbedOptions(base, task.user_type));
    client::Loader items(EmbedOptions(base, task.item_type));
    if (!Describe(train.meta(), &task)) {
      std::fprintf(stderr, "train_link_pred: the dataset needs '%s' and '%s' nodes with features\n",
                   task.user_type.c_str(), task.item_type.c_str());
      return 2;
    }
    const auto val = Labels(base.servers, "val", task.user_type, task.supervision);
    const auto train_labels = Labels(base.servers, "train", task.user_type, task.supervision);
    const auto [seen, popularity] = RatedItems(train_labels, task);
    auto masked = [&seen = seen](torch::Tensor scores) { return scores.masked_fill(seen, -1e9); };
    const auto [pop_recall, pop_mrr] =
        RecallMrr(masked(popularity.unsqueeze(0).expand({task.num_users, task.num_items}).clone()), val, 20);
    std::printf("dataset '%s': %lld %s, %lld %s; %lld train anchors (%zu with labels), %zu val users, %zu server(s)\n",
                train.meta().dataset_name().c_str(), static_cast<long long>(task.num_users), task.user_type.c_str(),
                static_cast<long long>(task.num_items), task.item_type.c_str(),
                static_cast<long long>(train.num_seeds()), train_labels.size(), val.size(), base.servers.size());
    std::printf("popularity baseline: val recall@20 %.4f  MRR %.4f\n", pop_recall, pop_mrr);

    BipartiteSage model(task.user_dim, task.item_dim, task.num_users, task.num_items, task.hidden);
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(*flags.GetDouble("lr")));
    auto evaluate = [&, infer_epoch = int64_t{0}]() mutable {
      const auto [user_h, item_h] = EmbedAll(model, users, items, task, infer_epoch++);
      return RecallMrr(masked(user_h.matmul(item_h.t())), val, 20);
    };
    const auto [r0, m0] = evaluate();
    std::printf("before training: val recall@20 %.4f  MRR %.4f\n", r0, m0);
    for (int epoch = 0; epoch < *flags.GetInt("epochs"); ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto [loss, batches] = TrainEpoch(model, opt, train, task, epoch);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto [recall, mrr] = evaluate();
      std::printf("epoch %d: loss %.4f  val recall@20 %.4f  MRR %.4f  (popularity %.4f)  %lld batches, %.1f batches/s\n",
                  epoch, loss, recall, mrr, pop_recall, static_cast<long long>(batches), batches / secs);
      std::fflush(stdout);
    }
    users.Close();
    items.Close();
    if (*flags.GetBool("shutdown_servers")) {
      train.ShutdownServers();
      std::printf("asked the servers to shut down\n");
    } else {
      train.Close();
    }
  } catch (const client::Error& e) {
    std::fprintf(stderr, "train_link_pred: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
