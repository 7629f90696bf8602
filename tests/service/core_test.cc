// The service core called directly, with no server: the sampling lifecycle and how every RPC
// treats a channel that is not live.

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/service/core.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::TempDir;

std::unique_ptr<Core> CoreOver(const GraphData& g, const std::string& dir, CoreOptions co = CoreOptions()) {
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir).ok());
  auto part = Partition::Load(dir);
  REQUIRE(part.ok());
  co.state_log_interval_s = 0;
  return std::make_unique<Core>(*std::move(part), co);
}

std::unique_ptr<Core> ShopCore(const std::string& dir) { return CoreOver(testing::Shop(), dir); }

// A backend over the tiny graph and a channel of its train split.
uint64_t NewChannel(Core& core, int64_t lease_ms = 0) {
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("tiny");
  init.mutable_config()->set_batch_size(2);
  init.mutable_config()->add_num_neighbors(1);
  v1::InitSamplingBackendResponse backend;
  absl::Status created;
  core.InitSamplingBackend(init, &backend, [&](absl::Status s) { created = s; });
  REQUIRE(created.ok());
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend.backend_id());
  reg.mutable_split()->set_split("train");
  reg.set_lease_ms(lease_ms);
  v1::RegisterSamplingInputResponse channel;
  REQUIRE(core.RegisterSamplingInput(reg, &channel).ok());
  return channel.channel_id();
}

TEST_CASE("the core validates sampler kinds and link-prediction options, naming the field", "[core]") {
  TempDir dir;
  auto core_ptr = ShopCore(dir.path());
  Core& core = *core_ptr;
  auto init = [&](const v1::SamplingConfig& c) {
    v1::InitSamplingBackendRequest req;
    static int next_key = 0;
    req.set_backend_key(absl::StrCat("backend-", next_key++));
    *req.mutable_config() = c;
    v1::InitSamplingBackendResponse resp;
    absl::Status out;
    core.InitSamplingBackend(req, &resp, [&](absl::Status s) { out = s; });
    return std::make_pair(out, resp.backend_id());
  };
  v1::SamplingConfig c;
  c.set_batch_size(2);
  c.set_kind(v1::SAMPLER_KIND_PPR);
  c.add_num_neighbors(2);
  CHECK(init(c).first.message().find("config.num_neighbors") != std::string::npos);
  c.clear_num_neighbors();
  c.mutable_ppr()->set_alpha(0.2);
  c.mutable_ppr()->set_eps(1e-4);
  c.mutable_ppr()->set_max_nodes_per_seed(0);
  CHECK(init(c).first.message().find("ppr.max_nodes_per_seed") != std::string::npos);
  c.mutable_ppr()->set_max_nodes_per_seed(4);
  CHECK(init(c).first.ok());
  v1::SamplingConfig n;
  n.set_batch_size(2);
  n.add_num_neighbors(2);
  n.set_num_negatives(3);
  CHECK(init(n).first.message().find("config.num_negatives needs config.negative_sampling") != std::string::npos);
  n.set_negative_sampling(v1::NEGATIVE_SAMPLING_DEGREE);
  const auto [ok, backend] = init(n);
  REQUIRE(ok.ok());

  // An ablp registration: the anchors of the split; bad inputs name ablp.input.
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend);
  auto* in = reg.mutable_ablp()->mutable_input();
  in->set_split("train");
  in->set_node_type("user");
  in->set_supervision_edge_type("user__buys__item");
  v1::RegisterSamplingInputResponse resp;
  REQUIRE(core.RegisterSamplingInput(reg, &resp).ok());
  CHECK(resp.num_seeds() == 2);
  CHECK(resp.num_batches_per_epoch() == 1);
  in->set_supervision_edge_type("user__likes__item");
  const absl::Status st = core.RegisterSamplingInput(reg, &resp);
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(st.message().find("ablp.input.supervision_edge_type: ") != std::string::npos);
}
TEST_CASE("a destroyed channel is answered one way by every RPC, an unknown one NOT_FOUND", "[core]") {
  TempDir dir;
  auto core = CoreOver(testing::TinyGraph(), dir.path());
  const uint64_t id = NewChannel(*core);
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(id);
  v1::DestroySamplingInputResponse destroyed;
  REQUIRE(core->DestroySamplingInput(destroy, &destroyed).ok());
  REQUIRE(destroyed.destroyed());

  for (const uint64_t channel : {id, id + 1000}) {
    const bool gone = channel == id;
    INFO("channel " << channel << (gone ? " (destroyed)" : " (unknown)"));
    auto expect = [&](const absl::Status& s, bool ok_when_gone) {
      INFO(s.ToString());
      if (!gone) {
        CHECK(absl::IsNotFound(s));
      } else if (ok_when_gone) {
        CHECK(s.ok());
      } else {
        CHECK(absl::IsFailedPrecondition(s));
        CHECK_THAT(std::string(s.message()), Catch::Contains("was destroyed"));
      }
    };
    // Calls that only end or inspect a channel succeed and say so.
    v1::StartEpochRequest start;
    start.set_channel_id(channel);
    v1::StartEpochResponse started;
    expect(core->StartEpoch(start, &started), true);
    if (gone) CHECK(started.outcome() == v1::StartEpochResponse::DESTROYED);
    v1::DestroySamplingInputRequest again;
    again.set_channel_id(channel);
    v1::DestroySamplingInputResponse again_resp;
    expect(core->DestroySamplingInput(again, &again_resp), true);
    if (gone) CHECK(!again_resp.destroyed());
    v1::ReleaseSharedBuffersRequest release;
    release.set_channel_id(channel);
    release.add_freed_ids(1);
    v1::ReleaseSharedBuffersResponse released;
    expect(core->ReleaseSharedBuffers(release, &released), true);
    CHECK(released.freed() == 0);
    v1::DescribeChannelRequest describe;
    describe.set_channel_id(channel);
    v1::ChannelStats stats;
    expect(core->DescribeChannel(describe, &stats), true);
    if (gone) CHECK(stats.state() == "destroyed");
    // Calls that need a live channel fail.
    v1::RenewLeaseRequest renew;
    renew.set_channel_id(channel);
    v1::RenewLeaseResponse renewed;
    expect(core->RenewLease(renew, &renewed), false);
    v1::StreamSampledMessagesRequest stream;
    stream.set_channel_id(channel);
    expect(core->AttachStream(stream).status(), false);
  }
}

TEST_CASE("backends without channels hold no worker threads and lock nobody out", "[core]") {
  TempDir dir;
  CoreOptions co;
  co.max_worker_threads = 4;
  auto core = CoreOver(testing::TinyGraph(), dir.path(), co);
  auto init = [&](const std::string& key) {
    v1::InitSamplingBackendRequest req;
    req.set_backend_key(key);
    req.mutable_config()->set_batch_size(2);
    req.mutable_config()->add_num_neighbors(1);
    req.mutable_options()->set_num_workers(2);
    v1::InitSamplingBackendResponse resp;
    absl::Status created = absl::UnknownError("no answer");
    core->InitSamplingBackend(req, &resp, [&](absl::Status s) { created = s; });
    INFO(key << ": " << created.ToString());
    REQUIRE(created.ok());
    return resp.backend_id();
  };
  auto reg = [&](uint64_t backend) {
    v1::RegisterSamplingInputRequest req;
    req.set_backend_id(backend);
    req.mutable_split()->set_split("train");
    v1::RegisterSamplingInputResponse resp;
    const absl::Status s = core->RegisterSamplingInput(req, &resp);
    return s.ok() ? absl::StatusOr<uint64_t>(resp.channel_id()) : absl::StatusOr<uint64_t>(s);
  };
  // Three backends of two workers each under a limit of four: none holds a thread yet.
  const uint64_t a = init("a"), b = init("b"), c = init("c");
  auto first = reg(a);
  REQUIRE(first.ok());
  REQUIRE(reg(b).ok());
  // The third's first channel would start two more workers than the limit allows.
  auto refused = reg(c);
  REQUIRE(absl::IsResourceExhausted(refused.status()));
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("--max_worker_threads"));
  // Once a channel goes, its backend's workers go with it and the third may start its own.
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(*first);
  v1::DestroySamplingInputResponse destroyed;
  REQUIRE(core->DestroySamplingInput(destroy, &destroyed).ok());
  CHECK(testing::PollUntil([&] { return reg(c).ok(); }));
}

TEST_CASE("the watchdog reaps a channel whose lease ran out and stops its backend", "[core]") {
  TempDir dir;
  CoreOptions co;
  co.lease_check_interval_ms = 10;
  auto core = CoreOver(testing::TinyGraph(), dir.path(), co);
  const uint64_t id = NewChannel(*core, /*lease_ms=*/50);
  v1::DescribeChannelRequest describe;
  describe.set_channel_id(id);
  v1::ChannelStats stats;
  CHECK(testing::PollUntil([&] {
    stats.Clear();
    return core->DescribeChannel(describe, &stats).ok() && stats.state() == "destroyed";
  }));
  v1::ServerStats server;
  REQUIRE(core->GetServerStats({}, &server).ok());
  CHECK(server.leases_expired() == 1);
  CHECK(server.backends_size() == 0);
}

TEST_CASE("server stats count the sampling indexes as weighted and temporal backends build them", "[core]") {
  const std::string& dir = testing::GeneratedDataset(2000, 4, 3, 1, 5, /*times=*/true);
  auto part = Partition::Load(dir);
  REQUIRE(part.ok());
  const EdgeTypeStore& e = (*part)->edge_type(0);
  const int64_t edges = e.num_local;
  const int64_t rows = (*part)->node_type(e.row_type).num_local;
  CoreOptions co;
  co.state_log_interval_s = 0;
  Core core(*std::move(part), co);
  auto index_bytes = [&] {
    v1::ServerStats stats;
    REQUIRE(core.GetServerStats({}, &stats).ok());
    return stats.sampling_index_bytes();
  };
  auto create = [&](const std::string& key, bool weighted, bool replace, bool temporal) {
    v1::InitSamplingBackendRequest req;
    req.set_backend_key(key);
    req.mutable_config()->set_batch_size(8);
    req.mutable_config()->add_num_neighbors(3);
    if (weighted) req.mutable_config()->add_weighted_edge_types("*");
    req.mutable_config()->set_replace(replace);
    if (temporal) req.mutable_config()->set_temporal_strategy(v1::TEMPORAL_STRATEGY_LAST);
    v1::InitSamplingBackendResponse resp;
    absl::Status created = absl::UnknownError("no answer");
    core.InitSamplingBackend(req, &resp, [&](absl::Status s) { created = s; });
    REQUIRE(created.ok());
  };
  CHECK(index_bytes() == 0);
  create("uniform", false, false, false);
  CHECK(index_bytes() == 0);
  // Without replacement: the block sums (no row is long enough for a Fenwick tree).
  create("weighted", true, false, false);
  const int64_t blocks = (edges + WeightIndex::kBlock - 1) / WeightIndex::kBlock * 8;
  CHECK(index_bytes() == blocks);
  // With replacement: the alias tables, 4 bytes an edge.
  create("weighted, with replacement", true, true, false);
  CHECK(index_bytes() == blocks + 4 * edges);
  // Temporal: a 64-byte line per row; a second backend builds nothing more.
  create("temporal", false, false, true);
  CHECK(index_bytes() == blocks + 4 * edges + 64 * rows);
  create("temporal again", false, false, true);
  CHECK(index_bytes() == blocks + 4 * edges + 64 * rows);
}

}  // namespace
}  // namespace graphstore
