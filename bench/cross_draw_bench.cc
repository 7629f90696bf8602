// What sampling a batch costs a server of a 2-partition cluster whose peer cache already holds
// the other partition's neighbour lists, feature rows and labels (a warm cache: what every
// epoch after the first meets), against one server holding the whole graph, on one thread
// and without any network: the sampler's own CPU time, which cluster_bench measures only
// mixed with the transport, the trainer and the other server on the same cores.
//
// For each assignment (METIS and random, 2 partitions; the datasets cluster_bench writes, made
// here when absent) three samplers run the same kind of batches alternately, best of 3 rounds:
//   one server   -- the whole graph, seeds anywhere;
//   global       -- partition 0 with a warm cache, seeds anywhere (a global batch assembled
//                   there: half of its seeds and their neighbourhoods are the other partition's);
//   owner-only   -- partition 0 with a warm cache, seeds among its own nodes.
// Printed: seeds/s of each, global / one server and global / owner-only; with node features
// and labels gathered and without.
//
//   bazel-bin/bench/cross_draw_bench

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_graphs.h"
#include "common/flags.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/sampling/remote_cache.h"
#include "tools/generator.h"
#include "tools/metis_partition.h"

namespace graphstore {
namespace {

using Clock = std::chrono::steady_clock;

// Fills `cache` (of a partition of a cluster) with everything partition `other` owns: the
// node type's feature rows and labels and the edge type's neighbour lists, as the peer cache
// holds them after a warm-up epoch.
void FillFromPeer(const Partition& other, RemoteCache* cache) {
  const NodeTypeStore& t = other.node_type(0);
  const EdgeTypeStore& e = other.edge_type(0);
  const size_t row_bytes = static_cast<size_t>(t.feature_dim) * DtypeSize(t.feature_dtype);
  const char* rows = t.feature_dim > 0 ? static_cast<const char*>(t.features.raw()) : nullptr;
  const int64_t* labels = t.labels.is_open() ? t.labels.data<int64_t>() : nullptr;
  const int64_t* indptr = e.indptr_data();
  const int64_t* indices = e.indices_data();
  for (int64_t row = 0; row < t.num_local; ++row) {
    const int64_t id = t.global_ids()[row];
    if (rows != nullptr) cache->PutFeatures(0, id, rows + row * row_bytes);
    if (labels != nullptr) cache->PutLabel(0, id, labels[row]);
    cache->PutNeighbors(0, id, indices + indptr[row], indptr[row + 1] - indptr[row]);
  }
}

// What each measurement runs: batches of `batch_size` seeds on one thread for `seconds`, the
// fanouts, and the one sampler to run alone (empty: all three).
struct Measure {
  std::vector<int> fanouts;
  int batch_size = 0;
  double seconds = 0;
  std::string only;
};

// Batches of seeds drawn from `pool` by `sampler`, as `m` says; seeds/s.
absl::StatusOr<double> SeedsPerSecond(const NeighborSampler& sampler, const std::vector<int64_t>& pool,
                                      const Measure& m) {
  auto scratch = sampler.NewScratch();
  SampledSubgraph out;
  std::vector<int64_t> ids(m.batch_size);
  int64_t batches = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < m.seconds) {
    DrawStream rng(HashCombine(7, static_cast<uint64_t>(batches)));
    for (auto& id : ids) id = pool[rng.Below(pool.size())];
    SeedBatch b;
    b.ids = ids.data();
    b.size = ids.size();
    b.seed = 1;
    b.batch_index = batches++;
    if (auto s = sampler.Sample(b, scratch.get(), &out); !s.ok()) return s;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return batches * m.batch_size / elapsed;
}

struct Datasets {
  std::string single, metis, random;
};

// The whole graph and its two 2-partition splits, written unless a previous run (of this
// bench or cluster_bench, which share them) did.
absl::StatusOr<Datasets> Prepare(const Flags& flags) {
  GeneratorOptions g;
  g.num_nodes = *flags.GetInt("nodes");
  g.avg_degree = *flags.GetDouble("avg_degree");
  g.feature_dim = static_cast<int>(*flags.GetInt("feature_dim"));
  g.seed = 1;
  const std::string base = ClusterBenchDir(flags.Get("cache_dir"), g);
  Datasets d{base + "/single", base + "/metis2", base + "/random2"};
  auto evicted = [&d] {
    for (const std::string& dir : {d.single, d.metis, d.random}) EvictFromPageCache(dir);
    return d;
  };
  if (ClusterBenchWritten(d.single, 1) && ClusterBenchWritten(d.metis, 2) && ClusterBenchWritten(d.random, 2)) {
    return evicted();
  }
  auto graph = GenerateGraph(g);
  if (!graph.ok()) return graph.status();
  auto metis = MetisAssignment(*graph, 2, g.seed);
  if (!metis.ok()) return metis.status();
  for (const auto& [dir, parts, method, a] :
       {std::tuple<std::string, int, std::string, Assignment>{d.single, 1, "single", RandomAssignment(*graph, 1, g.seed)},
        {d.metis, 2, "metis", *metis},
        {d.random, 2, "random", RandomAssignment(*graph, 2, g.seed)}}) {
    if (auto s = WriteClusterBenchDataset(*graph, a, method, parts, dir, g.seed); !s.ok()) return s;
  }
  return evicted();
}

absl::StatusOr<std::unique_ptr<Partition>> Load(const std::string& dir) {
  Partition::LoadOptions lo;
  lo.verify_contents = false;
  return Partition::Load(dir, lo);
}

// One assignment's three samplers, compared with and without node data.
absl::Status RunAssignment(const std::string& name, const std::string& whole_dir, const std::string& parts_dir,
                           const Measure& m) {
  auto whole = Load(whole_dir);
  auto part = Load(parts_dir + "/part-0");
  auto other = Load(parts_dir + "/part-1");
  for (const auto* p : {&whole, &part, &other}) {
    if (!p->ok()) return p->status();
  }
  RemoteCache cache(part->get(), int64_t{8} << 30);
  FillFromPeer(**other, &cache);
  const int64_t n = (*whole)->node_type(0).num_nodes;
  std::vector<int64_t> anywhere(n);
  for (int64_t i = 0; i < n; ++i) anywhere[i] = i;
  const NodeTypeStore& own = (*part)->node_type(0);
  const std::vector<int64_t> owned(own.global_ids(), own.global_ids() + own.num_local);
  for (bool data : {false, true}) {
    NeighborSamplerOptions o;
    o.fanouts = m.fanouts;
    o.with_node_features = data;
    o.with_labels = data;
    auto one = NeighborSampler::Create(whole->get(), o);
    o.remote_cache = &cache;
    auto cluster = NeighborSampler::Create(part->get(), o);
    if (!one.ok()) return one.status();
    if (!cluster.ok()) return cluster.status();
    struct Contender {
      const char* name;
      const NeighborSampler* sampler;
      const std::vector<int64_t>* pool;
      double best = 0;
    };
    Contender c[] = {{"one", one->get(), &anywhere}, {"global", cluster->get(), &anywhere},
                     {"owner", cluster->get(), &owned}};
    for (int round = 0; round < 4; ++round) {  // the first round warms all three
      for (Contender& k : c) {
        if (!m.only.empty() && m.only != k.name) continue;
        auto rate = SeedsPerSecond(*k.sampler, *k.pool, m);
        if (!rate.ok()) return rate.status();
        if (round > 0) k.best = std::max(k.best, *rate);
      }
    }
    // (With --only, the samplers not run print 0 and the ratios are left out.)
    std::printf("%-7s %-13s %12.0f %12.0f %12.0f", name.c_str(), data ? "with data" : "ids only", c[0].best,
                c[1].best, c[2].best);
    if (m.only.empty()) std::printf(" %12.2f %12.2f", c[1].best / c[0].best, c[1].best / c[2].best);
    std::printf("\n");
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "cross_draw_bench: %s\n", s.ToString().c_str());
  return 1;
}

// The flags' values, checked: INVALID_ARGUMENT naming the flag otherwise.
absl::StatusOr<Measure> ParseMeasure(const Flags& flags) {
  for (const char* f : {"nodes", "feature_dim", "batch_size"}) {
    if (auto v = flags.GetInt(f); !v.ok()) return v.status();
  }
  for (const char* f : {"avg_degree", "seconds"}) {
    if (auto v = flags.GetDouble(f); !v.ok()) return v.status();
  }
  Measure m;
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(f, &v) || v < -1) {
      return absl::InvalidArgumentError(absl::StrCat("--fanouts: '", f, "' is not a fanout (-1 or more)"));
    }
    m.fanouts.push_back(v);
  }
  if (m.fanouts.empty()) return absl::InvalidArgumentError("--fanouts: give at least one hop");
  m.only = flags.Get("only");
  if (!m.only.empty() && m.only != "one" && m.only != "global" && m.only != "owner") {
    return absl::InvalidArgumentError(absl::StrCat("--only: '", m.only, "' is not one, global or owner"));
  }
  m.batch_size = static_cast<int>(*flags.GetInt("batch_size"));
  m.seconds = *flags.GetDouble("seconds");
  if (m.batch_size < 1 || m.seconds <= 0) {
    return absl::InvalidArgumentError("--batch_size and --seconds must be positive");
  }
  return m;
}

int Main(int argc, char** argv) {
  Flags flags;
  flags.Define("nodes", "200000", "nodes of the generated graph (cluster_bench's)");
  flags.Define("avg_degree", "10", "mean out-degree of the generated graph");
  flags.Define("feature_dim", "100", "float features per node");
  flags.Define("batch_size", "1024", "seeds per batch");
  flags.Define("fanouts", "15,10,5", "fanout per hop");
  flags.Define("seconds", "2", "duration of each measurement");
  flags.Define("only", "", "run only one sampler, under a profiler: one, global or owner");
  flags.Define("cache_dir", "/tmp/graphstore-bench", "where the written datasets are kept (shared with cluster_bench)");
  if (auto exit = flags.ParseCommandLine(argc, argv, "cross_draw_bench",
                                         "A cluster server's sampling with a warm peer cache vs one server's.")) {
    return *exit;
  }
  auto m = ParseMeasure(flags);
  if (!m.ok()) return Fail(m.status());
  auto d = Prepare(flags);
  if (!d.ok()) return Fail(d.status());
  std::printf("seeds/s on one thread, best of 3 rounds; global: partition 0 of 2 with a warm peer cache, seeds "
              "anywhere; owner-only: its own seeds\n");
  std::printf("%-7s %-13s %12s %12s %12s %12s %12s\n", "split", "batches", "one server", "global", "owner-only",
              "vs one", "vs owner");
  for (const auto& [name, dir] : {std::pair<std::string, std::string>{"METIS", d->metis}, {"random", d->random}}) {
    if (auto s = RunAssignment(name, d->single, dir, *m); !s.ok()) return Fail(s);
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Main(argc, argv); }
