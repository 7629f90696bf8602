// The hop codec: what a sampler asks an owner for arrives as the draw the sampler would make.

#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>
#include <vector>

#include "server/sampling/hop_codec.h"

namespace graphstore {
namespace {

TEST_CASE("a hop written for an owner is read back as the draw the sampler asked for", "[hop_codec]") {
  const std::vector<std::pair<int64_t, int64_t>> excluded = {{3, 9}, {7, 1}};
  const std::vector<int64_t> times = {100, 200};
  DrawSpec spec;
  spec.fanout = 10;
  spec.replace = GENERATE(false, true);
  spec.weighted = !spec.replace;
  spec.with_edge_ids = true;
  spec.with_edge_features = true;
  spec.temporal = GENERATE(TemporalStrategy::kNone, TemporalStrategy::kUniform, TemporalStrategy::kLast);
  SeedBatch batch;
  batch.seed = 42;
  batch.epoch = 3;
  batch.batch_index = 17;
  const std::string edge_type = "paper__cites__paper";
  spec.hop_key = HopKey(batch.seed, batch.epoch, batch.batch_index, 2, HashString(edge_type));

  const PeerSampling::Hop hop = HopOf(edge_type, spec, /*with_edge_features=*/false, batch, 2, /*fanout=*/-1);
  CHECK(hop.fanout == -1);
  CHECK_FALSE(hop.with_edge_features);

  PeerSampling::NeighborCall call;
  call.partition = 1;
  call.ids = {7, 3};
  call.times = times;
  // Flattened as the cross-partition draw hands them to the call: in no particular order.
  for (auto it = excluded.rbegin(); it != excluded.rend(); ++it) {
    call.excluded.push_back(it->first);
    call.excluded.push_back(it->second);
  }
  v1::SampleNeighborsRequest request;
  EncodeHop(hop, call, &request);
  CHECK(request.edge_type() == edge_type);
  CHECK(std::vector<int64_t>(request.ids().begin(), request.ids().end()) == call.ids);
  CHECK(request.times_size() == (spec.temporal == TemporalStrategy::kNone ? 0 : 2));

  std::vector<std::pair<int64_t, int64_t>> decoded_excluded;
  const DrawSpec got = DecodeHop(request, edge_type, &decoded_excluded);
  CHECK(got.fanout == -1);
  CHECK(got.replace == spec.replace);
  CHECK(got.weighted == spec.weighted);
  CHECK(got.with_edge_ids);
  CHECK_FALSE(got.with_edge_features);
  CHECK(got.hop_key == spec.hop_key);
  CHECK(got.temporal == spec.temporal);
  REQUIRE(got.excluded == &decoded_excluded);
  CHECK(decoded_excluded == excluded);  // sorted, as DrawOwnedNeighbors needs them
  if (spec.temporal == TemporalStrategy::kNone) {
    CHECK(got.times == nullptr);
  } else {
    REQUIRE(got.times != nullptr);
    CHECK(got.times[0] == 100);
    CHECK(got.times[1] == 200);
  }
}

TEST_CASE("a request without an edge type draws with the key of the type it resolves to", "[hop_codec]") {
  v1::SampleNeighborsRequest request;  // a graph of one edge type may leave it empty
  request.mutable_context()->set_seed(5);
  request.mutable_context()->set_hop(1);
  std::vector<std::pair<int64_t, int64_t>> excluded;
  const DrawSpec got = DecodeHop(request, "n__e__n", &excluded);
  CHECK(got.hop_key == HopKey(5, 0, 0, 1, HashString("n__e__n")));
  CHECK(got.hop_key != HopKey(5, 0, 0, 1, HashString("")));
  CHECK(excluded.empty());
}

TEST_CASE("temporal strategies map both ways", "[hop_codec]") {
  for (TemporalStrategy t : {TemporalStrategy::kNone, TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    CHECK(TemporalStrategyOf(ToProtoTemporal(t)) == t);
  }
  CHECK(TemporalStrategyOf(static_cast<v1::TemporalStrategy>(99)) == TemporalStrategy::kNone);
}

}  // namespace
}  // namespace graphstore
