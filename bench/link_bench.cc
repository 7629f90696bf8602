// A trainer on another host: reads epochs from a running graphstored for a while and prints
// seeds per second, the bytes that crossed the link (the loopback interface's counter of the
// network namespace it runs in), the link's utilisation at --link_gbit, and bytes per seed.
// bench/link_bench.sh runs it against a server inside a namespace whose loopback is shaped to
// 10 and 1 Gbit/s.
//
//   link_bench --server=127.0.0.1:PORT --encoding=int8 --cache_fraction=0.1
//   link_bench --client=proto ...      # a generic client: every message parsed as protobuf
//   link_bench --graph=products        # prints the benchmark graph's directory, generating it
//
// Built with -DLINK_BENCH_PROTO_ONLY it needs nothing but the generic client, so the same file
// measures an earlier release of the service.

#ifndef LINK_BENCH_PROTO_ONLY
#include "client/loader.h"  // LibTorch first (see client/loader.h)
#endif

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_graphs.h"
#include "client/client.h"

#include "common/flags.h"

namespace graphstore {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Bytes sent over the loopback interface of this network namespace.
int64_t LoopbackBytes() {
  std::ifstream in("/proc/net/dev");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != "lo") continue;
    std::istringstream fields(line.substr(colon + 1));
    int64_t v[9] = {};
    for (auto& x : v) fields >> x;
    return v[8];  // transmit bytes
  }
  return 0;
}

v1::SamplingConfig Config(int batch_size, const std::vector<int>& fanouts) {
  v1::SamplingConfig c;
  c.set_batch_size(batch_size);
  for (int f : fanouts) c.add_num_neighbors(f);
  c.set_shuffle(true);
  c.set_with_node_features(true);
  c.set_with_labels(true);
  return c;
}

// Seeds read and loopback bytes over the measured stretch (after the warm-up).
struct Result {
  int64_t seeds = 0;
  double seconds = 0;
  int64_t link_bytes = 0;
  int64_t payload_bytes = 0;  // message bytes the client received
};

// The generic client: every message parsed into a protobuf message, as any generated client does.
Result ReadProto(const std::string& server, const v1::SamplingConfig& config, int workers, double warm,
                 double seconds) {
  client::ClientOptions co;
  co.address = server;
  co.max_message_bytes = INT32_MAX;
  auto c = client::Client::Connect(co);
  if (!c.ok()) throw std::runtime_error(c.status().ToString());
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("link-bench-proto");
  *init.mutable_config() = config;
  init.mutable_options()->set_num_workers(workers);
  auto backend = (*c)->InitSamplingBackend(init);
  if (!backend.ok()) throw std::runtime_error(backend.status().ToString());
  v1::GetNodeIdsRequest ids;
  ids.set_split("train");
  auto train = (*c)->GetNodeIds(ids);
  if (!train.ok()) throw std::runtime_error(train.status().ToString());
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend->backend_id());
  const auto* p = reinterpret_cast<const int64_t*>(train->ids().data().data());
  reg.mutable_nodes()->mutable_ids()->Add(p, p + train->ids().data().size() / 8);
  auto channel = (*c)->RegisterSamplingInput(reg);
  if (!channel.ok()) throw std::runtime_error(channel.status().ToString());

  Result r;
  const auto t0 = Clock::now();
  Clock::time_point measured_from = t0;
  bool measuring = false;
  for (int64_t epoch = 0; Since(t0) < warm + seconds; ++epoch) {
    v1::StartEpochRequest start;
    start.set_channel_id(channel->channel_id());
    start.set_epoch(epoch);
    if (!(*c)->StartEpoch(start).ok()) throw std::runtime_error("StartEpoch failed");
    v1::StreamSampledMessagesRequest sreq;
    sreq.set_channel_id(channel->channel_id());
    sreq.set_epoch(epoch);
    auto stream = (*c)->Stream(sreq);
    while (Since(t0) < warm + seconds) {
      auto m = stream->Next();
      if (!m.ok()) throw std::runtime_error(m.status().ToString());
      if (*m == nullptr) break;
      if (!measuring && Since(t0) >= warm) {
        measuring = true;
        measured_from = Clock::now();
        r.seeds = 0;
        r.link_bytes = -LoopbackBytes();
      }
      if (measuring) r.payload_bytes += static_cast<int64_t>((*m)->ByteSizeLong());
      for (const auto& n : (*m)->nodes()) {
        if (n.batch().shape_size() > 0) r.seeds += n.batch().shape(0);
      }
    }
    stream->Cancel();
  }
  r.seconds = Since(measured_from);
  r.link_bytes += LoopbackBytes();
  return r;
}

#ifndef LINK_BENCH_PROTO_ONLY
// The Loader: batches decoded into tensors, in the channel's feature encoding, with a cache.
Result ReadLoader(const std::string& server, const v1::SamplingConfig& config, int workers,
                  v1::FeatureEncoding encoding, double cache_fraction, double warm, double seconds, int connections,
                  const std::string& ca_file) {
  client::LoaderOptions o;
  o.servers = {server};
  o.connections_per_server = connections;
  o.security.ca_file = ca_file;
  o.backend_key = "link-bench";
  o.config = config;
  o.sampler_options.set_num_workers(workers);
  o.shared_memory = false;
  o.feature_encoding = encoding;
  o.deadline = std::chrono::seconds(300);
  {
    client::ClientOptions co;
    co.address = server;
    co.security = o.security;
    auto c = client::Client::Connect(co);
    if (!c.ok()) throw std::runtime_error(c.status().ToString());
    auto meta = (*c)->GetDatasetMeta();
    if (!meta.ok()) throw std::runtime_error(meta.status().ToString());
    o.feature_cache_rows = static_cast<int64_t>(cache_fraction * static_cast<double>(meta->node_types(0).num_nodes()));
  }
  client::Loader loader(o);
  Result r;
  const auto t0 = Clock::now();
  Clock::time_point measured_from = t0;
  bool measuring = false;
  for (int64_t epoch = 0; Since(t0) < warm + seconds; ++epoch) {
    loader.StartEpoch(epoch);
    while (Since(t0) < warm + seconds) {
      auto b = loader.Next();
      if (!b) break;
      if (!measuring && Since(t0) >= warm) {
        measuring = true;
        measured_from = Clock::now();
        r.seeds = 0;
        r.link_bytes = -LoopbackBytes();
        r.payload_bytes = -loader.bytes_received();
      }
      r.seeds += b->batch_size;
    }
  }
  r.seconds = Since(measured_from);
  r.link_bytes += LoopbackBytes();
  r.payload_bytes += loader.bytes_received();
  return r;
}
#endif

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("server", "", "host:port of the graphstored to read from");
  flags.Define("graph", "", "only print the directory of a benchmark graph (1m, products), generating it");
  flags.Define("cache_dir", "/tmp/graphstore-bench", "where generated graphs are kept");
  flags.Define("client", "loader", "loader (tensors, encodings, cache) or proto (a generic protobuf client)");
  flags.Define("encoding", "float32", "feature encoding: float32, float16, bfloat16, int8, int4, int2 or int1 (loader)");
  flags.Define("cache_fraction", "0", "feature cache as a fraction of the nodes (loader)");
  flags.Define("batch_size", "1024", "seeds per batch");
  flags.Define("fanouts", "15,10,5", "fanout per hop");
  flags.Define("workers", "2", "sampling workers on the server");
  flags.Define("warm_seconds", "8", "reading before the measurement starts");
  flags.Define("seconds", "10", "duration of the measurement");
  flags.Define("link_gbit", "10", "the link's rate, for its utilisation");
  flags.Define("label", "", "name of the row printed");
  flags.Define("connections", "1", "connections to the server, each a stripe of the batches (loader; 0: by cores)");
  flags.Define("ca_file", "", "TLS: the CA that signed the server's certificate (loader; empty: plaintext)");
  if (auto exit = flags.ParseCommandLine(argc, argv, "link_bench", "A trainer on another host.")) return *exit;
  if (!flags.Get("graph").empty()) {
    auto dir = BenchGraph(flags.Get("graph"), flags.Get("cache_dir"));
    if (!dir.ok()) {
      std::fprintf(stderr, "%s\n", dir.status().ToString().c_str());
      return 1;
    }
    EvictFromPageCache(*dir);  // graphstored reads it as on a server started cold
    std::printf("%s\n", dir->c_str());
    return 0;
  }
  std::vector<int> fanouts;
  std::stringstream fs(flags.Get("fanouts"));
  for (std::string f; std::getline(fs, f, ',');) fanouts.push_back(std::stoi(f));
  const auto config = Config(static_cast<int>(*flags.GetInt("batch_size")), fanouts);
  const int workers = static_cast<int>(*flags.GetInt("workers"));
  const double warm = *flags.GetDouble("warm_seconds");
  const double seconds = *flags.GetDouble("seconds");
  const double cache_fraction = *flags.GetDouble("cache_fraction");
  std::string label = flags.Get("label");

  Result r;
  try {
    if (flags.Get("client") == "proto") {
      r = ReadProto(flags.Get("server"), config, workers, warm, seconds);
      if (label.empty()) label = "generic client, float32";
    } else {
#ifdef LINK_BENCH_PROTO_ONLY
      std::fprintf(stderr, "built with the generic client only\n");
      return 2;
#else
      auto encoding = client::ParseFeatureEncoding(flags.Get("encoding"));
      if (!encoding.ok()) {
        std::fprintf(stderr, "%s\n", encoding.status().ToString().c_str());
        return 2;
      }
      const int connections = static_cast<int>(*flags.GetInt("connections"));
      r = ReadLoader(flags.Get("server"), config, workers, *encoding, cache_fraction, warm, seconds, connections,
                     flags.Get("ca_file"));
      if (label.empty()) {
        label = "Loader, " + flags.Get("encoding") +
                (cache_fraction > 0 ? " + cache " + std::to_string(static_cast<int>(cache_fraction * 100)) + "%" : "") +
                (flags.Get("ca_file").empty() ? "" : ", TLS") +
                (connections != 1 ? ", " + std::to_string(connections) + " conns" : "");
      }
#endif
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "link_bench: %s\n", e.what());
    return 1;
  }
  const double link_bytes_per_s = static_cast<double>(r.link_bytes) / r.seconds;
  const double seeds_per_s = static_cast<double>(r.seeds) / r.seconds;
  const double link = *flags.GetDouble("link_gbit") * 1e9 / 8;
  // Utilisation counts what crossed the interface (headers and retransmissions included); bytes
  // per seed counts the messages the trainer received.
  std::printf("%-30s %7.0f seeds/s  %7.1f MB/s on the link, utilisation %.2f  %7.0f bytes/seed\n", label.c_str(),
              seeds_per_s, link_bytes_per_s / 1e6, link_bytes_per_s / link,
              static_cast<double>(r.payload_bytes) / static_cast<double>(r.seeds));
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
