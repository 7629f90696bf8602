// Security against real daemons: TLS and mutual TLS (certificates made by openssl at test
// time) with the client, the Loader and between cluster peers; bearer tokens and roles;
// channels owned by their identity; quotas per identity; idle backends reaped.

#include "client/loader.h"  // LibTorch first (see loader.h)

#undef CHECK
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpc_health/v1/health.grpc.pb.h"
#include "grpc_probe/reflection_probe.grpc.pb.h"
#include "tests/daemon.h"
#include "tests/fixtures.h"
#include "tests/e2e/e2e_util.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using client::ChannelSecurity;
using client::Client;
using testing::Daemon;

const char kTokenA[] = "token-of-trainer-a-0123456789";
const char kTokenB[] = "token-of-trainer-b-0123456789";
const char kTokenOps[] = "token-of-the-operator-012345";
const char kTokenPeer[] = "token-of-the-peers-0123456789";

// The certificates of tests/security/make_certs.sh, made once per test binary.
const testing::TempDir& Certs() {
  static testing::TempDir* dir = [] {
    auto* d = new testing::TempDir();
    REQUIRE(testing::RunCommand("bash tests/security/make_certs.sh " + d->path()) == 0);
    return d;
  }();
  return *dir;
}
std::string Cert(const std::string& name) { return Certs() / name; }

// The server's own certificate and key.
std::vector<std::string> TlsFlags() {
  return {"--tls_cert=" + Cert("server.pem"), "--tls_key=" + Cert("server.key"), "--shared_memory_dir=",
          "--state_log_interval_s=0"};
}

ChannelSecurity Tls(const std::string& ca = "ca.pem") {
  ChannelSecurity s;
  s.ca_file = Cert(ca);
  return s;
}
ChannelSecurity MutualTls(const std::string& client, const std::string& ca = "ca.pem") {
  ChannelSecurity s = Tls(ca);
  s.cert_file = Cert(client + ".pem");
  s.key_file = Cert(client + ".key");
  return s;
}
ChannelSecurity Token(const std::string& token) {
  ChannelSecurity s;
  s.token = token;
  return s;
}

absl::StatusOr<std::unique_ptr<Client>> Dial(const std::string& address, const ChannelSecurity& security,
                                             int connect_ms = 10000) {
  client::ClientOptions o;
  o.address = address;
  o.security = security;
  o.connect_timeout = std::chrono::milliseconds(connect_ms);
  o.deadline = std::chrono::milliseconds(20000);
  return Client::Connect(o);
}

std::unique_ptr<Client> MustDial(const std::string& address, const ChannelSecurity& security) {
  auto c = Dial(address, security);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  return *std::move(c);
}

// Whether a connection with `security` fails: at connection or at its first call.
absl::Status Refused(const std::string& address, const ChannelSecurity& security) {
  auto c = Dial(address, security, /*connect_ms=*/1500);
  if (!c.ok()) return c.status();
  auto meta = (*c)->GetDatasetMeta();
  return meta.ok() ? absl::OkStatus() : meta.status();
}

absl::StatusOr<v1::InitSamplingBackendResponse> Init(Client& c, const std::string& key, int64_t lease_ms = 0) {
  v1::InitSamplingBackendRequest req;
  req.set_backend_key(key);
  req.mutable_config()->set_batch_size(64);
  req.mutable_config()->add_num_neighbors(3);
  req.set_lease_ms(lease_ms);
  return c.InitSamplingBackend(req);
}

absl::StatusOr<v1::RegisterSamplingInputResponse> Register(Client& c, uint64_t backend) {
  v1::RegisterSamplingInputRequest req;
  req.set_backend_id(backend);
  req.mutable_split()->set_split("train");
  req.mutable_buffer()->set_max_bytes(64 << 20);
  return c.RegisterSamplingInput(req);
}

// The seeds of one epoch through a Loader with `security`.
std::multiset<int64_t> LoaderEpoch(const std::vector<std::string>& servers, const ChannelSecurity& security) {
  client::LoaderOptions o;
  o.servers = servers;
  o.security = security;
  o.config.set_batch_size(128);
  o.config.add_num_neighbors(5);
  o.config.add_num_neighbors(3);
  o.config.set_with_node_features(true);
  o.shared_memory = false;
  client::Loader loader(o);
  loader.StartEpoch(0);
  std::multiset<int64_t> seeds;
  int64_t batches = 0;
  while (auto b = loader.Next()) {
    ++batches;
    for (int64_t i = 0; i < b->batch_size; ++i) seeds.insert(b->n_id[i].item<int64_t>());
  }
  CHECK(batches == loader.num_batches());
  loader.Close();
  return seeds;
}

std::multiset<int64_t> TrainSeeds() {
  const auto ids = testing::SplitIds("train");
  return std::multiset<int64_t>(ids.begin(), ids.end());
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& address);

TEST_CASE("TLS: the Loader trains over TLS; plaintext, a wrong CA and a wrong server are refused cleanly", "[tls]") {
  const int health_port = testing::FreeLoopbackPorts(1).front();
  std::vector<std::string> flags = TlsFlags();
  flags.push_back(absl::StrCat("--health_port=", health_port));
  Daemon d(testing::Dataset(), flags);
  CHECK_THAT(d.Log(), Catch::Contains("(TLS, no authentication)"));
  // Probes that cannot speak TLS ask the plaintext health-only port.
  CHECK(Health(absl::StrCat("127.0.0.1:", health_port)) == grpc::health::v1::HealthCheckResponse::SERVING);
  CHECK(LoaderEpoch({d.address()}, Tls()) == TrainSeeds());

  const absl::Status plaintext = Refused(d.address(), ChannelSecurity());
  CHECK(plaintext.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(plaintext.message()), Catch::Contains("does the server require TLS?"));
  const absl::Status wrong_ca = Refused(d.address(), Tls("other-ca.pem"));
  CHECK(wrong_ca.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(wrong_ca.message()), Catch::Contains("signed by tls_ca"));

  // A server whose certificate another CA signed is not trusted either.
  Daemon other(testing::Dataset(), {"--tls_cert=" + Cert("other-server.pem"), "--tls_key=" + Cert("other-server.key"),
                                    "--shared_memory_dir=", "--state_log_interval_s=0"});
  CHECK(Refused(other.address(), Tls()).code() == absl::StatusCode::kUnavailable);
  CHECK(Refused(other.address(), Tls("other-ca.pem")).ok());

  // Bad files are named at start-up: a key that is not the certificate's, an expired certificate.
  Daemon mismatched(testing::Dataset(), {"--tls_cert=" + Cert("server.pem"), "--tls_key=" + Cert("trainer-a.key")},
                    0, /*wait=*/false);
  CHECK(mismatched.WaitExit(30) == 2);
  CHECK_THAT(mismatched.Log(), Catch::Contains("is not the key of the certificate in --tls_cert="));
  Daemon expired(testing::Dataset(), {"--tls_cert=" + Cert("expired.pem"), "--tls_key=" + Cert("expired.key")}, 0,
                 /*wait=*/false);
  CHECK(expired.WaitExit(30) == 2);
  CHECK_THAT(expired.Log(), Catch::Contains("the certificate has expired"));
}

TEST_CASE("mutual TLS: only certificates the client CA signed, and not expired, get in", "[tls]") {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca=" + Cert("ca.pem"));
  Daemon d(testing::Dataset(), flags);
  CHECK_THAT(d.Log(), Catch::Contains("(mutual TLS, authenticated calls)"));

  CHECK(Refused(d.address(), MutualTls("trainer-a")).ok());
  CHECK(Refused(d.address(), Tls()).code() == absl::StatusCode::kUnavailable);               // no certificate
  CHECK(Refused(d.address(), MutualTls("rogue")).code() == absl::StatusCode::kUnavailable);  // another CA
  CHECK(Refused(d.address(), MutualTls("expired")).code() == absl::StatusCode::kUnavailable);
  CHECK(Refused(d.address(), ChannelSecurity()).code() == absl::StatusCode::kUnavailable);  // plaintext

  // The certificate's name is the identity: trainer-b cannot drive trainer-a's channel.
  auto a = MustDial(d.address(), MutualTls("trainer-a"));
  auto b = MustDial(d.address(), MutualTls("trainer-b"));
  auto backend = Init(*a, "mtls");
  REQUIRE(backend.ok());
  auto channel = Register(*a, backend->backend_id());
  REQUIRE(channel.ok());
  v1::StartEpochRequest start;
  start.set_channel_id(channel->channel_id());
  CHECK(b->StartEpoch(start).status().code() == absl::StatusCode::kNotFound);
  CHECK(a->StartEpoch(start).ok());
}

// Writes the token file of the token tests.
std::string TokenFile(const testing::TempDir& dir, const std::string& extra = "") {
  const std::string path = dir / "tokens";
  testing::WriteFile(path, absl::StrCat("# graphstore tokens\n", kTokenA, " trainer-a trainer\n", kTokenB,
                                        " trainer-b trainer\n", kTokenOps, " ops operator\n", extra));
  return path;
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("graphstore.v1.GraphStore");
  grpc::health::v1::HealthCheckResponse resp;
  REQUIRE(stub->Check(&ctx, req, &resp).ok());
  return resp.status();
}

TEST_CASE("tokens: missing, wrong, wrong role, reloaded on SIGHUP; health and reflection stay open", "[auth]") {
  testing::TempDir dir;
  const std::string tokens = TokenFile(dir);
  Daemon d(testing::Dataset(), {"--auth_tokens=" + tokens, "--shared_memory_dir=", "--state_log_interval_s=0"});

  auto anonymous = MustDial(d.address(), ChannelSecurity());
  auto missing = anonymous->GetDatasetMeta();
  CHECK(missing.status().code() == absl::StatusCode::kUnauthenticated);
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("no credentials"));
  auto wrong = MustDial(d.address(), Token("not-a-known-token-at-all"));
  CHECK(wrong->GetDatasetMeta().status().code() == absl::StatusCode::kUnauthenticated);

  auto a = MustDial(d.address(), Token(kTokenA));
  auto ops = MustDial(d.address(), Token(kTokenOps));
  CHECK(a->GetDatasetMeta().ok());
  auto trainer_stats = a->GetServerStats();
  CHECK(trainer_stats.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(trainer_stats.status().message()), Catch::Contains("may not call GetServerStats"));
  auto trainer_exit = a->Exit();
  CHECK(trainer_exit.status().code() == absl::StatusCode::kPermissionDenied);
  auto ops_init = Init(*ops, "ops-backend");
  CHECK(ops_init.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK(ops->GetServerStats().ok());

  // Probes and grpcurl's discovery need no credentials.
  CHECK(Health(d.address()) == grpc::health::v1::HealthCheckResponse::SERVING);
  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(
      grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto rw = reflection->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest list;
  list.set_list_services("");
  REQUIRE(rw->Write(list));
  grpc::reflection::v1alpha::ServerReflectionResponse listed;
  REQUIRE(rw->Read(&listed));
  rw->WritesDone();
  std::set<std::string> services;
  for (const auto& s : listed.list_services_response().service()) services.insert(s.name());
  CHECK(services.count("graphstore.v1.GraphStore") == 1);

  // A token added to the file works once the server has reloaded it; a removed one stops.
  const std::string added = "token-added-later-0123456789";
  testing::WriteFile(tokens, absl::StrCat(kTokenB, " trainer-b trainer\n", added, " trainer-c trainer\n"));
  d.Signal(SIGHUP);
  auto c = MustDial(d.address(), Token(added));
  REQUIRE(testing::PollUntil([&] { return c->GetDatasetMeta().ok(); }));
  CHECK_THAT(d.Log(), Catch::Contains("reloaded"));
  CHECK(a->GetDatasetMeta().status().code() == absl::StatusCode::kUnauthenticated);
  // A broken file is refused and the tokens in use stay.
  testing::WriteFile(tokens, "broken line\n");
  d.Signal(SIGHUP);
  REQUIRE(testing::PollUntil([&] { return d.Log().find("token file not reloaded") != std::string::npos; }));
  CHECK(c->GetDatasetMeta().ok());
}

TEST_CASE("a trainer cannot see, stream, start, renew or destroy another trainer's channel", "[auth]") {
  testing::TempDir dir;
  Daemon d(testing::Dataset(), {"--auth_tokens=" + TokenFile(dir), "--state_log_interval_s=0"});
  auto a = MustDial(d.address(), Token(kTokenA));
  auto b = MustDial(d.address(), Token(kTokenB));
  auto ops = MustDial(d.address(), Token(kTokenOps));

  // Backends are shared per key: B joins A's backend, and each has its own channel.
  const uint64_t backend = testing::InitBackend(*a, "shared");
  CHECK(testing::InitBackend(*b, "shared") == backend);
  auto ca = Register(*a, backend);
  auto cb = Register(*b, backend);
  REQUIRE(ca.ok());
  REQUIRE(cb.ok());
  const uint64_t id = ca->channel_id();

  // B gets for A's channel exactly what it gets for an id never given out.
  auto expect_hidden = [&](const absl::Status& s, uint64_t probe) {
    INFO(s.ToString());
    CHECK(s.code() == absl::StatusCode::kNotFound);
    CHECK_THAT(std::string(s.message()), Catch::EndsWith(absl::StrCat("channel_id ", probe, " does not exist")));
  };
  for (uint64_t probe : {id, uint64_t{999999}}) {
    auto on = [probe](auto request) {  // a request naming the probed channel
      request.set_channel_id(probe);
      return request;
    };
    expect_hidden(b->DescribeChannel(on(v1::DescribeChannelRequest())).status(), probe);
    expect_hidden(b->StartEpoch(on(v1::StartEpochRequest())).status(), probe);
    expect_hidden(b->RenewLease(on(v1::RenewLeaseRequest())).status(), probe);
    expect_hidden(b->ReleaseSharedBuffers(on(v1::ReleaseSharedBuffersRequest())).status(), probe);
    expect_hidden(b->DestroySamplingInput(on(v1::DestroySamplingInputRequest())).status(), probe);
  }
  REQUIRE(testing::Start(*a, id, 0) == v1::StartEpochResponse::STARTED);
  auto stolen = testing::Open(*b, id, 0);
  auto first = stolen->Next();
  REQUIRE_FALSE(first.ok());
  expect_hidden(first.status(), id);

  // A reads its whole epoch: nothing was taken or ended by B.
  int64_t batches = 0;
  auto mine = testing::ReadEpoch(*a, id, 0, &batches);
  CHECK(std::multiset<int64_t>(mine.begin(), mine.end()) == TrainSeeds());

  // Describing the shared backend shows each trainer its own channel only; the operator sees both.
  v1::DescribeBackendRequest db;
  db.set_backend_id(backend);
  auto seen_by_b = b->DescribeBackend(db);
  REQUIRE(seen_by_b.ok());
  REQUIRE(seen_by_b->channels_size() == 1);
  CHECK(seen_by_b->channels(0).channel_id() == cb->channel_id());
  auto seen_by_ops = ops->DescribeBackend(db);
  REQUIRE(seen_by_ops.ok());
  CHECK(seen_by_ops->channels_size() == 2);
  v1::DescribeChannelRequest describe;
  describe.set_channel_id(id);
  CHECK(ops->DescribeChannel(describe).ok());

  // A destroyed channel reads as destroyed to its owner and as unknown to everyone else.
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(id);
  auto destroyed = a->DestroySamplingInput(destroy);
  REQUIRE(destroyed.ok());
  CHECK(destroyed->destroyed());
  CHECK(a->DescribeChannel(describe)->state() == "destroyed");
  expect_hidden(b->DescribeChannel(describe).status(), id);

  // Only an operator stops the server.
  CHECK(a->Exit().status().code() == absl::StatusCode::kPermissionDenied);
  CHECK(d.running());
  REQUIRE(ops->Exit().ok());
  CHECK(d.WaitExit(30) == 0);
}

TEST_CASE("quotas refuse an identity's channel and backend past its quota while another identity still works",
          "[auth]") {
  testing::TempDir dir;
  Daemon d(testing::Dataset(),
           {"--auth_tokens=" + TokenFile(dir), "--max_channels_per_identity=2", "--max_backends_per_identity=2",
            "--max_buffer_mb_per_identity=1000", "--shared_memory_dir=", "--state_log_interval_s=0"});
  auto a = MustDial(d.address(), Token(kTokenA));
  auto b = MustDial(d.address(), Token(kTokenB));

  auto backend = Init(*a, "a-1");
  REQUIRE(backend.ok());
  REQUIRE(Init(*a, "a-2").ok());
  auto third_backend = Init(*a, "a-3");
  CHECK(third_backend.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(third_backend.status().message()), Catch::Contains("max_backends_per_identity=2"));
  CHECK(Init(*a, "a-1").ok());  // joining costs nothing
  CHECK(Init(*b, "b-1").ok());

  REQUIRE(Register(*a, backend->backend_id()).ok());
  REQUIRE(Register(*a, backend->backend_id()).ok());
  auto third = Register(*a, backend->backend_id());
  CHECK(third.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(third.status().message()),
             Catch::Contains("identity 'trainer-a' already holds 2 channels (quota max_channels_per_identity=2)"));
  auto other = Register(*b, backend->backend_id());
  CHECK(other.ok());

  // Buffer bytes: each channel here reserves 64 MiB of buffer; 100 MiB hold one, not two.
  Daemon bytes(testing::Dataset(), {"--auth_tokens=" + TokenFile(dir), "--max_buffer_mb_per_identity=100",
                                    "--shared_memory_dir=", "--state_log_interval_s=0"});
  auto c = MustDial(bytes.address(), Token(kTokenA));
  auto cb = Init(*c, "bytes");
  REQUIRE(cb.ok());
  auto channel = Register(*c, cb->backend_id());
  REQUIRE(channel.ok());
  auto over = Register(*c, cb->backend_id());
  CHECK(over.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(over.status().message()), Catch::Contains("max_buffer_bytes_per_identity"));

  // The buffer holds per stream: two stripes of the 64 MiB channel need 128 MiB of the quota.
  v1::StartEpochRequest start;
  start.set_channel_id(channel->channel_id());
  REQUIRE(c->StartEpoch(start).ok());
  v1::StreamSampledMessagesRequest req;
  req.set_channel_id(channel->channel_id());
  req.set_num_stripes(2);
  auto stream = c->Stream(req);
  auto m = stream->Next();
  CHECK(m.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(m.status().message()),
             Catch::Contains(absl::StrCat("num_stripes: 2 streams of channel_id ", channel->channel_id(),
                                          " buffer up to 2 x 67108864 bytes")));
  CHECK_THAT(std::string(m.status().message()), Catch::Contains("max_buffer_bytes_per_identity=104857600"));
  req.set_num_stripes(0);  // one stream fits
  auto whole = c->Stream(req);
  CHECK(whole->Next().ok());
}

TEST_CASE("a backend nobody registers on is reaped after its lease; one with channels is not", "[auth]") {
  Daemon d(testing::Dataset(), {"--shared_memory_dir=", "--state_log_interval_s=0"});
  auto c = testing::Connect(d);
  auto idle = Init(*c, "idle", /*lease_ms=*/300);
  REQUIRE(idle.ok());
  CHECK(idle->lease_ms() == 300);
  auto used = Init(*c, "used", /*lease_ms=*/300);
  REQUIRE(used.ok());
  auto channel = Register(*c, used->backend_id());
  REQUIRE(channel.ok());

  v1::DescribeBackendRequest describe;
  describe.set_backend_id(idle->backend_id());
  REQUIRE(testing::PollUntil([&] { return !c->DescribeBackend(describe).ok(); }));
  CHECK(c->DescribeBackend(describe).status().code() == absl::StatusCode::kNotFound);
  auto stats = c->GetServerStats();
  REQUIRE(stats.ok());
  CHECK(stats->backend_leases_expired() == 1);
  describe.set_backend_id(used->backend_id());
  CHECK(c->DescribeBackend(describe).ok());
  CHECK_THAT(d.Log(), Catch::Contains(absl::StrCat("backend ", idle->backend_id(),
                                                   " 'idle': no channel within its lease of 300 ms")));

  // The key is free again.
  auto again = Init(*c, "idle");
  REQUIRE(again.ok());
  CHECK(again->created());
  CHECK(again->lease_ms() == 600000);
  v1::InitSamplingBackendRequest bad;
  bad.set_backend_key("bad");
  bad.set_lease_ms(-1);
  auto refused = c->InitSamplingBackend(bad);
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("lease_ms"));
}

// The generated graph in two partitions.
const std::string& TwoPartitions() { return testing::GeneratedDataset(3000, 8, 4, 2, /*seed=*/11); }

TEST_CASE("a cluster over mutual TLS: peers call each other with their certificates and the peer role", "[tls]") {
  testing::TempDir dir;
  const std::string tokens = dir / "tokens";
  testing::WriteFile(tokens, "cert graphstore-server peer\ncert trainer-a trainer\n");
  const std::vector<int> ports = testing::FreeLoopbackPorts(2);
  const std::string a0 = absl::StrCat("127.0.0.1:", ports[0]);
  const std::string a1 = absl::StrCat("127.0.0.1:", ports[1]);
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca=" + Cert("ca.pem"));
  flags.push_back("--auth_tokens=" + tokens);
  flags.push_back("--cluster=" + a0 + "," + a1);
  // No peer cache: every batch's rows of the other partition are asked of their owner by the
  // trainer, over its own TLS connection with its certificate.
  flags.push_back("--peer_cache_mb=0");
  Daemon d0(TwoPartitions() + "/part-0", flags, ports[0], /*wait=*/false);
  Daemon d1(TwoPartitions() + "/part-1", flags, ports[1], /*wait=*/false);
  d0.WaitReady();
  d1.WaitReady();

  // The whole train split, sampled across both partitions (the peers' calls and the trainer's
  // calls to the owners succeed).
  auto c = MustDial(a0, MutualTls("trainer-a"));
  v1::GetNodeIdsRequest ids0;
  ids0.set_split("train");
  auto n0 = c->GetNodeIds(ids0);
  REQUIRE(n0.ok());
  const std::multiset<int64_t> seeds = LoaderEpoch({a0, a1}, MutualTls("trainer-a"));
  CHECK(static_cast<int64_t>(seeds.size()) > n0->ids().data().size() / 8);
  CHECK(std::set<int64_t>(seeds.begin(), seeds.end()).size() == seeds.size());

  // trainer-b's certificate is valid but has no role here; the server's own has only `peer`.
  auto b = MustDial(a0, MutualTls("trainer-b"));
  CHECK(b->GetDatasetMeta().status().code() == absl::StatusCode::kPermissionDenied);
  auto as_peer = MustDial(a0, MutualTls("server"));
  CHECK(as_peer->GetDatasetMeta().ok());
  CHECK(Init(*as_peer, "not-for-peers").status().code() == absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace graphstore
