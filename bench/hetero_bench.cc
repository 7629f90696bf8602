// Heterogeneous, link-prediction (ABLP) and PPR sampling throughput.
//
// A generated bipartite user -> item graph at ogbn-products scale (2.45M nodes: half users,
// half items; ~64M ratings-like edges stored both ways, so ~127M stored edges; 100 float
// features per node) beside the homogeneous products-scale graph of the same node and edge
// count, sampled in the same run with the same batch shape:
//
//   homogeneous   seeds -> 2 hops over the one edge type
//   hetero        user seeds -> items (user__buys__item) -> users (item__rev_buys__user)
//   ABLP          the same, seeds = anchors, each with its label items and generated negatives
//                 as extra seeds, label edges left out of message passing
//   PPR           forward push per seed, homogeneous and hetero
//
//   bazel build //bench:hetero_bench && bazel-bin/bench/hetero_bench [--scale=0.1]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>

#include "absl/strings/str_cat.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/sampling/ppr_sampler.h"
#include "common/flags.h"
#include "tools/generator.h"

namespace graphstore {
namespace {

constexpr int64_t kProductsNodes = 2449029;
constexpr double kProductsDegree = 52;

absl::StatusOr<std::string> Homogeneous(double scale, const std::string& cache) {
  const std::string dir = scale == 1.0 ? cache + "/products" : absl::StrCat(cache, "/products-", scale);
  if (std::filesystem::exists(dir + "/manifest.json")) return dir;
  GeneratorOptions o;
  o.num_nodes = static_cast<int64_t>(kProductsNodes * scale);
  o.avg_degree = kProductsDegree;
  o.num_classes = 47;
  o.feature_dim = 100;
  std::fprintf(stderr, "generating %s ...\n", dir.c_str());
  if (auto s = GenerateDataset(o, dir); !s.ok()) return s;
  return dir;
}

// Users with Pareto out-degrees (mean kProductsDegree, as the homogeneous generator) to
// uniformly drawn items, plus the reverse type; train labels: two edges of every tenth user.
absl::StatusOr<std::string> Bipartite(double scale, const std::string& cache) {
  const std::string dir = absl::StrCat(cache, "/bipartite-", scale);
  if (std::filesystem::exists(dir + "/manifest.json")) return dir;
  std::fprintf(stderr, "generating %s ...\n", dir.c_str());
  const int64_t n = static_cast<int64_t>(kProductsNodes * scale);
  GraphData g;
  g.name = "bipartite";
  NodeTypeData user, item;
  user.name = "user";
  user.num_nodes = n / 2;
  item.name = "item";
  item.num_nodes = n - n / 2;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> noise(-1, 1);
  for (NodeTypeData* t : {&user, &item}) {
    t->feature_dim = 100;
    t->features.resize(t->num_nodes * 100);
    for (float& f : t->features) f = noise(rng);
  }
  EdgeTypeData buys;
  buys.src_type = "user";
  buys.relation = "buys";
  buys.dst_type = "item";
  std::uniform_real_distribution<double> u01(1e-12, 1);
  std::uniform_int_distribution<int64_t> pick(0, item.num_nodes - 1);
  LabelEdges& train = buys.label_splits["train"];
  for (int64_t u = 0; u < user.num_nodes; ++u) {
    const double x_m = kProductsDegree / 2;  // Pareto, exponent 2, mean kProductsDegree
    const int64_t d = std::min<int64_t>(5000, static_cast<int64_t>(x_m / std::sqrt(u01(rng))));
    for (int64_t k = 0; k < d; ++k) {
      const int64_t i = pick(rng);
      buys.src.push_back(u);
      buys.dst.push_back(i);
      if (u % 10 == 0 && k < 2) {
        train.src.push_back(u);
        train.dst.push_back(i);
      }
    }
  }
  g.node_types = {std::move(user), std::move(item)};
  g.edge_types = {std::move(buys)};
  AddReverseEdgeTypes(&g);
  WriteOptions w;
  w.method = "single";
  if (auto s = WritePartitions(g, RandomAssignment(g, 1, 0), w, dir); !s.ok()) return s;
  return dir;
}

// Samples batches of `batch` seeds from `seeds` for `seconds`; returns seeds per second and the
// mean number of sampled nodes per batch.
struct Rate {
  double seeds_per_s = 0;
  double nodes_per_batch = 0;
  double edges_per_batch = 0;
};
Rate Measure(const Sampler& s, int node_type, const std::vector<int64_t>& seeds, int batch, double seconds,
             const std::function<const AblpBatch*(const int64_t*, size_t, int64_t)>& labels = nullptr) {
  auto scratch = s.NewScratch();
  SampledSubgraph g;
  const auto start = std::chrono::steady_clock::now();
  int64_t done = 0, nodes = 0, edges = 0, batches = 0;
  for (int64_t b = 0;; ++b) {
    const size_t begin = static_cast<size_t>(b * batch) % (seeds.size() - batch);
    SeedBatch sb;
    sb.node_type = node_type;
    sb.ids = seeds.data() + begin;
    sb.size = batch;
    sb.seed = 1;
    sb.batch_index = b;
    if (labels) sb.ablp = labels(sb.ids, sb.size, b);
    if (auto st = s.Sample(sb, scratch.get(), &g); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      std::exit(1);
    }
    done += batch;
    ++batches;
    for (const auto& n : g.nodes) nodes += static_cast<int64_t>(n.ids.size());
    edges += g.NumEdges();
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (t >= seconds) return {done / t, static_cast<double>(nodes) / batches, static_cast<double>(edges) / batches};
  }
}

// Reads one byte of every page of a partition's arrays, so that no measurement pays for page
// faults another one did not.
int64_t Touch(const Partition& p) {
  int64_t sum = 0;
  auto touch = [&](const MappedNpy& f) {
    if (!f.is_open()) return;
    const char* b = static_cast<const char*>(f.raw());
    const size_t bytes = static_cast<size_t>(f.num_elements()) * DtypeSize(f.dtype());
    for (size_t k = 0; k < bytes; k += 4096) sum += b[k];
  };
  for (const auto& t : p.node_types()) {
    for (const MappedNpy* f : {&t.ids, &t.book, &t.local, &t.features}) touch(*f);
  }
  for (const auto& e : p.edge_types()) {
    for (const MappedNpy* f : {&e.indptr, &e.indices, &e.edge_ids}) touch(*f);
  }
  return sum;
}

std::vector<int64_t> Shuffled(int64_t n, uint64_t seed) {
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  return ids;
}

// The two benchmark graphs, loaded and paged in.
struct Graphs {
  std::unique_ptr<Partition> homo, bip;
  std::vector<int64_t> homo_seeds, user_seeds;
};

absl::StatusOr<Graphs> LoadGraphs(double scale, const std::string& cache_dir) {
  auto homo_dir = Homogeneous(scale, cache_dir);
  if (!homo_dir.ok()) return homo_dir.status();
  auto bip_dir = Bipartite(scale, cache_dir);
  if (!bip_dir.ok()) return bip_dir.status();
  Graphs g;
  auto homo = Partition::Load(*homo_dir, {false});
  if (!homo.ok()) return homo.status();
  auto bip = Partition::Load(*bip_dir, {false});
  if (!bip.ok()) return bip.status();
  g.homo = *std::move(homo);
  g.bip = *std::move(bip);
  auto edges = [](const Partition& p) {
    int64_t m = 0;
    for (const auto& e : p.edge_types()) m += e.num_edges;
    return m;
  };
  std::printf("homogeneous: %lld nodes, %lld edges;  bipartite: %lld users + %lld items, %lld edges (both ways)\n",
              static_cast<long long>(g.homo->node_type(0).num_nodes), static_cast<long long>(edges(*g.homo)),
              static_cast<long long>(g.bip->node_type(0).num_nodes),
              static_cast<long long>(g.bip->node_type(1).num_nodes), static_cast<long long>(edges(*g.bip)));
  if (Touch(*g.homo) + Touch(*g.bip) == 42) std::printf(" ");
  g.homo_seeds = Shuffled(g.homo->node_type(0).num_nodes, 3);
  g.user_seeds = Shuffled(g.bip->node_type(0).num_nodes, 3);
  return g;
}

void PrintRow(const char* name, const Rate& r, const Rate& base) {
  std::printf("%-24s %12.0f seeds/s %10.0f nodes/batch %10.0f edges/batch   ratio to homogeneous %.2f\n", name,
              r.seeds_per_s, r.nodes_per_batch, r.edges_per_batch, r.seeds_per_s / base.seeds_per_s);
}

// Homogeneous, hetero and ABLP neighbour sampling with the same fanouts.
absl::Status NeighborFigures(const Graphs& g, const std::vector<int>& fanouts, int batch, int negatives,
                             bool by_degree, double seconds) {
  NeighborSamplerOptions ho;
  ho.fanouts = fanouts;
  ho.with_node_features = true;
  auto homo_sampler = NeighborSampler::Create(g.homo.get(), ho);
  if (!homo_sampler.ok()) return homo_sampler.status();
  NeighborSamplerOptions bo;
  std::vector<int> first(fanouts.size(), 0), second(fanouts.size(), 0);
  for (size_t h = 0; h < fanouts.size(); ++h) (h % 2 == 0 ? first : second)[h] = fanouts[h];
  bo.fanouts_by_type["user__buys__item"] = first;
  bo.fanouts_by_type["item__rev_buys__user"] = second;
  bo.with_node_features = true;
  auto bip_sampler = NeighborSampler::Create(g.bip.get(), bo);
  if (!bip_sampler.ok()) return bip_sampler.status();
  const Rate h = Measure(**homo_sampler, 0, g.homo_seeds, batch, seconds);
  const Rate x = Measure(**bip_sampler, 0, g.user_seeds, batch, seconds);

  AblpRequest req;
  req.split = "train";
  req.node_type = "user";
  req.supervision_edge_type = "user__buys__item";
  auto input = LoadAblpInput(*g.bip, req);
  if (!input.ok()) return input.status();
  NegativeOptions neg;
  neg.kind = by_degree ? NegativeOptions::Kind::kDegree : NegativeOptions::Kind::kUniform;
  neg.num = negatives;
  std::vector<int64_t> anchors = input->anchors;
  std::shuffle(anchors.begin(), anchors.end(), std::mt19937_64(3));
  auto labeler = AblpLabeler::Create(g.bip.get(), *std::move(input), neg);
  if (!labeler.ok()) return labeler.status();
  AblpBatch labels;
  const Rate a = Measure(**bip_sampler, 0, anchors, batch, seconds, [&](const int64_t* ids, size_t n, int64_t b) {
    if (!(*labeler)->MakeBatch(ids, n, 1, 0, b, &labels).ok()) std::exit(1);
    return &labels;
  });
  PrintRow("homogeneous (baseline)", h, h);
  PrintRow("hetero (user seeds)", x, h);
  PrintRow("ABLP (anchors)", a, h);
  std::printf("ABLP: %d %s negatives per anchor, 2 positives for most anchors; seeds above count anchors\n\n", neg.num,
              by_degree ? "degree" : "uniform");
  return absl::OkStatus();
}

absl::Status PprFigures(const Graphs& g, const PprSamplerOptions& po, int batch, double seconds) {
  auto homo_ppr = PprSampler::Create(g.homo.get(), po);
  if (!homo_ppr.ok()) return homo_ppr.status();
  auto bip_ppr = PprSampler::Create(g.bip.get(), po);
  if (!bip_ppr.ok()) return bip_ppr.status();
  const Rate ph = Measure(**homo_ppr, 0, g.homo_seeds, batch, seconds);
  const Rate px = Measure(**bip_ppr, 0, g.user_seeds, batch, seconds);
  std::printf("PPR (alpha %g, eps %g, %d nodes per seed, batch %d):\n", po.alpha, po.eps, po.max_nodes_per_seed, batch);
  std::printf("%-24s %12.0f seeds/s %10.0f nodes/batch\n", "PPR homogeneous", ph.seeds_per_s, ph.nodes_per_batch);
  std::printf("%-24s %12.0f seeds/s %10.0f nodes/batch   ratio to homogeneous %.2f\n", "PPR hetero", px.seeds_per_s,
              px.nodes_per_batch, px.seeds_per_s / ph.seeds_per_s);
  return absl::OkStatus();
}

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("scale", "1", "fraction of ogbn-products' size (1: 2.45M nodes, ~127M stored edges)");
  flags.Define("cache_dir", "/tmp/graphstore-bench", "where generated graphs are kept between runs");
  flags.Define("seconds", "4", "duration of each measurement");
  flags.Define("batch_size", "1024", "seeds (anchors) per batch");
  flags.Define("fanouts", "15,10", "fanout per hop (per edge type on the bipartite graph)");
  flags.Define("negatives", "4", "generated negatives per anchor (ABLP)");
  flags.Define("negative_sampling", "uniform", "how ABLP draws them: uniform or degree");
  flags.Define("ppr_batch", "64", "seeds per PPR batch");
  flags.Define("ppr_alpha", "0.15", "PPR restart probability");
  flags.Define("ppr_eps", "1e-4", "PPR residual threshold");
  flags.Define("ppr_max_nodes", "32", "PPR nodes kept per seed");
  if (auto exit = flags.ParseCommandLine(argc, argv, "hetero_bench", "Hetero, ABLP and PPR sampling throughput.")) {
    return *exit;
  }
  const double seconds = *flags.GetDouble("seconds");
  const int batch = static_cast<int>(*flags.GetInt("batch_size"));
  std::vector<int> fanouts;
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) fanouts.push_back(std::stoi(f));
  auto graphs = LoadGraphs(*flags.GetDouble("scale"), flags.Get("cache_dir"));
  if (!graphs.ok()) {
    std::fprintf(stderr, "%s\n", graphs.status().ToString().c_str());
    return 1;
  }
  std::printf("batch %d, fanouts %s, 100 float features gathered, one thread, %.0f s per figure\n\n", batch,
              flags.Get("fanouts").c_str(), seconds);
  const std::string negative_sampling = flags.Get("negative_sampling");
  if (negative_sampling != "uniform" && negative_sampling != "degree") {
    std::fprintf(stderr, "--negative_sampling must be uniform or degree, got '%s'\n", negative_sampling.c_str());
    return 1;
  }
  if (auto s = NeighborFigures(*graphs, fanouts, batch, static_cast<int>(*flags.GetInt("negatives")),
                               negative_sampling == "degree", seconds);
      !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  PprSamplerOptions po;
  po.alpha = *flags.GetDouble("ppr_alpha");
  po.eps = *flags.GetDouble("ppr_eps");
  po.max_nodes_per_seed = static_cast<int>(*flags.GetInt("ppr_max_nodes"));
  po.with_node_features = true;
  if (auto s = PprFigures(*graphs, po, static_cast<int>(*flags.GetInt("ppr_batch")), seconds); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
