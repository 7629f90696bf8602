// A backend worker's step: sample a batch and encode its wire message, in bytes or in a shared
// buffer, with link-prediction labels when the channel has them.

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/service/message.h"
#include "server/service/worker.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::TempDir;
using V = std::vector<int64_t>;

std::unique_ptr<Partition> Write(const GraphData& g, const TempDir& dir) {
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir.path()).ok());
  auto p = Partition::Load(dir.path());
  REQUIRE(p.ok());
  return *std::move(p);
}

std::unique_ptr<Sampler> Sampler2Hops(const Partition& p) {
  NeighborSamplerOptions o;
  o.fanouts = {2, 2};
  o.with_node_features = true;
  o.with_labels = p.node_type(0).labels.is_open();
  auto s = NeighborSampler::Create(&p, o);
  REQUIRE(s.ok());
  return *std::move(s);
}

scheduler::BatchTask Task(const V& seeds, const scheduler::ChannelAttachment* attachment = nullptr) {
  scheduler::BatchTask t;
  t.channel_id = 12;
  t.seed = 5;
  t.epoch = 3;
  t.batch_index = 1;
  t.num_batches = 4;
  t.epoch_batch = 1;
  t.num_epoch_batches = 4;
  t.seeds = seeds.data();
  t.num_seeds = seeds.size();
  t.attachment = attachment;
  return t;
}

const WireMessage& Wire(const scheduler::Batch& b) { return *static_cast<const WireMessage*>(b.payload.get()); }

// The batch's message as any protobuf parser reads the bytes (one part: these batches are small).
v1::SampledMessage Message(const scheduler::Batch& b) {
  const EncodedMessage& e = *Wire(b).encoded;
  REQUIRE(e.parts.size() == 1);
  std::string bytes;
  for (const EncodedMessage::Segment& s : e.parts[0]) bytes.append(s.data, s.size);
  v1::SampledMessage m;
  REQUIRE(m.ParseFromString(bytes));
  return m;
}

// The message a direct Sample of the same batch encodes to.
v1::SampledMessage Direct(const Partition& p, const V& seeds) {
  auto s = Sampler2Hops(p);
  auto scratch = s->NewScratch();
  SeedBatch b;
  b.ids = seeds.data();
  b.size = seeds.size();
  b.seed = 5;
  b.epoch = 3;
  b.batch_index = 1;
  SampledSubgraph g;
  REQUIRE(s->Sample(b, scratch.get(), &g).ok());
  v1::SampledMessage m;
  ToSampledMessage(p, g, &m);
  return m;
}

TEST_CASE("a worker's batch is the sampler's subgraph encoded, with the batch's coordinates", "[worker]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir);
  SamplingWorkers workers(p.get(), Sampler2Hops(*p), 2);
  CHECK(workers.num_workers() == 2);
  const V seeds = {0, 3};
  auto t = Task(seeds);
  t.worker = 1;
  auto batch = workers.SampleAndEncode(t);
  REQUIRE(batch.ok());
  const v1::SampledMessage m = Message(*batch);
  CHECK(m.channel_id() == 12);
  CHECK(m.epoch() == 3);
  CHECK(m.batch_index() == 1);
  CHECK(m.num_batches() == 4);
  CHECK(batch->bytes == Wire(*batch).encoded->bytes);
  CHECK(Wire(*batch).shared == nullptr);
  v1::SampledMessage expected = Direct(*p, seeds);
  expected.set_channel_id(12);
  expected.set_epoch(3);
  expected.set_batch_index(1);
  expected.set_num_batches(4);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(m, expected));
}

TEST_CASE("only a batch above the split size is streamed in parts", "[worker]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir);
  const V seeds = {0, 3};
  SamplingWorkers whole(p.get(), Sampler2Hops(*p), 1, /*part_bytes=*/64, /*split_bytes=*/1 << 20);
  auto batch = whole.SampleAndEncode(Task(seeds));
  REQUIRE(batch.ok());
  const size_t bytes = Wire(*batch).encoded->bytes;
  CHECK(Wire(*batch).encoded->parts.size() == 1);
  REQUIRE(bytes > 256);
  // A split size below the batch: parts of about 64 bytes (whole rows, so a few may be larger).
  SamplingWorkers split(p.get(), Sampler2Hops(*p), 1, /*part_bytes=*/64, /*split_bytes=*/128);
  batch = split.SampleAndEncode(Task(seeds));
  REQUIRE(batch.ok());
  CHECK(Wire(*batch).encoded->parts.size() > 2);
  // Either size 0: one part.
  SamplingWorkers off(p.get(), Sampler2Hops(*p), 1, /*part_bytes=*/64, /*split_bytes=*/0);
  batch = off.SampleAndEncode(Task(seeds));
  REQUIRE(batch.ok());
  CHECK(Wire(*batch).encoded->parts.size() == 1);
}

TEST_CASE("on a shared-memory channel the tensors are slices of a pooled buffer", "[worker]") {
  TempDir dir, shm;
  auto p = Write(testing::TinyGraph(), dir);
  auto area = SharedMemoryArea::Open(shm.path());
  REQUIRE(area.ok());
  ChannelSampling channel;
  channel.pool = std::make_shared<SharedBufferPool>(area->get(), 4);
  SamplingWorkers workers(p.get(), Sampler2Hops(*p), 1);
  const V seeds = {1, 2};
  channel.input = ChannelInput::Listed(seeds);  // the scheduler hands out positions in the channel's input
  const V positions = {0, 1};
  auto batch = workers.SampleAndEncode(Task(positions, &channel));
  REQUIRE(batch.ok());
  const WireMessage& w = Wire(*batch);
  REQUIRE(w.shared != nullptr);
  const v1::SampledMessage msg = Message(*batch);
  CHECK(msg.shared_buffer().id() == w.shared->id);
  CHECK(batch->bytes == w.encoded->bytes + w.shared->file->size());
  // The features in the buffer are the rows a bytes-in-message batch carries.
  const v1::Tensor& x = msg.nodes(0).features();
  CHECK(x.data().empty());
  REQUIRE(x.has_shared());
  const v1::SampledMessage expected = Direct(*p, seeds);
  const std::string& bytes = expected.nodes(0).features().data();
  REQUIRE(x.shared().length() == bytes.size());
  CHECK(std::memcmp(w.shared->file->data() + x.shared().offset(), bytes.data(), bytes.size()) == 0);
}

TEST_CASE("a link-prediction channel's batches carry their labels", "[worker]") {
  TempDir dir;
  auto p = Write(testing::Shop(), dir);
  AblpRequest req;
  req.split = "train";
  req.node_type = "user";
  req.supervision_edge_type = "user__buys__item";
  auto input = LoadAblpInput(*p, req);
  REQUIRE(input.ok());
  auto labeler = AblpLabeler::Create(p.get(), *std::move(input), NegativeOptions());
  REQUIRE(labeler.ok());
  ChannelSampling channel;
  channel.ablp = *labeler;
  NeighborSamplerOptions o;
  o.fanouts_by_type["user__buys__item"] = {1};
  auto sampler = NeighborSampler::Create(p.get(), o);
  REQUIRE(sampler.ok());
  SamplingWorkers workers(p.get(), *std::move(sampler), 1);
  const V anchors = {0, 1};
  channel.input = ChannelInput::Listed(anchors);
  auto t = Task(anchors, &channel);  // positions 0 and 1 are anchors 0 and 1
  t.context = *p->FindNodeType("user");
  auto batch = workers.SampleAndEncode(t);
  REQUIRE(batch.ok());
  const v1::SampledMessage m = Message(*batch);
  REQUIRE(m.has_ablp());
  CHECK(m.ablp().supervision_edge_type() == "user__buys__item");
  CHECK(m.ablp().anchors().shape(0) == 2);
}

TEST_CASE("a channel's batch is its input's seeds at the scheduled positions, with their input ids", "[worker]") {
  // Global batches: the scheduler orders positions in the channel's input; the batch carries
  // the ids at those positions as seeds and the positions as input_ids, and its draws and
  // batch_index are the epoch's batch (not the channel's own number of it).
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir);
  SamplingWorkers workers(p.get(), Sampler2Hops(*p), 1);
  ChannelSampling channel;
  channel.input = ChannelInput::Listed({5, 0, 3, 7});
  channel.send_input_ids = true;
  const V positions = {2, 1};
  auto t = Task(positions, &channel);
  t.batch_index = 0;
  t.num_batches = 2;
  auto batch = workers.SampleAndEncode(t);
  REQUIRE(batch.ok());
  const v1::SampledMessage m = Message(*batch);
  CHECK(m.batch_index() == 1);
  CHECK(m.num_batches() == 4);
  v1::SampledMessage expected = Direct(*p, {3, 0});
  const auto& input_ids = m.nodes(0).input_ids();
  REQUIRE(input_ids.shape(0) == 2);
  CHECK(std::memcmp(input_ids.data().data(), positions.data(), 16) == 0);
  CHECK(m.nodes(0).ids().data() == expected.nodes(0).ids().data());
  CHECK(m.edges(0).rows().data() == expected.edges(0).rows().data());
}

TEST_CASE("a batch the sampler refuses fails with the sampler's status", "[worker]") {
  TempDir dir;
  auto p = Write(testing::TinyGraph(), dir);
  SamplingWorkers workers(p.get(), Sampler2Hops(*p), 1);
  const V seeds = {1, 60};
  auto batch = workers.SampleAndEncode(Task(seeds));
  CHECK(absl::IsInvalidArgument(batch.status()));
  CHECK_THAT(std::string(batch.status().message()), Catch::Contains("seed 60"));
  // The worker's memory is clean after the failure.
  const V good = {1};
  CHECK(workers.SampleAndEncode(Task(good)).ok());
}

}  // namespace
}  // namespace graphstore
