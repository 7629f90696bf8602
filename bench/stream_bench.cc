// The remote trainer's data path, measured three ways in one run:
//
// (a) Transport alone: batches sampled once, then replayed through the server's real send path
//     (the raw stream writer, zero-copy parts) to a client that decodes them into tensors,
//     against a raw TCP pump of the same bytes in the same parts over loopback (a length
//     prefix per part, read into pooled buffers): the cost of gRPC, framing and decoding over
//     the kernel's own copies.
// (b) The whole path: a graphstored (in process, real gRPC over loopback) samples with N workers
//     and a Loader reads the batches as tensors, over the socket and through shared memory,
//     against the same sampling in process (recycled subgraph memory, no transport).
// (c) Time from StartEpoch to holding the first batch (Loader), against the raw pump's time for
//     one batch's bytes.
// (t) With --tls_certs: the Loader over TLS against plaintext (float32 and int8 features), and
//     what the cipher alone allows: this machine's AES-GCM rate, the bytes and the process CPU
//     time of a plaintext batch, and the share of plaintext speed left once every byte is
//     encrypted and decrypted on the same cores.
//
// (n) Striped streams (--connections=1,2,4): the same three over N connections, each carrying
//     a stripe of the batches: the raw TCP pump over N connections (baseline), the gRPC send
//     path over N, and the Loader with connections_per_server = N, plaintext and (with
//     --tls_certs) TLS; ratios to the pump over as many connections and to N = 1, and the
//     process's CPU time per batch (server and Loader share the process).
//
// No LibTorch: the Loader measured is its torch-free core (client/loader_core.h), which hands
// out the batches that client::Loader and the Python package wrap, so the binary and its
// libraries can be carried to another machine.
//
//   bazel-bin/bench/stream_bench --graph=1m
//   bazel-bin/bench/stream_bench --sections=n --connections=1,2,4 --batch_size=64 --fanouts=10,5

#include "client/loader_core.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <openssl/evp.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/bench_graphs.h"
#include "bench/process_usage.h"
#include "client/client.h"
#include "scheduler/backend.h"
#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/server.h"
#include "server/service/worker.h"
#include "server/rpc/sampled_message_stream.h"
#include "common/flags.h"
#include "server/util/log.h"

namespace graphstore {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<int64_t> Seeds(int64_t num_nodes, int64_t count) {
  DrawStream rng(7);
  std::vector<int64_t> s(count);
  for (auto& x : s) x = static_cast<int64_t>(rng.Below(num_nodes));
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  DeterministicShuffle(3, s.data(), s.size());
  return s;
}

// In-process sampling with recycled subgraph memory: what the server's workers do before any
// transport. Batches per second.
double InProcess(const Partition& p, const NeighborSamplerOptions& so, std::shared_ptr<SubgraphPool> pool,
                 int workers, int batch_size, double seconds) {
  auto sampler = NeighborSampler::Create(&p, so);
  if (!sampler.ok()) std::abort();
  std::vector<std::unique_ptr<SamplerScratch>> scratch;
  for (int i = 0; i < workers; ++i) scratch.push_back((*sampler)->NewScratch());
  scheduler::BackendOptions bo;
  bo.num_workers = workers;
  scheduler::Backend backend(bo, [&](const scheduler::BatchTask& t) -> absl::StatusOr<scheduler::Batch> {
    auto g = pool->Acquire();
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
  const auto t0 = Clock::now();
  while (Since(t0) < seconds) {
    auto d = backend.Pop(1, 0, std::chrono::seconds(60));
    if (d.kind != scheduler::Delivery::Kind::kMessage) break;
    ++batches;
  }
  const double el = Since(t0);
  backend.Stop();
  return batches / el;
}

// ----- (a) the transport alone ------------------------------------------------------------

// A stream host with nothing behind it: the replayed batches belong to no core.
class ReplayHost : public StreamHost {
 public:
  void DetachStream(const StreamAttachment&, bool) override {}
  void Touch(uint64_t) override {}
  absl::StatusOr<bool> SharedHoldBack(uint64_t) override { return false; }
  void HandOff(uint64_t, std::shared_ptr<SharedUse>) override {}
  void Sent(const StreamAttachment&, int64_t, const BatchCounts*) override {}
};

// StreamSampledMessages over a backend whose "sampling" hands out batches encoded beforehand.
class ReplayService
    : public v1::GraphStore::WithRawCallbackMethod_StreamSampledMessages<v1::GraphStore::CallbackService> {
 public:
  explicit ReplayService(std::shared_ptr<scheduler::Backend> backend) : backend_(std::move(backend)) {}
  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamSampledMessages(grpc::CallbackServerContext*,
                                                                    const grpc::ByteBuffer* raw) override {
    v1::StreamSampledMessagesRequest req;
    grpc::ByteBuffer copy(*raw);
    if (!grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::StreamSampledMessagesRequest>(&copy, &req).ok()) {
      return SampledMessageStream::Failed(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad request"));
    }
    StreamAttachment a;
    a.backend = backend_;
    a.channel_id = req.channel_id();
    a.epoch = req.epoch();
    a.stripe.index = static_cast<int>(req.stripe());
    a.stripe.count = static_cast<int>(std::max<uint32_t>(1, req.num_stripes()));
    auto* s = new SampledMessageStream(&host_, a);
    s->Begin();
    return s;
  }

 private:
  ReplayHost host_;
  std::shared_ptr<scheduler::Backend> backend_;
};

struct Throughput {
  double bytes_per_s = 0;
  double batches_per_s = 0;
};

// Reads the stream `req` names as raw messages on a connection of its own, with the client's
// channel settings (window, message size), dropping them; returns the messages, adds their bytes.
int64_t ReadRaw(const std::string& address, const v1::StreamSampledMessagesRequest& req, int window_bytes,
                double* bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, window_bytes);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  grpc::ClientContext ctx;
  const grpc::internal::RpcMethod method("/graphstore.v1.GraphStore/StreamSampledMessages",
                                         grpc::internal::RpcMethod::SERVER_STREAMING);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel.get(), method, &ctx, req));
  grpc::ByteBuffer message;
  int64_t parts = 0;
  while (reader->Read(&message)) {
    *bytes += static_cast<double>(message.Length());
    message.Clear();
    ++parts;
  }
  (void)reader->Finish();
  return parts;
}

// The gRPC send path: `batches` replayed `rounds` times, decoded by the client into tensors
// (with `pool`), or, without a pool, read as raw messages and dropped: gRPC and its framing
// alone, whose receiver, like the raw pump's, copies each byte once out of the kernel.
Throughput ReplayGrpc(const std::vector<std::shared_ptr<const WireMessage>>& batches, int rounds,
                      std::shared_ptr<client::BufferPool> pool, int connections = 1) {
  scheduler::BackendOptions bo;
  bo.num_workers = connections;
  auto backend = std::make_shared<scheduler::Backend>(bo, [&](const scheduler::BatchTask& t) {
    const auto& m = batches[t.batch_index % batches.size()];
    return absl::StatusOr<scheduler::Batch>(scheduler::Batch{m, m->encoded->bytes});
  });
  ReplayService service(backend);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxSendMessageSize(INT32_MAX);
  auto server = builder.BuildAndStart();
  client::ClientOptions co;
  co.address = absl::StrCat("127.0.0.1:", port);
  co.max_message_bytes = INT32_MAX;
  co.stream_window_bytes = 64 << 20;
  auto c = client::Client::Connect(co);
  if (!c.ok()) std::abort();
  scheduler::ChannelOptions ch;
  ch.seeds.assign(batches.size() * rounds, 0);
  ch.batch_size = 1;
  ch.ordered = true;
  if (!backend->AddChannel(1, ch).ok() || !backend->StartEpoch(1, 0).ok()) std::abort();
  // One reader per connection, each taking stripe k of the batches.
  std::vector<double> bytes(static_cast<size_t>(connections), 0);
  std::vector<int64_t> counts(static_cast<size_t>(connections), 0);
  std::vector<std::unique_ptr<client::Client>> clients;
  for (int k = 0; k < connections; ++k) {
    co.connection = k;
    auto ck = client::Client::Connect(co);
    if (!ck.ok()) std::abort();
    clients.push_back(*std::move(ck));
  }
  auto read = [&](int k) {
    v1::StreamSampledMessagesRequest req;
    req.set_channel_id(1);
    req.set_stripe(static_cast<uint32_t>(k));
    req.set_num_stripes(static_cast<uint32_t>(connections));
    if (pool != nullptr) {
      client::DecodeOptions decode;
      decode.pool = pool;
      auto stream = clients[static_cast<size_t>(k)]->StreamBatches(req, decode);
      while (true) {
        auto b = stream->Next();
        if (!b.ok() || *b == nullptr) break;
        bytes[static_cast<size_t>(k)] += static_cast<double>((*b)->wire_bytes);
        ++counts[static_cast<size_t>(k)];
      }
      return;
    }
    const int64_t parts = ReadRaw(co.address, req, co.stream_window_bytes, &bytes[static_cast<size_t>(k)]);
    counts[static_cast<size_t>(k)] = parts / static_cast<int64_t>(batches[0]->encoded->parts.size());
  };
  const auto t0 = Clock::now();
  std::vector<std::thread> readers;
  for (int k = 0; k < connections; ++k) readers.emplace_back(read, k);
  for (auto& t : readers) t.join();
  double total_bytes = 0;
  int64_t n = 0;
  for (int k = 0; k < connections; ++k) {
    total_bytes += bytes[static_cast<size_t>(k)];
    n += counts[static_cast<size_t>(k)];
  }
  const double el = Since(t0);
  server->Shutdown();
  backend->Stop();
  return {total_bytes / el, n / el};
}

bool WriteAll(int fd, std::vector<iovec> iov) {
  size_t i = 0;
  while (i < iov.size()) {
    const ssize_t w = writev(fd, iov.data() + i, static_cast<int>(std::min<size_t>(iov.size() - i, IOV_MAX)));
    if (w <= 0) return false;
    size_t done = static_cast<size_t>(w);
    while (i < iov.size() && done >= iov[i].iov_len) done -= iov[i++].iov_len;
    if (i < iov.size()) {
      iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + done;
      iov[i].iov_len -= done;
    }
  }
  return true;
}

// The same bytes in the same parts over `connections` plain TCP connections (batch i on
// connection i mod N): a length prefix per part, read into pooled buffers.
Throughput RawPump(const std::vector<std::shared_ptr<const WireMessage>>& batches, int rounds,
                   const std::shared_ptr<client::BufferPool>& pool, int connections = 1) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(listener, connections) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  std::vector<int> fds;
  for (int k = 0; k < connections; ++k) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
    fds.push_back(fd);
  }
  std::vector<int> accepted;
  for (int k = 0; k < connections; ++k) accepted.push_back(accept(listener, nullptr, nullptr));
  auto send = [&](int k) {
    const int fd = accepted[static_cast<size_t>(k)];
    int64_t i = 0;
    for (int r = 0; r < rounds; ++r) {
      for (const auto& m : batches) {
        if (i++ % connections != k) continue;
        for (const auto& part : m->encoded->parts) {
          uint64_t size = 0;
          for (const auto& s : part) size += s.size;
          std::vector<iovec> iov = {{&size, sizeof(size)}};
          for (const auto& s : part) iov.push_back({const_cast<char*>(s.data), s.size});
          if (!WriteAll(fd, iov)) std::abort();
        }
      }
    }
    close(fd);
  };
  std::vector<double> bytes(static_cast<size_t>(connections), 0);
  auto receive = [&](int k) {
    const int fd = fds[static_cast<size_t>(k)];
    auto read_all = [fd](char* p, size_t n) {
      while (n > 0) {
        const ssize_t got = read(fd, p, n);
        if (got <= 0) return false;
        p += got;
        n -= static_cast<size_t>(got);
      }
      return true;
    };
    uint64_t size;
    while (read_all(reinterpret_cast<char*>(&size), sizeof(size))) {
      auto buffer = pool->Acquire(size);
      if (!read_all(buffer->data(), size)) break;
      bytes[static_cast<size_t>(k)] += static_cast<double>(size);
    }
    close(fd);
  };
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int k = 0; k < connections; ++k) {
    threads.emplace_back(send, k);
    threads.emplace_back(receive, k);
  }
  for (auto& t : threads) t.join();
  const double el = Since(t0);
  close(listener);
  double total = 0;
  for (double b : bytes) total += b;
  const double n = static_cast<double>(batches.size()) * rounds;
  return {total / el, n / el};
}

// ----- (b), (c): the whole path through a Loader --------------------------------------------

client::LoaderOptions LoaderFor(const std::string& address, const std::vector<int64_t>& seeds, int batch_size,
                                const std::vector<int>& fanouts, int workers, bool shared, const std::string& key) {
  client::LoaderOptions o;
  o.servers = {address};
  o.backend_key = key;
  o.config.set_batch_size(batch_size);
  for (int f : fanouts) o.config.add_num_neighbors(f);
  o.config.set_with_node_features(true);
  o.sampler_options.set_num_workers(workers);
  o.seeds = seeds;
  o.shared_memory = shared;
  o.deadline = std::chrono::seconds(120);
  o.stream_window_bytes = 64 << 20;
  return o;
}

// What a Loader reading epochs for `seconds` achieved, after `warm` seconds that fill the
// server's and the client's buffer pools: batches per second, and per batch the bytes received
// and the CPU time of the whole process (server and client share it here).
struct LoaderRun {
  double batches_per_s = 0;
  double bytes_per_batch = 0;
  double cpu_s_per_batch = 0;
  double faults_per_batch = 0;  // minor page faults of the process: memory met for the first time
};

LoaderRun RunLoader(client::LoaderOptions o, double warm, double seconds) {
  client::LoaderCore loader(o);
  loader.StartEpoch(0);
  for (const auto w = Clock::now(); Since(w) < warm && loader.Next();) {
  }
  int64_t batches = 0;
  const int64_t bytes0 = loader.bytes_received();
  const double cpu0 = ProcessCpuSeconds();
  const int64_t faults0 = MinorPageFaults();
  const auto t0 = Clock::now();
  for (int64_t epoch = 1; Since(t0) < seconds; ++epoch) {
    loader.StartEpoch(epoch);
    while (Since(t0) < seconds && loader.Next()) ++batches;
  }
  LoaderRun r;
  r.batches_per_s = batches / Since(t0);
  if (batches > 0) {
    r.bytes_per_batch = static_cast<double>(loader.bytes_received() - bytes0) / batches;
    r.cpu_s_per_batch = (ProcessCpuSeconds() - cpu0) / batches;
    r.faults_per_batch = static_cast<double>(MinorPageFaults() - faults0) / batches;
  }
  return r;
}

double LoaderRate(client::LoaderOptions o, double warm, double seconds) {
  return RunLoader(std::move(o), warm, seconds).batches_per_s;
}

// Bytes per second one core encrypts with `cipher` in 16 KiB records (TLS's largest).
double AeadBytesPerSecond(const EVP_CIPHER* cipher) {
  std::vector<unsigned char> in(16 << 10, 0x5a), out(in.size() + 16);
  unsigned char key[32] = {1}, iv[12] = {2};
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int64_t bytes = 0;
  const auto t0 = Clock::now();
  while (Since(t0) < 1.0) {
    for (int r = 0; r < 256; ++r, ++iv[0]) {
      int len = 0;
      EVP_EncryptInit_ex(ctx, cipher, nullptr, key, iv);
      EVP_EncryptUpdate(ctx, out.data(), &len, in.data(), static_cast<int>(in.size()));
      EVP_EncryptFinal_ex(ctx, out.data() + len, &len);
      bytes += static_cast<int64_t>(in.size());
    }
  }
  const double rate = bytes / Since(t0);
  EVP_CIPHER_CTX_free(ctx);
  return rate;
}

// Milliseconds from StartEpoch to holding the first batch, epochs 1.. (epoch 0 starts cold).
std::vector<double> FirstBatchMs(client::LoaderOptions o, int epochs, int gap_ms) {
  client::LoaderCore loader(o);
  std::vector<double> ms;
  for (int e = 0; e < epochs; ++e) {
    const auto t0 = Clock::now();
    loader.StartEpoch(e);
    if (!loader.Next()) std::abort();
    if (e > 0) ms.push_back(Since(t0) * 1e3);
    while (loader.Next()) {
    }
    // Like a trainer: end-of-epoch work (validation, logging) before the next epoch.
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  }
  return ms;
}

// The plaintext server's partition behind a TLS listener, with the certificates of
// tests/security/make_certs.sh in `certs`.
absl::StatusOr<std::unique_ptr<GraphStoreServer>> StartTls(ServerOptions opts, const std::string& certs) {
  opts.tls.cert_file = certs + "/server.pem";
  opts.tls.key_file = certs + "/server.key";
  return GraphStoreServer::BuildAndStart(opts);
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// Batches sampled and encoded by the server's worker step, for replaying.
std::vector<std::shared_ptr<const WireMessage>> Encoded(const Partition& p, const NeighborSamplerOptions& so,
                                                        int batch_size, int count, size_t part_bytes,
                                                        size_t split_bytes) {
  auto sampler = NeighborSampler::Create(&p, so);
  if (!sampler.ok()) std::abort();
  SamplingWorkers workers(&p, *std::move(sampler), 1, part_bytes, split_bytes);
  const std::vector<int64_t> seeds = Seeds(p.node_type(0).num_nodes, static_cast<int64_t>(count) * batch_size);
  std::vector<std::shared_ptr<const WireMessage>> out;
  for (int b = 0; b < count; ++b) {
    scheduler::BatchTask t;
    t.channel_id = 1;
    t.batch_index = b;
    t.num_batches = count;
    t.seeds = seeds.data() + static_cast<size_t>(b) * batch_size;
    t.num_seeds = batch_size;
    auto batch = workers.SampleAndEncode(t);
    if (!batch.ok()) std::abort();
    out.push_back(std::static_pointer_cast<const WireMessage>(batch->payload));
  }
  return out;
}

void DefineFlags(Flags* flags) {
  flags->Define("graph", "1m", "1m (generated 1M nodes, ~25M edges, 100 features) or a partition DIR");
  flags->Define("cache_dir", "/tmp/graphstore-bench", "where generated graphs are kept");
  flags->Define("seconds", "6", "duration of each throughput measurement");
  flags->Define("batch_size", "1024", "seeds per batch");
  flags->Define("fanouts", "15,10,5", "fanout per hop");
  flags->Define("workers", "1", "sampling workers, in process and on the server");
  flags->Define("part_mb", "1", "stream part size, MiB (the server's --stream_part_mb)");
  flags->Define("sampling_nice", "10", "the server's --sampling_nice (its sampling workers' nice value)");
  flags->Define("split_mb", "8", "batches larger than this are split into parts, MiB (the server's --stream_split_mb)");
  flags->Define("replay_batches", "6", "distinct batches replayed through the transport");
  flags->Define("ttfb_epochs", "20", "epochs timed for time to first batch");
  flags->Define("trials", "3", "alternating runs of the raw pump and the gRPC path in (a), rotating trials in (b)");
  flags->Define("sections", "abc",
                "which measurements to run: a (transport), b (whole path), c (first batch), t (TLS against "
                "plaintext), n (striped streams over --connections)");
  flags->Define("tls_certs", "",
                "for section t: a directory made by tests/security/make_certs.sh (ca.pem, server.pem, server.key)");
  flags->Define("connections", "1,2", "section n: connections per server to compare (the first is the baseline)");
  flags->Define("buffer_mb", "0", "section n: the channel's output buffer, MiB (0: the server's default)");
  flags->Define("epoch_gap_ms", "100", "pause between consuming an epoch and starting the next (time to first batch)");
}

// What the sections share: the graph, the batch shape, the batches (a) replays, the raw pump's
// rate, and the in-process server the Loaders read from.
struct Bench {
  const Flags* flags = nullptr;
  double seconds = 0;
  int batch_size = 0, workers = 0, trials = 0, rounds = 0;
  std::vector<int> fanouts;
  NeighborSamplerOptions so;
  std::unique_ptr<Partition> partition;
  std::vector<std::shared_ptr<const WireMessage>> encoded;
  double batch_mb = 0;
  double raw = 0;  // the raw pump's bytes/s over one connection
  std::shared_ptr<client::BufferPool> raw_pool;
  ServerOptions opts;
  std::string address;
  std::vector<int64_t> seeds;
};

// (a) The transport alone against the raw pump, which always runs: (c) is held to its time for
// one batch.
void TransportSection(Bench& b, bool run_a) {
  std::vector<double> raw_rates, grpc_rates, read_rates;
  // Each side keeps its buffers between runs, as a trainer's process does.
  auto grpc_pool = client::BufferPool::Create();
  RawPump(b.encoded, 1, b.raw_pool);
  if (run_a) ReplayGrpc(b.encoded, 1, grpc_pool);
  // Noise on a shared machine is larger than the difference measured: the two paths alternate
  // and each reports its median.
  for (int t = 0; t < (run_a ? b.trials : 1); ++t) {
    raw_rates.push_back(RawPump(b.encoded, b.rounds, b.raw_pool).bytes_per_s);
    if (run_a) grpc_rates.push_back(ReplayGrpc(b.encoded, b.rounds, grpc_pool).bytes_per_s);
    if (run_a) read_rates.push_back(ReplayGrpc(b.encoded, b.rounds, nullptr).bytes_per_s);
  }
  b.raw = Percentile(raw_rates, 0.5);
  std::printf("(a) transport alone, %zu batches of %.2f MB (%zu parts each) replayed %d times, median of %zu:\n",
              b.encoded.size(), b.batch_mb, b.encoded[0]->encoded->parts.size(), b.rounds, raw_rates.size());
  std::printf("    raw TCP pump (baseline)  %9.1f MB/s\n", b.raw / 1e6);
  if (run_a) {
    const double grpc = Percentile(grpc_rates, 0.5);
    const double read = Percentile(read_rates, 0.5);
    std::printf("    gRPC send + read         %9.1f MB/s   ratio %.2f\n", read / 1e6, read / b.raw);
    std::printf("    gRPC send + decode       %9.1f MB/s   ratio %.2f\n", grpc / 1e6, grpc / b.raw);
  }
  std::fflush(stdout);
}

// (b) The whole path: in process, the Loader over the socket, and through shared memory.
void WholePathSection(const Bench& b) {
  // The first run warms the page cache and the pooled subgraphs (fresh memory is slow to fault in).
  auto pool = std::make_shared<SubgraphPool>(8);
  InProcess(*b.partition, b.so, pool, b.workers, b.batch_size, std::max(2.0, b.seconds / 2));
  // Trials of the three runs, in an order that rotates, so that each ratio compares runs a
  // few b.seconds apart on a shared machine; the medians are printed with their range.
  std::vector<double> local, socket, shm, socket_ratio, shm_ratio;
  for (int t = 0; t < b.trials; ++t) {
    double rate[3];
    for (int k = 0; k < 3; ++k) {
      switch ((t + k) % 3) {
        case 0:
          rate[0] = InProcess(*b.partition, b.so, pool, b.workers, b.batch_size, b.seconds);
          break;
        case 1:
          rate[1] = LoaderRate(LoaderFor(b.address, b.seeds, b.batch_size, b.fanouts, b.workers, false, "socket"),
                               b.seconds / 2, b.seconds);
          break;
        default:
          rate[2] = LoaderRate(LoaderFor(b.address, b.seeds, b.batch_size, b.fanouts, b.workers, true, "shm"),
                               b.seconds / 2, b.seconds);
      }
    }
    local.push_back(rate[0]);
    socket.push_back(rate[1]);
    shm.push_back(rate[2]);
    socket_ratio.push_back(rate[1] / rate[0]);
    shm_ratio.push_back(rate[2] / rate[0]);
  }
  auto range = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return absl::StrFormat("%.2f (%.2f-%.2f)", Percentile(v, 0.5), v.front(), v.back());
  };
  std::printf("(b) whole path, batches/s, median of %d rotating trials (range):\n", b.trials);
  std::printf("    in process (baseline)    %s\n", range(local).c_str());
  std::printf("    Loader over the socket   %s   ratio %s\n", range(socket).c_str(), range(socket_ratio).c_str());
  std::printf("    Loader, shared memory    %s   ratio %s\n", range(shm).c_str(), range(shm_ratio).c_str());
  std::fflush(stdout);
}

// (c) StartEpoch to the first batch.
void FirstBatchSection(const Bench& b) {
  const std::vector<int64_t> few(b.seeds.begin(), b.seeds.begin() + 4LL * b.batch_size);
  const int epochs = static_cast<int>(*b.flags->GetInt("ttfb_epochs"));
  const int gap = static_cast<int>(*b.flags->GetInt("epoch_gap_ms"));
  const auto socket = FirstBatchMs(LoaderFor(b.address, few, b.batch_size, b.fanouts, 2, false, "ttfb"), epochs, gap);
  const auto shm = FirstBatchMs(LoaderFor(b.address, few, b.batch_size, b.fanouts, 2, true, "ttfb-shm"), epochs, gap);
  const double raw_ms = b.batch_mb * 1e6 / b.raw * 1e3;
  std::printf("(c) StartEpoch to the first batch (epochs 1..%d, %d ms between epochs):\n", epochs - 1, gap);
  std::printf("    raw pump, one batch's bytes   %8.2f ms (target: socket p50 <= %.2f ms)\n", raw_ms, raw_ms + 10);
  std::printf("    socket        p50 %8.2f ms, p90 %8.2f ms\n", Percentile(socket, 0.5), Percentile(socket, 0.9));
  std::printf("    shared memory p50 %8.2f ms, p90 %8.2f ms\n", Percentile(shm, 0.5), Percentile(shm, 0.9));
}

// (t) TLS against plaintext on the same partition; 1 when the TLS listener does not start.
int TlsSection(const Bench& b) {
  // The same partition behind a TLS listener; the plaintext server above is the baseline.
  const std::string certs = b.flags->Get("tls_certs");
  if (certs.empty()) {
    std::fprintf(stderr, "section t needs --tls_certs=DIR (bash tests/security/make_certs.sh DIR)\n");
    return 2;
  }
  auto tls_server = StartTls(b.opts, certs);
  if (!tls_server.ok()) {
    std::fprintf(stderr, "%s\n", tls_server.status().ToString().c_str());
    return 1;
  }
  auto with_tls = [&](client::LoaderOptions o) {
    o.servers = {(*tls_server)->address()};
    o.security.ca_file = certs + "/ca.pem";
    return o;
  };
  auto int8 = [](client::LoaderOptions o) {
    o.feature_encoding = v1::FEATURE_ENCODING_INT8;
    return o;
  };
  auto better = [](LoaderRun* best, const LoaderRun& r) {
    if (r.batches_per_s > best->batches_per_s) *best = r;
  };
  LoaderRun plain, tls, plain_shm, tls_shm, plain8, tls8;
  // Alternating runs; each figure is the better of two (noise on shared machines is one-sided).
  for (int trial = 0; trial < 2; ++trial) {
    better(&plain, RunLoader(LoaderFor(b.address, b.seeds, b.batch_size, b.fanouts, b.workers, false, "plain"),
                             b.seconds / 2, b.seconds));
    better(&tls, RunLoader(with_tls(LoaderFor("", b.seeds, b.batch_size, b.fanouts, b.workers, false, "tls")),
                           b.seconds / 2, b.seconds));
    better(&plain_shm, RunLoader(LoaderFor(b.address, b.seeds, b.batch_size, b.fanouts, b.workers, true, "plain-shm"),
                                 b.seconds / 2, b.seconds));
    better(&tls_shm, RunLoader(with_tls(LoaderFor("", b.seeds, b.batch_size, b.fanouts, b.workers, true, "tls-shm")),
                               b.seconds / 2, b.seconds));
    better(&plain8,
           RunLoader(int8(LoaderFor(b.address, b.seeds, b.batch_size, b.fanouts, b.workers, false, "plain-int8")),
                     b.seconds / 2, b.seconds));
    better(&tls8,
           RunLoader(with_tls(int8(LoaderFor("", b.seeds, b.batch_size, b.fanouts, b.workers, false, "tls-int8"))),
                     b.seconds / 2, b.seconds));
  }
  // The Loaders here take the default connections per server, which grows with the cores.
  std::printf("(t) TLS against plaintext, Loader batches/s (better of 2 alternating runs), %d connection(s) "
              "per server (the default on %u cores):\n",
              client::DefaultConnectionsPerServer(), std::thread::hardware_concurrency());
  // Cores busy: the process's CPU time per second of the run.
  auto busy = [](const LoaderRun& r) { return r.cpu_s_per_batch * r.batches_per_s; };
  std::printf("    socket, plaintext (baseline)   %9.2f               %.2f cores busy\n", plain.batches_per_s,
              busy(plain));
  std::printf("    socket, TLS                    %9.2f   ratio %.2f   %.2f cores busy\n", tls.batches_per_s,
              tls.batches_per_s / plain.batches_per_s, busy(tls));
  std::printf("    shared memory, plaintext       %9.2f\n", plain_shm.batches_per_s);
  std::printf("    shared memory, TLS listener    %9.2f   ratio %.2f\n", tls_shm.batches_per_s,
              tls_shm.batches_per_s / plain_shm.batches_per_s);
  std::printf("    socket int8, plaintext         %9.2f               %.2f cores busy\n", plain8.batches_per_s,
              busy(plain8));
  std::printf("    socket int8, TLS               %9.2f   ratio %.2f   %.2f cores busy\n", tls8.batches_per_s,
              tls8.batches_per_s / plain8.batches_per_s, busy(tls8));
  // What the cipher alone allows: every byte is encrypted once and decrypted once on this
  // machine's cores, beside the CPU time the plaintext path already takes per batch.
  const double aes128 = AeadBytesPerSecond(EVP_aes_128_gcm());
  const double aes256 = AeadBytesPerSecond(EVP_aes_256_gcm());
  const double cores = static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("    AES-GCM on one core: 128-bit %.2f GB/s, 256-bit %.2f GB/s; %.0f cores\n", aes128 / 1e9, aes256 / 1e9,
              cores);
  for (const auto& [name, run] : {std::pair<const char*, const LoaderRun&>{"float32", plain}, {"int8", plain8}}) {
    const double crypto = 2 * run.bytes_per_batch / aes256;
    const double bound = std::min(1.0, cores / (run.cpu_s_per_batch + crypto) / run.batches_per_s);
    std::printf(
        "    %-7s %.1f MB a batch, plaintext %.0f ms CPU a batch, AES-256 %.0f ms more: TLS at most %.2f "
        "of plaintext\n",
        name, run.bytes_per_batch / 1e6, run.cpu_s_per_batch * 1e3, crypto * 1e3, bound);
  }
  (*tls_server)->Shutdown();
  return 0;
}

// (n) Striped streams over each count of --connections, plaintext and (with certificates) TLS.
int StripesSection(const Bench& b) {
  std::vector<int> counts;
  for (const auto& c : SplitList(b.flags->Get("connections"), ',')) counts.push_back(std::max(1, std::stoi(c)));
  // TLS too, given certificates: a listener of its own on the same partition.
  const std::string certs = b.flags->Get("tls_certs");
  std::unique_ptr<GraphStoreServer> tls_server;
  if (!certs.empty()) {
    auto started = StartTls(b.opts, certs);
    if (!started.ok()) {
      std::fprintf(stderr, "%s\n", started.status().ToString().c_str());
      return 1;
    }
    tls_server = *std::move(started);
  }
  auto socket_loader = [&](int n, bool tls) {
    client::LoaderOptions o = LoaderFor(b.address, b.seeds, b.batch_size, b.fanouts, b.workers, false,
                                        absl::StrCat(tls ? "tls-" : "plain-", n));
    o.connections_per_server = n;
    o.buffer_bytes = *b.flags->GetInt("buffer_mb") << 20;
    if (tls) {
      o.servers = {tls_server->address()};
      o.security.ca_file = certs + "/ca.pem";
    }
    return o;
  };
  struct Row {
    double pump = 0, grpc = 0, plain = 0, tls = 0;
    double plain_cpu_ms = 0;  // CPU of the whole process per batch: steadier than a rate here
    double plain_faults = 0;
  };
  std::vector<Row> rows(counts.size());
  auto pool = client::BufferPool::Create();
  // Trials alternate over the counts, so that each ratio compares runs close in time; each
  // figure is the median of its b.trials.
  std::vector<std::vector<Row>> trials_of(counts.size());
  for (int t = 0; t < b.trials; ++t) {
    for (size_t i = 0; i < counts.size(); ++i) {
      Row r;
      r.pump = RawPump(b.encoded, b.rounds, b.raw_pool, counts[i]).bytes_per_s;
      r.grpc = ReplayGrpc(b.encoded, b.rounds, pool, counts[i]).bytes_per_s;
      const LoaderRun plain = RunLoader(socket_loader(counts[i], false), b.seconds / 2, b.seconds);
      r.plain = plain.batches_per_s;
      r.plain_cpu_ms = 1e3 * plain.cpu_s_per_batch;
      r.plain_faults = plain.faults_per_batch;
      if (tls_server) r.tls = LoaderRate(socket_loader(counts[i], true), b.seconds / 2, b.seconds);
      trials_of[i].push_back(r);
    }
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    auto median = [&](double Row::*field) {
      std::vector<double> v;
      for (const auto& r : trials_of[i]) v.push_back(r.*field);
      return Percentile(v, 0.5);
    };
    rows[i] = {median(&Row::pump), median(&Row::grpc), median(&Row::plain), median(&Row::tls),
               median(&Row::plain_cpu_ms), median(&Row::plain_faults)};
  }
  std::printf("(n) striped streams, batch %d, median of %d trials, %u cores:\n", b.batch_size, b.trials,
              std::thread::hardware_concurrency());
  std::printf("    conns   raw pump MB/s (baseline)   gRPC decode MB/s  ratio   Loader b/s  vs N=%d  CPU ms/b  faults/b", counts[0]);
  if (tls_server) std::printf("   TLS b/s  TLS/plain");
  std::printf("\n");
  for (size_t i = 0; i < counts.size(); ++i) {
    const Row& r = rows[i];
    std::printf("    %5d   %24.1f   %16.1f  %5.2f   %10.2f  %5.2f  %8.1f  %8.0f", counts[i], r.pump / 1e6, r.grpc / 1e6,
                r.grpc / r.pump, r.plain, r.plain / rows[0].plain, r.plain_cpu_ms, r.plain_faults);
    if (tls_server) std::printf("   %7.2f  %9.2f", r.tls, r.tls / r.plain);
    std::printf("\n");
  }
  if (tls_server) tls_server->Shutdown();
  return 0;
}

int Run(int argc, char** argv) {
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "stream_bench", "The remote trainer's data path.")) return *exit;
  SetLogLevel("warn");
  auto graph = BenchGraph(flags.Get("graph"), flags.Get("cache_dir"));
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", std::string(graph.status().message()).c_str());
    return 1;
  }
  EvictFromPageCache(*graph);
  Bench b;
  b.flags = &flags;
  b.seconds = *flags.GetDouble("seconds");
  b.batch_size = static_cast<int>(*flags.GetInt("batch_size"));
  b.workers = static_cast<int>(*flags.GetInt("workers"));
  b.trials = static_cast<int>(*flags.GetInt("trials"));
  const size_t part_bytes = static_cast<size_t>(*flags.GetInt("part_mb")) << 20;
  const size_t split_bytes = static_cast<size_t>(*flags.GetInt("split_mb")) << 20;
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) b.fanouts.push_back(std::stoi(f));
  auto p = Partition::Load(*graph, {false});
  if (!p.ok()) return 1;
  b.partition = *std::move(p);
  const int64_t num_nodes = b.partition->node_type(0).num_nodes;
  b.so.fanouts = b.fanouts;
  b.so.with_node_features = true;
  const std::string sections = flags.Get("sections");
  std::printf(
      "graph %s: %lld nodes; batch %d, fanout [%s], 100 float features, %d worker(s), batches over %zu MiB "
      "in parts of %zu MiB\n",
      graph->c_str(), static_cast<long long>(num_nodes), b.batch_size, flags.Get("fanouts").c_str(), b.workers,
      split_bytes >> 20, part_bytes >> 20);
  const int replay = static_cast<int>(*flags.GetInt("replay_batches"));
  b.encoded = Encoded(*b.partition, b.so, b.batch_size, replay, part_bytes, split_bytes);
  for (const auto& m : b.encoded) b.batch_mb += m->encoded->bytes / 1e6 / b.encoded.size();
  b.rounds = std::max(2, static_cast<int>(4000 / std::max(1.0, b.batch_mb * replay)));
  b.raw_pool = client::BufferPool::Create();
  TransportSection(b, sections.find('a') != std::string::npos);

  b.opts.partition_dir = *graph;
  b.opts.verify_partition = false;
  b.opts.max_message_bytes = 2047 << 20;
  b.opts.core.stream_part_bytes = part_bytes;
  b.opts.core.stream_split_bytes = split_bytes;
  b.opts.core.sampling_nice = static_cast<int>(*flags.GetInt("sampling_nice"));
  auto server = GraphStoreServer::BuildAndStart(b.opts);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  b.address = (*server)->address();
  b.seeds = Seeds(num_nodes, 300LL * b.batch_size);
  int rc = 0;
  if (sections.find('b') != std::string::npos) WholePathSection(b);
  if (sections.find('c') != std::string::npos) FirstBatchSection(b);
  if (rc == 0 && sections.find('t') != std::string::npos) rc = TlsSection(b);
  if (rc == 0 && sections.find('n') != std::string::npos) rc = StripesSection(b);
  (*server)->Shutdown();
  return rc;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
