// What operators rely on: health checking, server reflection (grpcurl list / describe), and
// the trainer-facing Loader against a real daemon.

#include "client/loader.h"  // LibTorch first (see loader.h)

#undef CHECK
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <future>
#include <set>

#include "google/protobuf/descriptor.pb.h"
#include "grpc_health/v1/health.grpc.pb.h"
#include "grpc_probe/reflection_probe.grpc.pb.h"
#include "tests/daemon.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"
#include "tools/generator.h"

namespace graphstore {
namespace {

using testing::Daemon;
using testing::TempDir;

const std::string& Dataset() { return testing::GeneratedDataset(2000, 8, 4); }

std::shared_ptr<grpc::Channel> Channel(const Daemon& d) {
  return grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());
}

TEST_CASE("the health service reports SERVING for graphstore.v1.GraphStore", "[ops]") {
  Daemon d(Dataset());
  auto stub = grpc::health::v1::Health::NewStub(Channel(d));
  for (const std::string service : {"", "graphstore.v1.GraphStore"}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    REQUIRE(stub->Check(&ctx, req, &resp).ok());
    CHECK(resp.status() == grpc::health::v1::HealthCheckResponse::SERVING);
  }
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("reflection lists the services and describes the contract (grpcurl list / describe)", "[ops]") {
  Daemon d(Dataset());
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(Channel(d));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest list;
  list.set_list_services("*");
  REQUIRE(stream->Write(list));
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  REQUIRE(stream->Read(&resp));
  std::set<std::string> services;
  for (const auto& s : resp.list_services_response().service()) services.insert(s.name());
  CHECK(services.count("graphstore.v1.GraphStore") == 1);
  CHECK(services.count("grpc.health.v1.Health") == 1);

  grpc::reflection::v1alpha::ServerReflectionRequest describe;
  describe.set_file_containing_symbol("graphstore.v1.GraphStore");
  REQUIRE(stream->Write(describe));
  REQUIRE(stream->Read(&resp));
  REQUIRE(resp.file_descriptor_response().file_descriptor_proto_size() >= 1);
  bool found = false;
  for (const auto& bytes : resp.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    REQUIRE(file.ParseFromString(bytes));
    for (const auto& svc : file.service()) {
      if (svc.name() != "GraphStore") continue;
      std::set<std::string> methods;
      for (const auto& m : svc.method()) methods.insert(m.name());
      found = methods.count("StreamSampledMessages") && methods.count("InitSamplingBackend") && methods.count("Exit");
    }
  }
  CHECK(found);
  stream->WritesDone();
  stream->Finish();
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("the Loader yields tensors covering every seed, viewing the message bytes", "[ops][loader]") {
  Daemon d(Dataset());
  const bool shared = GENERATE(true, false);
  INFO("shared memory: " << shared);
  client::LoaderOptions o;
  o.shared_memory = shared;
  o.servers = {d.address()};
  o.config.set_batch_size(100);
  o.config.set_shuffle(true);
  o.config.add_num_neighbors(4);
  o.config.add_num_neighbors(2);
  o.config.set_with_node_features(true);
  o.config.set_with_labels(true);
  o.split = "train";
  o.prefetch = 2;
  client::Loader loader(o);
  CHECK(loader.meta().node_types(0).num_nodes() == 2000);
  CHECK(loader.num_shared_memory_servers() == (shared ? 1 : 0));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    loader.StartEpoch(epoch);
    std::vector<int64_t> seeds;
    int64_t batches = 0;
    while (auto b = loader.Next()) {
      ++batches;
      REQUIRE(b->epoch == epoch);
      REQUIRE(b->x.size(0) == b->n_id.size(0));
      REQUIRE(b->x.size(1) == 8);
      REQUIRE(b->y.size(0) == b->n_id.size(0));
      REQUIRE(b->edge_index.size(0) == 2);
      int64_t edges = 0;
      for (int64_t k : b->num_sampled_edges) edges += k;
      REQUIRE(b->edge_index.size(1) == edges);
      REQUIRE(b->batch_size == b->seeds.numel());
      // Zero copy: the tensors view the mapping, or the buffers the received bytes were
      // decoded into.
      CHECK(b->shared_memory == shared);
      for (const at::Tensor* t : {&b->x, &b->n_id, &b->y}) {
        const auto* start = static_cast<const char*>(t->data_ptr());
        const size_t bytes = static_cast<size_t>(t->numel()) * t->element_size();
        CHECK(std::any_of(b->memory.begin(), b->memory.end(), [&](const auto& block) {
          const auto* base = static_cast<const char*>(block.first);
          return base <= start && start + bytes <= base + block.second;
        }));
      }
      auto s = b->seeds.contiguous();
      seeds.insert(seeds.end(), s.data_ptr<int64_t>(), s.data_ptr<int64_t>() + s.numel());
    }
    CHECK(batches == loader.num_batches());
    std::sort(seeds.begin(), seeds.end());
    CHECK(static_cast<int64_t>(seeds.size()) == loader.num_seeds());
    CHECK(std::adjacent_find(seeds.begin(), seeds.end()) == seeds.end());
  }
  loader.Close();
  auto c = client::Client::Connect({d.address()});
  REQUIRE(c.ok());
  CHECK((*c)->GetServerStats()->backends_size() == 0);  // Close destroyed the channel
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("a trainer that leaves every epoch early keeps getting batches", "[ops][loader]") {
  // Leaving an epoch cancels its stream with messages still on the way; over shared memory
  // each names a buffer the trainer never sees, and a buffer not reported received counts
  // against the channel's flow control. Those must not add up until the channel stops.
  Daemon d(Dataset());
  const bool shared = GENERATE(true, false);
  INFO("shared memory: " << shared);
  client::LoaderOptions o;
  o.shared_memory = shared;
  o.servers = {d.address()};
  o.config.set_batch_size(10);
  o.config.add_num_neighbors(4);
  o.config.set_with_node_features(true);
  o.split = "train";
  o.buffer_messages = 4;
  o.prefetch = 1;
  o.reconnect_deadline = std::chrono::milliseconds(0);
  client::Loader loader(o);
  REQUIRE(loader.num_shared_memory_servers() == (shared ? 1 : 0));
  for (int64_t epoch = 0; epoch < 40; ++epoch) {
    INFO("epoch " << epoch);
    loader.StartEpoch(epoch);
    // The server samples ahead and sends while the trainer takes one batch.
    auto c = client::Client::Connect({d.address()});
    REQUIRE(c.ok());
    REQUIRE(testing::PollUntil([&] {
      auto stats = (*c)->GetServerStats();
      if (!stats.ok() || stats->backends_size() != 1 || stats->backends(0).channels_size() != 1) return false;
      const v1::ChannelStats& ch = stats->backends(0).channels(0);
      return ch.epoch() == epoch && ch.batches_sampled() >= 5;
    }));
    auto next = std::async(std::launch::async, [&] { return loader.Next(); });
    if (next.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      FAIL_CHECK("no batch within 60 s");
      d.Stop(SIGKILL);  // the stream fails, and Next with it
      next.wait();
      return;
    }
    auto first = next.get();
    REQUIRE(first.has_value());
    CHECK(first->epoch == epoch);
  }
  loader.Close();
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("Loader errors carry the server's code and message", "[ops][loader]") {
  Daemon d(Dataset());
  client::LoaderOptions o;
  o.servers = {d.address()};
  o.config.set_batch_size(10);
  o.split = "holdout";
  try {
    client::Loader loader(o);
    FAIL("expected an error");
  } catch (const client::Error& e) {
    CHECK(e.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(e.what()), Catch::Contains("split 'holdout' does not exist"));
  }
  o.servers = {"127.0.0.1:1"};
  CHECK_THROWS_AS(client::Loader(o), client::Error);
  CHECK(d.Stop(SIGTERM) == 0);
}

// A loader that holds little in flight (small window, buffer and read-ahead), so that what
// happens to the server mid-epoch reaches the trainer within a few batches.
client::LoaderOptions LittleInFlight(const Daemon& d) {
  client::LoaderOptions o;
  o.servers = {d.address()};
  o.config.set_batch_size(20);
  o.config.add_num_neighbors(3);
  o.split = "train";
  o.stream_window_bytes = 16 << 10;
  o.prefetch = 1;
  o.buffer_messages = 1;
  return o;
}

TEST_CASE("a server dying mid-epoch surfaces as an error, not a hang", "[ops][loader]") {
  Daemon d(Dataset());
  client::LoaderOptions o = LittleInFlight(d);
  o.reconnect_deadline = std::chrono::milliseconds(2000);  // the server does not come back
  client::Loader loader(o);
  loader.StartEpoch(0);
  REQUIRE(loader.Next().has_value());
  d.Stop(SIGKILL);
  bool threw = false;
  try {
    while (loader.Next()) {
    }
  } catch (const client::Error& e) {
    threw = true;
    CHECK(e.code() == absl::StatusCode::kUnavailable);
  }
  CHECK(threw);
}

TEST_CASE("a server that stops answering surfaces as an error, not a hang", "[ops][loader]") {
  // SIGSTOP: the connection stays up (the kernel still acknowledges), nothing comes back. The
  // keepalive pings go unanswered and the stream fails like one to a server that went away.
  Daemon d(Dataset());
  client::LoaderOptions o = LittleInFlight(d);
  o.reconnect_deadline = std::chrono::milliseconds(0);
  o.keepalive_time = std::chrono::milliseconds(6000);
  o.keepalive_timeout = std::chrono::milliseconds(2000);
  client::Loader loader(o);
  loader.StartEpoch(0);
  REQUIRE(loader.Next().has_value());
  d.Signal(SIGSTOP);
  auto rest = std::async(std::launch::async, [&]() -> absl::Status {
    try {
      while (loader.Next()) {
      }
      return absl::OkStatus();
    } catch (const client::Error& e) {
      return absl::Status(e.code(), e.message());
    }
  });
  const bool ended = rest.wait_for(std::chrono::seconds(120)) == std::future_status::ready;
  d.Signal(SIGCONT);
  if (!ended) d.Stop(SIGKILL);  // the stream fails, and the reader with it
  CHECK(ended);
  const absl::Status st = rest.get();
  CHECK(st.code() == absl::StatusCode::kUnavailable);
  d.Stop(SIGKILL);
}

}  // namespace
}  // namespace graphstore
