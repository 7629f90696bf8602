// End-to-end streaming throughput against the same sampling in process, and time to first
// batch.
//
// In process: the scheduler's Backend runs the neighbour sampler with feature gathering on N
// workers and the benchmark pops the SampledSubgraphs. End to end: a graphstored server (same
// process, real gRPC over loopback TCP) runs the same sampling on N workers, builds the wire
// messages, and a client reads the stream and parses every message -- once with the tensor
// bytes inside the gRPC messages ("socket") and once through the shared-memory transport,
// where the client also maps every buffer and hands it back. Each prints batches/s and MB/s
// of message payload; the ratios are end to end / in process. Time to first batch is measured
// from calling StartEpoch to holding the first message (mapped, for shared memory).
//
//   bazel-bin/bench/stream_bench --graph=1m

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_graphs.h"
#include "client/client.h"
#include "client/shared_memory.h"
#include "scheduler/backend.h"
#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/server.h"
#include "server/util/flags.h"
#include "server/util/log.h"

namespace graphstore {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Rate {
  double batches_per_s = 0;
  double mb_per_s = 0;
};

std::vector<int64_t> Seeds(int64_t num_nodes, int64_t count) {
  DrawStream rng(7);
  std::vector<int64_t> s(count);
  for (auto& x : s) x = static_cast<int64_t>(rng.Below(num_nodes));
  return s;
}

Rate InProcess(const Partition& p, const NeighborSamplerOptions& so, int workers, int batch_size, double seconds) {
  auto sampler = NeighborSampler::Create(&p, so);
  if (!sampler.ok()) std::abort();
  std::vector<std::unique_ptr<SamplerScratch>> scratch;
  for (int i = 0; i < workers; ++i) scratch.push_back((*sampler)->NewScratch());
  scheduler::BackendOptions bo;
  bo.num_workers = workers;
  // Subgraphs are recycled once the consumer drops them, as the server recycles its buffers:
  // the baseline pays for sampling, not for faulting in fresh memory every batch.
  std::mutex pool_mu;
  std::vector<std::unique_ptr<SampledSubgraph>> pool;
  auto take = [&]() -> std::shared_ptr<SampledSubgraph> {
    std::unique_ptr<SampledSubgraph> g;
    {
      std::lock_guard<std::mutex> lock(pool_mu);
      if (!pool.empty()) {
        g = std::move(pool.back());
        pool.pop_back();
      }
    }
    if (g == nullptr) g = std::make_unique<SampledSubgraph>();
    return std::shared_ptr<SampledSubgraph>(g.release(), [&](SampledSubgraph* done) {
      std::lock_guard<std::mutex> lock(pool_mu);
      pool.emplace_back(done);
    });
  };
  scheduler::Backend backend(bo, [&](const scheduler::BatchTask& t) -> absl::StatusOr<scheduler::Batch> {
    auto g = take();
    SeedBatch b;
    b.ids = t.seeds;
    b.size = t.num_seeds;
    b.seed = t.seed;
    b.epoch = t.epoch;
    b.batch_index = t.batch_index;
    if (auto s = (*sampler)->Sample(b, scratch[t.worker].get(), g.get()); !s.ok()) return s;
    return scheduler::Batch{g, g->ByteSize()};
  });
  scheduler::ChannelOptions co;
  co.seeds = Seeds(p.node_type(0).num_nodes, 300LL * batch_size);
  co.batch_size = batch_size;
  if (!backend.AddChannel(1, co).ok() || !backend.StartEpoch(1, 0).ok()) std::abort();
  int64_t batches = 0;
  double bytes = 0;
  const auto t0 = Clock::now();
  while (Since(t0) < seconds) {
    auto d = backend.Pop(1, 0, std::chrono::seconds(60));
    if (d.kind != scheduler::Delivery::Kind::kMessage) break;
    ++batches;
    bytes += static_cast<double>(d.batch.bytes);
  }
  const double el = Since(t0);
  backend.Stop();
  return {batches / el, bytes / el / 1e6};  // the pool outlives every subgraph: Stop freed them
}

v1::InitSamplingBackendRequest BackendRequest(const std::string& key, int batch_size, const std::vector<int>& fanouts,
                                              int workers) {
  v1::InitSamplingBackendRequest init;
  init.set_backend_key(key);
  init.mutable_config()->set_batch_size(batch_size);
  for (int f : fanouts) init.mutable_config()->add_num_neighbors(f);
  init.mutable_config()->set_with_node_features(true);
  init.mutable_options()->set_num_workers(workers);
  return init;
}

uint64_t Register(client::Client& c, uint64_t backend, std::vector<int64_t> seeds, bool shared) {
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend);
  reg.set_shared_memory(shared);
  for (int64_t s : seeds) reg.mutable_nodes()->add_ids(s);
  auto r = c.RegisterSamplingInput(reg);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::abort();
  }
  return r->channel_id();
}

// Takes a received message as a trainer would: a shared-memory one is mapped (a file seen
// before keeps its mapping), reported received, and freed at once. Returns the payload bytes.
size_t Receive(client::Client& c, client::SharedMappings* mappings, uint64_t channel, const v1::SampledMessage& m) {
  if (!m.has_shared_buffer()) return m.ByteSizeLong();
  mappings->Forget(m.retired_shared_paths());
  auto mapped = mappings->Map(m.shared_buffer());
  v1::ReleaseSharedBuffersRequest r;
  r.set_channel_id(channel);
  r.add_freed_ids(m.shared_buffer().id());
  if (!mapped.ok() || !c.ReleaseSharedBuffers(r).ok()) {
    std::fprintf(stderr, "shared buffer: %s\n", mapped.status().ToString().c_str());
    std::abort();
  }
  size_t bytes = m.ByteSizeLong();
  for (const auto& n : m.nodes()) {
    for (const v1::Tensor* t : {&n.ids(), &n.num_sampled_nodes(), &n.batch(), &n.features(), &n.labels()}) {
      bytes += t->shared().length();
    }
  }
  for (const auto& e : m.edges()) {
    for (const v1::Tensor* t : {&e.rows(), &e.cols(), &e.eids(), &e.num_sampled_edges()}) bytes += t->shared().length();
  }
  return bytes;
}

Rate EndToEnd(client::Client& c, int64_t num_nodes, const std::vector<int>& fanouts, int workers, int batch_size,
              double seconds, const std::string& shared_dir) {
  const bool shared = !shared_dir.empty();
  client::SharedMappings mappings(shared_dir);
  const uint64_t backend =
      c.InitSamplingBackend(BackendRequest(shared ? "e2e-shm" : "e2e", batch_size, fanouts, workers))->backend_id();
  const uint64_t channel = Register(c, backend, Seeds(num_nodes, 300LL * batch_size), shared);
  v1::StartEpochRequest se;
  se.set_channel_id(channel);
  se.set_epoch(0);
  if (!c.StartEpoch(se).ok()) std::abort();
  v1::StreamSampledMessagesRequest sr;
  sr.set_channel_id(channel);
  sr.set_epoch(0);
  auto stream = c.Stream(sr);
  int64_t batches = 0;
  double bytes = 0;
  const auto t0 = Clock::now();
  while (Since(t0) < seconds) {
    auto m = stream->Next();
    if (!m.ok() || *m == nullptr) break;
    ++batches;
    bytes += static_cast<double>(Receive(c, &mappings, channel, **m));
  }
  const double el = Since(t0);
  stream->Cancel();
  stream.reset();
  v1::DestroySamplingInputRequest d;
  d.set_channel_id(channel);
  (void)c.DestroySamplingInput(d);
  return {batches / el, bytes / el / 1e6};
}

// Milliseconds from calling StartEpoch to holding the first message, per epoch.
// Element 0 is the first epoch, started right after registration (nothing prepared yet).
std::vector<double> TimeToFirstBatch(client::Client& c, int64_t num_nodes, const std::vector<int>& fanouts,
                                     int batch_size, int epochs, int gap_ms, const std::string& shared_dir) {
  const bool shared = !shared_dir.empty();
  client::SharedMappings mappings(shared_dir);
  const uint64_t backend =
      c.InitSamplingBackend(BackendRequest(shared ? "ttfb-shm" : "ttfb", batch_size, fanouts, 2))->backend_id();
  const uint64_t channel = Register(c, backend, Seeds(num_nodes, 4LL * batch_size), shared);
  std::vector<double> ms;
  for (int e = 0; e < epochs; ++e) {
    v1::StartEpochRequest se;
    se.set_channel_id(channel);
    se.set_epoch(e);
    const auto t0 = Clock::now();
    if (!c.StartEpoch(se).ok()) std::abort();
    v1::StreamSampledMessagesRequest sr;
    sr.set_channel_id(channel);
    sr.set_epoch(e);
    auto stream = c.Stream(sr);
    auto first = stream->Next();
    if (!first.ok() || *first == nullptr) std::abort();
    Receive(c, &mappings, channel, **first);
    ms.push_back(Since(t0) * 1e3);
    while (true) {
      auto m = stream->Next();
      if (!m.ok() || *m == nullptr) break;
      Receive(c, &mappings, channel, **m);
    }
    // Like a trainer, consume the epoch, then spend a moment on end-of-epoch work (validation,
    // logging, checkpoints) before starting the next one.
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  }
  v1::DestroySamplingInputRequest d;
  d.set_channel_id(channel);
  (void)c.DestroySamplingInput(d);
  return ms;
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("graph", "1m", "1m (generated 1M nodes, ~25M edges, 100 features) or a partition DIR");
  flags.Define("cache_dir", "/tmp/graphstore-bench", "where generated graphs are kept");
  flags.Define("seconds", "6", "duration of each throughput measurement");
  flags.Define("batch_size", "1024", "seeds per batch");
  flags.Define("fanouts", "15,10,5", "fanout per hop");
  flags.Define("workers", "1", "sampling workers, in process and on the server");
  flags.Define("ttfb_epochs", "40", "epochs timed for time to first batch");
  flags.Define("epoch_gap_ms", "100", "pause between consuming an epoch and starting the next (time to first batch)");
  if (auto exit = flags.ParseCommandLine(argc, argv, "stream_bench", "End-to-end streaming vs in-process sampling.")) {
    return *exit;
  }
  SetLogLevel("warn");
  auto graph = BenchGraph(flags.Get("graph"), flags.Get("cache_dir"));
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", std::string(graph.status().message()).c_str());
    return 1;
  }
  const std::string dir = *graph;
  const double seconds = *flags.GetDouble("seconds");
  const int batch_size = static_cast<int>(*flags.GetInt("batch_size"));
  const int workers = static_cast<int>(*flags.GetInt("workers"));
  std::vector<int> fanouts;
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) fanouts.push_back(std::stoi(f));

  Partition::LoadOptions lo;
  lo.verify_contents = false;
  auto p = Partition::Load(dir, lo);
  if (!p.ok()) return 1;
  const int64_t num_nodes = (*p)->node_type(0).num_nodes;
  NeighborSamplerOptions so;
  so.fanouts = fanouts;
  so.with_node_features = true;
  InProcess(**p, so, workers, batch_size, 1.0);  // warm the page cache
  const Rate local = InProcess(**p, so, workers, batch_size, seconds);

  ServerOptions opts;
  opts.partition_dir = dir;
  opts.verify_partition = false;
  opts.max_message_bytes = 2047 << 20;
  auto server = GraphStoreServer::BuildAndStart(opts);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  client::ClientOptions co;
  co.address = (*server)->address();
  co.max_message_bytes = 2047 << 20;
  co.deadline = std::chrono::seconds(120);
  auto c = client::Client::Connect(co);
  if (!c.ok()) return 1;
  auto meta = (*c)->GetDatasetMeta();
  if (!meta.ok() || !client::SharesHostWith(*meta)) {
    std::fprintf(stderr, "the server offers no usable shared memory\n");
    return 1;
  }
  const std::string shm_dir = meta->shared_memory().dir();
  const int ttfb_epochs = static_cast<int>(*flags.GetInt("ttfb_epochs"));
  const int gap_ms = static_cast<int>(*flags.GetInt("epoch_gap_ms"));
  const Rate socket = EndToEnd(**c, num_nodes, fanouts, workers, batch_size, seconds, "");
  const Rate shm = EndToEnd(**c, num_nodes, fanouts, workers, batch_size, seconds, shm_dir);
  std::vector<double> ttfb_socket = TimeToFirstBatch(**c, num_nodes, fanouts, batch_size, ttfb_epochs, gap_ms, "");
  std::vector<double> ttfb_shm = TimeToFirstBatch(**c, num_nodes, fanouts, batch_size, ttfb_epochs, gap_ms, shm_dir);
  const double cold_socket = ttfb_socket.front();
  const double cold_shm = ttfb_shm.front();
  ttfb_socket.erase(ttfb_socket.begin());
  ttfb_shm.erase(ttfb_shm.begin());
  (*server)->Shutdown();

  std::printf("graph %s: %lld nodes; batch %d, fanout [%s], 100 float features, %d worker(s)\n", dir.c_str(),
              static_cast<long long>(num_nodes), batch_size, flags.Get("fanouts").c_str(), workers);
  std::printf("%-30s %10s %10s %8s\n", "", "batches/s", "MB/s", "ratio");
  std::printf("%-30s %10.2f %10.1f %8s\n", "in process (baseline)", local.batches_per_s, local.mb_per_s, "1.00");
  std::printf("%-30s %10.2f %10.1f %8.2f\n", "end to end, shared memory", shm.batches_per_s, shm.mb_per_s,
              shm.batches_per_s / local.batches_per_s);
  std::printf("%-30s %10.2f %10.1f %8.2f\n", "end to end, bytes in messages", socket.batches_per_s,
              socket.mb_per_s, socket.batches_per_s / local.batches_per_s);
  std::printf("time from StartEpoch to the first batch on the client (epochs 1..%d, %d ms between epochs;\n"
              "first epoch right after registration, nothing sampled ahead yet):\n",
              ttfb_epochs - 1, gap_ms);
  std::printf("  shared memory:     p50 %8.2f ms, p90 %8.2f ms, first epoch %8.2f ms\n", Percentile(ttfb_shm, 0.5),
              Percentile(ttfb_shm, 0.9), cold_shm);
  std::printf("  bytes in messages: p50 %8.2f ms, p90 %8.2f ms, first epoch %8.2f ms\n", Percentile(ttfb_socket, 0.5),
              Percentile(ttfb_socket, 0.9), cold_socket);
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
