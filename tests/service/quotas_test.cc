// The server's limits and each identity's quotas against a registry, with no server: every
// refusal is RESOURCE_EXHAUSTED naming the field or the option that sets the limit.

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "server/service/quotas.h"

namespace graphstore {
namespace {

struct Fixture {
  CoreOptions options;
  Registry registry;
  Quotas quotas{&options, &registry, /*max_worker_threads=*/8};

  std::shared_ptr<ChannelEntry> Channel(const std::shared_ptr<BackendEntry>& b, const std::string& owner,
                                        int64_t buffer_bytes) {
    auto c = std::make_shared<ChannelEntry>(8, buffer_bytes, int64_t{1} << 30);
    c->id = registry.ReserveChannelId();
    c->backend = b;
    c->owner = owner;
    registry.AddChannel(c);
    return c;
  }
};

void ExpectExhausted(const absl::Status& s, const std::string& text) {
  CHECK(s.code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(s.message()), Catch::Contains(text));
}

TEST_CASE("backends are limited in all, per identity, and by the worker threads they would start", "[quotas]") {
  Fixture f;
  const Caller alice = Caller::Named("alice", false);
  CHECK(f.quotas.CheckBackendRoom(alice, 4).ok());
  ExpectExhausted(f.quotas.CheckBackendRoom(alice, 9), "options.num_workers");
  f.options.max_backends_per_identity = 1;
  f.registry.AddBackend("a", v1::SamplingConfig(), "alice");
  ExpectExhausted(f.quotas.CheckBackendRoom(alice, 1), "max_backends_per_identity=1");
  CHECK(f.quotas.CheckBackendRoom(Caller::Named("bob", false), 1).ok());
  CHECK(f.quotas.CheckBackendRoom(Caller::Anonymous(), 1).ok());  // anonymous callers have no quota
  f.options.max_backends = 1;
  ExpectExhausted(f.quotas.CheckBackendRoom(Caller::Named("bob", false), 1), "too many backends (limit 1)");
}

TEST_CASE("channels are limited per identity, by buffer bytes, and in all", "[quotas]") {
  Fixture f;
  const Caller alice = Caller::Named("alice", false);
  auto b = f.registry.AddBackend("a", v1::SamplingConfig(), "alice");
  b->worker_threads = 2;
  v1::RegisterSamplingInputRequest req;
  req.mutable_buffer()->set_max_bytes(100);
  CHECK(f.quotas.CheckChannelRoom(alice, req, *b).ok());
  f.options.max_buffer_bytes_per_identity = 250;
  f.Channel(b, "alice", 100);
  f.Channel(b, "alice", 100);
  ExpectExhausted(f.quotas.CheckChannelRoom(alice, req, *b), "holds channels with 200 buffer bytes; 100 more");
  req.mutable_buffer()->set_max_bytes(50);
  CHECK(f.quotas.CheckChannelRoom(alice, req, *b).ok());
  f.options.max_channels_per_identity = 2;
  ExpectExhausted(f.quotas.CheckChannelRoom(alice, req, *b), "max_channels_per_identity=2");
  f.options.max_channels = 2;
  ExpectExhausted(f.quotas.CheckChannelRoom(Caller::Named("bob", false), req, *b), "too many live channels");
}

TEST_CASE("a backend's first channel must find room for its worker threads", "[quotas]") {
  Fixture f;
  auto b = f.registry.AddBackend("a", v1::SamplingConfig());
  b->worker_threads = 9;  // more than the server's 8
  v1::RegisterSamplingInputRequest req;
  ExpectExhausted(f.quotas.CheckChannelRoom(Caller::Anonymous(), req, *b), "backend_id: its 9 worker threads");
  b->worker_threads = 8;
  CHECK(f.quotas.CheckChannelRoom(Caller::Anonymous(), req, *b).ok());
  CHECK(f.quotas.LiveWorkerThreads() == 0);  // no backend has started its workers
}

TEST_CASE("more stripes of a channel need room in its owner's buffer quota", "[quotas]") {
  Fixture f;
  auto b = f.registry.AddBackend("a", v1::SamplingConfig(), "alice");
  auto c = f.Channel(b, "alice", 100);
  f.options.max_buffer_bytes_per_identity = 300;
  CHECK(f.quotas.CheckStreamRoom(*c, 1).ok());
  CHECK(f.quotas.CheckStreamRoom(*c, 3).ok());  // 100 held, 200 more
  ExpectExhausted(f.quotas.CheckStreamRoom(*c, 4), "num_stripes: 4 streams of channel_id");
  f.registry.GrowStreamRoom(c.get(), 3);
  CHECK(f.registry.HoldingsOf("alice").buffer_bytes == 300);
  CHECK(f.quotas.CheckStreamRoom(*c, 3).ok());  // already has that room
}

}  // namespace
}  // namespace graphstore
