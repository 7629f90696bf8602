#ifndef GRAPHSTORE_TESTS_CLIENT_FAKE_CLUSTER_H_
#define GRAPHSTORE_TESTS_CLIENT_FAKE_CLUSTER_H_

// Fake servers in process for LoaderCore's tests (no daemon, no gRPC): the channels a loader
// registers and the streams it opens, with faults a test schedules, and the factory that
// connects a loader to them.

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

namespace graphstore::client::fake {

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
  // A restart as a socket sees it: after the restart, each other stream still yields the next
  // `n` batches it had (what the client had received before the server died), then fails.
  void BufferedAfterRestart(int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    buffered_after_restart_ = n;
  }
  // Channels registered from now on hold one message, as a server with a one-message buffer
  // does: their batches go out in order, each only once the one before it was taken by its
  // stripe's stream; a stream opened from another batch than the epoch's restarts it there.
  void OneMessageBuffer() {
    std::lock_guard<std::mutex> lock(mu_);
    one_message_ = true;
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
    c.one_message = one_message_;
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
    int64_t stride = 1, offset = 0, num_batches = 0;  // its channel's, kept past a restart
    int64_t generation = 0;  // of the channel's restarts (one-message channels)
    int64_t restarts_seen = 0;
    int64_t buffered = -1;  // batches left after a restart (-1: none)
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
      Channel& ch = it->second;
      while (c.next_j < ch.num_batches && ch.offset + ch.stride * c.next_j < req.start_batch()) ++c.next_j;
      c.stride = ch.stride;
      c.offset = ch.offset;
      c.num_batches = ch.num_batches;
      if (ch.one_message && (ch.start_j < 0 || ch.start_j != c.next_j)) {
        // A stream opened from another batch restarts the epoch there, as ResumeEpoch does.
        ch.start_j = c.next_j;
        ch.next_out = c.next_j;
        ++ch.generation;
        cv_.notify_all();
      }
      c.generation = ch.generation;
    }
    c.restarts_seen = restarts_;
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
      if (c->restart) {
        channels_.clear();
        ++restarts_;
      }
      return absl::UnavailableError("scheduled stream failure");
    }
    if (c->restarts_seen != restarts_ && c->buffered < 0) c->buffered = buffered_after_restart_;
    if (c->restarts_seen != restarts_) {
      // The server is gone: what the socket still holds, then the failure.
      if (c->buffered-- <= 0) return absl::UnavailableError("Socket closed");
      ToStripe(c, c->num_batches);
      if (c->next_j >= c->num_batches) return absl::UnavailableError("Socket closed");
      const int64_t b = c->offset + c->stride * c->next_j++;
      sent_by_stream_[c->index].push_back(b);
      return b;
    }
    auto it = channels_.find(c->channel);
    if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel_id ", c->channel, " is unknown"));
    ToStripe(c, it->second.num_batches);
    while (it->second.one_message) {
      // One message at a time, in order: wait until the batch before this one was taken (a
      // restart by another stream's opening moves this one on too).
      cv_.wait(lock, [&] {
        auto at = channels_.find(c->channel);
        return c->cancelled || at == channels_.end() || at->second.generation != c->generation ||
               at->second.next_out >= c->next_j;
      });
      it = channels_.find(c->channel);
      if (c->cancelled) return absl::CancelledError("cancelled");
      if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel_id ", c->channel, " is unknown"));
      if (it->second.generation == c->generation) break;
      c->generation = it->second.generation;
      c->next_j = it->second.start_j;  // every stripe is sent its batches from there again
      ToStripe(c, it->second.num_batches);
    }
    const Channel& ch = it->second;
    if (c->next_j >= ch.num_batches) return int64_t{-1};
    const int64_t b = ch.offset + ch.stride * c->next_j++;
    if (ch.one_message) {
      it->second.next_out = c->next_j;
      cv_.notify_all();
    }
    if (c->fail_after > 0) --c->fail_after;
    ++sent_;
    sent_by_stream_[c->index].push_back(b);
    return b;
  }

  // Moves `c` on to the first of its stripe's batches at or after where it is.
  static void ToStripe(Cursor* c, int64_t num_batches) {
    while (c->next_j < num_batches && c->next_j % c->num_stripes != c->stripe) ++c->next_j;
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
    bool one_message = false;
    int64_t start_j = -1, next_out = 0, generation = 0;  // one-message channels
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
  int64_t restarts_ = 0;
  int64_t buffered_after_restart_ = 0;
  bool one_message_ = false;
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
inline std::vector<int64_t> Drain(LoaderCore* loader) {
  std::vector<int64_t> out;
  while (auto b = loader->Next()) out.push_back(b->batch_index);
  return out;
}

inline std::vector<int64_t> Iota(int64_t n) {
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

}  // namespace graphstore::client::fake

#endif  // GRAPHSTORE_TESTS_CLIENT_FAKE_CLUSTER_H_
