// End to end: every malformed request answered with its canonical code, naming the field.

#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <future>
#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "graphstore/v1/graphstore.grpc.pb.h"

#include "client/client.h"
#include "server/graph/partition.h"
#include "tests/daemon.h"
#include "tests/e2e/e2e_util.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using client::Client;
using namespace testing;

TEST_CASE("every malformed request gets its canonical code and names the field", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "errors");
  struct Case {
    std::string what;
    absl::Status status;
    absl::StatusCode code;
    std::string field;
  };
  std::vector<Case> cases;
  auto init = [&](auto edit) {
    v1::InitSamplingBackendRequest r;
    r.set_backend_key("k");
    r.mutable_config()->set_batch_size(10);
    r.mutable_config()->add_num_neighbors(2);
    edit(r);
    return c->InitSamplingBackend(r).status();
  };
  cases.push_back({"empty key", init([](auto& r) { r.clear_backend_key(); }), absl::StatusCode::kInvalidArgument, "backend_key"});
  cases.push_back({"zero batch", init([](auto& r) { r.mutable_config()->set_batch_size(0); }),
                   absl::StatusCode::kInvalidArgument, "config.batch_size"});
  cases.push_back({"huge batch", init([](auto& r) { r.mutable_config()->set_batch_size(1 << 30); }),
                   absl::StatusCode::kResourceExhausted, "config.batch_size"});
  cases.push_back({"fanout -2", init([](auto& r) { r.mutable_config()->set_num_neighbors(0, -2); }),
                   absl::StatusCode::kInvalidArgument, "config.num_neighbors[0]"});
  cases.push_back({"huge fanout", init([](auto& r) { r.mutable_config()->set_num_neighbors(0, 1 << 30); }),
                   absl::StatusCode::kResourceExhausted, "config.num_neighbors[0]"});
  cases.push_back({"unknown edge type", init([](auto& r) {
                     (*r.mutable_config()->mutable_num_neighbors_by_type())["a__b__c"].add_per_hop(1);
                   }),
                   absl::StatusCode::kInvalidArgument, "a__b__c"});
  cases.push_back({"too many workers", init([](auto& r) { r.mutable_options()->set_num_workers(100000); }),
                   absl::StatusCode::kResourceExhausted, "options.num_workers"});
  cases.push_back({"temporal without times", init([](auto& r) {
                     r.mutable_config()->set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
                   }),
                   absl::StatusCode::kInvalidArgument, "config.temporal_strategy: no edge type"});
  cases.push_back({"temporal ppr", init([](auto& r) {
                     r.mutable_config()->clear_num_neighbors();
                     r.mutable_config()->set_kind(v1::SAMPLER_KIND_PPR);
                     r.mutable_config()->set_temporal_strategy(v1::TEMPORAL_STRATEGY_LAST);
                   }),
                   absl::StatusCode::kInvalidArgument, "config.temporal_strategy: only the neighbour sampler"});
  cases.push_back({"unknown temporal strategy", init([](auto& r) {
                     r.mutable_config()->set_temporal_strategy(static_cast<v1::TemporalStrategy>(9));
                   }),
                   absl::StatusCode::kInvalidArgument, "config.temporal_strategy 9"});
  cases.push_back({"node times without times", init([](auto& r) { r.mutable_config()->set_with_node_times(true); }),
                   absl::StatusCode::kInvalidArgument, "config.with_node_times: no node type"});
  cases.push_back({"node times with ppr", init([](auto& r) {
                     r.mutable_config()->clear_num_neighbors();
                     r.mutable_config()->set_kind(v1::SAMPLER_KIND_PPR);
                     r.mutable_config()->set_with_node_times(true);
                   }),
                   absl::StatusCode::kInvalidArgument, "config.with_node_times: the PPR sampler"});

  auto reg = [&](auto edit) {
    v1::RegisterSamplingInputRequest r;
    r.set_backend_id(backend);
    r.mutable_split()->set_split("train");
    edit(r);
    return c->RegisterSamplingInput(r).status();
  };
  cases.push_back({"no backend id", reg([](auto& r) { r.set_backend_id(0); }), absl::StatusCode::kInvalidArgument, "backend_id"});
  cases.push_back({"unknown backend", reg([](auto& r) { r.set_backend_id(777); }), absl::StatusCode::kNotFound, "backend_id"});
  cases.push_back({"no input", reg([](auto& r) { r.clear_split(); }), absl::StatusCode::kInvalidArgument, "input"});
  cases.push_back({"bad split", reg([](auto& r) { r.mutable_split()->set_split("nope"); }),
                   absl::StatusCode::kInvalidArgument, "split"});
  cases.push_back({"bad node type", reg([](auto& r) { r.mutable_split()->set_node_type("paper"); }),
                   absl::StatusCode::kInvalidArgument, "split.node_type"});
  cases.push_back({"bad slice", reg([](auto& r) {
                     r.mutable_split()->mutable_slice()->set_rank(3);
                     r.mutable_split()->mutable_slice()->set_world_size(2);
                   }),
                   absl::StatusCode::kInvalidArgument, "split.slice.rank"});
  cases.push_back({"seed out of range", reg([](auto& r) { r.mutable_nodes()->add_ids(5000); }),
                   absl::StatusCode::kInvalidArgument, "nodes.ids[0]"});
  cases.push_back({"duplicate seed", reg([](auto& r) {
                     for (int64_t id : {4, 9, 4}) r.mutable_nodes()->add_ids(id);
                   }),
                   absl::StatusCode::kInvalidArgument, "nodes.ids[2]=4 repeats nodes.ids[0]"});
  cases.push_back({"negative buffer", reg([](auto& r) { r.mutable_buffer()->set_max_messages(-1); }),
                   absl::StatusCode::kInvalidArgument, "buffer"});
  cases.push_back({"huge buffer", reg([](auto& r) { r.mutable_buffer()->set_max_bytes(1LL << 50); }),
                   absl::StatusCode::kResourceExhausted, "buffer.max_bytes"});
  cases.push_back({"negative lease", reg([](auto& r) { r.set_lease_ms(-5); }), absl::StatusCode::kInvalidArgument, "lease_ms"});
  cases.push_back({"times on a backend that is not temporal", reg([](auto& r) {
                     r.mutable_nodes()->add_ids(4);
                     r.mutable_nodes()->add_times(100);
                   }),
                   absl::StatusCode::kInvalidArgument, "nodes.times: the backend does not sample temporally"});

  v1::StartEpochRequest se;
  cases.push_back({"start without channel", c->StartEpoch(se).status(), absl::StatusCode::kInvalidArgument, "channel_id"});
  se.set_channel_id(1);
  se.set_epoch(-1);
  cases.push_back({"negative epoch", c->StartEpoch(se).status(), absl::StatusCode::kInvalidArgument, "epoch"});
  se.set_epoch(0);
  se.set_start_batch(-2);
  cases.push_back({"negative start batch", c->StartEpoch(se).status(), absl::StatusCode::kInvalidArgument, "start_batch"});

  v1::GetNodeFeaturesRequest gf;
  gf.add_ids(-3);
  cases.push_back({"feature id", c->GetNodeFeatures(gf).status(), absl::StatusCode::kInvalidArgument, "ids[0]"});
  v1::GetNodeIdsRequest gi;
  gi.set_node_type("user");
  cases.push_back({"ids node type", c->GetNodeIds(gi).status(), absl::StatusCode::kInvalidArgument, "node_type"});
  v1::LookupPartitionsRequest lp;
  lp.add_ids(1);
  lp.add_ids(99999);
  cases.push_back({"lookup id", c->LookupPartitions(lp).status(), absl::StatusCode::kInvalidArgument, "ids[1]"});
  v1::DescribeChannelRequest dc;
  dc.set_channel_id(4242);
  cases.push_back({"describe unknown", c->DescribeChannel(dc).status(), absl::StatusCode::kNotFound, "channel_id"});

  // Streams: unknown channel, epoch not started.
  auto stream_status = [&](uint64_t channel, int64_t epoch) {
    auto s = Open(*c, channel, epoch);
    return s->Next().status();
  };
  cases.push_back({"stream unknown", stream_status(4242, 0), absl::StatusCode::kNotFound, "channel_id"});
  v1::RegisterSamplingInputRequest ok;
  ok.set_backend_id(backend);
  ok.mutable_split()->set_split("val");
  const uint64_t fresh = c->RegisterSamplingInput(ok)->channel_id();
  cases.push_back({"stream before start", stream_status(fresh, 0), absl::StatusCode::kFailedPrecondition, "StartEpoch"});

  for (const auto& k : cases) {
    INFO(k.what << ": " << k.status.ToString());
    CHECK(k.status.code() == k.code);
    CHECK_THAT(std::string(k.status.message()), Catch::Contains(k.field));
  }
  // The server survived all of it.
  CHECK(c->GetDatasetMeta().ok());
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("temporal requests: bad times and strategies are refused naming the field; seeds before every edge "
          "reach nothing", "[e2e]") {
  Daemon d(GeneratedDataset(3000, 16, 8, 1, 5, /*times=*/true));
  auto c = Connect(d);
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("temporal");
  init.mutable_config()->set_batch_size(50);
  init.mutable_config()->add_num_neighbors(5);
  init.mutable_config()->add_num_neighbors(5);
  init.mutable_config()->set_temporal_strategy(v1::TEMPORAL_STRATEGY_LAST);
  init.mutable_config()->set_replace(true);
  auto refused = c->InitSamplingBackend(init);
  REQUIRE(!refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("replace"));
  init.mutable_config()->set_replace(false);
  auto backend = c->InitSamplingBackend(init);
  REQUIRE(backend.ok());

  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend->backend_id());
  for (int64_t id = 0; id < 200; ++id) reg.mutable_nodes()->add_ids(id);
  reg.mutable_nodes()->add_times(5);
  auto miscounted = c->RegisterSamplingInput(reg);
  REQUIRE(!miscounted.ok());
  CHECK(miscounted.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(miscounted.status().message()), Catch::Contains("nodes.times has 1 entries for 200 ids"));

  // Every node's time is >= 0 and every edge comes after both its ends: at time -1 nothing is
  // reachable; at the seeds' node times (no explicit times) some edges are.
  auto edges_of_epoch = [&](const v1::RegisterSamplingInputRequest& r) {
    auto ch = c->RegisterSamplingInput(r);
    REQUIRE(ch.ok());
    v1::StartEpochRequest se;
    se.set_channel_id(ch->channel_id());
    REQUIRE(c->StartEpoch(se).ok());
    auto stream = Open(*c, ch->channel_id(), 0);
    int64_t edges = 0, batches = 0;
    while (true) {
      auto m = stream->Next();
      REQUIRE(m.ok());
      if (*m == nullptr) break;
      ++batches;
      for (const auto& e : (*m)->edges()) edges += static_cast<int64_t>(e.rows().data().size()) / 4;
    }
    CHECK(batches == 4);
    return edges;
  };
  reg.mutable_nodes()->clear_times();
  for (int i = 0; i < 200; ++i) reg.mutable_nodes()->add_times(-1);
  CHECK(edges_of_epoch(reg) == 0);
  reg.mutable_nodes()->clear_times();
  CHECK(edges_of_epoch(reg) > 0);

  // A peer's SampleNeighbors call is checked the same way.
  auto stub = v1::GraphStore::NewStub(grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
  auto sample = [&](auto edit) {
    v1::SampleNeighborsRequest r;
    r.add_ids(1);
    r.add_ids(2);
    r.set_fanout(3);
    edit(r);
    grpc::ClientContext ctx;
    v1::SampleNeighborsResponse resp;
    return stub->SampleNeighbors(&ctx, r, &resp);
  };
  grpc::Status st = sample([](auto& r) {
    r.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
    r.add_times(5);
  });
  CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(st.error_message(), Catch::Contains("times has 1 entries"));
  st = sample([](auto& r) { r.add_times(5); r.add_times(6); });
  CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(st.error_message(), Catch::Contains("without a temporal_strategy"));
  st = sample([](auto& r) {
    r.set_temporal_strategy(v1::TEMPORAL_STRATEGY_LAST);
    r.set_replace(true);
    r.add_times(5);
    r.add_times(6);
  });
  CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(st.error_message(), Catch::Contains("temporal_strategy LAST"));
  CHECK(d.Stop(SIGTERM) == 0);
}

// A raw body sent to `method`, as a fuzzer or a wrong client would.
grpc::Status CallRaw(const Daemon& d, const std::string& method, const std::string& body) {
  auto channel = grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/graphstore.v1.GraphStore/" + method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

TEST_CASE("an unparseable request body is INVALID_ARGUMENT with a message", "[e2e]") {
  Daemon d(Dataset());
  struct Case {
    std::string method, body, type;
  };
  const std::vector<Case> cases = {
      {"GetNodeFeatures", std::string("\x0a\x02\xff\xfe", 4), "GetNodeFeaturesRequest"},  // node_type not UTF-8
      {"GetNodeFeatures", std::string("\xff\xff\xff", 3), "GetNodeFeaturesRequest"},
      {"RegisterSamplingInput", std::string("\x12\x7f\x00", 3), "RegisterSamplingInputRequest"},  // truncated
      {"InitSamplingBackend", std::string("\x0a\x01\x80", 3), "InitSamplingBackendRequest"},
      {"StreamSampledMessages", std::string("\xff", 1), "StreamSampledMessagesRequest"},
      {"Exit", std::string("\x0f", 1), "ExitRequest"},
  };
  for (const auto& k : cases) {
    const grpc::Status s = CallRaw(d, k.method, k.body);
    INFO(k.method << ": " << s.error_code() << " " << s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(s.error_message(), Catch::Contains(k.type));
  }
  // Well-formed bodies still work through the same path, and the server is alive.
  auto c = Connect(d);
  CHECK(c->GetDatasetMeta().ok());
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("GetNodeFeatures' rows, sent from where the query wrote them, parse as the same message", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  // 10,000 ids: 640 KB of rows and 80 KB of labels, each large enough to go out as a slice of
  // its own after the rest of the message.
  v1::GetNodeFeaturesRequest req;
  req.set_with_labels(true);
  for (int i = 0; i < 10000; ++i) req.add_ids((i * 7) % 100);
  auto whole = c->GetNodeFeatures(req);  // protobuf's own parser
  REQUIRE(whole.ok());
  REQUIRE(whole->features().data().size() == 10000 * 64);
  REQUIRE(whole->labels().data().size() == 10000 * 8);
  CHECK(whole->features().shape_size() == 2);
  // The same rows as small answers, each serialised as one message.
  for (int begin = 0; begin < 10000; begin += 500) {
    v1::GetNodeFeaturesRequest part;
    part.set_with_labels(true);
    for (int i = begin; i < begin + 500; ++i) part.add_ids(req.ids(i));
    auto small = c->GetNodeFeatures(part);
    REQUIRE(small.ok());
    CHECK(small->features().data() == whole->features().data().substr(begin * 64, 500 * 64));
    CHECK(small->labels().data() == whole->labels().data().substr(begin * 8, 500 * 8));
  }
  // The bytes as received, read in place, are that message; an error of the reader comes back.
  std::string received;
  REQUIRE(c->ReadNodeFeatures(req, [&](const std::vector<client::Span>& spans) {
             for (const client::Span& s : spans) received.append(s.data, s.size);
             return absl::OkStatus();
           }).ok());
  v1::GetNodeFeaturesResponse parsed;
  REQUIRE(parsed.ParseFromString(received));
  CHECK(parsed.SerializeAsString() == whole->SerializeAsString());
  const absl::Status refused =
      c->ReadNodeFeatures(req, [](const std::vector<client::Span>&) { return absl::DataLossError("no room"); });
  CHECK(refused.code() == absl::StatusCode::kDataLoss);
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("a response that would pass the message limit is refused before it is built", "[e2e]") {
  Daemon d(Dataset(), {"--max_message_mb=1", "--stream_part_mb=0"});
  auto c = Connect(d);
  // 16 float32 features: 64 bytes a row; 20,000 rows is 1.2 MiB, while the request is ~40 KB.
  v1::GetNodeFeaturesRequest features;
  for (int i = 0; i < 20000; ++i) features.add_ids(1);
  auto f = c->GetNodeFeatures(features);
  CHECK(f.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(f.status().message()), Catch::Contains("max_message_mb"));
  features.mutable_ids()->Truncate(1000);
  CHECK(c->GetNodeFeatures(features).ok());

  // Every neighbour of a node, asked for 100,000 times.
  v1::SampleNeighborsRequest sample;
  sample.set_fanout(-1);
  for (int i = 0; i < 100000; ++i) sample.add_ids(0);
  auto stub = v1::GraphStore::NewStub(grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
  auto call = [&] {
    grpc::ClientContext ctx;
    v1::SampleNeighborsResponse resp;
    return stub->SampleNeighbors(&ctx, sample, &resp);
  };
  const grpc::Status n = call();
  CHECK(n.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(n.error_message(), Catch::Contains("neighbours of 100000 ids"));
  sample.mutable_ids()->Truncate(10);
  CHECK(call().ok());
  // A fanout far above the nodes' degrees is bounded by the degrees (10 ids x 50,000 x 8 bytes
  // would be 4 MB) ...
  sample.set_fanout(50000);
  CHECK(call().ok());
  // ... and a draw with replacement by the fanout itself.
  sample.set_replace(true);
  const grpc::Status replaced = call();
  CHECK(replaced.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(replaced.error_message(), Catch::Contains("500000 neighbours of 10 ids at fanout 50000"));

  v1::GetNodeLabelsRequest labels;
  for (int i = 0; i < 200000; ++i) labels.add_ids(2);
  CHECK(c->GetNodeLabels(labels).status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("past the server-wide budget of unread batches, new channels are refused until readers catch up", "[e2e]") {
  Daemon d(Dataset(), {"--max_buffered_mb=1"});
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "budget");
  std::vector<uint64_t> channels;
  for (int i = 0; i < 3; ++i) channels.push_back(RegisterSplit(*c, backend, "train"));
  for (uint64_t id : channels) Start(*c, id, 0);  // and never read
  REQUIRE(PollUntil([&] { return c->GetServerStats()->buffered_bytes() >= (1 << 20); }));
  v1::RegisterSamplingInputRequest r;
  r.set_backend_id(backend);
  r.mutable_split()->set_split("val");
  auto refused = c->RegisterSamplingInput(r);
  CHECK(refused.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("--max_buffered_mb"));
  // Channels keep their buffers bounded: three channels of 8 messages would hold far more.
  CHECK(c->GetServerStats()->buffered_bytes() < (2 << 20));
  // One reader catches up: its epoch completes; then the others are destroyed and a channel
  // registers again.
  CHECK(!ReadEpoch(*c, channels[0], 0).empty());
  for (uint64_t id : channels) {
    v1::DestroySamplingInputRequest destroy;
    destroy.set_channel_id(id);
    REQUIRE(c->DestroySamplingInput(destroy).ok());
  }
  CHECK(c->GetServerStats()->buffered_bytes() == 0);
  r.set_backend_id(InitBackend(*c, "budget"));  // the last channel's destroy stopped the backend
  auto again = c->RegisterSamplingInput(r);
  INFO(again.status().ToString());
  CHECK(again.ok());
  CHECK(d.Stop(SIGTERM) == 0);
}

}  // namespace
}  // namespace graphstore
