// End to end: a real graphstored on loopback and the real client; streaming and the sampling lifecycle.

#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <thread>

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

// Reads a whole epoch of a new channel on the split from its own connection, for a thread
// other than the test's: Catch2's assertions are not thread-safe, so this reports what went
// wrong instead of asserting. Returns "" and the sorted seeds, or the first failure.
std::string ReadSplitEpochInThread(const Daemon& d, const std::string& split, std::vector<int64_t>* seeds) {
  client::ClientOptions o;
  o.address = d.address();
  auto c = Client::Connect(o);
  if (!c.ok()) return c.status().ToString();
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("shared");
  init.mutable_config()->set_batch_size(64);
  init.mutable_config()->set_shuffle(true);
  init.mutable_config()->add_num_neighbors(5);
  init.mutable_config()->add_num_neighbors(3);
  init.mutable_config()->set_with_node_features(true);
  init.mutable_config()->set_with_labels(true);
  auto backend = (*c)->InitSamplingBackend(init);
  if (!backend.ok()) return backend.status().ToString();
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend->backend_id());
  reg.set_worker_key("test");
  reg.mutable_split()->set_split(split);
  reg.set_seed(17);
  auto channel = (*c)->RegisterSamplingInput(reg);
  if (!channel.ok()) return channel.status().ToString();
  v1::StartEpochRequest start;
  start.set_channel_id(channel->channel_id());
  if (auto r = (*c)->StartEpoch(start); !r.ok()) return r.status().ToString();
  v1::StreamSampledMessagesRequest req;
  req.set_channel_id(channel->channel_id());
  auto stream = (*c)->Stream(req);
  while (true) {
    auto m = stream->Next();
    if (!m.ok()) return m.status().ToString();
    if (*m == nullptr) break;
    const v1::Tensor& b = (*m)->nodes(0).batch();
    const auto* p = reinterpret_cast<const int64_t*>(b.data().data());
    seeds->insert(seeds->end(), p, p + b.data().size() / 8);
  }
  std::sort(seeds->begin(), seeds->end());
  return "";
}
TEST_CASE("metadata, node ids, features and labels over the wire", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  auto meta = c->GetDatasetMeta();
  REQUIRE(meta.ok());
  CHECK(meta->num_partitions() == 1);
  CHECK(meta->edge_dir() == v1::EDGE_DIRECTION_OUT);
  REQUIRE(meta->node_types_size() == 1);
  CHECK(meta->node_types(0).num_nodes() == 3000);
  CHECK(meta->node_types(0).features().dim() == 16);
  CHECK(meta->node_types(0).num_classes() == 8);
  CHECK(meta->edge_types(0).name() == "node__to__node");

  v1::GetNodeIdsRequest ids_req;
  ids_req.set_split("train");
  auto all = c->GetNodeIds(ids_req);
  REQUIRE(all.ok());
  CHECK(Int64s(all->ids()) == SplitIds("train"));
  // Three slices cover the split exactly, in order.
  std::vector<int64_t> joined;
  for (int r = 0; r < 3; ++r) {
    ids_req.mutable_slice()->set_rank(r);
    ids_req.mutable_slice()->set_world_size(3);
    auto part = c->GetNodeIds(ids_req);
    REQUIRE(part.ok());
    const auto v = Int64s(part->ids());
    joined.insert(joined.end(), v.begin(), v.end());
  }
  CHECK(joined == SplitIds("train"));

  v1::GetNodeFeaturesRequest f;
  f.add_ids(7);
  f.add_ids(2);
  auto feats = c->GetNodeFeatures(f);
  REQUIRE(feats.ok());
  CHECK(feats->features().shape(0) == 2);
  CHECK(feats->features().shape(1) == 16);
  auto p = Partition::Load(Dataset());
  REQUIRE(p.ok());
  CHECK(std::memcmp(feats->features().data().data(), (*p)->node_type(0).features.data<float>() + 7 * 16, 64) == 0);
  v1::GetNodeLabelsRequest l;
  l.add_ids(2);
  auto labels = c->GetNodeLabels(l);
  REQUIRE(labels.ok());
  CHECK(Int64s(labels->labels())[0] == (*p)->node_type(0).labels.data<int64_t>()[2]);
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("an epoch delivers every seed exactly once, across epochs and shuffles", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "coverage");
  const uint64_t channel = RegisterSplit(*c, backend, "train");
  std::vector<int64_t> expected = SplitIds("train");
  std::vector<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    REQUIRE(Start(*c, channel, epoch) == v1::StartEpochResponse::STARTED);
    int64_t batches = 0;
    std::vector<int64_t> seeds = ReadEpoch(*c, channel, epoch, &batches);
    CHECK(batches == static_cast<int64_t>((expected.size() + 63) / 64));
    orders.push_back(seeds);
    std::sort(seeds.begin(), seeds.end());
    CHECK(seeds == expected);
  }
  CHECK(orders[0] != orders[1]);
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("the next epoch's stream opens as soon as the previous one has ended", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "back-to-back", 256);
  const uint64_t channel = RegisterSplit(*c, backend, "val");
  for (int64_t epoch = 0; epoch < 25; ++epoch) {
    REQUIRE(Start(*c, channel, epoch) == v1::StartEpochResponse::STARTED);
    CHECK(ReadEpoch(*c, channel, epoch).size() == SplitIds("val").size());
  }
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("several clients stream concurrently and each gets its whole epoch", "[e2e]") {
  Daemon d(Dataset(), {"--num_workers=2"});
  std::vector<std::thread> threads;
  std::vector<std::string> errors(4);
  std::vector<std::vector<int64_t>> seeds(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back(
        [&, i] { errors[i] = ReadSplitEpochInThread(d, i % 2 == 0 ? "train" : "val", &seeds[i]); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    INFO("client " << i << ": " << errors[i]);
    CHECK(errors[i].empty());
    CHECK(seeds[i] == SplitIds(i % 2 == 0 ? "train" : "val"));
  }
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("the same backend key gives one backend; a different config is refused", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  std::vector<std::thread> threads;
  std::vector<uint64_t> ids(6);
  std::atomic<int> created{0};
  std::vector<absl::Status> status(6);
  for (int i = 0; i < 6; ++i) {
    // No Catch2 assertion inside the threads: they are not thread-safe.
    threads.emplace_back([&, i] {
      client::ClientOptions o;
      o.address = d.address();
      auto ci = Client::Connect(o);
      if (!ci.ok()) {
        status[i] = ci.status();
        return;
      }
      v1::InitSamplingBackendRequest req;
      req.set_backend_key("same");
      req.mutable_config()->set_batch_size(32);
      req.mutable_config()->add_num_neighbors(4);
      auto r = (*ci)->InitSamplingBackend(req);
      status[i] = r.status();
      if (!r.ok()) return;
      ids[i] = r->backend_id();
      created += r->created();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& st : status) CHECK(st.ok());
  CHECK(created.load() == 1);
  CHECK(std::set<uint64_t>(ids.begin(), ids.end()).size() == 1);
  v1::InitSamplingBackendRequest other;
  other.set_backend_key("same");
  other.mutable_config()->set_batch_size(16);
  auto r = c->InitSamplingBackend(other);
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("A backend another trainer joined outlives the last channel leaving before it registers", "[e2e]") {
  // Two trainers with one config share a backend: the second joins it, the first finishes and
  // leaves, then the second registers. The backend must still be there.
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "shared");
  const uint64_t first = RegisterSplit(*c, backend, "val");
  CHECK(InitBackend(*c, "shared") == backend);
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(first);
  auto gone = c->DestroySamplingInput(destroy);
  REQUIRE(gone.ok());
  CHECK_FALSE(gone->backend_stopped());
  const uint64_t second = RegisterSplit(*c, backend, "val");
  CHECK(Start(*c, second, 0) == v1::StartEpochResponse::STARTED);
  destroy.set_channel_id(second);
  auto last = c->DestroySamplingInput(destroy);
  REQUIRE(last.ok());
  CHECK(last->backend_stopped());  // nobody else joined: the last channel stops it
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("StartEpoch: repeated and stale are no-ops, destroyed is silent, unknown is NOT_FOUND", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "epochs");
  const uint64_t channel = RegisterSplit(*c, backend, "val");
  CHECK(Start(*c, channel, 3) == v1::StartEpochResponse::STARTED);
  CHECK(Start(*c, channel, 3) == v1::StartEpochResponse::ALREADY_STARTED);
  CHECK(Start(*c, channel, 1) == v1::StartEpochResponse::STALE);
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(channel);
  auto first = c->DestroySamplingInput(destroy);
  REQUIRE(first.ok());
  CHECK(first->destroyed());
  CHECK(first->backend_stopped());
  auto again = c->DestroySamplingInput(destroy);
  REQUIRE(again.ok());
  CHECK(!again->destroyed());
  CHECK(Start(*c, channel, 4) == v1::StartEpochResponse::DESTROYED);
  v1::StartEpochRequest unknown;
  unknown.set_channel_id(channel + 1000);
  CHECK(c->StartEpoch(unknown).status().code() == absl::StatusCode::kNotFound);
  v1::DescribeBackendRequest db;
  db.set_backend_id(backend);
  CHECK(c->DescribeBackend(db).status().code() == absl::StatusCode::kNotFound);
  v1::DescribeChannelRequest dc;
  dc.set_channel_id(channel);
  auto desc = c->DescribeChannel(dc);
  REQUIRE(desc.ok());
  CHECK(desc->state() == "destroyed");
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("a client that cancels mid-stream releases the channel's work", "[e2e]") {
  Daemon d(Dataset());
  // A small stream window: the server cannot push the whole epoch ahead of the reader.
  auto c = Connect(d, 64 << 10);
  const uint64_t backend = InitBackend(*c, "cancel", 16);
  const uint64_t channel = RegisterSplit(*c, backend, "train");
  Start(*c, channel, 0);
  {
    auto stream = Open(*c, channel, 0);
    auto m = stream->Next();
    REQUIRE(m.ok());
    REQUIRE(*m != nullptr);
    stream->Cancel();
  }
  v1::DescribeChannelRequest dc;
  dc.set_channel_id(channel);
  absl::StatusOr<v1::ChannelStats> s;
  REQUIRE(PollUntil([&] {
    s = c->DescribeChannel(dc);
    return s.ok() && s->state() == "cancelled" && !s->streaming() && s->in_flight() == 0;
  }));
  CHECK(s->buffered_messages() == 0);
  CHECK(!s->streaming());
  const int64_t sampled = s->batches_sampled();
  CHECK(sampled < s->num_batches());
  RunWitnessEpoch(*c, backend);  // sampling stopped
  CHECK(c->DescribeChannel(dc)->batches_sampled() == sampled);
  // The channel can go on with the next epoch.
  REQUIRE(Start(*c, channel, 1) == v1::StartEpochResponse::STARTED);
  std::vector<int64_t> seeds = ReadEpoch(*c, channel, 1);
  CHECK(seeds.size() == SplitIds("train").size());
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("destroying a channel ends its live stream", "[e2e]") {
  Daemon d(Dataset());
  // One seed per batch and a 64 KiB stream window: the epoch is ~30 times what the window,
  // the buffer and the client's read-ahead hold, so the stream cannot end before the destroy.
  auto c = Connect(d, 64 << 10);
  const uint64_t backend = InitBackend(*c, "destroy", 1);
  const uint64_t channel = RegisterSplit(*c, backend, "train", 2);
  Start(*c, channel, 0);
  auto stream = Open(*c, channel, 0);
  REQUIRE(stream->Next().ok());
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(channel);
  REQUIRE(c->DestroySamplingInput(destroy).ok());
  absl::Status end;
  for (int i = 0; i < 1000; ++i) {
    auto m = stream->Next();
    if (!m.ok()) {
      end = m.status();
      break;
    }
    REQUIRE(*m != nullptr);  // a few messages already in flight may still arrive
  }
  CHECK(end.code() == absl::StatusCode::kAborted);
  CHECK_THAT(std::string(end.message()), Catch::Contains("destroyed"));
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("a reader that stops reading does not grow server memory past its buffer", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d, 64 << 10);
  const uint64_t backend = InitBackend(*c, "slow", 8);
  const uint64_t channel = RegisterSplit(*c, backend, "train", 3);
  Start(*c, channel, 0);
  auto stream = Open(*c, channel, 0);
  REQUIRE(stream->Next().ok());
  // The channel fills its buffer of 3 and the stream's window; then it stops: a witness
  // channel's whole epoch through the same workers (a batch per runnable channel per round)
  // leaves its count unchanged. Until the window is full, the stream may still take batches
  // from the buffer, so a few rounds may be needed; a channel that never stops reaches the
  // end of its epoch instead and fails below.
  v1::DescribeChannelRequest dc;
  dc.set_channel_id(channel);
  absl::StatusOr<v1::ChannelStats> b;
  bool stopped = false;
  for (int round = 0; round < 20 && !stopped; ++round) {
    REQUIRE(PollUntil([&] {
      b = c->DescribeChannel(dc);
      return b.ok() && b->buffered_messages() == 3 && b->in_flight() == 0;
    }));
    const int64_t before = b->batches_sampled();
    RunWitnessEpoch(*c, backend);
    b = c->DescribeChannel(dc);
    REQUIRE(b.ok());
    stopped = b->batches_sampled() == before && b->buffered_messages() == 3;
  }
  CHECK(stopped);
  CHECK(b->batches_sampled() < b->num_batches());
  v1::ServerStats stats = *c->GetServerStats();
  CHECK(stats.buffered_bytes() == b->buffered_bytes());
  // Reading again resumes the flow and the epoch completes.
  int64_t more = 0;
  while (true) {
    auto m = stream->Next();
    REQUIRE(m.ok());
    if (*m == nullptr) break;
    ++more;
  }
  CHECK(more + 1 == b->num_batches());
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("a second daemon on a port a running one holds refuses to start, naming the port", "[e2e]") {
  // gRPC sets SO_REUSEPORT by default, which would let both listen and the kernel split the
  // connections between them: a daemon must own its port.
  Daemon first(Dataset());
  Daemon second(Dataset(), {}, first.port(), /*wait=*/false);
  CHECK(second.WaitExit(30) == 2);
  const std::string log = second.Log();
  CHECK_THAT(log, Catch::Contains("--port=" + std::to_string(first.port())));
  CHECK_THAT(log, Catch::Contains("in use"));
  // The first one still owns every connection.
  auto c = Connect(first);
  CHECK(c->GetDatasetMeta().ok());
  CHECK(first.Stop(SIGTERM) == 0);
}

TEST_CASE("graphstored refuses flags out of range at start-up, naming the flag", "[e2e]") {
  // Checked once, where the flags are parsed; the server itself trusts its options.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--port=70000"}, "--port must be in [0, 65535]"},
      {{"--num_workers=0"}, "--num_workers must be >= 1"},
      {{"--max_message_mb=0"}, "--max_message_mb must be in [1, 2047]"},
      {{"--host="}, "--host is empty"},
  };
  for (const auto& [flags, text] : cases) {
    Daemon d(Dataset(), flags, 0, /*wait=*/false);
    CHECK(d.WaitExit(30) == 2);
    CHECK_THAT(d.Log(), Catch::Contains(text));
  }
}

TEST_CASE("a channel id from before a restart is NOT_FOUND, never another trainer's channel", "[e2e]") {
  uint64_t old_channel = 0;
  int port = 0;
  {
    Daemon d(Dataset());
    port = d.port();
    auto c = Connect(d);
    old_channel = RegisterSplit(*c, InitBackend(*c, "restart"), "val");
    CHECK(d.Stop(SIGTERM) == 0);
  }
  Daemon d(Dataset(), {}, port);
  auto c = Connect(d);
  // Another trainer registers first on the restarted server.
  const uint64_t fresh = RegisterSplit(*c, InitBackend(*c, "restart"), "val");
  CHECK(fresh != old_channel);
  v1::StartEpochRequest start;
  start.set_channel_id(old_channel);
  auto r = c->StartEpoch(start);
  CHECK(r.status().code() == absl::StatusCode::kNotFound);
  auto stream = Open(*c, old_channel, 0);
  CHECK(stream->Next().status().code() == absl::StatusCode::kNotFound);
  CHECK(d.Stop(SIGTERM) == 0);
}
}  // namespace
}  // namespace graphstore
