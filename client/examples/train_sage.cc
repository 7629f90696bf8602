// Trains a GraphSAGE node classifier through graphstore: sampled subgraphs stream from the
// storage servers, the model trains on CPU with LibTorch, and accuracy is reported per epoch.
//
//   train_sage --servers=127.0.0.1:PORT --epochs=5 [--weighted] [--temporal=uniform|last]

#include "client/loader.h"  // LibTorch first (see loader.h)

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/flags.h"

namespace graphstore {
namespace {

// h'_v = W_self h_v + W_neigh mean_{u -> v} h_u, over the sampled edges.
struct SageLayerImpl : torch::nn::Module {
  SageLayerImpl(int64_t in, int64_t out)
      : self(register_module("self", torch::nn::Linear(in, out))),
        neigh(register_module("neigh", torch::nn::Linear(in, out))) {}

  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& src, const torch::Tensor& dst) {
    const int64_t n = h.size(0);
    auto sum = torch::zeros({n, h.size(1)}, h.options()).index_add_(0, dst, h.index_select(0, src));
    auto deg = torch::zeros({n}, h.options()).index_add_(0, dst, torch::ones({dst.size(0)}, h.options()));
    return self(h) + neigh(sum / deg.clamp_min(1).unsqueeze(1));
  }

  torch::nn::Linear self, neigh;
};
TORCH_MODULE(SageLayer);

struct SageImpl : torch::nn::Module {
  SageImpl(int64_t in, int64_t hidden, int64_t classes)
      : l1(register_module("l1", SageLayer(in, hidden))), l2(register_module("l2", SageLayer(hidden, classes))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& src, const torch::Tensor& dst) {
    auto h = torch::relu(l1->forward(x, src, dst));
    h = torch::dropout(h, 0.2, is_training());
    return l2->forward(h, src, dst);
  }

  SageLayer l1, l2;
};
TORCH_MODULE(Sage);

// One pass over an epoch's batches: trains when `opt` is given, else only scores. Returns
// (mean loss, accuracy, batches); the loss and accuracy count each batch's seeds only.
struct EpochResult {
  double loss = 0;
  double accuracy = 0;
  int64_t batches = 0;
  // How far each batch's label mix is from the epoch's: the mean over batches of the total
  // variation distance between the batch's seed-label histogram and the whole epoch's (0: every
  // batch holds the classes in the split's proportions; a batch of one class out of many: ~1).
  double label_mix_distance = 0;
};

// Mean total variation distance between each batch's seed-label histogram and all batches'.
double LabelMixDistance(const std::vector<torch::Tensor>& histograms) {
  if (histograms.empty()) return 0;
  auto total = torch::stack(histograms).sum(0);
  auto p = total / total.sum().clamp_min(1);
  double sum = 0;
  for (const auto& h : histograms) sum += 0.5 * (h / h.sum().clamp_min(1) - p).abs().sum().item<double>();
  return sum / static_cast<double>(histograms.size());
}

EpochResult RunEpoch(Sage& model, client::Loader& loader, int64_t epoch, torch::optim::Optimizer* opt,
                     int64_t classes) {
  double loss_sum = 0;
  int64_t right = 0, seen = 0;
  EpochResult r;
  std::vector<torch::Tensor> histograms;
  loader.StartEpoch(epoch);
  while (auto b = loader.Next()) {
    // edge_index points from each sampled neighbour to the node that sampled it.
    const int64_t s = b->batch_size;
    auto logits = model->forward(b->x, b->edge_index[0], b->edge_index[1]).narrow(0, 0, s);
    auto y = b->y.narrow(0, 0, s);
    histograms.push_back(torch::bincount(y, {}, classes).to(torch::kFloat64));
    if (opt != nullptr) {
      auto loss = torch::nn::functional::cross_entropy(logits, y);
      opt->zero_grad();
      loss.backward();
      opt->step();
      loss_sum += loss.item<double>() * s;
    }
    right += logits.argmax(1).eq(y).sum().item<int64_t>();
    seen += s;
    ++r.batches;
  }
  r.loss = loss_sum / std::max<int64_t>(1, seen);
  r.accuracy = static_cast<double>(right) / std::max<int64_t>(1, seen);
  r.label_mix_distance = LabelMixDistance(histograms);
  return r;
}

// The training and validation loaders the flags describe.
std::pair<client::LoaderOptions, client::LoaderOptions> LoaderOptionsFrom(const Flags& flags) {
  client::LoaderOptions base;
  base.servers = SplitList(flags.Get("servers"), ',');
  base.config.set_batch_size(static_cast<int>(*flags.GetInt("batch_size")));
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) base.config.add_num_neighbors(std::stoi(f));
  base.config.set_with_node_features(true);
  base.config.set_with_labels(true);
  base.seed = static_cast<uint64_t>(*flags.GetInt("seed"));
  base.feature_encoding = client::ParseFeatureEncoding(flags.Get("feature_encoding")).value_or(base.feature_encoding);
  base.feature_cache_rows = *flags.GetInt("feature_cache_rows");
  base.global_batches = *flags.GetBool("global_batches");
  // Loaders that share a backend key must ask for the same batches: one key per way of sampling.
  std::string key = "train_sage/";
  if (*flags.GetBool("weighted")) {
    base.config.add_weighted_edge_types("*");
    key += "weighted";
  } else {
    key += "uniform";
  }
  const std::string temporal = flags.Get("temporal");
  if (!temporal.empty()) {
    base.config.set_temporal_strategy(temporal == "last" ? v1::TEMPORAL_STRATEGY_LAST : v1::TEMPORAL_STRATEGY_UNIFORM);
    key += "/" + temporal;
  }
  client::LoaderOptions train = base;
  train.backend_key = key + "/train";
  train.config.set_shuffle(true);
  train.split = "train";
  train.worker_key = "train_sage:train";
  client::LoaderOptions val = base;
  val.backend_key = key + "/val";
  val.split = "val";
  val.worker_key = "train_sage:val";
  return {train, val};
}

void PrintDataset(const client::Loader& train, const client::Loader& val, size_t servers,
                  const v1::SamplingConfig& config) {
  const auto& meta = train.meta();
  const auto& nt = meta.node_types(0);
  std::printf("dataset '%s': %lld nodes, %lld features, %lld classes; %lld train / %lld val seeds on %zu server(s)\n",
              meta.dataset_name().c_str(), static_cast<long long>(nt.num_nodes()),
              static_cast<long long>(nt.features().dim()), static_cast<long long>(nt.num_classes()),
              static_cast<long long>(train.num_seeds()), static_cast<long long>(val.num_seeds()), servers);
  std::printf("transport: shared memory from %d of %zu server(s), bytes in messages from the rest\n",
              train.num_shared_memory_servers(), servers);
  std::string sampling = config.weighted_edge_types_size() > 0 ? "weighted" : "uniform";
  if (config.temporal_strategy() == v1::TEMPORAL_STRATEGY_LAST) {
    sampling += ", temporal (last, seeds at their node times)";
  } else if (config.temporal_strategy() == v1::TEMPORAL_STRATEGY_UNIFORM) {
    sampling += ", temporal (uniform, seeds at their node times)";
  }
  std::printf("neighbour sampling: %s\n", sampling.c_str());
  std::printf("chance accuracy: %.3f\n", 1.0 / std::max<int64_t>(1, nt.num_classes()));
}

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("servers", "", "comma-separated host:port of every server, in partition order");
  flags.Define("epochs", "5", "training epochs");
  flags.Define("batch_size", "256", "seeds per batch");
  flags.Define("fanouts", "10,5", "neighbours per hop");
  flags.Define("hidden", "64", "hidden units");
  flags.Define("lr", "0.005", "Adam learning rate");
  flags.Define("seed", "0", "sampling and initialisation seed");
  flags.Define("feature_encoding", "", "feature rows on the wire: float32, float16, bfloat16, int8, int4, int2 or int1");
  flags.Define("feature_cache_rows", "0", "feature rows of the hottest nodes kept on the trainer (0: none)");
  flags.Define("weighted", "false", "draw neighbours in proportion to the stored edge weights");
  flags.Define("temporal", "",
               "\"uniform\" or \"last\": sample each seed at its node time, among the neighbours up to then or the "
               "latest of them");
  flags.Define("global_batches", "true",
               "batches formed over the whole cluster's seeds, as one server holding the graph would form them; false: "
               "each server batches the seeds it owns");
  flags.Define("shutdown_servers", "false", "call Exit on every server when done");
  if (auto exit = flags.ParseCommandLine(argc, argv, "train_sage", "Trains GraphSAGE through graphstore.")) {
    return *exit;
  }
  if (flags.Get("servers").empty()) {
    std::fprintf(stderr, "train_sage: --servers is required (see --help)\n");
    return 2;
  }
  if (auto e = client::ParseFeatureEncoding(flags.Get("feature_encoding")); !e.ok()) {
    std::fprintf(stderr, "train_sage: --feature_encoding: %s\n", std::string(e.status().message()).c_str());
    return 2;
  }
  if (const std::string t = flags.Get("temporal"); !t.empty() && t != "uniform" && t != "last") {
    std::fprintf(stderr, "train_sage: --temporal must be uniform or last, got '%s'\n", t.c_str());
    return 2;
  }
  for (const char* name : {"weighted", "global_batches", "shutdown_servers"}) {
    if (auto w = flags.GetBool(name); !w.ok()) {
      std::fprintf(stderr, "train_sage: %s\n", std::string(w.status().message()).c_str());
      return 2;
    }
  }
  const int epochs = static_cast<int>(*flags.GetInt("epochs"));
  torch::manual_seed(*flags.GetInt("seed"));
  torch::set_num_threads(1);
  const auto [train_opts, val_opts] = LoaderOptionsFrom(flags);
  try {
    client::Loader train(train_opts);
    client::Loader val(val_opts);
    PrintDataset(train, val, train_opts.servers.size(), train_opts.config);
    const auto& nt = train.meta().node_types(0);
    Sage model(nt.features().dim(), *flags.GetInt("hidden"), nt.num_classes());
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(*flags.GetDouble("lr")));
    for (int epoch = 0; epoch < epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      model->train();
      const EpochResult t = RunEpoch(model, train, epoch, &opt, nt.num_classes());
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      model->eval();
      torch::NoGradGuard no_grad;
      const EpochResult v = RunEpoch(model, val, epoch, nullptr, nt.num_classes());
      std::printf("epoch %d: loss %.4f  train acc %.3f  val acc %.3f  (%lld batches, %.1f batches/s, label mix "
                  "distance %.3f)\n",
                  epoch, t.loss, t.accuracy, v.accuracy, static_cast<long long>(t.batches), t.batches / secs,
                  t.label_mix_distance);
      std::fflush(stdout);
    }
    val.Close();
    if (*flags.GetBool("shutdown_servers")) {
      train.ShutdownServers();
      std::printf("asked the servers to shut down\n");
    } else {
      train.Close();
    }
  } catch (const client::Error& e) {
    std::fprintf(stderr, "train_sage: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
