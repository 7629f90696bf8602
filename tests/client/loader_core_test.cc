// LoaderCore's state machine against fake servers in process (no daemon, no gRPC): the reorder
// window of ordered global batches, striped streams merged back, exactly-once delivery across a
// failed stream and across a server that lost the channel, and retrying with its limits.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/loader_core.h"
#include "tests/client/unused_client.h"

namespace graphstore::client {
namespace {

using std::chrono::milliseconds;

// One fake server: the channels the loader registers and the streams it opens, with faults a
// test schedules. Thread-safe: the loader's readers and its trainer thread call it at once.
class FakeServer {
 public:
  FakeServer(int partition, int num_partitions, int64_t epoch_batches)
      : partition_(partition), num_partitions_(num_partitions), epoch_batches_(epoch_batches) {}

  std::string address() const { return absl::StrCat("fake:", partition_); }

  // Faults. The next `n` StartEpoch calls fail with `code`.
  void FailStarts(int n, absl::StatusCode code) {
    std::lock_guard<std::mutex> lock(mu_);
    start_failures_ = n;
    start_failure_code_ = code;
  }
  // The next stream opened fails with UNAVAILABLE once it has sent `n` batches; with `restart`
  // the server also forgets every channel then, as a restarted daemon does.
  void FailStreamAfter(int64_t n, bool restart) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_after_ = n;
    restart_ = restart;
  }
  // Streams opened after this one send from the channel's first batch whatever start_batch says
  // (a server resending what the loader already has).
  void ResendOnResume() {
    std::lock_guard<std::mutex> lock(mu_);
    resend_ = true;
  }
  // While closed, streams wait before each batch.
  void SetGate(bool open) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gate_open_ = open;
    }
    cv_.notify_all();
  }

  // What the loader did.
  int registrations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return registrations_;
  }
  std::vector<v1::StreamSampledMessagesRequest> streams() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_;
  }
  std::vector<v1::StartEpochRequest> starts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_;
  }
  int64_t sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  // Per stream opened (in order), the epoch batch numbers it sent.
  std::vector<std::vector<int64_t>> sent_by_stream() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_by_stream_;
  }

  v1::DatasetMeta Meta() const {
    v1::DatasetMeta m;
    m.set_num_partitions(num_partitions_);
    m.set_partition_id(partition_);
    return m;
  }

  void Init(const v1::InitSamplingBackendRequest& req) {
    std::lock_guard<std::mutex> lock(mu_);
    backend_key_ = req.backend_key();
  }
  std::string backend_key() const {
    std::lock_guard<std::mutex> lock(mu_);
    return backend_key_;
  }

  absl::StatusOr<v1::RegisterSamplingInputResponse> Register(const v1::RegisterSamplingInputRequest& req) {
    std::lock_guard<std::mutex> lock(mu_);
    ++registrations_;
    Channel c;
    if (req.has_global_batches()) {
      c.stride = req.global_batches().stride();
      c.offset = req.global_batches().offset();
    }
    c.num_batches = c.offset < epoch_batches_ ? (epoch_batches_ - c.offset + c.stride - 1) / c.stride : 0;
    const uint64_t id = next_channel_++;
    channels_[id] = c;
    v1::RegisterSamplingInputResponse r;
    r.set_channel_id(id);
    r.set_num_batches_per_epoch(c.num_batches);
    r.set_num_epoch_batches(epoch_batches_);
    r.set_num_seeds(epoch_batches_);
    r.set_lease_ms(60000);
    return r;
  }

  absl::StatusOr<v1::StartEpochResponse> StartEpoch(const v1::StartEpochRequest& req) {
    std::lock_guard<std::mutex> lock(mu_);
    starts_.push_back(req);
    if (start_failures_ > 0) {
      --start_failures_;
      return absl::Status(start_failure_code_, "scheduled StartEpoch failure");
    }
    auto it = channels_.find(req.channel_id());
    if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel_id ", req.channel_id(), " is unknown"));
    v1::StartEpochResponse r;
    r.set_outcome(req.epoch() > it->second.epoch ? v1::StartEpochResponse::STARTED
                                                 : v1::StartEpochResponse::ALREADY_STARTED);
    it->second.epoch = std::max(it->second.epoch, req.epoch());
    return r;
  }

  absl::Status Describe(uint64_t channel) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (channels_.count(channel) == 0) return absl::NotFoundError(absl::StrCat("channel_id ", channel, " is unknown"));
    return absl::OkStatus();
  }

  void Destroy(uint64_t channel) {
    std::lock_guard<std::mutex> lock(mu_);
    channels_.erase(channel);
  }

  // A stream's next batch: the epoch batch number, or the stream's end (-1) or failure.
  struct Cursor {
    uint64_t channel = 0;
    int64_t epoch = 0;
    int64_t next_j = 0;   // the channel's next batch to consider
    int stripe = 0, num_stripes = 1;
    int64_t fail_after = -1;  // batches left before the scheduled failure (-1: none)
    bool restart = false;
    size_t index = 0;  // in sent_by_stream_
    bool cancelled = false;
  };

  Cursor Open(const v1::StreamSampledMessagesRequest& req) {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back(req);
    Cursor c;
    c.channel = req.channel_id();
    c.epoch = req.epoch();
    c.stripe = static_cast<int>(req.stripe());
    c.num_stripes = std::max<int>(1, static_cast<int>(req.num_stripes()));
    auto it = channels_.find(c.channel);
    if (it != channels_.end() && !resend_) {
      const Channel& ch = it->second;
      while (c.next_j < ch.num_batches && ch.offset + ch.stride * c.next_j < req.start_batch()) ++c.next_j;
    }
    c.fail_after = std::exchange(fail_after_, -1);
    c.restart = restart_;
    c.index = sent_by_stream_.size();
    sent_by_stream_.emplace_back();
    return c;
  }

  absl::StatusOr<int64_t> Next(Cursor* c) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return gate_open_ || c->cancelled; });
    if (c->cancelled) return absl::CancelledError("cancelled");
    if (c->fail_after == 0) {
      c->fail_after = -1;
      if (c->restart) channels_.clear();
      return absl::UnavailableError("scheduled stream failure");
    }
    auto it = channels_.find(c->channel);
    if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel_id ", c->channel, " is unknown"));
    const Channel& ch = it->second;
    while (c->next_j < ch.num_batches && c->next_j % c->num_stripes != c->stripe) ++c->next_j;
    if (c->next_j >= ch.num_batches) return int64_t{-1};
    const int64_t b = ch.offset + ch.stride * c->next_j++;
    if (c->fail_after > 0) --c->fail_after;
    ++sent_;
    sent_by_stream_[c->index].push_back(b);
    return b;
  }

  void Cancel(Cursor* c) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      c->cancelled = true;
    }
    cv_.notify_all();
  }

 private:
  struct Channel {
    int64_t stride = 1, offset = 0, num_batches = 0, epoch = -1;
  };
  const int partition_, num_partitions_;
  const int64_t epoch_batches_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Channel> channels_;
  uint64_t next_channel_ = 100 * static_cast<uint64_t>(partition_ + 1);
  int registrations_ = 0;
  std::string backend_key_;
  int start_failures_ = 0;
  absl::StatusCode start_failure_code_ = absl::StatusCode::kUnavailable;
  int64_t fail_after_ = -1;
  bool restart_ = false;
  bool resend_ = false;
  bool gate_open_ = true;
  int64_t sent_ = 0;
  std::vector<v1::StreamSampledMessagesRequest> streams_;
  std::vector<v1::StartEpochRequest> starts_;
  std::vector<std::vector<int64_t>> sent_by_stream_;
};

class FakeStream : public BatchStream {
 public:
  FakeStream(FakeServer* server, const v1::StreamSampledMessagesRequest& req)
      : server_(server), cursor_(server->Open(req)) {}
  absl::StatusOr<std::shared_ptr<DecodedBatch>> Next() override {
    auto b = server_->Next(&cursor_);
    if (!b.ok()) return b.status();
    if (*b < 0) return std::shared_ptr<DecodedBatch>();
    auto d = std::make_shared<DecodedBatch>();
    d->channel_id = cursor_.channel;
    d->epoch = cursor_.epoch;
    d->batch_index = *b;
    d->wire_bytes = 100;
    return d;
  }
  void Cancel() override { server_->Cancel(&cursor_); }

 private:
  FakeServer* server_;
  FakeServer::Cursor cursor_;
};

class FakeClient : public testing::UnusedClient {
 public:
  explicit FakeClient(FakeServer* server) : UnusedClient(server->address()), server_(server) {}

  absl::StatusOr<v1::DatasetMeta> GetDatasetMeta(const v1::GetDatasetMetaRequest&) override { return server_->Meta(); }
  absl::StatusOr<v1::InitSamplingBackendResponse> InitSamplingBackend(const v1::InitSamplingBackendRequest& req) override {
    server_->Init(req);
    v1::InitSamplingBackendResponse r;
    r.set_backend_id(1);
    return r;
  }
  absl::StatusOr<v1::RegisterSamplingInputResponse> RegisterSamplingInput(
      const v1::RegisterSamplingInputRequest& req) override {
    return server_->Register(req);
  }
  absl::StatusOr<v1::StartEpochResponse> StartEpoch(const v1::StartEpochRequest& req) override {
    return server_->StartEpoch(req);
  }
  absl::StatusOr<v1::RenewLeaseResponse> RenewLease(const v1::RenewLeaseRequest&) override {
    return v1::RenewLeaseResponse();
  }
  absl::StatusOr<v1::DestroySamplingInputResponse> DestroySamplingInput(
      const v1::DestroySamplingInputRequest& req) override {
    server_->Destroy(req.channel_id());
    return v1::DestroySamplingInputResponse();
  }
  absl::StatusOr<v1::ReleaseSharedBuffersResponse> ReleaseSharedBuffers(const v1::ReleaseSharedBuffersRequest&) override {
    return v1::ReleaseSharedBuffersResponse();
  }
  absl::StatusOr<v1::ChannelStats> DescribeChannel(const v1::DescribeChannelRequest& req) override {
    if (auto s = server_->Describe(req.channel_id()); !s.ok()) return s;
    return v1::ChannelStats();
  }
  absl::StatusOr<v1::ExitResponse> Exit() override { return v1::ExitResponse(); }
  std::unique_ptr<BatchStream> StreamBatches(const v1::StreamSampledMessagesRequest& req, DecodeOptions) override {
    return std::make_unique<FakeStream>(server_, req);
  }

 private:
  FakeServer* server_;
};

// A cluster of fake servers and the factory that connects a loader to them.
struct FakeCluster {
  std::vector<std::unique_ptr<FakeServer>> servers;
  int connections = 0;  // opened through the factory

  FakeCluster(int n, int64_t epoch_batches) {
    for (int i = 0; i < n; ++i) servers.push_back(std::make_unique<FakeServer>(i, n, epoch_batches));
  }
  LoaderOptions Options() const {
    LoaderOptions o;
    for (const auto& s : servers) o.servers.push_back(s->address());
    o.config.set_batch_size(1);
    o.shared_memory = false;
    o.renew_leases = false;
    o.connections_per_server = 1;
    o.reconnect_deadline = milliseconds(20000);
    o.reconnect_backoff_max = milliseconds(50);
    return o;
  }
  ClientFactory Factory() {
    return [this](const ClientOptions& o) -> absl::StatusOr<std::unique_ptr<Client>> {
      for (const auto& s : servers) {
        if (s->address() == o.address) {
          ++connections;
          return std::unique_ptr<Client>(new FakeClient(s.get()));
        }
      }
      return absl::UnavailableError(absl::StrCat(o.address, " does not answer"));
    };
  }
};

// Every batch of the loader's current epoch, in the order handed out.
std::vector<int64_t> Drain(LoaderCore* loader) {
  std::vector<int64_t> out;
  while (auto b = loader->Next()) out.push_back(b->batch_index);
  return out;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

// Runs `f`, which must throw Error with `code` and a message containing `text`.
template <typename F>
void ExpectError(F f, absl::StatusCode code, const std::string& text) {
  try {
    f();
    FAIL("no error was thrown");
  } catch (const Error& e) {
    CHECK(e.code() == code);
    CHECK_THAT(e.message(), Catch::Contains(text));
  }
}

TEST_CASE("ordered global batches wait in the window for a slow server and come out in batch order", "[loader_core]") {
  FakeCluster cluster(2, 12);
  LoaderOptions o = cluster.Options();
  o.prefetch = 2;
  LoaderCore loader(o, cluster.Factory());
  CHECK(cluster.connections == 2);
  CHECK(loader.num_batches() == 12);
  cluster.servers[0]->SetGate(false);  // server 0 (batches 0, 2, 4, ...) holds back
  loader.StartEpoch(0);
  // Server 1's batches 1, 3 and 5 sit in the window (positions within prefetch x servers of
  // the trainer's next one, and the one its reader holds while it waits); it reads no further.
  REQUIRE(loader.WaitUntilHeld(3, milliseconds(20000)));
  CHECK(cluster.servers[1]->sent() == 3);
  CHECK(loader.num_held() == 3);
  cluster.servers[0]->SetGate(true);
  CHECK(Drain(&loader) == Iota(12));
  CHECK(loader.num_held() == 0);
}

TEST_CASE("global batches in arrival order are each delivered once", "[loader_core]") {
  FakeCluster cluster(2, 9);
  LoaderOptions o = cluster.Options();
  o.ordered = false;
  LoaderCore loader(o, cluster.Factory());
  loader.StartEpoch(0);
  std::vector<int64_t> got = Drain(&loader);
  std::sort(got.begin(), got.end());
  CHECK(got == Iota(9));
}

TEST_CASE("a trainer's rank takes every world_size-th global batch", "[loader_core]") {
  FakeCluster cluster(2, 10);
  LoaderOptions o = cluster.Options();
  o.rank = 1;
  o.world_size = 2;
  LoaderCore loader(o, cluster.Factory());
  CHECK(loader.num_batches() == 5);
  loader.StartEpoch(0);
  CHECK(Drain(&loader) == std::vector<int64_t>{1, 3, 5, 7, 9});
}

TEST_CASE("rank r's i-th global batch is sampled by server (i + r) mod N: the ranks' extra batches spread",
          "[loader_core]") {
  // 18 batches over 4 ranks: ranks 0 and 1 get 5, ranks 2 and 3 get 4. With the i-th on
  // server i mod N, ranks 0 and 1 would both end on server 0 (6, 4, 4, 4 batches a server).
  FakeCluster cluster(4, 18);
  for (int rank = 0; rank < 4; ++rank) {
    LoaderOptions o = cluster.Options();
    o.rank = rank;
    o.world_size = 4;
    std::vector<int64_t> before;
    for (const auto& s : cluster.servers) before.push_back(s->sent());
    LoaderCore loader(o, cluster.Factory());
    loader.StartEpoch(0);
    const std::vector<int64_t> got = Drain(&loader);
    std::vector<int64_t> want;
    for (int64_t b = rank; b < 18; b += 4) want.push_back(b);
    CHECK(got == want);
    // Its i-th batch came from server (i + rank) mod 4.
    for (int k = 0; k < 4; ++k) {
      const int64_t mine = cluster.servers[static_cast<size_t>(k)]->sent() - before[static_cast<size_t>(k)];
      const int64_t expected = (static_cast<int64_t>(want.size()) - ((k - rank + 4) % 4) + 3) / 4;
      INFO("rank " << rank << " server " << k);
      CHECK(mine == expected);
    }
  }
  CHECK(cluster.servers[0]->sent() == 5);
  CHECK(cluster.servers[1]->sent() == 5);
  CHECK(cluster.servers[2]->sent() == 4);
  CHECK(cluster.servers[3]->sent() == 4);
}

TEST_CASE("striped streams each carry their share of a server's batches and merge back in order", "[loader_core]") {
  FakeCluster cluster(2, 14);
  LoaderOptions o = cluster.Options();
  o.connections_per_server = 3;
  LoaderCore loader(o, cluster.Factory());
  CHECK(cluster.connections == 6);
  CHECK(loader.connections_per_server() == 3);
  loader.StartEpoch(0);
  CHECK(Drain(&loader) == Iota(14));
  for (const auto& server : cluster.servers) {
    const auto streams = server->streams();
    const auto sent = server->sent_by_stream();
    REQUIRE(streams.size() == 3);
    for (size_t k = 0; k < streams.size(); ++k) {
      CHECK(streams[k].num_stripes() == 3);
      const int stripe = static_cast<int>(streams[k].stripe());
      // The channel's j-th batch is epoch batch 2j + partition; stripe k carries j mod 3 = k.
      for (int64_t b : sent[k]) CHECK((b / 2) % 3 == stripe);
    }
  }
}

TEST_CASE("a stream that fails mid-epoch resumes from the first batch not delivered", "[loader_core]") {
  FakeCluster cluster(2, 12);
  LoaderCore loader(cluster.Options(), cluster.Factory());
  const uint64_t channel = loader.channel_id(1);
  cluster.servers[1]->FailStreamAfter(2, /*restart=*/false);  // after batches 1 and 3
  loader.StartEpoch(0);
  CHECK(Drain(&loader) == Iota(12));
  CHECK(loader.num_reconnects() == 1);
  CHECK(loader.channel_id(1) == channel);
  const auto streams = cluster.servers[1]->streams();
  REQUIRE(streams.size() == 2);
  CHECK(streams[1].start_batch() == 5);  // the server's third batch
  CHECK(streams[1].reclaim_unreceived());
  CHECK(cluster.servers[1]->registrations() == 1);
}

TEST_CASE("a server that lost the channel is registered again and the epoch resumes where it stopped",
          "[loader_core]") {
  FakeCluster cluster(2, 12);
  LoaderCore loader(cluster.Options(), cluster.Factory());
  const uint64_t channel = loader.channel_id(0);
  cluster.servers[0]->FailStreamAfter(3, /*restart=*/true);  // after batches 0, 2, 4
  loader.StartEpoch(0);
  CHECK(Drain(&loader) == Iota(12));
  CHECK(cluster.servers[0]->registrations() == 2);
  CHECK(loader.channel_id(0) != channel);
  const auto starts = cluster.servers[0]->starts();
  REQUIRE(starts.size() == 2);
  CHECK(starts[1].channel_id() == loader.channel_id(0));
  CHECK(starts[1].start_batch() == 6);
}

TEST_CASE("batches a resumed stream sends again reach the trainer once", "[loader_core]") {
  FakeCluster cluster(1, 8);
  LoaderCore loader(cluster.Options(), cluster.Factory());
  cluster.servers[0]->FailStreamAfter(5, /*restart=*/false);
  cluster.servers[0]->ResendOnResume();
  loader.StartEpoch(0);
  CHECK(Drain(&loader) == Iota(8));
  const auto sent = cluster.servers[0]->sent_by_stream();
  REQUIRE(sent.size() == 2);
  CHECK(sent[1] == Iota(8));  // the whole epoch again, of which the trainer saw 5 .. 7 only
}

TEST_CASE("a failing stripe resumes alone; the others keep their streams", "[loader_core]") {
  FakeCluster cluster(1, 12);
  LoaderOptions o = cluster.Options();
  o.connections_per_server = 2;
  LoaderCore loader(o, cluster.Factory());
  cluster.servers[0]->FailStreamAfter(2, /*restart=*/false);  // the first stream opened: stripe 0
  loader.StartEpoch(0);
  CHECK(Drain(&loader) == Iota(12));
  const auto streams = cluster.servers[0]->streams();
  REQUIRE(streams.size() == 3);
  CHECK(streams[2].stripe() == streams[0].stripe());
  std::vector<int64_t> all;
  for (const auto& s : cluster.servers[0]->sent_by_stream()) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  CHECK(all == Iota(12));
}

TEST_CASE("StartEpoch retries a server that is briefly unavailable", "[loader_core]") {
  FakeCluster cluster(1, 4);
  LoaderCore loader(cluster.Options(), cluster.Factory());
  cluster.servers[0]->FailStarts(2, absl::StatusCode::kUnavailable);
  loader.StartEpoch(0);
  CHECK(Drain(&loader) == Iota(4));
  CHECK(cluster.servers[0]->starts().size() == 3);
  CHECK(loader.num_reconnects() == 1);
}

TEST_CASE("StartEpoch does not retry a failure that retrying cannot mend", "[loader_core]") {
  FakeCluster cluster(1, 4);
  LoaderCore loader(cluster.Options(), cluster.Factory());
  cluster.servers[0]->FailStarts(1, absl::StatusCode::kPermissionDenied);
  ExpectError([&] { loader.StartEpoch(0); }, absl::StatusCode::kPermissionDenied, "fake:0");
  CHECK(cluster.servers[0]->starts().size() == 1);
}

TEST_CASE("retrying gives up at the reconnect deadline with the server's last error", "[loader_core]") {
  FakeCluster cluster(1, 4);
  LoaderOptions o = cluster.Options();
  o.reconnect_deadline = milliseconds(300);
  LoaderCore loader(o, cluster.Factory());
  cluster.servers[0]->FailStarts(1000000, absl::StatusCode::kUnavailable);
  ExpectError([&] { loader.StartEpoch(0); }, absl::StatusCode::kUnavailable, "gave up reconnecting after 300 ms");
}

TEST_CASE("without a reconnect deadline a failed stream ends the epoch with its error", "[loader_core]") {
  FakeCluster cluster(1, 6);
  LoaderOptions o = cluster.Options();
  o.reconnect_deadline = milliseconds(0);
  LoaderCore loader(o, cluster.Factory());
  cluster.servers[0]->FailStreamAfter(2, /*restart=*/false);
  loader.StartEpoch(0);
  CHECK(loader.Next()->batch_index == 0);
  CHECK(loader.Next()->batch_index == 1);
  ExpectError([&] { loader.Next(); }, absl::StatusCode::kUnavailable, "scheduled stream failure");
  CHECK(loader.num_reconnects() == 0);
}

TEST_CASE("a connection the factory cannot open fails construction with its error", "[loader_core]") {
  FakeCluster cluster(2, 4);
  LoaderOptions o = cluster.Options();
  o.servers[1] = "fake:nowhere";
  ExpectError([&] { LoaderCore loader(o, cluster.Factory()); }, absl::StatusCode::kUnavailable, "fake:nowhere");
}

TEST_CASE("without a backend key the loader names one backend per batch shape", "[loader_core]") {
  FakeCluster cluster(2, 4);
  LoaderOptions o = cluster.Options();
  {
    LoaderCore loader(o, cluster.Factory());
    CHECK(cluster.servers[0]->backend_key() == DefaultBackendKey(o.config, o.sampler_options));
    CHECK(cluster.servers[1]->backend_key() == cluster.servers[0]->backend_key());
  }
  o.backend_key = "mine";
  LoaderCore loader(o, cluster.Factory());
  CHECK(cluster.servers[0]->backend_key() == "mine");
}

TEST_CASE("Close destroys the loader's channel on every server", "[loader_core]") {
  FakeCluster cluster(2, 4);
  LoaderCore loader(cluster.Options(), cluster.Factory());
  const uint64_t c0 = loader.channel_id(0), c1 = loader.channel_id(1);
  loader.Close();
  CHECK(absl::IsNotFound(cluster.servers[0]->Describe(c0)));
  CHECK(absl::IsNotFound(cluster.servers[1]->Describe(c1)));
}

}  // namespace
}  // namespace graphstore::client
