// How a server answers while new backends build their sampling indexes.
//
//   bazel run -c opt //bench:backend_init_bench -- --graph=products
//
// A weighted or temporal backend builds in-memory indexes of the partition the first time one
// needs them (alias tables, block sums, time rows: seconds on a graph of 125M edges). Four
// backends are created at once — weighted with and without replacement, temporal, uniform;
// then, on a fresh server, four that need the same alias tables — while this thread keeps
// calling GetServerStats. Prints each creation's time and the stats calls' latency during the
// builds against the same calls on the idle server.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_graphs.h"
#include "client/client.h"
#include "server/server.h"
#include "common/flags.h"
#include "server/util/log.h"

namespace graphstore {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Latency {
  double median_ms = 0;
  double worst_ms = 0;
  size_t calls = 0;
};

Latency Summarise(std::vector<double> ms) {
  Latency l;
  if (ms.empty()) return l;
  std::sort(ms.begin(), ms.end());
  l.median_ms = ms[ms.size() / 2];
  l.worst_ms = ms.back();
  l.calls = ms.size();
  return l;
}

struct Creation {
  std::string what;
  v1::SamplingConfig config;
  double ms = 0;
  std::string error;
};

// One round's four creations: weighted without and with replacement, temporal and uniform
// (round 0), or four backends that need the same alias tables (round 1).
std::vector<Creation> CreationsOf(int round) {
  std::vector<Creation> creations(4);
  for (size_t i = 0; i < creations.size(); ++i) {
    Creation& cr = creations[i];
    cr.config.set_batch_size(512);
    for (int f : {15, 10, 5}) cr.config.add_num_neighbors(f);
    if (round == 1) {
      cr.what = absl::StrCat("weighted, with replacement #", i + 1);
      cr.config.add_weighted_edge_types("*");
      cr.config.set_replace(true);
      cr.config.set_batch_size(512 + static_cast<int>(i));  // four backends, one index
    }
  }
  if (round == 0) {
    creations[0].what = "weighted, without replacement";
    creations[0].config.add_weighted_edge_types("*");
    creations[1].what = "weighted, with replacement";
    creations[1].config.add_weighted_edge_types("*");
    creations[1].config.set_replace(true);
    creations[2].what = "temporal";
    creations[2].config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
    creations[3].what = "uniform";
  }
  return creations;
}

void DefineFlags(Flags* flags) {
  flags->Define("graph", "products", "1m, products or a partition directory (with weights and times)");
  flags->Define("cache_dir", "/tmp/graphstore-bench", "where generated graphs are kept between runs");
  flags->Define("idle_calls", "200", "GetServerStats calls timed on the idle server");
  flags->Define("log_level", "warn", "the server's log level (info shows each index build's time)");
}

int Run(int argc, char** argv) {
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "backend_init_bench",
                                         "Server responsiveness while backends build their indexes.")) {
    return *exit;
  }
  SetLogLevel(flags.Get("log_level"));
  auto graph = BenchGraph(flags.Get("graph"), flags.Get("cache_dir"));
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", std::string(graph.status().message()).c_str());
    return 1;
  }
  // Two rounds, each on a fresh server (its indexes not yet built): four different backends,
  // then four backends that need the same index (alias tables), whose creations wait for one build.
  for (int round = 0; round < 2; ++round) {
    ServerOptions opts;
    opts.partition_dir = *graph;
    opts.verify_partition = false;
    auto server = GraphStoreServer::BuildAndStart(opts);
    if (!server.ok()) {
      std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
      return 1;
    }
    client::ClientOptions co;
    co.address = (*server)->address();
    co.deadline = std::chrono::minutes(10);
    auto c = client::Client::Connect(co);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      return 1;
    }
    auto stats_ms = [&] {
      const auto start = Clock::now();
      auto s = (*c)->GetServerStats();
      if (!s.ok()) std::fprintf(stderr, "GetServerStats: %s\n", s.status().ToString().c_str());
      return Ms(Clock::now() - start);
    };

    std::vector<double> idle;
    for (int64_t i = 0; i < *flags.GetInt("idle_calls"); ++i) idle.push_back(stats_ms());

    std::vector<Creation> creations = CreationsOf(round);

    std::atomic<size_t> left{creations.size()};
    std::vector<std::thread> threads;
    const auto start = Clock::now();
    for (size_t i = 0; i < creations.size(); ++i) {
      threads.emplace_back([&, i] {
        v1::InitSamplingBackendRequest req;
        req.set_backend_key(creations[i].what);
        *req.mutable_config() = creations[i].config;
        auto r = (*c)->InitSamplingBackend(req);
        creations[i].ms = Ms(Clock::now() - start);
        if (!r.ok()) creations[i].error = r.status().ToString();
        left.fetch_sub(1);
      });
    }
    std::vector<double> busy;
    while (left.load() > 0) busy.push_back(stats_ms());
    for (auto& t : threads) t.join();

    std::printf("%s\n", round == 0 ? "four different backends at once:" : "four backends that need the same alias tables:");
    for (const auto& cr : creations) {
      std::printf("  InitSamplingBackend %-32s %8.0f ms%s%s\n", cr.what.c_str(), cr.ms,
                  cr.error.empty() ? "" : "  FAILED: ", cr.error.c_str());
    }
    const Latency a = Summarise(idle), b = Summarise(busy);
    std::printf("  GetServerStats, idle server:       median %6.2f ms, worst %7.1f ms (%zu calls)\n", a.median_ms,
                a.worst_ms, a.calls);
    std::printf("  GetServerStats, during the builds: median %6.2f ms, worst %7.1f ms (%zu calls)\n", b.median_ms,
                b.worst_ms, b.calls);
    std::printf("  ratio during / idle: median %.1f, worst %.1f\n", b.median_ms / a.median_ms,
                b.worst_ms / a.worst_ms);
    std::fflush(stdout);
    (*server)->Shutdown();
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
