// Throughput of a 2-partition cluster against one server holding the whole graph, on the same
// machine and graph, in the same run; and of global batches (the default: batch b formed over
// the whole cluster's seeds) against each server batching only the seeds it owns.
//
// The graph is generated once and written three ways: one partition, two partitions assigned
// by METIS, and two assigned at random. For each, the servers run in this process on loopback
// (real gRPC, cross-partition hops and feature fetches between the servers), with the same
// total number of sampling workers, and a Loader -- the trainer's iterator -- reads every
// batch of several epochs of the training split. Printed per setup: seeds/s and batches/s,
// the ratio to the single server, the edge cut of the assignment, and the calls and bytes
// that crossed between the servers per batch (from the servers' own counters), with the
// servers' cache of peers' node data on (the default) and off. The first epoch is a warm-up
// and not measured: with the cache on, it is the epoch that fills it.
//
//   bazel-bin/bench/cluster_bench

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "client/loader.h"  // LibTorch first (see loader.h)

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/process_usage.h"
#include "client/client.h"
#include "server/graph/dataset_writer.h"
#include "server/server.h"
#include "common/flags.h"
#include "server/util/log.h"
#include "tools/generator.h"
#include "tools/metis_partition.h"

namespace graphstore {
namespace {

using Clock = std::chrono::steady_clock;

struct Setup {
  std::string name;
  std::string dir;
  int num_partitions = 1;
  PartitionReport report;
  // Peer node-data cache of each server (ServerOptions::peer_cache_bytes).
  int64_t cache_bytes = 0;
  // The Loader's batches: over the whole cluster's input (the default), or each server's own.
  bool global_batches = true;
  // The setup a global one is compared with (its owner-only twin), or -1.
  int compare_with = -1;
  // The Loader's transport and order (--shared_memory, --ordered).
  bool shared_memory = true;
  bool ordered = true;
};

struct Result {
  double seeds_per_s = 0;
  double batches_per_s = 0;
  double nodes_per_batch = 0;
  double cpu_ms_per_batch = 0;  // of the whole process: servers, peers and trainer
  double faults_per_batch = 0;  // minor page faults of the whole process
  double sampled_per_batch = 0;  // batches the servers sampled per batch delivered
  double calls_per_batch = 0;
  double bytes_per_batch = 0;
};

// Peer calls and bytes the servers made so far, and the batches they sampled.
struct Traffic {
  int64_t calls = 0;
  int64_t bytes = 0;
  int64_t sampled = 0;
};
Traffic PeerTraffic(const std::vector<std::string>& addresses) {
  int64_t calls = 0;
  int64_t bytes = 0;
  int64_t sampled = 0;
  for (const auto& a : addresses) {
    client::ClientOptions o;
    o.address = a;
    auto c = client::Client::Connect(o);
    if (!c.ok()) continue;
    auto s = (*c)->GetServerStats();
    if (!s.ok()) continue;
    for (const auto& p : s->peers()) {
      calls += p.calls();
      bytes += p.bytes_sent() + p.bytes_received();
    }
    for (const auto& b : s->backends()) sampled += b.total_batches_sampled();
  }
  return {calls, bytes, sampled};
}

absl::StatusOr<Result> Run(const Setup& setup, const v1::SamplingConfig& config, int total_workers, int epochs) {
  std::vector<ServerOptions> options(setup.num_partitions);
  for (int k = 0; k < setup.num_partitions; ++k) {
    ServerOptions& o = options[k];
    o.partition_dir = setup.num_partitions == 1 ? setup.dir : absl::StrCat(setup.dir, "/part-", k);
    o.core.default_num_workers = std::max(1, total_workers / setup.num_partitions);
    o.core.state_log_interval_s = 0;
    o.core.peer_cache_bytes = setup.cache_bytes;
  }
  auto servers = StartLocalCluster(options);
  if (!servers.ok()) return servers.status();
  std::vector<std::string> addresses;
  for (const auto& s : *servers) addresses.push_back(s->address());

  client::LoaderOptions lo;
  lo.servers = addresses;
  lo.config = config;
  lo.backend_key = "bench";
  lo.global_batches = setup.global_batches;
  lo.shared_memory = setup.shared_memory;
  lo.ordered = setup.ordered;
  client::Loader loader(lo);
  int64_t nodes = 0;
  auto run_epoch = [&](int64_t epoch, int64_t* seeds, int64_t* batches) {
    loader.StartEpoch(epoch);
    while (auto b = loader.Next()) {
      *seeds += b->batch_size;
      nodes += b->n_id.numel();
      ++*batches;
    }
  };
  int64_t seeds = 0;
  int64_t batches = 0;
  run_epoch(0, &seeds, &batches);  // warm-up: page cache, connections, first allocations
  const auto before = PeerTraffic(addresses);
  seeds = batches = nodes = 0;
  const double cpu0 = ProcessCpuSeconds();
  const int64_t faults0 = MinorPageFaults();
  const auto t0 = Clock::now();
  for (int e = 1; e <= epochs; ++e) run_epoch(e, &seeds, &batches);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = ProcessCpuSeconds() - cpu0;
  const int64_t faults = MinorPageFaults() - faults0;
  const auto after = PeerTraffic(addresses);
  loader.Close();
  Result r;
  r.seeds_per_s = seeds / s;
  r.batches_per_s = batches / s;
  r.nodes_per_batch = static_cast<double>(nodes) / batches;
  r.cpu_ms_per_batch = 1e3 * cpu / batches;
  r.faults_per_batch = static_cast<double>(faults) / batches;
  r.calls_per_batch = static_cast<double>(after.calls - before.calls) / batches;
  r.bytes_per_batch = static_cast<double>(after.bytes - before.bytes) / batches;
  r.sampled_per_batch = static_cast<double>(after.sampled - before.sampled) / batches;
  return r;
}

// Writes each setup's partitions (kept in the cache between runs) and records its cut.
absl::Status PrepareSetups(const GraphData& graph, uint64_t seed, const std::string& base, std::vector<Setup>* setups) {
  for (auto& s : *setups) {
    const bool metis = s.dir == base + "/metis2";
    Assignment a;
    if (s.num_partitions == 1) {
      a = RandomAssignment(graph, 1, seed);
    } else if (metis) {
      auto m = MetisAssignment(graph, 2, seed);
      if (!m.ok()) return m.status();
      a = *std::move(m);
    } else {
      a = RandomAssignment(graph, 2, seed);
    }
    s.report = EvaluateAssignment(graph, a, s.num_partitions, true);
    const std::string marker = s.num_partitions == 1 ? s.dir + "/manifest.json" : s.dir + "/part-1/manifest.json";
    if (std::filesystem::exists(marker)) continue;
    std::filesystem::remove_all(s.dir);
    WriteOptions w;
    w.num_partitions = s.num_partitions;
    w.method = s.num_partitions == 1 ? "single" : (metis ? "metis" : "random");
    if (auto st = WritePartitions(graph, a, w, s.dir); !st.ok()) return st;
  }
  return absl::OkStatus();
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "cluster_bench: %s\n", s.ToString().c_str());
  return 1;
}

// Each setup's medians over the rounds, and its ratios round by round to the single server and,
// for a global setup, to the owner-only batches on the same partitions.
void PrintResults(const std::vector<Setup>& setups, const std::vector<std::vector<Result>>& results) {
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  // Ratios of one setup's figure to another's, round by round.
  auto ratios = [&](size_t i, size_t j) {
    std::vector<double> out;
    for (size_t r = 0; r < std::min(results[i].size(), results[j].size()); ++r) {
      out.push_back(results[i][r].seeds_per_s / results[j][r].seeds_per_s);
    }
    return out;
  };
  auto format = [&](const std::vector<double>& v) {
    if (v.empty()) return std::string();
    return absl::StrFormat("%.2f (%.2f-%.2f)", median(v), *std::min_element(v.begin(), v.end()),
                           *std::max_element(v.begin(), v.end()));
  };
  for (size_t i = 0; i < setups.size(); ++i) {
    const Setup& s = setups[i];
    if (results[i].empty()) continue;
    std::vector<double> rate, nodes, calls, bytes, cpu, faults, sampled;
    for (const Result& r : results[i]) {
      sampled.push_back(r.sampled_per_batch);
      rate.push_back(r.seeds_per_s);
      cpu.push_back(r.cpu_ms_per_batch);
      faults.push_back(r.faults_per_batch);
      nodes.push_back(r.nodes_per_batch);
      calls.push_back(r.calls_per_batch);
      bytes.push_back(r.bytes_per_batch);
    }
    const std::string vs = s.compare_with >= 0 ? format(ratios(i, s.compare_with)) : "";
    std::printf("%-24s %10.0f %7s %14s %11.0f %9.1f %9.0f %9.2f %8.2f%% %12.1f %11.2f MB\n", s.name.c_str(),
                median(rate), i == 0 ? "1.00" : format(ratios(i, 0)).substr(0, 4).c_str(), vs.substr(0, 4).c_str(),
                median(nodes), median(cpu), median(faults), median(sampled), 100 * s.report.cut_fraction(),
                median(calls), median(bytes) / 1e6);
  }
  std::printf("\nper-round ratios (against the single server | global against owner-only):\n");
  for (size_t i = 1; i < setups.size(); ++i) {
    if (results[i].empty()) continue;
    std::printf("  %-22s %s | %s\n", setups[i].name.c_str(), format(ratios(i, 0)).c_str(),
                setups[i].compare_with >= 0 ? format(ratios(i, setups[i].compare_with)).c_str() : "");
  }
}

// Each setup's least disturbed round: its highest rate and lowest CPU time, and the ratios of
// those rates. On a shared machine a round's figure mixes the setup's own cost with what other
// work took from it; the best of several rounds comes closest to the cost alone.
void PrintBestRounds(const std::vector<Setup>& setups, const std::vector<std::vector<Result>>& results) {
  auto best = [&](size_t i) {
    Result b = results[i].front();
    for (const Result& r : results[i]) {
      b.seeds_per_s = std::max(b.seeds_per_s, r.seeds_per_s);
      b.cpu_ms_per_batch = std::min(b.cpu_ms_per_batch, r.cpu_ms_per_batch);
    }
    return b;
  };
  std::printf("\nbest round of each setup (highest seeds/s, lowest CPU ms/b; ratios of the highest rates):\n");
  for (size_t i = 0; i < setups.size(); ++i) {
    if (results[i].empty()) continue;
    const Result b = best(i);
    std::string vs_single, vs_owner;
    if (i > 0 && !results[0].empty()) vs_single = absl::StrFormat("%.2f", b.seeds_per_s / best(0).seeds_per_s);
    if (const int j = setups[i].compare_with; j >= 0 && !results[j].empty()) {
      vs_owner = absl::StrFormat("%.2f", b.seeds_per_s / best(j).seeds_per_s);
    }
    std::printf("  %-22s %10.0f seeds/s %9.1f CPU ms/b   vs single %4s   vs owner-only %4s\n", setups[i].name.c_str(),
                b.seeds_per_s, b.cpu_ms_per_batch, vs_single.c_str(), vs_owner.c_str());
  }
}

void DefineFlags(Flags* flags) {
  flags->Define("nodes", "200000", "nodes of the generated graph");
  flags->Define("avg_degree", "10", "mean out-degree of the generated graph");
  flags->Define("feature_dim", "100", "float features per node");
  flags->Define("batch_size", "1024", "seeds per batch");
  flags->Define("fanouts", "15,10,5", "fanout per hop");
  flags->Define("workers", "4",
               "sampling workers in total (split between the servers of a cluster, whose workers wait on "
               "their peers part of the time)");
  flags->Define("epochs", "2", "measured epochs per setup and round (after one warm-up epoch)");
  flags->Define("rounds", "3", "rounds of every setup; figures are medians over them");
  flags->Define("cache_dir", "/tmp/graphstore-bench", "where the written datasets are kept");
  flags->Define("features", "true", "gather node features and labels into every batch");
  flags->Define("no_cache_setups", "false", "also run the 2-partition setups with the peer cache off (owner-only)");
  flags->Define("shared_memory", "true", "the trainer takes batches through shared memory (else the socket)");
  flags->Define("ordered", "true", "global batches reach the trainer in batch order (else in arrival order)");
  flags->Define("only", "", "run only the setups whose name contains this (e.g. under a profiler); ratios need the "
               "single server and, for a global setup, its owner-only twin");
}

int Main(int argc, char** argv) {
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "cluster_bench", "Cluster vs single-server throughput.")) {
    return *exit;
  }
  SetLogLevel("warn");
  auto nodes = flags.GetInt("nodes");
  auto degree = flags.GetDouble("avg_degree");
  auto dim = flags.GetInt("feature_dim");
  auto batch = flags.GetInt("batch_size");
  auto workers = flags.GetInt("workers");
  auto epochs = flags.GetInt("epochs");
  auto rounds = flags.GetInt("rounds");
  for (const absl::Status& s : {nodes.status(), degree.status(), dim.status(), batch.status(), workers.status(),
                                epochs.status(), rounds.status()}) {
    if (!s.ok()) return Fail(s);
  }
  GeneratorOptions g;
  g.num_nodes = *nodes;
  g.avg_degree = *degree;
  g.feature_dim = static_cast<int>(*dim);
  g.seed = 1;
  auto graph = GenerateGraph(g);
  if (!graph.ok()) return Fail(graph.status());
  const std::string base = absl::StrCat(flags.Get("cache_dir"), "/cluster-", *nodes, "-", *degree, "-", *dim);
  const int64_t cache = CoreOptions().peer_cache_bytes;
  std::vector<Setup> setups = {
      {"single server", base + "/single", 1, {}, 0},
      {"METIS, owner-only", base + "/metis2", 2, {}, cache, false},
      {"METIS, global", base + "/metis2", 2, {}, cache, true, 1},
      {"random, owner-only", base + "/random2", 2, {}, cache, false},
      {"random, global", base + "/random2", 2, {}, cache, true, 3},
  };
  for (Setup& s : setups) {
    s.shared_memory = flags.Get("shared_memory") != "false";
    s.ordered = flags.Get("ordered") != "false";
  }
  if (flags.Get("no_cache_setups") == "true") {
    setups.push_back({"METIS, no peer cache", base + "/metis2", 2, {}, 0, false});
    setups.push_back({"random, no peer cache", base + "/random2", 2, {}, 0, false});
  }
  if (auto s = PrepareSetups(*graph, g.seed, base, &setups); !s.ok()) return Fail(s);

  v1::SamplingConfig config;
  config.set_batch_size(static_cast<int>(*batch));
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) config.add_num_neighbors(std::stoi(f));
  config.set_shuffle(true);
  const bool features = flags.Get("features") != "false";
  config.set_with_node_features(features);
  config.set_with_labels(features);
  std::printf("graph: %lld nodes, %lld edges, %d float features; batch %lld, fanouts [%s], %lld workers in total, "
              "%lld epochs of the train split\n",
              static_cast<long long>(*nodes), static_cast<long long>(setups[0].report.num_edges), g.feature_dim,
              static_cast<long long>(*batch), flags.Get("fanouts").c_str(), static_cast<long long>(*workers),
              static_cast<long long>(*epochs));
  std::printf("%lld rounds, each running every setup once; seeds/s and its ratios are medians over the rounds of "
              "each round's figure (ratio: against the single server; vs owner-only: a global setup against the same "
              "partitions with each server batching its own seeds)\n",
              static_cast<long long>(*rounds));
  std::printf("%-24s %10s %7s %14s %11s %9s %9s %9s %9s %12s %14s\n", "setup", "seeds/s", "ratio", "vs owner-only",
              "nodes/batch", "CPU ms/b", "faults/b", "sampled/b", "edge cut", "calls/batch", "crossing/batch");
  const std::string only = flags.Get("only");
  std::vector<std::vector<Result>> results(setups.size());
  for (int64_t round = 0; round < *rounds; ++round) {
    for (size_t i = 0; i < setups.size(); ++i) {
      const Setup& s = setups[i];
      if (!only.empty() && s.name.find(only) == std::string::npos) continue;
      auto r = Run(s, config, static_cast<int>(*workers), static_cast<int>(*epochs));
      if (!r.ok()) return Fail(absl::Status(r.status().code(), absl::StrCat(s.name, ": ", r.status().message())));
      results[i].push_back(*r);
    }
  }
  PrintResults(setups, results);
  PrintBestRounds(setups, results);
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Main(argc, argv); }
