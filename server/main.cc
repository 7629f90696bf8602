// graphstored: serves one partition of a graph and a shared sampling backend over gRPC.
//
//   graphstored --partition=DIR --port=0 --port_file=FILE
//
// Stops on SIGTERM, SIGINT or the Exit RPC: live channels are destroyed, streams end, workers
// join, and the process exits 0.

#include <cstdlib>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/strings/str_cat.h"
#include "server/metrics/metrics.h"
#include "server/server.h"
#include "common/flags.h"
#include "server/util/log.h"

namespace graphstore {
namespace {

int Fail(const absl::Status& s) {
  Logger("main")->error("{}", std::string(s.message()));
  return 2;
}

// TLS and authentication.
void DefineSecurityFlags(Flags* flags) {
  flags->Define("tls_cert", "", "PEM certificate (chain) of this server; with --tls_key turns TLS on");
  flags->Define("tls_key", "", "PEM private key of --tls_cert");
  flags->Define("tls_client_ca", "",
                "PEM CA certificates: clients (and peers) must present a certificate one of them signed (mutual TLS)");
  flags->Define("tls_peer_ca", "",
                "PEM CA that signed the peers' certificates, for calls to the cluster's other servers (default: "
                "--tls_client_ca); with mutual TLS this server presents --tls_cert to them");
  flags->Define("auth_tokens", "",
                "token file, one 'TOKEN IDENTITY ROLE[,ROLE]' a line ('cert CN ROLE' for client certificates); "
                "roles trainer, operator, peer; reloaded on SIGHUP. Empty and no --tls_client_ca: no authentication");
  flags->Define("peer_token_file", "", "file holding the bearer token this server sends to its peers (role peer)");
}

void DefineFlags(Flags* flags) {
  const ServerOptions d;
  flags->Define("partition", "", "partition directory to serve (a manifest.json and its arrays)");
  flags->Define("host", d.host, "address to listen on (0.0.0.0 or :: for every interface)");
  flags->Define("port", "0", "TCP port; 0 picks a free port");
  flags->Define("port_file", "",
                "write the bound port to this file once the server serves sampling (in a cluster: once every "
                "peer answered); removed at a clean shutdown");
  flags->Define("num_workers", absl::StrCat(d.core.default_num_workers), "sampling threads of a backend by default");
  flags->Define("verify_partition", "true",
                "check every index of the partition at start-up (O(edges)); false skips the scans and "
                "trusts the files: a corrupt index then crashes the daemon while sampling, so turn it "
                "off only for a partition that graphstore-inspect has passed and that has not changed since");
  flags->Define("default_lease_s", absl::StrCat(d.core.default_lease_ms / 1000),
                "seconds a channel lives without client activity, unless its client asks otherwise");
  flags->Define("state_log_interval_s", absl::StrCat(d.core.state_log_interval_s),
                "seconds between scheduler-state log lines (0: off)");
  flags->Define("max_buffered_mb", "0",
                "server-wide MiB of sampled batches not yet read, over all channels (0: a quarter of the "
                "host's memory); past it channels sample only their fair share and new channels are refused");
  flags->Define("max_worker_threads", "0",
                "worker threads of all backends together (0: 16 per core, at least 64); past it new "
                "backends are refused");
  flags->Define("max_unfreed_shared_mb_per_channel",
                absl::StrCat(d.core.max_unfreed_shared_bytes_per_channel >> 20),
                "MiB of shared buffers a client may hold received and not freed per channel; past it the "
                "channel's stream pauses until it frees some");
  flags->Define("max_unfreed_shared_mb", "0",
                "MiB of shared buffers not freed by clients, over all channels (0: half the shared-memory "
                "filesystem); past it channels above their fair share pause");
  flags->Define("shared_release_timeout_s", absl::StrCat(d.core.shared_release_timeout_ms / 1000),
                "seconds a paused stream waits for its client to free shared buffers before it ends with "
                "RESOURCE_EXHAUSTED");
  flags->Define("max_message_mb", absl::StrCat(d.max_message_bytes >> 20), "largest gRPC message, MiB");
  flags->Define("shared_memory_dir", d.shared_memory_dir,
                "tmpfs directory for the shared-memory transport of clients on this host (empty: off)");
  flags->Define("stream_split_mb", absl::StrCat(d.core.stream_split_bytes >> 20),
                "a sampled batch larger than this, MiB, is streamed in parts of --stream_part_mb (0: one part)");
  flags->Define("stream_part_mb", absl::StrCat(d.core.stream_part_bytes >> 20),
                "size of the parts of a split batch, MiB (0: one part)");
  flags->Define("fair_send", d.fair_send ? "true" : "false",
                "share the sending between streams by bytes (false: leave a shared link's split to TCP)");
  flags->Define("send_quantum_kb", absl::StrCat(d.send_quantum_bytes >> 10),
                "how far (KiB) one stream's sending may run ahead of the least-served one's");
  flags->Define("sampling_nice", absl::StrCat(d.core.sampling_nice),
                "added to the sampling workers' nice value (0..19), so that sending sampled batches and "
                "answering RPCs go first when cores are short");
  flags->Define("sample_ahead_batches", absl::StrCat(d.core.sample_ahead_batches),
                "batches of each channel's next epoch sampled ahead while workers are idle (0: off)");
  flags->Define("cluster", "",
                "comma-separated host:port of every server of the cluster in partition order, this one's "
                "included; sampling opens once every other one answers health");
  flags->Define("peer_timeout_ms", absl::StrCat(d.peer_timeout_ms),
                "deadline of each call to another server of the cluster, ms");
  flags->Define("peer_cache_mb", absl::StrCat(d.core.peer_cache_bytes >> 20),
                "MiB of other servers' node data (features, labels) and neighbour lists kept once fetched (0: off)");
  flags->Define("degree_index_mb", absl::StrCat(d.core.whole_degree_index_bytes >> 20),
                "degree negatives keep every destination's degree sums where they fit in this many MiB (two bytes "
                "a node); past it, each server keeps its range of destination ids and asks the others for theirs");
  flags->Define("peer_cache_lists", d.core.peer_cache_lists ? "true" : "false",
                "keep other servers' neighbour lists too and draw their nodes' uniform hops here, instead of asking "
                "the owners every batch");
  DefineSecurityFlags(flags);
  flags->Define("max_channels_per_identity", absl::StrCat(d.core.max_channels_per_identity),
                "live channels one authenticated identity may hold (0: no quota)");
  flags->Define("max_backends_per_identity", absl::StrCat(d.core.max_backends_per_identity),
                "backends one authenticated identity may have created and alive (0: no quota)");
  flags->Define("max_buffer_mb_per_identity", absl::StrCat(d.core.max_buffer_bytes_per_identity >> 20),
                "output-buffer MiB the channels of one authenticated identity may reserve together (0: no quota)");
  flags->Define("default_backend_lease_s", absl::StrCat(d.core.default_backend_lease_ms / 1000),
                "seconds a backend without channels lives, unless its creator asks otherwise");
  flags->Define("health_port", "-1",
                "also serve only grpc.health.v1.Health, in plaintext, on this port (for probes that cannot speak "
                "TLS; -1: off)");
  flags->Define("metrics_port", "0",
                "serve Prometheus metrics over HTTP on this port of --host at /metrics (0: off)");
  flags->Define("metrics_per_channel", "false", "add per-channel metric series (one label value per channel)");
  flags->Define("log_level", "info", "trace, debug, info, warn, error or off");
}

// The one token of a file (surrounding whitespace dropped).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  if (!in || !(in >> token)) return absl::InvalidArgumentError(absl::StrCat("--peer_token_file=", path, " holds no token"));
  return token;
}

// The flags bound into ServerOptions, each checked.
// The integer flag `name`, which must lie in [lo, hi] ("--name must be in [lo, hi]", or ">= lo"
// without an upper bound; `hi_text` spells a bound such as 2^40).
absl::StatusOr<int64_t> IntIn(const Flags& flags, const std::string& name, int64_t lo,
                              int64_t hi = std::numeric_limits<int64_t>::max(), const char* hi_text = nullptr) {
  auto v = flags.GetInt(name);
  if (!v.ok() || (*v >= lo && *v <= hi)) return v;
  if (hi == std::numeric_limits<int64_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " must be >= ", lo));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--", name, " must be in [", lo, ", ", hi_text != nullptr ? hi_text : absl::StrCat(hi), "]"));
}

constexpr int64_t kTerabyteInMiB = int64_t{1} << 40;

// Budgets and quotas: buffered bytes, worker threads, shared memory, identities' holdings.
absl::Status ParseLimits(const Flags& flags, ServerOptions* o) {
  auto quota_channels = IntIn(flags, "max_channels_per_identity", 0, o->core.max_channels);
  auto quota_backends = IntIn(flags, "max_backends_per_identity", 0, o->core.max_backends);
  auto quota_mb = IntIn(flags, "max_buffer_mb_per_identity", 0, kTerabyteInMiB, "2^40");
  auto backend_lease = IntIn(flags, "default_backend_lease_s", 1);
  auto buffered_mb = IntIn(flags, "max_buffered_mb", 0, kTerabyteInMiB, "2^40");
  auto worker_threads = IntIn(flags, "max_worker_threads", 0, 100000);
  auto unfreed_channel_mb = IntIn(flags, "max_unfreed_shared_mb_per_channel", 1, kTerabyteInMiB, "2^40");
  auto unfreed_mb = IntIn(flags, "max_unfreed_shared_mb", 0, kTerabyteInMiB, "2^40");
  auto release_timeout = IntIn(flags, "shared_release_timeout_s", 1, 86400);
  for (const absl::Status& s : {quota_channels.status(), quota_backends.status(), quota_mb.status(),
                                backend_lease.status(), buffered_mb.status(), worker_threads.status(),
                                unfreed_channel_mb.status(), unfreed_mb.status(), release_timeout.status()}) {
    if (!s.ok()) return s;
  }
  o->core.max_unfreed_shared_bytes_per_channel = *unfreed_channel_mb << 20;
  o->core.max_unfreed_shared_bytes_total = *unfreed_mb << 20;
  o->core.shared_release_timeout_ms = *release_timeout * 1000;
  o->core.max_buffered_bytes_total = *buffered_mb << 20;
  o->core.max_worker_threads = static_cast<int>(*worker_threads);
  o->core.max_channels_per_identity = static_cast<int>(*quota_channels);
  o->core.max_backends_per_identity = static_cast<int>(*quota_backends);
  o->core.max_buffer_bytes_per_identity = *quota_mb << 20;
  o->core.default_backend_lease_ms = *backend_lease * 1000;
  return absl::OkStatus();
}

// TLS, client identities and how this server proves itself to its peers.
absl::Status ParseSecurity(const Flags& flags, ServerOptions* o) {
  o->tls.cert_file = flags.Get("tls_cert");
  o->tls.key_file = flags.Get("tls_key");
  o->tls.client_ca_file = flags.Get("tls_client_ca");
  o->auth_tokens_file = flags.Get("auth_tokens");
  if (o->tls.enabled()) {
    o->peer_security.tls = true;
    o->peer_security.ca_file = flags.IsSet("tls_peer_ca") ? flags.Get("tls_peer_ca") : o->tls.client_ca_file;
    if (o->tls.mutual()) {
      o->peer_security.cert_file = o->tls.cert_file;
      o->peer_security.key_file = o->tls.key_file;
    }
  } else if (flags.IsSet("tls_peer_ca")) {
    return absl::InvalidArgumentError("--tls_peer_ca needs --tls_cert and --tls_key");
  }
  if (const std::string path = flags.Get("peer_token_file"); !path.empty()) {
    auto token = ReadTokenFile(path);
    if (!token.ok()) return token.status();
    o->peer_security.token = *std::move(token);
  }
  return absl::OkStatus();
}

// Messages and streams: their sizes, parts, batches sampled ahead, the samplers' priority.
absl::Status ParseStreaming(const Flags& flags, ServerOptions* o) {
  auto max_mb = IntIn(flags, "max_message_mb", 1, 2047);
  auto ahead = IntIn(flags, "sample_ahead_batches", 0, 64);
  auto part_mb = flags.GetInt("stream_part_mb");
  auto split_mb = IntIn(flags, "stream_split_mb", 0);
  auto sampling_nice = IntIn(flags, "sampling_nice", 0, 19);
  auto fair_send = flags.GetBool("fair_send");
  auto quantum_kb = IntIn(flags, "send_quantum_kb", 1, 1 << 20);
  for (const absl::Status& s : {max_mb.status(), ahead.status(), part_mb.status(), split_mb.status(),
                                sampling_nice.status(), fair_send.status(), quantum_kb.status()}) {
    if (!s.ok()) return s;
  }
  if (*part_mb < 0 || *part_mb >= *max_mb) {
    return absl::InvalidArgumentError("--stream_part_mb must be in [0, --max_message_mb)");
  }
  o->max_message_bytes = static_cast<int>(*max_mb) << 20;
  o->core.sample_ahead_batches = static_cast<int>(*ahead);
  o->core.stream_part_bytes = static_cast<size_t>(*part_mb) << 20;
  o->core.stream_split_bytes = static_cast<size_t>(*split_mb) << 20;
  o->core.sampling_nice = static_cast<int>(*sampling_nice);
  o->fair_send = *fair_send;
  o->send_quantum_bytes = *quantum_kb << 10;
  return absl::OkStatus();
}

absl::StatusOr<ServerOptions> ParseOptions(const Flags& flags) {
  ServerOptions o;
  o.partition_dir = flags.Get("partition");
  o.host = flags.Get("host");
  o.shared_memory_dir = flags.Get("shared_memory_dir");
  o.cluster = SplitList(flags.Get("cluster"), ',');
  if (o.partition_dir.empty()) return absl::InvalidArgumentError("--partition is required");
  if (o.host.empty()) return absl::InvalidArgumentError("--host is empty");
  auto port = IntIn(flags, "port", 0, 65535);
  auto workers = IntIn(flags, "num_workers", 1);
  auto verify = flags.GetBool("verify_partition");
  auto lease = IntIn(flags, "default_lease_s", 1);
  auto state_log = flags.GetInt("state_log_interval_s");
  auto peer_timeout = IntIn(flags, "peer_timeout_ms", 1);
  auto peer_cache = IntIn(flags, "peer_cache_mb", 0);
  auto peer_lists = flags.GetBool("peer_cache_lists");
  auto degree_index = IntIn(flags, "degree_index_mb", 0);
  auto health_port = IntIn(flags, "health_port", -1, 65535);
  for (const absl::Status& s : {port.status(), workers.status(), verify.status(), lease.status(), state_log.status(),
                                peer_timeout.status(), peer_cache.status(), peer_lists.status(), degree_index.status(),
                                health_port.status()}) {
    if (!s.ok()) return s;
  }
  for (auto parse : {ParseLimits, ParseSecurity, ParseStreaming}) {
    if (auto s = parse(flags, &o); !s.ok()) return s;
  }
  o.port = static_cast<int>(*port);
  o.health_port = static_cast<int>(*health_port);
  o.verify_partition = *verify;
  o.core.default_num_workers = static_cast<int>(*workers);
  o.core.default_lease_ms = *lease * 1000;
  o.core.state_log_interval_s = *state_log;
  o.peer_timeout_ms = *peer_timeout;
  o.core.peer_cache_bytes = *peer_cache << 20;
  o.core.peer_cache_lists = *peer_lists;
  o.core.whole_degree_index_bytes = *degree_index << 20;
  return o;
}

// Writes the bound port to `path` atomically (scripts wait for the file to appear).
absl::Status WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
    if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write --port_file=", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot write --port_file=", path));
  }
  return absl::OkStatus();
}

// abseil's mutexes (the core's, the scheduler's, gRPC's) check the order locks are taken in:
// a cycle is a lock order that can deadlock. The tests abort on one (GRAPHSTORE_LOCK_CYCLES=abort,
// .bazelrc); a serving daemon reports it in its log and goes on serving, or with `off` does not
// look, which saves the graph of lock orders abseil keeps: 1.4 % of a daemon's CPU samples.
void SetLockCycleMode() {
  const char* env = std::getenv("GRAPHSTORE_LOCK_CYCLES");
  const std::string mode = env != nullptr ? env : "";
  absl::SetMutexDeadlockDetectionMode(mode == "abort" ? absl::OnDeadlockCycle::kAbort
                                      : mode == "off" ? absl::OnDeadlockCycle::kIgnore
                                                      : absl::OnDeadlockCycle::kReport);
}

int Run(int argc, char** argv) {
  SetLockCycleMode();
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "graphstored", "Serves one graph partition and a sampling backend.")) {
    return *exit;
  }
  if (!SetLogLevel(flags.Get("log_level"))) return Fail(absl::InvalidArgumentError("--log_level is not a level"));
  auto options = ParseOptions(flags);
  if (!options.ok()) return Fail(options.status());

  // SIGTERM, SIGINT and SIGHUP are taken synchronously by one thread, so shutdown and reloads
  // run as normal code.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto metrics_port = IntIn(flags, "metrics_port", 0, 65535);
  auto per_channel = flags.GetBool("metrics_per_channel");
  if (!metrics_port.ok()) return Fail(metrics_port.status());
  if (!per_channel.ok()) return Fail(per_channel.status());
  std::unique_ptr<Metrics> metrics;
  if (*metrics_port > 0) {
    Metrics::Options mo;
    mo.address = options->host.find(':') != std::string::npos ? absl::StrCat("[", options->host, "]:", *metrics_port)
                                                              : absl::StrCat(options->host, ":", *metrics_port);
    mo.per_channel = *per_channel;
    auto started = Metrics::Start(mo);
    if (!started.ok()) return Fail(started.status());
    metrics = *std::move(started);
    options->call_observer = metrics.get();
    Logger("main")->info("metrics on http://{}/metrics", mo.address);
  }

  auto server = GraphStoreServer::BuildAndStart(*options);
  if (!server.ok()) return Fail(server.status());
  GraphStoreServer* s = server->get();
  if (metrics != nullptr) metrics->Watch(&s->core());
  const Partition& partition = s->core().partition();
  if (options->cluster.empty() && partition.num_partitions() > 1) {
    Logger("main")->warn("partition {} of {} serves without --cluster: batches that reach another partition's "
                         "nodes fail with FAILED_PRECONDITION", partition.partition_id(), partition.num_partitions());
  }
  std::thread signal_thread([s, signals] {
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGHUP) {
        s->ReloadAuth().IgnoreError();  // ReloadAuth logs what went wrong; the old tokens stay
        continue;
      }
      Logger("main")->info("received {}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      s->RequestShutdown();
      return;
    }
  });
  signal_thread.detach();
  // In a cluster the port file appears once every peer answered, so scripts that wait for it
  // wait for a server that samples.
  if (!s->WaitSamplingOpen()) {
    if (metrics != nullptr) metrics->Watch(nullptr);
    s->Shutdown();
    return 0;
  }
  const std::string port_file = flags.Get("port_file");
  if (!port_file.empty()) {
    if (auto st = WritePortFile(port_file, s->port()); !st.ok()) return Fail(st);
  }
  s->Wait();
  if (metrics != nullptr) metrics->Watch(nullptr);
  s->Shutdown();
  // The port file exists while the server serves: a clean shutdown removes it.
  if (!port_file.empty()) std::remove(port_file.c_str());
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
