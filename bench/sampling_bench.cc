// Sampling throughput against the machine's random-access baseline.
//
// For each graph: independent random 8-byte loads over the graph's CSR index array (same size,
// same memory), then k-hop neighbour sampling of random 1024-seed batches with fanout
// [15, 10, 5], on each thread count of --threads (default 1 and 2; e.g. --threads=1,2,4,8,16
// on a storage node), alternated with the loads for --rounds rounds (the median round in the
// table, the ranges below it); then the same sampling through the scheduler's Backend with as
// many workers. Each count prints its scaling against 1 thread.
// Prints sampled edges/s, seeds/s, the baseline loads/s and their ratio. Then weighted draws
// (by the graph's edge weights) beside uniform ones, without and with replacement, and temporal
// draws (each seed at its node time, uniform among the allowed and the most recent) beside
// uniform ones on the same graph, on 1 thread. Section c (not run by default; alone, it loads
// no graph) measures the same random loads over arrays of 20 MB to 640 MB: what a draw's
// random reads cost by the size of the array they fall in. Section g (not run by default) times
// the feature gather of sampled batches (server/sampling/gather.cc, which reads each row some
// nodes ahead of its copy) against the same rows copied one after another.
//
//   bazel run -c opt //bench:sampling_bench -- --graphs=1m,products
//   bazel run -c opt //bench:sampling_bench -- --sections=c

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_graphs.h"
#include "scheduler/backend.h"
#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/gather.h"
#include "server/sampling/neighbor_sampler.h"
#include "common/flags.h"
#include "server/util/huge_pages.h"

namespace graphstore {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Independent random loads from `data` on `threads` threads for `seconds`; loads per second.
double RandomLoads(const int64_t* data, int64_t n, int threads, double seconds) {
  std::atomic<int64_t> total{0};
  std::atomic<int64_t> sink{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      uint64_t x = Mix64(t + 1);
      int64_t loads = 0;
      int64_t acc = 0;
      const auto start = Clock::now();
      while (Seconds(start) < seconds) {
        for (int i = 0; i < (1 << 16); ++i) {
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
          acc += data[static_cast<uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64)];
        }
        loads += 1 << 16;
      }
      total += loads;
      sink += acc;
    });
  }
  const auto start = Clock::now();
  for (auto& th : pool) th.join();
  const double elapsed = Seconds(start);
  if (sink.load() == 42) std::printf(" ");
  return total.load() / elapsed;
}

struct Rate {
  double edges_per_s = 0;
  double seeds_per_s = 0;
  double batches_per_s = 0;
};

std::vector<int64_t> RandomSeeds(uint64_t key, int64_t num_nodes, int batch_size) {
  DrawStream rng(key);
  std::vector<int64_t> seeds(batch_size);
  for (auto& s : seeds) s = static_cast<int64_t>(rng.Below(num_nodes));
  return seeds;
}

// Direct sampling on `threads` threads, each with its own scratch.
// `at_time`: temporal samplers get every seed at this time (default: the seeds' node times).
Rate SampleDirect(const NeighborSampler& sampler, int64_t num_nodes, int batch_size, int threads,
                  double seconds, std::optional<int64_t> at_time = std::nullopt) {
  std::atomic<int64_t> edges{0}, seeds{0}, batches{0};
  std::vector<std::thread> pool;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto scratch = sampler.NewScratch();
      SampledSubgraph out;
      std::vector<int64_t> times(at_time.has_value() ? batch_size : 0, at_time.value_or(0));
      int64_t b = 0;
      int64_t my_edges = 0;
      while (Seconds(start) < seconds) {
        const auto ids = RandomSeeds(HashCombine(t, b), num_nodes, batch_size);
        SeedBatch batch;
        batch.ids = ids.data();
        batch.size = ids.size();
        if (at_time.has_value()) batch.times = times.data();
        batch.seed = 1;
        batch.batch_index = b++;
        if (!sampler.Sample(batch, scratch.get(), &out).ok()) std::abort();
        my_edges += out.NumEdges();
      }
      edges += my_edges;
      seeds += b * batch_size;
      batches += b;
    });
  }
  for (auto& th : pool) th.join();
  const double elapsed = Seconds(start);
  return {edges / elapsed, seeds / elapsed, batches / elapsed};
}

// The same sampling through the scheduler: one channel holding enough seeds for the run,
// popped as fast as possible by the calling thread.
Rate SampleBackend(const NeighborSampler& sampler, int64_t num_nodes, int batch_size, int threads,
                   double seconds) {
  std::vector<std::unique_ptr<SamplerScratch>> scratch;
  for (int i = 0; i < threads; ++i) scratch.push_back(sampler.NewScratch());
  std::atomic<int64_t> edges{0};
  scheduler::BackendOptions bo;
  bo.num_workers = threads;
  bo.max_in_flight_per_channel = threads;
  bo.max_buffered_messages = 4 * threads;
  scheduler::Backend backend(bo, [&](const scheduler::BatchTask& t) -> absl::StatusOr<scheduler::Batch> {
    auto out = std::make_shared<SampledSubgraph>();
    SeedBatch b;
    b.ids = t.seeds;
    b.size = t.num_seeds;
    b.seed = t.seed;
    b.epoch = t.epoch;
    b.batch_index = t.batch_index;
    if (auto s = sampler.Sample(b, scratch[t.worker].get(), out.get()); !s.ok()) return s;
    edges += out->NumEdges();
    return scheduler::Batch{out, out->ByteSize()};
  });
  scheduler::ChannelOptions co;
  co.seeds = RandomSeeds(99, num_nodes, batch_size * 2000);
  co.batch_size = batch_size;
  co.order = [](int64_t epoch, int64_t n, int64_t first, size_t count, int64_t* out) {
    EpochPositions(0, epoch, n, first, count, out);
  };
  if (!backend.AddChannel(1, co).ok() || !backend.StartEpoch(1, 0).ok()) std::abort();
  int64_t batches = 0;
  const auto start = Clock::now();
  while (Seconds(start) < seconds) {
    auto d = backend.Pop(1, 0, std::chrono::seconds(30));
    if (d.kind != scheduler::Delivery::Kind::kMessage) break;
    ++batches;
  }
  const double elapsed = Seconds(start);
  const int64_t delivered_edges = edges.load();
  backend.Stop();
  return {delivered_edges / elapsed, batches * batch_size / elapsed, batches / elapsed};
}

// `a` (the baseline) and `b` run alternately, the best of three runs each (the machine is
// shared, and its speed drifts by more than the differences measured); prints both with their
// edges per seed, b / a in sampled edges/s, and b / a in seeds/s (which differs when b's draws
// keep fewer edges a seed, as temporal draws at node times do).
void Compare(const std::string& label, const std::string& what, const char* a_name, const std::function<Rate()>& a,
             const char* b_name, const std::function<Rate()>& b) {
  Rate best_a, best_b;
  for (int round = 0; round < 3; ++round) {
    const Rate ra = a(), rb = b();
    if (ra.edges_per_s > best_a.edges_per_s) best_a = ra;
    if (rb.edges_per_s > best_b.edges_per_s) best_b = rb;
  }
  std::printf(
      "%-10s %s, 1 thread: %s %.3g edges/s (%.0f per seed), %s %.3g edges/s (%.0f per seed), ratio %.2f "
      "(seeds/s %.2f)\n",
      label.c_str(), what.c_str(), a_name, best_a.edges_per_s, best_a.edges_per_s / best_a.seeds_per_s, b_name,
      best_b.edges_per_s, best_b.edges_per_s / best_b.seeds_per_s, best_b.edges_per_s / best_a.edges_per_s,
      best_b.seeds_per_s / best_a.seeds_per_s);
  std::fflush(stdout);
}

void DefineFlags(Flags* flags) {
  flags->Define("graphs", "1m,products", "comma list of 1m (1M nodes, ~25M edges), products (2.45M, ~125M), or DIRs");
  flags->Define("cache_dir", "/tmp/graphstore-bench", "where generated graphs are kept between runs");
  flags->Define("seconds", "4", "duration of each measurement");
  flags->Define("batch_size", "1024", "seeds per batch");
  flags->Define("fanouts", "15,10,5", "fanout per hop");
  flags->Define("threads", "1,2", "section u: thread counts to measure (direct and through the backend)");
  flags->Define("rounds", "5",
                "section u: rounds of the random loads and direct sampling, alternated so that both meet the same "
                "moments of a shared machine; the table shows the median round, a line below it the ranges");
  flags->Define("sections", "uwt",
               "what to run: u (uniform vs random loads), w (weighted), t (temporal), c (random loads by array size), "
               "g (feature gather vs rows copied one by one)");
}

// One graph's sampling runs: its name in the output, the partition, the sampler's options.
struct GraphRun {
  std::string label;
  const Partition* partition;
  NeighborSamplerOptions so;
  int64_t num_nodes;
  int batch_size;
  double seconds;
  int rounds;
};

// The median and the range of a run of figures.
struct Spread {
  double median = 0, low = 0, high = 0;
};
Spread SpreadOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return Spread{v[v.size() / 2], v.front(), v.back()};
}

// Uniform sampling at each thread count, directly and through the backend, against random loads.
void UniformSection(const GraphRun& g, const NeighborSampler& sampler, const std::vector<int>& thread_counts) {
  const EdgeTypeStore& e = g.partition->edge_type(0);
  double one_thread_edges = 0;
  for (int threads : thread_counts) {
    // The baseline and the sampler in turn, `rounds` times: the ratio of each pair is measured
    // at one moment of the machine, and the table shows the round of the median ratio.
    std::vector<double> loads, edges, ratios;
    std::vector<Rate> rates;
    for (int r = 0; r < g.rounds; ++r) {
      loads.push_back(RandomLoads(e.indices_data(), e.num_local, threads, g.seconds));
      rates.push_back(SampleDirect(sampler, g.num_nodes, g.batch_size, threads, g.seconds));
      edges.push_back(rates.back().edges_per_s);
      ratios.push_back(edges.back() / loads.back());
    }
    const Spread ratio = SpreadOf(ratios);
    const size_t median = static_cast<size_t>(std::find(ratios.begin(), ratios.end(), ratio.median) - ratios.begin());
    const Rate direct = rates[median];
    if (threads == 1) one_thread_edges = SpreadOf(edges).median;
    std::printf("%-10s %8s %8d %7.1f %14.3g %12.3g %14.3g %7.2f\n", g.label.c_str(), "direct", threads,
                direct.batches_per_s, direct.edges_per_s, direct.seeds_per_s, loads[median], ratio.median);
    if (g.rounds > 1) {
      const Spread e_spread = SpreadOf(edges), l_spread = SpreadOf(loads);
      std::printf("%-10s %d rounds, %d thread(s): edges/s median %.3g (%.3g-%.3g), rand loads/s median %.3g "
                  "(%.3g-%.3g), ratio median %.2f (%.2f-%.2f)\n",
                  g.label.c_str(), g.rounds, threads, e_spread.median, e_spread.low, e_spread.high, l_spread.median,
                  l_spread.low, l_spread.high, ratio.median, ratio.low, ratio.high);
    }
    const Rate sched = SampleBackend(sampler, g.num_nodes, g.batch_size, threads, g.seconds);
    std::printf("%-10s %8s %8d %7.1f %14.3g %12.3g %14.3g %7.2f\n", g.label.c_str(), "backend", threads,
                sched.batches_per_s, sched.edges_per_s, sched.seeds_per_s, loads[median],
                sched.edges_per_s / loads[median]);
    if (threads > 1) {
      std::printf("%-10s scaling %d threads / 1 thread: direct %.2fx, backend %.2fx (%u cores)\n", g.label.c_str(),
                  threads, direct.edges_per_s / one_thread_edges, sched.edges_per_s / one_thread_edges,
                  std::thread::hardware_concurrency());
    }
    std::fflush(stdout);
  }
}

// Weighted draws against uniform ones, without and with replacement; false if a sampler fails.
bool WeightedSection(const GraphRun& g) {
  for (bool replace : {false, true}) {
    NeighborSamplerOptions uo = g.so;
    uo.replace = replace;
    NeighborSamplerOptions wo = uo;
    wo.weighted_edge_types = {"*"};
    auto uniform = NeighborSampler::Create(g.partition, uo);
    auto weighted = NeighborSampler::Create(g.partition, wo);
    if (!uniform.ok() || !weighted.ok()) return false;
    Compare(
        g.label, absl::StrCat("weighted vs uniform, ", replace ? "with" : "without", " replacement"), "uniform",
        [&] { return SampleDirect(**uniform, g.num_nodes, g.batch_size, 1, g.seconds); }, "weighted",
        [&] { return SampleDirect(**weighted, g.num_nodes, g.batch_size, 1, g.seconds); });
  }
  return true;
}

// Temporal draws against uniform ones: seeds at their node times (rows cut where the neighbours
// are newer), and seeds after every edge (the same edges as uniform: the time filter's own cost).
bool TemporalSection(const GraphRun& g) {
  for (bool at_end : {false, true}) {
    for (TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
      NeighborSamplerOptions to = g.so;
      to.temporal = strategy;
      auto uniform = NeighborSampler::Create(g.partition, g.so);
      auto temporal = NeighborSampler::Create(g.partition, to);
      if (!uniform.ok() || !temporal.ok()) return false;
      const std::optional<int64_t> at = at_end ? std::optional<int64_t>(INT64_MAX) : std::nullopt;
      Compare(
          g.label,
          absl::StrCat("temporal (", strategy == TemporalStrategy::kLast ? "last" : "uniform", ") vs uniform, ",
                       at_end ? "seeds after every edge" : "seeds at their node times"),
          "uniform", [&] { return SampleDirect(**uniform, g.num_nodes, g.batch_size, 1, g.seconds); }, "temporal",
          [&] { return SampleDirect(**temporal, g.num_nodes, g.batch_size, 1, g.seconds, at); });
    }
  }
  return true;
}

// The feature rows of sampled batches: the gather (node order, reading rows ahead) against the
// baseline of the same rows copied one after another, into the same buffer; best of 3 rounds.
bool GatherSection(const GraphRun& g, const NeighborSampler& sampler) {
  const NodeTypeStore& t = g.partition->node_type(0);
  if (t.feature_dim == 0) return true;
  const size_t row_bytes = static_cast<size_t>(t.feature_dim) * DtypeSize(t.feature_dtype);
  auto scratch = sampler.NewScratch();
  std::vector<SampledSubgraph> batches(16);
  int64_t rows = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    const auto ids = RandomSeeds(HashCombine(77, b), g.num_nodes, g.batch_size);
    SeedBatch batch;
    batch.ids = ids.data();
    batch.size = ids.size();
    batch.seed = 1;
    batch.batch_index = static_cast<int64_t>(b);
    if (!sampler.Sample(batch, scratch.get(), &batches[b]).ok()) return false;
    rows += static_cast<int64_t>(batches[b].nodes[0].ids.size());
  }
  const char* src = static_cast<const char*>(t.features.raw());
  std::vector<char> dst;
  auto one_by_one = [&] {
    for (const SampledSubgraph& s : batches) {
      const std::vector<int64_t>& ids = s.nodes[0].ids;
      if (dst.size() < ids.size() * row_bytes) dst.resize(ids.size() * row_bytes);
      for (size_t i = 0; i < ids.size(); ++i) std::memcpy(dst.data() + i * row_bytes, src + ids[i] * row_bytes, row_bytes);
    }
  };
  auto gather = [&] {
    for (SampledSubgraph& s : batches) {
      if (!GatherSubgraphData(*g.partition, true, false, nullptr, nullptr, nullptr, &s).ok()) return false;
    }
    return true;
  };
  double best_base = 0, best_gather = 0;
  for (int round = 0; round < 4; ++round) {  // the first round warms both
    auto start = Clock::now();
    one_by_one();
    const double base = rows / Seconds(start);
    start = Clock::now();
    if (!gather()) return false;
    const double gathered = rows / Seconds(start);
    if (round == 0) continue;
    best_base = std::max(best_base, base);
    best_gather = std::max(best_gather, gathered);
  }
  std::printf("%-10s feature gather, %zu-byte rows of %zu sampled batches, 1 thread: one by one (baseline) %.3g rows/s, "
              "gather %.3g rows/s (%.2f GB/s), ratio %.2f\n",
              g.label.c_str(), row_bytes, batches.size(), best_base, best_gather, best_gather * row_bytes / 1e9,
              best_gather / best_base);
  std::fflush(stdout);
  return true;
}

int Run(int argc, char** argv) {
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "sampling_bench", "Sampling throughput vs random loads.")) {
    return *exit;
  }
  const double seconds = *flags.GetDouble("seconds");
  const std::string sections = flags.Get("sections");
  auto section = [&](char c) { return sections.find(c) != std::string::npos; };
  const int batch_size = static_cast<int>(*flags.GetInt("batch_size"));
  std::vector<int> fanouts;
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) fanouts.push_back(std::stoi(f));
  std::vector<int> thread_counts;
  for (const auto& t : SplitList(flags.Get("threads"), ',')) thread_counts.push_back(std::max(1, std::stoi(t)));
  if (thread_counts.empty() || thread_counts.front() != 1) thread_counts.insert(thread_counts.begin(), 1);

  if (section('c')) {
    // One array, loads over prefixes of it (huge pages where the kernel gives them).
    constexpr int64_t kMiB = int64_t{1} << 20;
    HugePageVector<int64_t> data(static_cast<size_t>(640 * kMiB / 8));
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int64_t>(i);
    for (int64_t mb : {20, 40, 80, 160, 320, 640}) {
      RandomLoads(data.data(), mb * kMiB / 8, 1, 0.5);  // warm
      std::printf("random loads over %3lld MB, 1 thread: %.3g loads/s\n", static_cast<long long>(mb),
                  RandomLoads(data.data(), mb * kMiB / 8, 1, seconds));
      std::fflush(stdout);
    }
    if (sections.find_first_not_of('c') == std::string::npos) return 0;
  }
  std::printf("%-10s %8s %8s %7s %14s %12s %14s %7s\n", "graph", "mode", "threads", "batch/s",
              "edges/s", "seeds/s", "rand loads/s", "ratio");
  for (const auto& name : SplitList(flags.Get("graphs"), ',')) {
    auto graph = BenchGraph(name, flags.Get("cache_dir"));
    if (!graph.ok()) {
      std::fprintf(stderr, "%s\n", std::string(graph.status().message()).c_str());
      return 1;
    }
    const std::string dir = *graph;
    EvictFromPageCache(dir);
    Partition::LoadOptions lo;
    lo.verify_contents = false;
    auto p = Partition::Load(dir, lo);
    if (!p.ok()) {
      std::fprintf(stderr, "%s\n", std::string(p.status().message()).c_str());
      return 1;
    }
    const EdgeTypeStore& e = (*p)->edge_type(0);
    const int64_t num_nodes = (*p)->node_type(0).num_nodes;
    NeighborSamplerOptions so;
    so.fanouts = fanouts;
    auto sampler = NeighborSampler::Create(p->get(), so);
    if (!sampler.ok()) return 1;
    const std::string label = absl::StrCat(name == "1m" || name == "products" ? name : "dir");
    std::fprintf(stderr, "%s: %lld nodes, %lld edges (%.0f MB of indices)\n", label.c_str(),
                 static_cast<long long>(num_nodes), static_cast<long long>(e.num_local), e.num_local * 8 / 1e6);
    // Warm the page cache so the first measurement does not pay for disk reads.
    RandomLoads(e.indices_data(), e.num_local, 2, 1.0);
    SampleDirect(**sampler, num_nodes, batch_size, 2, 1.0);
    const GraphRun g{label, p->get(), so, num_nodes, batch_size, seconds,
                     static_cast<int>(std::max<int64_t>(1, *flags.GetInt("rounds")))};
    if (section('u')) UniformSection(g, **sampler, thread_counts);
    if (section('w') && e.weights_data() != nullptr && !WeightedSection(g)) return 1;
    if (section('t') && e.times_data() != nullptr && (*p)->node_type(0).has_times &&
        !TemporalSection(g)) {
      return 1;
    }
    if (section('g') && !GatherSection(g, **sampler)) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
