// What a registration resolves to, with no server: its own fields' checks, its seeds from ids,
// splits (of this partition or, with global batches, of the whole cluster) and anchors, their
// times, and the epoch's batches. Errors name the request field.

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "server/graph/partition.h"
#include "server/service/feature_outputs.h"
#include "server/service/queries.h"
#include "server/service/registration.h"
#include "tests/fixtures.h"

namespace graphstore {
namespace {

const CoreOptions kOptions;

// Every id of `in`, in position order.
std::vector<int64_t> All(const ChannelInput& in) {
  std::vector<int64_t> ids(static_cast<size_t>(in.size()));
  for (int64_t p = 0; p < in.size(); ++p) ids[static_cast<size_t>(p)] = in[p];
  return ids;
}

// One partition of a 2-partition generated graph with its queries.
struct Part {
  std::unique_ptr<Partition> partition;
  std::unique_ptr<FeatureOutputs> outputs;
  std::unique_ptr<PartitionQueries> queries;

  explicit Part(int k) {
    auto p = Partition::Load(testing::GeneratedDataset(600, 4, 3, 2, 7) + "/part-" + std::to_string(k));
    REQUIRE(p.ok());
    partition = *std::move(p);
    outputs = std::make_unique<FeatureOutputs>(partition.get());
    queries = std::make_unique<PartitionQueries>(partition.get(), &kOptions, outputs.get());
  }
  // The seeds `req` resolves to here, with `cluster` (null: none) for the other partitions.
  absl::StatusOr<std::vector<int64_t>> Resolve(const v1::RegisterSamplingInputRequest& req,
                                               Cluster* cluster = nullptr) const {
    int node_type = -1;
    AblpInput ablp;
    auto in = ResolveSeeds(SeedSources{partition.get(), queries.get(), cluster}, req, &node_type, &ablp);
    if (!in.ok()) return in.status();
    return All(*in);
  }
  std::vector<int64_t> Split(const std::string& split) const {
    auto ids = queries->SplitIds("", split, v1::ServerSlice());
    REQUIRE(ids.ok());
    return *ids;
  }
};

// The other partition, answering SplitIds from its own queries; nothing else is asked of it.
class OtherPartition : public Cluster {
 public:
  explicit OtherPartition(const Part* other) : other_(other) {}
  absl::StatusOr<std::vector<int64_t>> SplitIds(int partition, const std::string& node_type,
                                                const std::string& split) override {
    asked.push_back(partition);
    return other_->queries->SplitIds(node_type, split, v1::ServerSlice());
  }
  void FillStats(v1::ServerStats*) const override {}
  void VisitLatency(const std::function<void(int, const std::string&, const LatencyHistogram&)>&) const override {}
  absl::Status Ready() const override { return absl::OkStatus(); }
  std::unique_ptr<Pending> SampleNeighbors(const Hop&, std::vector<NeighborCall>*) override { return nullptr; }
  std::unique_ptr<Pending> FetchNodeData(const std::string&, bool, bool, std::vector<NodeDataCall>*) override {
    return nullptr;
  }
  std::unique_ptr<Pending> FetchNodeTimes(const std::string&, std::vector<NodeTimesCall>*) override { return nullptr; }
  std::unique_ptr<Pending> FindDegreeNodes(const std::string&, std::vector<DegreeNodesCall>*) override { return nullptr; }
  std::vector<int> asked;

 private:
  const Part* other_;
};

v1::RegisterSamplingInputRequest SplitRequest(const std::string& split, bool global) {
  v1::RegisterSamplingInputRequest req;
  req.set_backend_id(1);
  req.mutable_split()->set_split(split);
  if (global) {
    req.mutable_global_batches()->set_stride(2);
    req.mutable_global_batches()->set_offset(0);
  }
  return req;
}

TEST_CASE("a split with global batches is gathered from every partition in ascending id order", "[registration]") {
  const Part here(0), there(1);
  OtherPartition cluster(&there);
  int node_type = -1;
  AblpInput ablp;
  auto seeds = ResolveSeeds(SeedSources{here.partition.get(), here.queries.get(), &cluster},
                            SplitRequest("train", true), &node_type, &ablp);
  REQUIRE(seeds.ok());
  std::vector<int64_t> want = here.Split("train");
  const std::vector<int64_t> theirs = there.Split("train");
  want.insert(want.end(), theirs.begin(), theirs.end());
  std::sort(want.begin(), want.end());
  CHECK(All(*seeds) == want);
  CHECK(cluster.asked == std::vector<int>{1});
  CHECK(node_type == 0);
  // The channel holds none of it: the set is the server's.
  CHECK(seeds->OwnBytes() == 0);
}

TEST_CASE("every node with global batches is a count, asked of no peer", "[registration]") {
  const Part here(0), there(1);
  OtherPartition cluster(&there);
  int node_type = -1;
  AblpInput ablp;
  auto seeds = ResolveSeeds(SeedSources{here.partition.get(), here.queries.get(), &cluster},
                            SplitRequest("", true), &node_type, &ablp);
  REQUIRE(seeds.ok());
  const int64_t n = here.partition->node_type(0).num_nodes;
  CHECK(seeds->size() == n);
  std::vector<int64_t> want(static_cast<size_t>(n));
  std::iota(want.begin(), want.end(), 0);
  CHECK(All(*seeds) == want);
  CHECK(seeds->OwnBytes() == 0);
  CHECK(cluster.asked.empty());
}

TEST_CASE("channels on one global split share its set, gathered once", "[registration]") {
  const Part here(0), there(1);
  OtherPartition cluster(&there);
  InputSets sets;
  const SeedSources from{here.partition.get(), here.queries.get(), &cluster, &sets};
  int node_type = -1;
  AblpInput ablp;
  auto first = ResolveSeeds(from, SplitRequest("train", true), &node_type, &ablp);
  auto second = ResolveSeeds(from, SplitRequest("train", true), &node_type, &ablp);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(All(*first) == All(*second));
  CHECK(cluster.asked == std::vector<int>{1});
  // A bit a node of the type and a count every 512: the graph's size, not the split's, and
  // nothing per channel.
  const size_t bytes = sets.ByteSize();
  const int64_t n = here.partition->node_type(0).num_nodes;
  CHECK(bytes > 0);
  CHECK(bytes <= static_cast<size_t>(0.15 * static_cast<double>(n)) + 64);
  auto val = ResolveSeeds(from, SplitRequest("val", true), &node_type, &ablp);
  REQUIRE(val.ok());
  CHECK(cluster.asked == std::vector<int>{1, 1});
  CHECK(sets.ByteSize() == 2 * bytes);
  *first = ChannelInput();
  *second = ChannelInput();
  CHECK(sets.ByteSize() == bytes);  // train's set went with its last channel
}

TEST_CASE("a split without global batches is this partition's share", "[registration]") {
  const Part here(0);
  auto seeds = here.Resolve(SplitRequest("val", false));
  REQUIRE(seeds.ok());
  CHECK(*seeds == here.Split("val"));
  // Its own list, 8 bytes a seed.
  int node_type = -1;
  AblpInput ablp;
  auto in = ResolveSeeds(SeedSources{here.partition.get(), here.queries.get(), nullptr}, SplitRequest("val", false),
                         &node_type, &ablp);
  REQUIRE(in.ok());
  CHECK(in->OwnBytes() == 8 * here.Split("val").size());
}

TEST_CASE("a global split on a partition that knows no peers is refused", "[registration]") {
  const Part here(0);
  auto seeds = here.Resolve(SplitRequest("train", true));
  CHECK(seeds.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(seeds.status().message()), Catch::Contains("--cluster"));
}

TEST_CASE("registrations that cannot name their seeds are refused, naming the field", "[registration]") {
  const Part here(0);
  const SeedSources from{here.partition.get(), here.queries.get(), nullptr};
  const std::vector<int64_t> own = here.Split("train");
  REQUIRE(own.size() >= 2);
  int node_type = -1;
  AblpInput ablp;
  v1::RegisterSamplingInputRequest req;
  req.set_backend_id(1);
  std::string want;
  SECTION("no input") { want = "input: set one of nodes, split or ablp"; }
  SECTION("a seed given twice") {
    for (int64_t id : {own[0], own[1], own[0]}) req.mutable_nodes()->add_ids(id);
    want = "nodes.ids[2]=" + std::to_string(own[0]) + " repeats nodes.ids[0]";
  }
  SECTION("a seed another partition owns, without global batches") {
    int64_t foreign = 0;
    while (here.partition->node_type(0).Owner(foreign) == 0) ++foreign;
    req.mutable_nodes()->add_ids(foreign);
    want = "nodes.ids";
  }
  SECTION("an unknown node type") {
    req.mutable_split()->set_node_type("nope");
    want = "split.node_type";
  }
  SECTION("a slice with global batches") {
    req = SplitRequest("train", true);
    req.mutable_split()->mutable_slice()->set_world_size(2);
    want = "split.slice";
  }
  SECTION("link-prediction anchors with global batches") {
    req.mutable_ablp()->mutable_input()->set_split("train");
    req.mutable_global_batches()->set_stride(1);
    want = "global_batches: link-prediction inputs";
  }
  auto seeds = ResolveSeeds(from, req, &node_type, &ablp);
  REQUIRE_FALSE(seeds.ok());
  CHECK_THAT(std::string(seeds.status().message()), Catch::Contains(want));
}

TEST_CASE("explicit seed times need a temporal backend and one time per seed", "[registration]") {
  const Part here(0);
  v1::RegisterSamplingInputRequest req;
  req.mutable_nodes()->add_ids(1);
  req.mutable_nodes()->add_ids(2);
  req.mutable_nodes()->add_times(10);
  v1::SamplingConfig config;
  auto times = ResolveSeedTimes(*here.partition, req, config, 0);
  CHECK_THAT(std::string(times.status().message()), Catch::Contains("nodes.times: the backend does not sample"));
  config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
  times = ResolveSeedTimes(*here.partition, req, config, 0);
  CHECK_THAT(std::string(times.status().message()), Catch::Contains("nodes.times has 1 entries for 2 ids"));
  req.mutable_nodes()->add_times(20);
  times = ResolveSeedTimes(*here.partition, req, config, 0);
  REQUIRE(times.ok());
  CHECK(*times == std::vector<int64_t>{10, 20});
  // Without times the seeds take their node times, which this graph does not store.
  times = ResolveSeedTimes(*here.partition, SplitRequest("train", false), config, 0);
  CHECK(times.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(times.status().message()), Catch::Contains("stores no node times"));
  config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_NONE);
  times = ResolveSeedTimes(*here.partition, SplitRequest("train", false), config, 0);
  REQUIRE(times.ok());
  CHECK(times->empty());
}

TEST_CASE("a registration's own fields are checked against the limits", "[registration]") {
  v1::RegisterSamplingInputRequest req = SplitRequest("train", true);
  CHECK(CheckRegistration(req, kOptions, false).ok());
  std::string want;
  SECTION("no backend") {
    req.set_backend_id(0);
    want = "backend_id is required";
  }
  SECTION("an offset past the stride") {
    req.mutable_global_batches()->set_offset(2);
    want = "global_batches.offset 2 is outside [0, global_batches.stride 2)";
  }
  SECTION("a buffer past the limit") {
    req.mutable_buffer()->set_max_messages(kOptions.max_buffer_messages + 1);
    want = "buffer.max_messages";
  }
  SECTION("shared memory from a server without it") {
    req.set_shared_memory(true);
    want = "shared_memory: this server does not offer shared memory";
  }
  const absl::Status s = CheckRegistration(req, kOptions, false);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(std::string(s.message()), Catch::Contains(want));
}

TEST_CASE("an epoch's batches follow the batch size and drop_last", "[registration]") {
  v1::SamplingConfig config;
  config.set_batch_size(3);
  CHECK(EpochBatches(10, config) == 4);
  config.set_drop_last(true);
  CHECK(EpochBatches(10, config) == 3);
  CHECK(EpochBatches(2, config) == 0);
}

}  // namespace
}  // namespace graphstore
