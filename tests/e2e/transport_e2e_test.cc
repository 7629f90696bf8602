// End to end, beyond plain streaming: the shared-memory transport, batches sampled ahead of
// StartEpoch, and resuming an epoch from a batch. A real graphstored on loopback, the real
// client.

#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/shared_memory.h"
#include "tests/daemon.h"
#include "tests/e2e/e2e_util.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using client::Client;
using testing::Connect;
using testing::Daemon;
using testing::PollUntil;
using testing::RunWitnessEpoch;

const std::string& Dataset() { return testing::GeneratedDataset(3000, 16, 8); }


uint64_t InitBackend(Client& c, const std::string& key) {
  v1::InitSamplingBackendRequest req;
  req.set_backend_key(key);
  req.mutable_config()->set_batch_size(50);
  req.mutable_config()->set_shuffle(true);
  req.mutable_config()->add_num_neighbors(5);
  req.mutable_config()->add_num_neighbors(3);
  req.mutable_config()->set_with_node_features(true);
  req.mutable_config()->set_with_labels(true);
  auto r = c.InitSamplingBackend(req);
  REQUIRE(r.ok());
  return r->backend_id();
}

absl::StatusOr<uint64_t> Register(Client& c, uint64_t backend, bool shared, bool ordered = false,
                                  int64_t max_bytes = 0) {
  v1::RegisterSamplingInputRequest req;
  req.set_backend_id(backend);
  req.mutable_split()->set_split("train");
  req.set_seed(23);
  req.set_shared_memory(shared);
  req.set_ordered(ordered);
  req.mutable_buffer()->set_max_bytes(max_bytes);
  auto r = c.RegisterSamplingInput(req);
  if (!r.ok()) return r.status();
  return r->channel_id();
}

void Start(Client& c, uint64_t channel, int64_t epoch) {
  v1::StartEpochRequest req;
  req.set_channel_id(channel);
  req.set_epoch(epoch);
  REQUIRE(c.StartEpoch(req).ok());
}

std::unique_ptr<client::MessageStream> Open(Client& c, uint64_t channel, int64_t epoch, int64_t start_batch = 0,
                                             uint32_t stripe = 0, uint32_t num_stripes = 0) {
  v1::StreamSampledMessagesRequest req;
  req.set_channel_id(channel);
  req.set_epoch(epoch);
  req.set_start_batch(start_batch);
  req.set_stripe(stripe);
  req.set_num_stripes(num_stripes);
  return c.Stream(req);
}

// The bytes of every tensor of a message, in a fixed order, whichever way they travelled.
// Catch2's assertions are for the test's main thread: readers on other threads call the Try
// forms, which report instead of asserting.
absl::StatusOr<std::vector<std::string>> TryContents(const v1::SampledMessage& m, const client::MappedBuffer* mapped) {
  std::vector<std::string> out;
  const auto& n = m.nodes(0);
  const auto& e = m.edges(0);
  for (const v1::Tensor* t : {&n.ids(), &n.num_sampled_nodes(), &n.batch(), &n.features(), &n.labels(), &e.rows(),
                              &e.cols(), &e.num_sampled_edges()}) {
    auto bytes = client::TensorBytes(*t, mapped);
    if (!bytes.ok()) return bytes.status();
    size_t size = client::DtypeSize(t->dtype());
    for (int64_t d : t->shape()) size *= static_cast<size_t>(d);
    out.emplace_back(*bytes, size);
  }
  return out;
}

std::vector<std::string> Contents(const v1::SampledMessage& m, const client::MappedBuffer* mapped) {
  auto c = TryContents(m, mapped);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  return *std::move(c);
}

struct Epoch {
  std::map<int64_t, std::vector<std::string>> batches;  // by batch index
  std::vector<int64_t> order;                           // delivery order
  std::set<std::string> files;                          // shared files seen
};

// Reads an epoch to its end; shared buffers are mapped, then received and freed at once.
absl::StatusOr<Epoch> TryReadAll(Client& c, uint64_t channel, int64_t epoch, client::SharedMappings* mappings,
                                 client::MessageStream* stream = nullptr) {
  std::unique_ptr<client::MessageStream> own;
  if (stream == nullptr) {
    own = Open(c, channel, epoch);
    stream = own.get();
  }
  Epoch out;
  while (true) {
    auto m = stream->Next();
    if (!m.ok()) return m.status();
    if (*m == nullptr) break;
    std::shared_ptr<const client::MappedBuffer> mapped;
    if ((*m)->has_shared_buffer()) {
      if (mappings == nullptr) return absl::InternalError("a shared buffer on a stream read without mappings");
      auto got = mappings->Map((*m)->shared_buffer());
      if (!got.ok()) return got.status();
      mapped = *got;
      out.files.insert((*m)->shared_buffer().path());
    }
    auto contents = TryContents(**m, mapped.get());
    if (!contents.ok()) return contents.status();
    out.batches[(*m)->batch_index()] = *std::move(contents);
    out.order.push_back((*m)->batch_index());
    if (mapped) {
      v1::ReleaseSharedBuffersRequest r;
      r.set_channel_id(channel);
      r.add_freed_ids((*m)->shared_buffer().id());
      auto released = c.ReleaseSharedBuffers(r);
      if (!released.ok()) return released.status();
      if (released->freed() != 1) {
        return absl::InternalError(absl::StrCat("releasing one shared buffer freed ", released->freed()));
      }
    }
  }
  return out;
}

Epoch ReadAll(Client& c, uint64_t channel, int64_t epoch, client::SharedMappings* mappings,
              client::MessageStream* stream = nullptr) {
  auto e = TryReadAll(c, channel, epoch, mappings, stream);
  INFO(e.status().ToString());
  REQUIRE(e.ok());
  return *std::move(e);
}

v1::ChannelStats Describe(Client& c, uint64_t channel) {
  v1::DescribeChannelRequest req;
  req.set_channel_id(channel);
  auto s = c.DescribeChannel(req);
  REQUIRE(s.ok());
  return *s;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST_CASE("a shared-memory channel delivers exactly what bytes in messages deliver", "[transport]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  auto meta = c->GetDatasetMeta();
  REQUIRE(meta.ok());
  REQUIRE(client::SharesHostWith(*meta));
  client::SharedMappings mappings(meta->shared_memory().dir());
  const uint64_t backend = InitBackend(*c, "transport");
  const uint64_t plain = *Register(*c, backend, false);
  const uint64_t shared = *Register(*c, backend, true);
  std::set<std::string> files;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    Start(*c, plain, epoch);
    Start(*c, shared, epoch);
    const Epoch a = ReadAll(*c, plain, epoch, nullptr);
    const Epoch b = ReadAll(*c, shared, epoch, &mappings);
    CHECK(a.files.empty());
    CHECK(!b.files.empty());
    REQUIRE(a.batches.size() == b.batches.size());
    CHECK(a.batches == b.batches);
    files.insert(b.files.begin(), b.files.end());
  }
  // Files are reused across batches and epochs rather than made per batch.
  const v1::ChannelStats s = Describe(*c, shared);
  CHECK(s.shared_memory());
  CHECK(s.unreleased_buffers() == 0);
  CHECK(s.unreceived_bytes() == 0);
  CHECK(s.pooled_buffers() >= 1);
  // At most as many files as batches can be alive at once (8 buffered or in flight, 8 sent
  // and not yet received, 2 ahead, one being written, one with the reader), over 3 epochs of
  // 36 batches.
  CHECK(files.size() <= 20u);
  // Destroying the channel deletes its files, once the stream that sent the last of them has
  // finished on the server (it may still be closing when the reader has seen its end).
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(shared);
  REQUIRE(c->DestroySamplingInput(destroy).ok());
  CHECK(PollUntil([&] {
    for (const auto& f : files) {
      if (Exists(f)) return false;
    }
    return true;
  }));
  // Releasing on a destroyed channel is a no-op; bad requests name the field.
  v1::ReleaseSharedBuffersRequest r;
  r.set_channel_id(shared);
  r.add_freed_ids(1);
  CHECK(c->ReleaseSharedBuffers(r).ok());
  r.set_channel_id(0);
  auto bad = c->ReleaseSharedBuffers(r);
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("channel_id"));
  r.set_channel_id(999999);
  CHECK(c->ReleaseSharedBuffers(r).status().code() == absl::StatusCode::kNotFound);
  const std::string probe = meta->shared_memory().probe_path();
  CHECK(Exists(probe));
  CHECK(d.Stop(SIGTERM) == 0);
  CHECK(!Exists(probe));
}

TEST_CASE("a shared-memory reader that reports nothing holds its stream at the buffer limit", "[transport]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  auto meta = c->GetDatasetMeta();
  REQUIRE(meta.ok());
  client::SharedMappings mappings(meta->shared_memory().dir());
  const uint64_t backend = InitBackend(*c, "held");
  const uint64_t channel = *Register(*c, backend, true, false, /*max_bytes=*/1);
  Start(*c, channel, 0);
  auto stream = Open(*c, channel, 0);
  auto first = stream->Next();
  REQUIRE(first.ok());
  REQUIRE(*first != nullptr);
  // The channel's buffer (max_bytes=1: one message, or two when both in flight land) fills
  // and nothing is in flight.
  REQUIRE(PollUntil([&] {
    const v1::ChannelStats s = Describe(*c, channel);
    return s.buffered_messages() >= 1 && s.in_flight() == 0;
  }));
  const int64_t sampled = Describe(*c, channel).batches_sampled();
  RunWitnessEpoch(*c, backend);
  v1::ChannelStats s = Describe(*c, channel);
  CHECK(s.unreleased_buffers() == 1);  // nothing more was sent
  CHECK(s.unreceived_bytes() > 0);
  CHECK(s.batches_delivered() == 1);
  CHECK(s.batches_sampled() == sampled);  // and sampling stopped
  // Reporting receipt lets the stream go on; the rest of the epoch arrives.
  REQUIRE(mappings.Map((*first)->shared_buffer()).ok());
  v1::ReleaseSharedBuffersRequest r;
  r.set_channel_id(channel);
  r.add_received_ids((*first)->shared_buffer().id());
  REQUIRE(c->ReleaseSharedBuffers(r).ok());
  const Epoch rest = ReadAll(*c, channel, 0, &mappings, stream.get());
  CHECK(static_cast<int64_t>(rest.batches.size()) + 1 == s.num_batches());
  // The first use was received but never freed: it is the one still out.
  CHECK(Describe(*c, channel).unreleased_buffers() == 1);
  CHECK(d.Stop(SIGTERM) == 0);
}

// Receives shared-memory messages, mapping each and reporting it received but never freed,
// until the stream ends; returns its status and the ids kept.
absl::Status ReceiveKeeping(Client& c, uint64_t channel, client::MessageStream* stream,
                            client::SharedMappings* mappings, std::vector<uint64_t>* kept) {
  while (true) {
    auto m = stream->Next();
    if (!m.ok()) return m.status();
    if (*m == nullptr) return absl::OkStatus();
    // No assertions: it also runs off the main thread.
    if (!(*m)->has_shared_buffer()) return absl::InternalError("a message without a shared buffer");
    if (auto mapped = mappings->Map((*m)->shared_buffer()); !mapped.ok()) return mapped.status();
    v1::ReleaseSharedBuffersRequest r;
    r.set_channel_id(channel);
    r.add_received_ids((*m)->shared_buffer().id());
    if (auto released = c.ReleaseSharedBuffers(r); !released.ok()) return released.status();
    kept->push_back((*m)->shared_buffer().id());
  }
}

TEST_CASE("a client that keeps its shared buffers is paused at the channel's cap, then RESOURCE_EXHAUSTED",
          "[transport]") {
  Daemon d(Dataset(), {"--max_unfreed_shared_mb_per_channel=1", "--shared_release_timeout_s=1"});
  auto c = Connect(d);
  auto meta = c->GetDatasetMeta();
  REQUIRE(meta.ok());
  client::SharedMappings mappings(meta->shared_memory().dir());
  const uint64_t channel = *Register(*c, InitBackend(*c, "keeper"), true);
  Start(*c, channel, 0);
  auto stream = Open(*c, channel, 0);
  std::vector<uint64_t> kept;
  const absl::Status s = ReceiveKeeping(*c, channel, stream.get(), &mappings, &kept);
  CHECK(s.code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(s.message()), Catch::Contains("did not free"));
  CHECK_THAT(std::string(s.message()), Catch::Contains("--max_unfreed_shared_mb_per_channel"));
  v1::ChannelStats stats = Describe(*c, channel);
  REQUIRE(kept.size() >= 1);
  CHECK(static_cast<int64_t>(kept.size()) < stats.num_batches());
  CHECK(stats.waiting_for_release());
  // Held: at most the cap plus the one use that crossed it (files grow in 2 MiB granules, so
  // here the first use already reaches the 1 MiB cap).
  CHECK(kept.size() == 1);
  CHECK(stats.unfreed_bytes() == (int64_t{2} << 20));
  CHECK(stats.unreleased_buffers() == static_cast<int>(kept.size()));

  // Freeing lets the channel go on: a new stream delivers the rest of the epoch.
  v1::ReleaseSharedBuffersRequest r;
  r.set_channel_id(channel);
  for (uint64_t id : kept) r.add_freed_ids(id);
  REQUIRE(c->ReleaseSharedBuffers(r).ok());
  stats = Describe(*c, channel);
  CHECK(!stats.waiting_for_release());
  CHECK(stats.unfreed_bytes() == 0);
  const Epoch rest = ReadAll(*c, channel, 0, &mappings);
  CHECK(static_cast<int64_t>(rest.batches.size() + kept.size()) == stats.num_batches());
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("past the server's shared-memory cap a channel that keeps its buffers waits; one that frees goes on",
          "[transport]") {
  Daemon d(Dataset(), {"--max_unfreed_shared_mb=1"});
  auto c = Connect(d);
  auto meta = c->GetDatasetMeta();
  REQUIRE(meta.ok());
  client::SharedMappings mappings(meta->shared_memory().dir());
  const uint64_t backend = InitBackend(*c, "two");
  const uint64_t hog = *Register(*c, backend, true);
  const uint64_t polite = *Register(*c, backend, true);
  CHECK(c->GetServerStats()->shared_unfreed_limit() == (int64_t{1} << 20));
  Start(*c, hog, 0);
  Start(*c, polite, 0);
  auto hog_stream = Open(*c, hog, 0);
  std::vector<uint64_t> kept;
  absl::Status hog_status;
  client::SharedMappings hog_mappings(meta->shared_memory().dir());
  std::thread reader([&] { hog_status = ReceiveKeeping(*c, hog, hog_stream.get(), &hog_mappings, &kept); });
  REQUIRE(PollUntil([&] { return Describe(*c, hog).waiting_for_release(); }));
  const Epoch all = ReadAll(*c, polite, 0, &mappings);
  CHECK(static_cast<int64_t>(all.batches.size()) == Describe(*c, polite).num_batches());
  v1::ChannelStats h = Describe(*c, hog);
  CHECK(h.waiting_for_release());
  CHECK(h.batches_delivered() < h.num_batches());
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(hog);
  REQUIRE(c->DestroySamplingInput(destroy).ok());
  reader.join();
  CHECK(hog_status.code() == absl::StatusCode::kAborted);
  CHECK(c->GetServerStats()->shared_unfreed_bytes() == 0);
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("a server without shared memory refuses a shared-memory channel", "[transport]") {
  Daemon d(Dataset(), {"--shared_memory_dir="});
  auto c = Connect(d);
  auto meta = c->GetDatasetMeta();
  REQUIRE(meta.ok());
  CHECK(!meta->has_shared_memory());
  CHECK(!client::SharesHostWith(*meta));
  const uint64_t backend = InitBackend(*c, "no-shm");
  auto r = Register(*c, backend, true);
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("shared_memory"));
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("batches sampled ahead of StartEpoch equal those sampled after it", "[transport]") {
  Daemon ahead(Dataset());
  Daemon plain(Dataset(), {"--sample_ahead_batches=0"});
  auto a = Connect(ahead);
  auto p = Connect(plain);
  const uint64_t ca = *Register(*a, InitBackend(*a, "ahead"), false);
  const uint64_t cp = *Register(*p, InitBackend(*p, "plain"), false);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    // Before each epoch the server has prepared its first batches (the default is 2).
    REQUIRE(PollUntil([&] { return Describe(*a, ca).sampled_ahead() >= 2; }));
    CHECK(Describe(*a, ca).sampled_ahead() == 2);
    CHECK(Describe(*p, cp).sampled_ahead() == 0);
    Start(*a, ca, epoch);
    Start(*p, cp, epoch);
    CHECK(Describe(*a, ca).sampled_ahead() == 0);
    CHECK(ReadAll(*a, ca, epoch, nullptr).batches == ReadAll(*p, cp, epoch, nullptr).batches);
  }
  CHECK(ahead.Stop(SIGTERM) == 0);
  CHECK(plain.Stop(SIGTERM) == 0);
}

TEST_CASE("a reader that reconnects resumes its epoch from a batch", "[transport]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "resume");
  const uint64_t full = *Register(*c, backend, false, /*ordered=*/true);
  const uint64_t cut = *Register(*c, backend, false, /*ordered=*/true);
  Start(*c, full, 1);
  Start(*c, cut, 1);
  const Epoch want = ReadAll(*c, full, 1, nullptr);
  const int64_t n = static_cast<int64_t>(want.batches.size());
  REQUIRE(n > 5);
  {
    auto stream = Open(*c, cut, 1);
    for (int i = 0; i < 3; ++i) REQUIRE(stream->Next().ok());
    stream->Cancel();  // the connection is lost mid-epoch
    while (stream->Next().ok()) {
    }
  }
  REQUIRE(PollUntil([&] { return !Describe(*c, cut).streaming(); }));
  auto resumed = Open(*c, cut, 1, 3);
  const Epoch rest = ReadAll(*c, cut, 1, nullptr, resumed.get());
  std::vector<int64_t> expect;
  for (int64_t b = 3; b < n; ++b) expect.push_back(b);
  CHECK(rest.order == expect);
  for (const auto& [b, contents] : rest.batches) CHECK(contents == want.batches.at(b));
  // A start past the end is refused with the field named.
  auto past = Open(*c, cut, 1, n + 1);
  auto m = past->Next();
  CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(m.status().message()), Catch::Contains("start_batch"));
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("striped streams: each stripe its batches in order, on connections of their own, and the union is the epoch",
          "[transport][stripes]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "stripes");
  const uint64_t whole = *Register(*c, backend, false, /*ordered=*/true);
  const uint64_t striped = *Register(*c, backend, false, /*ordered=*/true);
  Start(*c, whole, 0);
  Start(*c, striped, 0);
  const Epoch want = ReadAll(*c, whole, 0, nullptr);
  const int64_t n = static_cast<int64_t>(want.batches.size());
  REQUIRE(n > 6);
  // Three clients, three connections: one stream each, read at once. Small windows keep each
  // stream open until it is read.
  std::vector<std::unique_ptr<Client>> clients;
  for (int k = 0; k < 3; ++k) {
    client::ClientOptions o;
    o.address = d.address();
    o.connection = k;
    o.stream_window_bytes = 16 << 10;
    auto connected = Client::Connect(o);
    REQUIRE(connected.ok());
    clients.push_back(*std::move(connected));
  }
  std::vector<std::unique_ptr<client::MessageStream>> streams;
  for (uint32_t k = 0; k < 3; ++k) streams.push_back(Open(*clients[k], striped, 0, 0, k, 3));
  // Opening is asynchronous: the three are attached once the server counts them.
  REQUIRE(PollUntil([&] { return Describe(*c, striped).open_streams() == 3; }));
  // Another stream of a stripe already open, or of another count, is refused while they are.
  auto twice = Open(*c, striped, 0, 0, 1, 3);
  CHECK(twice->Next().status().code() == absl::StatusCode::kAlreadyExists);
  auto other_count = Open(*c, striped, 0, 0, 0, 2);
  CHECK(other_count->Next().status().code() == absl::StatusCode::kAlreadyExists);
  CHECK(Describe(*c, striped).open_streams() == 3);
  CHECK(testing::EstablishedConnectionsTo(d.port()) >= 4);  // the three, and `c`'s
  // Each stream's first batch read; then each shows what it has written (its own counters,
  // counted when a write completes, so polled).
  std::vector<Epoch> got(3);
  for (int k = 0; k < 3; ++k) {
    auto m = streams[k]->Next();
    REQUIRE(m.ok());
    REQUIRE(*m != nullptr);
    got[k].batches[(*m)->batch_index()] = Contents(**m, nullptr);
    got[k].order.push_back((*m)->batch_index());
  }
  REQUIRE(PollUntil([&] {
    const v1::ChannelStats s = Describe(*c, striped);
    if (s.streams_size() != 3) return false;
    for (const v1::StreamStats& st : s.streams()) {
      if (st.batches_sent() < 1 || st.bytes_sent() == 0) return false;
    }
    return true;
  }));
  const v1::ChannelStats open = Describe(*c, striped);
  for (uint32_t k = 0; k < 3; ++k) {
    CHECK(open.streams(static_cast<int>(k)).stripe() == k);
    CHECK(open.streams(static_cast<int>(k)).num_stripes() == 3u);
  }
  CHECK(Describe(*c, whole).streams_size() == 0);
  std::vector<std::thread> readers;
  std::vector<absl::StatusOr<Epoch>> rest(3, absl::UnknownError("not read"));
  for (int k = 0; k < 3; ++k) {
    readers.emplace_back([&, k] { rest[k] = TryReadAll(*clients[k], striped, 0, nullptr, streams[k].get()); });
  }
  for (auto& t : readers) t.join();
  std::map<int64_t, std::vector<std::string>> all;
  for (int k = 0; k < 3; ++k) {
    INFO("stripe " << k << ": " << rest[k].status().ToString());
    REQUIRE(rest[k].ok());
    got[k].batches.insert(rest[k]->batches.begin(), rest[k]->batches.end());
    got[k].order.insert(got[k].order.end(), rest[k]->order.begin(), rest[k]->order.end());
    std::vector<int64_t> expect;
    for (int64_t b = k; b < n; b += 3) expect.push_back(b);
    CHECK(got[k].order == expect);
    all.insert(got[k].batches.begin(), got[k].batches.end());
  }
  CHECK(all == want.batches);
  CHECK(Describe(*c, striped).state() == "epoch_done");
  CHECK(Describe(*c, striped).open_streams() == 0);
  CHECK(d.Stop(SIGTERM) == 0);
}

TEST_CASE("a bad stripe is refused with the field named", "[transport][stripes]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "bad-stripes");
  const uint64_t channel = *Register(*c, backend, false);
  Start(*c, channel, 0);
  auto past = Open(*c, channel, 0, 0, 3, 3);
  auto m = past->Next();
  CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(m.status().message()), Catch::Contains("stripe must be < num_stripes"));
  auto many = Open(*c, channel, 0, 0, 0, 65);
  m = many->Next();
  CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(m.status().message()), Catch::Contains("num_stripes must be <= 64"));
  // Shared memory takes one stream.
  const uint64_t shared = *Register(*c, backend, true);
  Start(*c, shared, 0);
  auto striped = Open(*c, shared, 0, 0, 0, 2);
  m = striped->Next();
  CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(m.status().message()), Catch::Contains("num_stripes"));
  CHECK(d.Stop(SIGTERM) == 0);
}

}  // namespace
}  // namespace graphstore
