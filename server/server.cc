#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>

#include "absl/strings/str_cat.h"
#include "server/util/log.h"

namespace graphstore {

namespace {
constexpr char kServiceName[] = "graphstore.v1.GraphStore";

// Whether something already listens on host:port (what a listener that gRPC could not open
// most often means): a plain bind without SO_REUSEPORT fails with EADDRINUSE then.
bool PortInUse(const std::string& host, int port) {
  if (port <= 0) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string bare = host.size() > 1 && host.front() == '[' ? host.substr(1, host.size() - 2) : host;
  if (getaddrinfo(bare.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) return false;
  bool in_use = false;
  const int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (fd >= 0) {
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    in_use = bind(fd, found->ai_addr, found->ai_addrlen) != 0 && errno == EADDRINUSE;
    close(fd);
  }
  freeaddrinfo(found);
  return in_use;
}

// host:port as gRPC takes it (an IPv6 host in brackets).
std::string ListenAddress(const std::string& host, int port) {
  return host.find(':') != std::string::npos && host.front() != '[' ? absl::StrCat("[", host, "]:", port)
                                                                    : absl::StrCat(host, ":", port);
}

// The partition the options name, loaded (and verified when asked), with a line saying so.
absl::StatusOr<std::unique_ptr<Partition>> LoadPartition(const ServerOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  Partition::LoadOptions lo;
  lo.verify_contents = options.verify_partition;
  auto partition = Partition::Load(options.partition_dir, lo);
  if (!partition.ok()) return partition.status();
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  Logger("main")->info("partition {} of {} of '{}' loaded from {} in {:.1f} ms", (*partition)->partition_id(),
                       (*partition)->num_partitions(), (*partition)->manifest().dataset_name(),
                       options.partition_dir, load_ms);
  return partition;
}

// The error of a listener that could not be opened on `at` (the flag `flag` asked for it).
absl::Status ListenError(const std::string& flag, const std::string& host, int port, const std::string& at) {
  if (PortInUse(host, port)) {
    return absl::AlreadyExistsError(absl::StrCat(flag, "=", port, ": ", at, " is in use (another graphstored, or "
                                                 "another program, listens there; a daemon owns its port)"));
  }
  return absl::UnavailableError(absl::StrCat("cannot listen on ", flag, ": ", at));
}

}  // namespace

// grpc.health.v1.Health.Check answered from statuses the server sets (the health-only port).
class HealthMirror : public grpc::health::v1::Health::Service {
 public:
  void Set(const std::string& service, bool serving) {
    std::lock_guard<std::mutex> lock(mu_);
    status_[service] = serving;
  }
  grpc::Status Check(grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest* req,
                     grpc::health::v1::HealthCheckResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = status_.find(req->service());
    if (it == status_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service");
    resp->set_status(it->second ? grpc::health::v1::HealthCheckResponse::SERVING
                                : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::map<std::string, bool> status_;
};

void GraphStoreServer::SetHealth(const std::string& service, bool serving) {
  server_->GetHealthCheckService()->SetServingStatus(service, serving);
  if (health_mirror_ != nullptr) health_mirror_->Set(service, serving);
}

absl::StatusOr<std::unique_ptr<GraphStoreServer>> GraphStoreServer::BuildAndStart(const ServerOptions& options) {
  auto credentials = ServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  auto auth = Authenticator::Create({options.auth_tokens_file, options.tls.mutual()});
  if (!auth.ok()) return auth.status();
  if (auto s = options.peer_security.Check(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat("peers: ", s.message()));

  auto partition = LoadPartition(options);
  if (!partition.ok()) return partition.status();

  std::unique_ptr<SharedMemoryArea> shared;
  if (!options.shared_memory_dir.empty()) {
    auto area = SharedMemoryArea::Open(options.shared_memory_dir);
    if (!area.ok()) return area.status();
    shared = *std::move(area);
  }

  std::unique_ptr<GraphStoreServer> s(new GraphStoreServer());
  s->options_ = options;
  CoreOptions core_options = options.core;
  core_options.max_response_bytes = options.max_message_bytes;
  s->core_ = std::make_unique<Core>(*std::move(partition), core_options, std::move(shared));
  GraphStoreServer* self = s.get();
  s->auth_ = *std::move(auth);
  if (options.fair_send) {
    SendShare::Options share;
    share.quantum_bytes = options.send_quantum_bytes;
    s->send_share_ = std::make_unique<SendShare>(share);
  }
  s->service_ = std::make_unique<GraphStoreService>(s->core_.get(), s->auth_.get(), options.call_observer,
                                                    [self] { self->RequestShutdown(); }, s->send_share_.get());

  if (auto st = s->Listen(*credentials); !st.ok()) return st;
  // "" says the server is up (what peers wait for); the service says it samples.
  s->SetHealth("", true);
  s->SetHealth(kServiceName, false);
  Logger("main")->info("graphstored listening on {} ({}{})", s->address(),
                       !options.tls.enabled() ? "plaintext" : options.tls.mutual() ? "mutual TLS" : "TLS",
                       s->auth_->enabled() ? ", authenticated calls" : ", no authentication");
  if (!options.tls.enabled() && !IsLoopbackHost(options.host)) {
    Logger("main")->warn("*** PLAINTEXT on {}: anything on the network can read the batches and, without "
                         "--auth_tokens, call every method (Exit included). Use --tls_cert/--tls_key, "
                         "--tls_client_ca or --auth_tokens outside a trusted network. ***", s->address());
  }
  if (!options.cluster.empty()) {
    if (auto st = s->JoinCluster(options.cluster); !st.ok()) return st;
  } else {
    s->OpenSampling();
  }
  return s;
}

absl::Status GraphStoreServer::Listen(const std::shared_ptr<grpc::ServerCredentials>& credentials) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string listen = ListenAddress(options_.host, options_.port);
  builder.AddListeningPort(listen, credentials, &port_);
  // A daemon owns its port: gRPC's default SO_REUSEPORT would let a second daemon listen
  // beside this one and the kernel split the connections between them.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(service_.get());
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  // Clients ping a stream that has been quiet for a while (client::ClientOptions::keepalive_time)
  // to find a server that hangs; gRPC's default would answer pings more often than every five
  // minutes with GOAWAY while the server has nothing to send.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) return ListenError("--port", options_.host, options_.port, listen);
  if (options_.health_port >= 0) {
    health_mirror_ = std::make_unique<HealthMirror>();
    grpc::ServerBuilder health;
    const std::string at = ListenAddress(options_.host, options_.health_port);
    health.AddListeningPort(at, grpc::InsecureServerCredentials(), &health_port_);
    health.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    health.RegisterService(health_mirror_.get());
    health_server_ = health.BuildAndStart();
    if (health_server_ == nullptr || health_port_ <= 0) {
      return ListenError("--health_port", options_.host, options_.health_port, at);
    }
  }
  return absl::OkStatus();
}

absl::Status GraphStoreServer::JoinCluster(const std::vector<std::string>& addresses) {
  const Partition& p = core_->partition();
  if (static_cast<int>(addresses.size()) != p.num_partitions()) {
    return absl::InvalidArgumentError(absl::StrCat("--cluster has ", addresses.size(), " addresses but the dataset has ",
                                                   p.num_partitions(), " partitions"));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (peers_ != nullptr) return absl::FailedPreconditionError("the server already joined a cluster");
    // A server started outside the cluster samples again once the peers answer.
    sampling_open_ = false;
    SetHealth(kServiceName, false);
  }
  PeerOptions po;
  po.addresses = addresses;
  po.self = p.partition_id();
  po.call_timeout_ms = options_.peer_timeout_ms;
  po.max_message_bytes = options_.max_message_bytes;
  po.on_ready = [this] { OpenSampling(); };
  po.security = options_.peer_security;
  auto peers = Peers::Create(std::move(po));
  if (!peers.ok()) return peers.status();
  std::lock_guard<std::mutex> lock(mu_);
  peers_ = *std::move(peers);
  core_->SetCluster(peers_.get(), addresses);
  return absl::OkStatus();
}

void GraphStoreServer::OpenSampling() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_ || sampling_open_) return;
    sampling_open_ = true;
    SetHealth(kServiceName, true);
  }
  cv_.notify_all();
}

bool GraphStoreServer::WaitSamplingOpen() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return sampling_open_ || shutdown_requested_; });
  return sampling_open_ && !shutdown_requested_;
}

GraphStoreServer::~GraphStoreServer() { Shutdown(); }

absl::Status GraphStoreServer::ReloadAuth() {
  if (options_.auth_tokens_file.empty()) {
    Logger("auth")->info("nothing to reload: the server runs without --auth_tokens");
    return absl::OkStatus();
  }
  auto s = auth_->Reload();
  if (s.ok()) {
    Logger("auth")->info("token file {} reloaded", options_.auth_tokens_file);
  } else {
    Logger("auth")->error("token file not reloaded, the previous tokens stay: {}", std::string(s.message()));
  }
  return s;
}

std::string GraphStoreServer::address() const {
  return options_.host.find(':') != std::string::npos ? absl::StrCat("[", options_.host, "]:", port_)
                                                      : absl::StrCat(options_.host, ":", port_);
}

void GraphStoreServer::RequestShutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_requested_ = true;
  }
  cv_.notify_all();
}

void GraphStoreServer::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return shutdown_requested_; });
}

int GraphStoreServer::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return channels_destroyed_;
    shut_down_ = true;
  }
  Logger("main")->info("shutting down");
  if (peers_ != nullptr) peers_->StopMonitor();
  if (server_) {
    std::lock_guard<std::mutex> lock(mu_);
    SetHealth(kServiceName, false);
    SetHealth("", false);
  }
  // Destroying the channels ends their streams with ABORTED before gRPC stops.
  const int destroyed = core_ ? core_->Shutdown() : 0;
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(options_.shutdown_grace_s));
    server_->Wait();
  }
  if (health_server_) health_server_->Shutdown(std::chrono::system_clock::now());
  Logger("main")->info("stopped; {} live channels were destroyed at shutdown", destroyed);
  std::lock_guard<std::mutex> lock(mu_);
  channels_destroyed_ = destroyed;
  return destroyed;
}

absl::StatusOr<std::vector<std::unique_ptr<GraphStoreServer>>> StartLocalCluster(
    const std::vector<ServerOptions>& options) {
  std::vector<std::unique_ptr<GraphStoreServer>> servers;
  std::vector<std::string> addresses;
  for (const ServerOptions& o : options) {
    auto s = GraphStoreServer::BuildAndStart(o);
    if (!s.ok()) return s.status();
    addresses.push_back((*s)->address());
    servers.push_back(*std::move(s));
  }
  if (servers.size() > 1) {
    for (auto& s : servers) {
      if (auto st = s->JoinCluster(addresses); !st.ok()) return st;
    }
  }
  for (auto& s : servers) s->WaitSamplingOpen();
  return servers;
}

}  // namespace graphstore
