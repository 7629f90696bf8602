// The one config layer: a backend's request checked once against the service's limits and turned
// into a sampler and scheduler options, with every error naming its request field.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <thread>

#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/sampling/ppr_sampler.h"
#include "server/sampling/subgraph_sampler.h"
#include "server/service/config.h"
#include "server/util/thread_priority.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::TempDir;

std::unique_ptr<Partition> Tiny(const TempDir& dir) {
  const GraphData g = testing::TinyGraph();
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir.path()).ok());
  auto p = Partition::Load(dir.path());
  REQUIRE(p.ok());
  return *std::move(p);
}

v1::SamplingConfig Neighbors(std::initializer_list<int> fanouts) {
  v1::SamplingConfig c;
  c.set_batch_size(4);
  for (int f : fanouts) c.add_num_neighbors(f);
  return c;
}

// The status of building `c` over `p`, with `limits`.
absl::Status Build(const Partition& p, const v1::SamplingConfig& c, const CoreOptions& limits = CoreOptions()) {
  SamplerEnvironment env;
  env.partition = &p;
  return BuildSampler(c, limits, env).status();
}

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& text) {
  INFO(s.ToString());
  CHECK(s.code() == code);
  CHECK_THAT(std::string(s.message()), Catch::Contains(text));
}

TEST_CASE("each sampler kind builds its own sampler", "[config]") {
  TempDir dir;
  auto p = Tiny(dir);
  SamplerEnvironment env;
  env.partition = p.get();
  v1::SamplingConfig c = Neighbors({2, 2});
  auto neighbor = BuildSampler(c, CoreOptions(), env);
  REQUIRE(neighbor.ok());
  CHECK(dynamic_cast<NeighborSampler*>(neighbor->get()) != nullptr);
  CHECK(dynamic_cast<SubgraphSampler*>(neighbor->get()) == nullptr);
  c.set_kind(v1::SAMPLER_KIND_SUBGRAPH);
  auto subgraph = BuildSampler(c, CoreOptions(), env);
  REQUIRE(subgraph.ok());
  CHECK(dynamic_cast<SubgraphSampler*>(subgraph->get()) != nullptr);
  v1::SamplingConfig ppr;
  ppr.set_batch_size(4);
  ppr.set_kind(v1::SAMPLER_KIND_PPR);
  ppr.mutable_ppr()->set_alpha(0.2);
  ppr.mutable_ppr()->set_eps(1e-3);
  ppr.mutable_ppr()->set_max_nodes_per_seed(3);
  auto pp = BuildSampler(ppr, CoreOptions(), env);
  REQUIRE(pp.ok());
  CHECK(dynamic_cast<PprSampler*>(pp->get()) != nullptr);
}

TEST_CASE("fanouts are checked once, against the service's limits, naming config fields", "[config]") {
  TempDir dir;
  auto p = Tiny(dir);
  ExpectError(Build(*p, Neighbors({2, -2})), absl::StatusCode::kInvalidArgument,
              "config.num_neighbors[1]=-2 is below -1");
  CoreOptions limits;
  limits.sampling.max_hops = 2;
  limits.sampling.max_fanout = 10;
  ExpectError(Build(*p, Neighbors({1, 1, 1}), limits), absl::StatusCode::kResourceExhausted,
              "config.num_neighbors has 3 hops; the limit is 2");
  ExpectError(Build(*p, Neighbors({11}), limits), absl::StatusCode::kResourceExhausted,
              "config.num_neighbors[0]=11 exceeds the limit 10");
  CHECK(Build(*p, Neighbors({10, -1}), limits).ok());
  v1::SamplingConfig typed = Neighbors({});
  (*typed.mutable_num_neighbors_by_type())["a__b__c"].add_per_hop(1);
  ExpectError(Build(*p, typed), absl::StatusCode::kInvalidArgument, "config.num_neighbors_by_type: edge type 'a__b__c'");
}

TEST_CASE("hop counts and PPR parameters are checked before a sampler is built", "[config]") {
  TempDir dir;
  auto p = Tiny(dir);
  v1::SamplingConfig typed = Neighbors({1, 1});
  (*typed.mutable_num_neighbors_by_type())["x__y__z"].add_per_hop(1);
  ExpectError(Build(*p, typed), absl::StatusCode::kInvalidArgument,
              "config.num_neighbors_by_type['x__y__z'] has 1 hops but other fanouts have 2");
  v1::SamplingConfig ppr;
  ppr.set_kind(v1::SAMPLER_KIND_PPR);
  ppr.set_batch_size(2);
  ppr.mutable_ppr()->set_alpha(0.2);
  ppr.mutable_ppr()->set_eps(1e-3);
  ppr.mutable_ppr()->set_max_nodes_per_seed(3);
  REQUIRE(Build(*p, ppr).ok());
  v1::SamplingConfig bad = ppr;
  bad.mutable_ppr()->set_alpha(1.0);
  ExpectError(Build(*p, bad), absl::StatusCode::kInvalidArgument, "config.ppr.alpha must be in (0, 1), got 1");
  bad = ppr;
  bad.mutable_ppr()->set_eps(0);
  ExpectError(Build(*p, bad), absl::StatusCode::kInvalidArgument, "config.ppr.eps must be >= 1e-7, got 0");
  bad = ppr;
  bad.mutable_ppr()->set_max_nodes_per_seed(0);
  ExpectError(Build(*p, bad), absl::StatusCode::kInvalidArgument, "config.ppr.max_nodes_per_seed must be >= 1, got 0");
  CoreOptions limits;
  limits.sampling.max_fanout = 2;
  ExpectError(Build(*p, ppr, limits), absl::StatusCode::kResourceExhausted,
              "config.ppr.max_nodes_per_seed 3 exceeds the limit 2");
}

TEST_CASE("batch shape, kinds and negatives are checked, naming config fields", "[config]") {
  TempDir dir;
  auto p = Tiny(dir);
  v1::SamplingConfig c = Neighbors({2});
  c.set_batch_size(0);
  ExpectError(Build(*p, c), absl::StatusCode::kInvalidArgument, "config.batch_size must be >= 1");
  CoreOptions limits;
  limits.max_batch_size = 8;
  c.set_batch_size(9);
  ExpectError(Build(*p, c, limits), absl::StatusCode::kResourceExhausted, "config.batch_size 9 exceeds the limit 8");
  c = Neighbors({2});
  c.set_kind(static_cast<v1::SamplerKind>(42));
  ExpectError(Build(*p, c), absl::StatusCode::kInvalidArgument, "config.kind 42 is unknown");
  c = Neighbors({2});
  c.mutable_ppr()->set_alpha(0.5);
  ExpectError(Build(*p, c), absl::StatusCode::kInvalidArgument, "config.ppr is only for");
  c = Neighbors({2});
  c.set_num_negatives(2);
  ExpectError(Build(*p, c), absl::StatusCode::kInvalidArgument, "config.num_negatives needs config.negative_sampling");
  c.set_negative_sampling(v1::NEGATIVE_SAMPLING_UNIFORM);
  c.set_num_negatives(CoreOptions().max_negatives + 1);
  ExpectError(Build(*p, c), absl::StatusCode::kResourceExhausted, "config.num_negatives");
  c = Neighbors({2});
  c.set_with_edge_features(true);
  ExpectError(Build(*p, c), absl::StatusCode::kInvalidArgument, "config.with_edge_features");
}

TEST_CASE("backend options take the service's defaults and stay within its limits", "[config]") {
  CoreOptions limits;
  limits.default_num_workers = 3;
  limits.max_num_workers = 4;
  limits.default_max_in_flight = 2;
  limits.max_in_flight_per_channel = 5;
  limits.sample_ahead_batches = 1;
  v1::SamplerOptions o;
  auto bo = BuildBackendOptions(o, limits, "key");
  REQUIRE(bo.ok());
  CHECK(bo->num_workers == 3);
  CHECK(bo->max_in_flight_per_channel == 2);
  CHECK(bo->speculative_batches == 1);
  CHECK(bo->name == "key");
  o.set_num_workers(4);
  o.set_max_in_flight_per_channel(5);
  bo = BuildBackendOptions(o, limits, "key");
  REQUIRE(bo.ok());
  CHECK(bo->num_workers == 4);
  CHECK(bo->max_in_flight_per_channel == 5);
  o.set_num_workers(5);
  ExpectError(BuildBackendOptions(o, limits, "key").status(), absl::StatusCode::kResourceExhausted,
              "options.num_workers 5 exceeds the limit 4");
  o.set_num_workers(-1);
  ExpectError(BuildBackendOptions(o, limits, "key").status(), absl::StatusCode::kInvalidArgument, "options.num_workers");
  o.set_num_workers(1);
  o.set_max_in_flight_per_channel(6);
  ExpectError(BuildBackendOptions(o, limits, "key").status(), absl::StatusCode::kResourceExhausted,
              "options.max_in_flight_per_channel");
}

TEST_CASE("a backend's workers run at the service's sampling nice, below the daemon's threads", "[config]") {
  CoreOptions limits;
  limits.sampling_nice = 3;
  auto bo = BuildBackendOptions(v1::SamplerOptions(), limits, "key");
  REQUIRE(bo.ok());
  REQUIRE(bo->on_worker_start);
  const int daemon = ThreadNice();
  int before = -100, after = -100;
  // A thread of its own, as a worker is: the hook changes that thread alone.
  std::thread worker([&] {
    before = ThreadNice();
    bo->on_worker_start(0);
    after = ThreadNice();
  });
  worker.join();
  CHECK(before == daemon);
  CHECK(after == std::min(19, daemon + 3));
  CHECK(ThreadNice() == daemon);
  limits.sampling_nice = 0;
  bo = BuildBackendOptions(v1::SamplerOptions(), limits, "key");
  REQUIRE(bo.ok());
  CHECK(!bo->on_worker_start);
}

TEST_CASE("lowering a thread's priority clamps at 19 and never raises it", "[config]") {
  int nice = -100;
  absl::Status first, second;
  std::thread t([&] {
    first = LowerThreadPriority(25);
    second = LowerThreadPriority(0);
    nice = ThreadNice();
  });
  t.join();
  CHECK(first.ok());
  CHECK(second.ok());
  CHECK(nice == 19);
}

TEST_CASE("a backend's negative sampling becomes its channels' negative options", "[config]") {
  v1::SamplingConfig c;
  CHECK(NegativesOf(c).kind == NegativeOptions::Kind::kNone);
  c.set_num_negatives(3);
  c.set_negative_sampling(v1::NEGATIVE_SAMPLING_DEGREE);
  CHECK(NegativesOf(c).kind == NegativeOptions::Kind::kDegree);
  CHECK(NegativesOf(c).num == 3);
  c.set_negative_sampling(v1::NEGATIVE_SAMPLING_UNIFORM);
  CHECK(NegativesOf(c).kind == NegativeOptions::Kind::kUniform);
}

}  // namespace
}  // namespace graphstore
