#ifndef GRAPHSTORE_SERVER_SERVER_H_
#define GRAPHSTORE_SERVER_SERVER_H_

// A running graphstored: loads the partition, builds the core, and serves it over gRPC with
// health checking and reflection.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "server/cluster/peers.h"
#include "common/security.h"
#include "grpc_health/v1/health.grpc.pb.h"
#include "server/rpc/grpc_service.h"
#include "server/rpc/send_share.h"
#include "server/security/auth.h"
#include "server/security/tls.h"
#include "server/service/core.h"

namespace graphstore {

class HealthMirror;

/// Everything graphstored is configured with; main.cc binds flags into it and checks each once
/// (GraphStoreServer::BuildAndStart trusts the ranges).
struct ServerOptions {
  /// The partition directory to serve (required).
  std::string partition_dir;
  /// Address to listen on.
  std::string host = "127.0.0.1";
  /// TCP port; 0 picks a free one (reported by port()).
  int port = 0;
  /// Check every index of the partition at start-up (a linear scan).
  bool verify_partition = true;
  /// Largest message the server sends or receives, in bytes.
  int max_message_bytes = 512 << 20;
  /// Seconds that in-flight calls get to finish at shutdown.
  int shutdown_grace_s = 5;
  /// Share the sending between streams by bytes (server/rpc/send_share.h) instead of leaving
  /// the split of a shared link to TCP; `send_quantum_bytes` is how far one may run ahead.
  bool fair_send = true;
  int64_t send_quantum_bytes = 1 << 20;
  /// tmpfs directory for the shared-memory transport offered to clients on this host; empty
  /// turns the offer off.
  std::string shared_memory_dir = "/dev/shm";
  /// Addresses of every server of the cluster in partition order (this one's included);
  /// empty outside a cluster. See JoinCluster.
  std::vector<std::string> cluster;
  /// Deadline of each call to a peer, in ms.
  int64_t peer_timeout_ms = 10000;
  /// TLS of the listener (default: plaintext).
  ServerTlsOptions tls;
  /// The token file (server/security/auth.h); empty: no tokens.
  std::string auth_tokens_file;
  /// How this server calls its peers: TLS (their CA, this server's certificate when they
  /// require one) and the token of its `peer` identity.
  ChannelSecurity peer_security;
  /// Sees every call (metrics); optional, outlives the server.
  CallObserver* call_observer = nullptr;
  /// A plaintext port on `host` that serves only grpc.health.v1.Health (for probes that cannot
  /// speak TLS, such as Kubernetes' gRPC probes); -1: none, 0: a free one.
  int health_port = -1;
  /// Service limits and defaults.
  CoreOptions core;
};

/// A running server.
class GraphStoreServer {
 public:
  /// Validates options, loads the partition and starts serving. InvalidArgument for bad
  /// options, the loader's error for a bad partition, Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<GraphStoreServer>> BuildAndStart(const ServerOptions& options);
  ~GraphStoreServer();

  /// The port actually bound.
  int port() const { return port_; }
  /// The health-only port bound, or -1.
  int health_port() const { return health_port_; }
  /// host:port actually bound.
  std::string address() const;
  Core& core() { return *core_; }
  /// Reads the token file again (SIGHUP); on error the tokens in use stay.
  absl::Status ReloadAuth();

  /// Joins the cluster of servers at `addresses` (partition order, this one's included): opens
  /// channels to the peers, which then sample the frontier nodes and fetch the data of the
  /// nodes they own. Until every peer answers health, sampling is refused with UNAVAILABLE and
  /// the health status of graphstore.v1.GraphStore is NOT_SERVING ("" is SERVING: the peers
  /// check that one). BuildAndStart calls it with options.cluster; a caller that starts its
  /// servers on port 0 calls it once every port is known. Once only; before any sampling.
  absl::Status JoinCluster(const std::vector<std::string>& addresses);
  /// Blocks until sampling is open (at once outside a cluster) or shutdown is requested;
  /// returns whether sampling opened.
  bool WaitSamplingOpen();

  /// Asks Wait() to return (Exit RPC, SIGTERM). Thread-safe; not async-signal-safe.
  void RequestShutdown();
  /// Blocks until RequestShutdown.
  void Wait();
  /// Stops: health NOT_SERVING, live channels destroyed (their streams end), backends' workers
  /// joined, then gRPC shut down with a grace period. Returns the number of channels that were
  /// still live. Idempotent.
  int Shutdown();

 private:
  GraphStoreServer() = default;
  // Opens the service's listener with `credentials` and, with --health_port, the plaintext
  // health listener; the error names the flag whose port could not be opened.
  absl::Status Listen(const std::shared_ptr<grpc::ServerCredentials>& credentials);
  // Marks sampling open (health SERVING for graphstore.v1.GraphStore) unless shut down.
  void OpenSampling();
  // Sets a health status on the main port and on the health-only port.
  void SetHealth(const std::string& service, bool serving);

  ServerOptions options_;
  // Declared before the core, which calls the peers from its workers until it is destroyed.
  std::unique_ptr<Peers> peers_;
  std::unique_ptr<Core> core_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<SendShare> send_share_;  // outlives the service's streams
  std::unique_ptr<GraphStoreService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<HealthMirror> health_mirror_;
  std::unique_ptr<grpc::Server> health_server_;
  int health_port_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shutdown_requested_ = false;
  bool shut_down_ = false;
  bool sampling_open_ = false;
  int channels_destroyed_ = 0;
};

/// Starts one server per entry of `options` (partition order; port 0 picks a free one), joins
/// them into a cluster and returns once every one serves sampling: a whole cluster in one
/// process, for tests and benchmarks. One entry is a single server.
absl::StatusOr<std::vector<std::unique_ptr<GraphStoreServer>>> StartLocalCluster(
    const std::vector<ServerOptions>& options);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVER_H_
