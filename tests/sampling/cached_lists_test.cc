// Uniform hops of other partitions' nodes drawn from the neighbour lists the peer cache keeps:
// the draws equal the owner's, whole lists are asked for once and then no call is made, and a
// list too long to keep sends the hop's draws back to the owner.

#include <catch2/catch.hpp>

#include <memory>
#include <utility>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/cross_partition_draw.h"
#include "server/sampling/hop_codec.h"
#include "server/sampling/remote_cache.h"
#include "tests/fixtures.h"

namespace graphstore {
namespace {

std::unique_ptr<Partition> Part(int k) {
  auto loaded = Partition::Load(testing::GeneratedDataset(3000, 8, 4, 2, 11) + "/part-" + std::to_string(k));
  REQUIRE(loaded.ok());
  return *std::move(loaded);
}

// The other partition's server, answering in process: each call drawn by its own partition,
// and the fanout of every call recorded.
class OtherServer : public PeerSampling {
 public:
  explicit OtherServer(const Partition* owner) : owner_(owner) {}
  std::vector<int> fanouts;

  absl::Status Ready() const override { return absl::OkStatus(); }
  std::unique_ptr<Pending> SampleNeighbors(const Hop& hop, std::vector<NeighborCall>* calls) override {
    for (NeighborCall& c : *calls) {
      fanouts.push_back(hop.fanout);
      // The hop as the owner receives it over the wire.
      v1::SampleNeighborsRequest request;
      EncodeHop(hop, c, &request);
      std::vector<std::pair<int64_t, int64_t>> excluded;
      const DrawSpec spec = DecodeHop(request, hop.edge_type, &excluded);
      NeighborDraw d;
      DrawOwnedNeighbors(*owner_, *owner_->FindEdgeType(hop.edge_type), c.ids.data(), c.ids.size(), spec, &d);
      c.counts = d.counts;
      c.neighbors = d.neighbors;
    }
    return std::make_unique<Answered>();
  }
  std::unique_ptr<Pending> FetchNodeData(const std::string&, bool, bool, std::vector<NodeDataCall>*) override {
    return std::make_unique<Answered>();
  }
  std::unique_ptr<Pending> FetchNodeTimes(const std::string&, std::vector<NodeTimesCall>*) override {
    return std::make_unique<Answered>();
  }
  std::unique_ptr<Pending> FindDegreeNodes(const std::string&, std::vector<DegreeNodesCall>*) override {
    return std::make_unique<Answered>();
  }

 private:
  struct Answered : Pending {
    absl::Status Wait() override { return absl::OkStatus(); }
  };
  const Partition* owner_;
};

TEST_CASE("uniform hops of other partitions' nodes are drawn from cached lists, as their owner draws them", "[lists]") {
  const auto here = Part(0);
  const auto there = Part(1);
  OtherServer peer(there.get());
  RemoteCache cache(here.get(), int64_t{64} << 20);
  const NodeTypeStore& nodes = here->node_type(0);
  std::vector<int64_t> ids;  // both partitions' nodes, interleaved
  for (int64_t id = 0; id < 600; ++id) ids.push_back(id);
  const bool replace = GENERATE(false, true);
  DrawSpec spec;
  spec.fanout = GENERATE(3, -1);  // a draw, or every neighbour
  spec.replace = replace;
  SeedBatch batch;
  batch.seed = 7;
  batch.batch_index = 2;
  spec.hop_key = HopKey(batch.seed, batch.epoch, batch.batch_index, 1, HashString(here->edge_type(0).name));
  // What one server holding the whole graph draws: each node by its owner.
  std::vector<int64_t> want_counts, want_neighbors;
  for (int64_t id : ids) {
    NeighborDraw d;
    DrawOwnedNeighbors(nodes.Owner(id) == 0 ? *here : *there, 0, &id, 1, spec, &d);
    want_counts.push_back(d.counts[0]);
    want_neighbors.insert(want_neighbors.end(), d.neighbors.begin(), d.neighbors.end());
  }
  FrontierScratch scratch;
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    peer.fanouts.clear();
    auto drawn = DrawNeighbors(*here, &peer, &cache, 0, ids.data(), ids.size(), spec, batch, 1, &scratch);
    REQUIRE(drawn.ok());
    CHECK((*drawn)->counts == want_counts);
    CHECK((*drawn)->neighbors == want_neighbors);
    // Whole lists once, then no call at all (every node drawn here, owned or cached).
    CHECK(peer.fanouts == (round == 0 ? std::vector<int>{-1} : std::vector<int>{}));
  }

  // A node whose list is too long to keep: the hop's uncached nodes are drawn by the owner.
  RemoteCache fresh(here.get(), int64_t{64} << 20);
  int64_t hub = 0;
  while (nodes.Owner(hub) == 0) ++hub;
  const std::vector<int64_t> long_list((int64_t{2} << 20) / 8, 0);
  fresh.PutNeighbors(0, hub, long_list.data(), static_cast<int64_t>(long_list.size()));
  int64_t degree = 0;
  CHECK(fresh.FindNeighbors(0, hub, &degree) == nullptr);
  CHECK(degree == -1);
  peer.fanouts.clear();
  auto drawn = DrawNeighbors(*here, &peer, &fresh, 0, ids.data(), ids.size(), spec, batch, 1, &scratch);
  REQUIRE(drawn.ok());
  CHECK((*drawn)->counts == want_counts);
  CHECK((*drawn)->neighbors == want_neighbors);
  CHECK(peer.fanouts == std::vector<int>{spec.fanout});
}

}  // namespace
}  // namespace graphstore
