// The C++ side of the Python package's message-passing check: reads one epoch through the C++
// client::Loader and writes, per batch, its node ids and the output of a fixed mean-aggregation
// layer (written in plain LibTorch) on the batch's edge_index. python_loader_test.py computes
// the same layer on the Python batch of the same (seed, epoch, batch) and compares.
//
//   mp_reference --servers=H:P[,H:P] --epoch=0 --batch_size=64 --fanouts=10,5 --seed=1 --out=DIR
// Writes DIR/<batch_index>.n_id (int64) and DIR/<batch_index>.out (float32 [n, 4]).

#include "client/loader.h"  // LibTorch first (see loader.h)

#include <cstdio>
#include <fstream>

#include "common/flags.h"

namespace graphstore {
namespace {

// out_v = h_v + mean_{u -> v} h_u with h = x W, W fixed: [dim, 4] of (i % 7 - 3) / 10.
torch::Tensor Layer(const torch::Tensor& x, const torch::Tensor& edge_index) {
  const int64_t dim = x.size(1);
  auto w = (torch::arange(dim * 4, torch::kInt64).remainder(7) - 3).to(torch::kFloat32).div(10).view({dim, 4});
  auto h = x.matmul(w);
  auto src = edge_index[0], dst = edge_index[1];
  auto sum = torch::zeros_like(h).index_add_(0, dst, h.index_select(0, src));
  auto deg = torch::zeros({h.size(0)}).index_add_(0, dst, torch::ones({dst.size(0)}));
  return h + sum / deg.clamp_min(1).unsqueeze(1);
}

void Write(const std::string& path, const torch::Tensor& t) {
  auto c = t.contiguous();
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
}

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("servers", "", "host:port of every server");
  flags.Define("epoch", "0", "epoch to read");
  flags.Define("batch_size", "64", "seeds per batch");
  flags.Define("fanouts", "10,5", "neighbours per hop");
  flags.Define("seed", "0", "channel seed");
  flags.Define("out", "", "output directory");
  if (auto exit = flags.ParseCommandLine(argc, argv, "mp_reference", "Message passing on C++ Loader batches.")) {
    return *exit;
  }
  client::LoaderOptions o;
  o.servers = SplitList(flags.Get("servers"), ',');
  o.config.set_batch_size(static_cast<int>(*flags.GetInt("batch_size")));
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) o.config.add_num_neighbors(std::stoi(f));
  o.config.set_shuffle(true);
  o.config.set_with_node_features(true);
  o.seed = static_cast<uint64_t>(*flags.GetInt("seed"));
  o.backend_key = "mp_reference";
  o.worker_key = "mp_reference";
  try {
    client::Loader loader(o);
    loader.StartEpoch(*flags.GetInt("epoch"));
    int batches = 0;
    while (auto b = loader.Next()) {
      const std::string base = flags.Get("out") + "/" + std::to_string(b->batch_index) + "." + std::to_string(b->server);
      Write(base + ".n_id", b->n_id);
      Write(base + ".out", Layer(b->x, b->edge_index));
      ++batches;
    }
    std::printf("%d batches\n", batches);
  } catch (const client::Error& e) {
    std::fprintf(stderr, "mp_reference: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
