#include "client/client.h"

#include <algorithm>

#include <grpcpp/grpcpp.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/impl/client_unary_call.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/channel.h"
#include "graphstore/v1/graphstore.grpc.pb.h"
#include "common/heap_retention.h"

namespace graphstore::client {
namespace {

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(static_cast<int>(s.error_code())), s.error_message());
}

// A received message's bytes as spans of its slices (which `slices` keeps); false if unreadable.
bool SpansOf(grpc::ByteBuffer* buffer, std::vector<grpc::Slice>* slices, std::vector<Span>* spans) {
  if (!buffer->Dump(slices).ok()) return false;
  spans->clear();
  spans->reserve(slices->size());
  for (const grpc::Slice& slice : *slices) spans->push_back({reinterpret_cast<const char*>(slice.begin()), slice.size()});
  return true;
}

class GrpcStream : public MessageStream {
 public:
  GrpcStream(v1::GraphStore::Stub* stub, const v1::StreamSampledMessagesRequest& req) {
    reader_ = stub->StreamSampledMessages(&ctx_, req);
  }
  ~GrpcStream() override {
    if (!done_) {
      ctx_.TryCancel();
      v1::SampledMessage drain;
      while (reader_->Read(&drain)) {
      }
      reader_->Finish();
    }
  }

  absl::StatusOr<std::shared_ptr<v1::SampledMessage>> Next() override {
    if (done_) return final_;
    auto msg = std::make_shared<v1::SampledMessage>();
    if (reader_->Read(msg.get())) return msg;
    done_ = true;
    const absl::Status s = FromGrpc(reader_->Finish());
    final_ = s.ok() ? absl::StatusOr<std::shared_ptr<v1::SampledMessage>>(nullptr) : s;
    return final_;
  }

  void Cancel() override { ctx_.TryCancel(); }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1::SampledMessage>> reader_;
  bool done_ = false;
  absl::StatusOr<std::shared_ptr<v1::SampledMessage>> final_ = nullptr;
};

// Reads the raw bytes of each message (a ByteBuffer's slices, no copy) on a thread of its own
// and decodes them on the caller's: the socket read of one part overlaps the decoding of the
// one before. The queue between them holds at most `kQueuedBytes` (and always one message), so
// HTTP/2 flow control still bounds what a slow trainer lets in.
class GrpcBatchStream : public BatchStream {
 public:
  static constexpr size_t kQueuedBytes = 16 << 20;

  GrpcBatchStream(grpc::ChannelInterface* channel, const v1::StreamSampledMessagesRequest& req, DecodeOptions options)
      : decoder_(std::move(options)) {
    static const std::string kMethod = "/graphstore.v1.GraphStore/StreamSampledMessages";
    const grpc::internal::RpcMethod method(kMethod.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING);
    reader_.reset(grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel, method, &ctx_, req));
    thread_ = std::thread([this] { ReadAll(); });
  }
  ~GrpcBatchStream() override {
    ctx_.TryCancel();
    {
      std::lock_guard<std::mutex> lock(mu_);
      abandoned_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  absl::StatusOr<std::shared_ptr<DecodedBatch>> Next() override {
    while (final_.ok() && *final_ == nullptr) {
      grpc::ByteBuffer buffer;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty() || ended_; });
        if (queue_.empty()) {
          final_ = end_status_.ok() ? absl::StatusOr<std::shared_ptr<DecodedBatch>>(nullptr) : end_status_;
          break;
        }
        buffer = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= buffer.Length();
      }
      cv_.notify_all();
      std::vector<grpc::Slice> slices;
      std::vector<Span> spans;
      if (!SpansOf(&buffer, &slices, &spans)) return Fail(absl::DataLossError("unreadable message"));
      auto batch = decoder_.Add(spans);
      if (!batch.ok()) return Fail(batch.status());
      if (*batch != nullptr) return batch;
    }
    return final_;
  }

  void Cancel() override { ctx_.TryCancel(); }

 private:
  void ReadAll() {
    while (true) {
      grpc::ByteBuffer buffer;
      if (!reader_->Read(&buffer)) break;
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return abandoned_ || queue_.empty() || queued_bytes_ + buffer.Length() <= kQueuedBytes; });
      if (abandoned_) break;
      queued_bytes_ += buffer.Length();
      queue_.push_back(std::move(buffer));
      lock.unlock();
      cv_.notify_all();
    }
    // After a cancel the remaining messages are drained so Finish can return.
    grpc::ByteBuffer drain;
    bool abandoned;
    {
      std::lock_guard<std::mutex> lock(mu_);
      abandoned = abandoned_;
    }
    if (abandoned) {
      while (reader_->Read(&drain)) {
      }
    }
    const absl::Status s = FromGrpc(reader_->Finish());
    {
      std::lock_guard<std::mutex> lock(mu_);
      end_status_ = s;
      ended_ = true;
    }
    cv_.notify_all();
  }

  absl::StatusOr<std::shared_ptr<DecodedBatch>> Fail(const absl::Status& s) {
    ctx_.TryCancel();
    final_ = s;
    return s;
  }

  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader_;
  BatchDecoder decoder_;
  // The end of the stream as the caller has seen it: nullptr until it ends, then nullptr for
  // a clean end or the error.
  absl::StatusOr<std::shared_ptr<DecodedBatch>> final_ = std::shared_ptr<DecodedBatch>();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<grpc::ByteBuffer> queue_;
  size_t queued_bytes_ = 0;
  bool ended_ = false;
  bool abandoned_ = false;
  absl::Status end_status_;
  std::thread thread_;
};

class GrpcClient : public Client {
 public:
  GrpcClient(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
      : options_(std::move(options)), channel_(std::move(channel)), stub_(v1::GraphStore::NewStub(channel_)) {}

  const std::string& address() const override { return options_.address; }

  // A call's status as the client reports it: the canonical code, the server named.
  absl::Status Answered(const grpc::Status& s) const {
    if (s.ok()) return absl::OkStatus();
    return absl::Status(FromGrpc(s).code(), absl::StrCat(options_.address, ": ", s.error_message()));
  }
  // Hands GetNodeFeatures' answer to `read` where its bytes lie.
  absl::Status ReadAnswer(grpc::ByteBuffer* answer, const std::function<absl::Status(const std::vector<Span>&)>& read) const {
    std::vector<grpc::Slice> slices;
    std::vector<Span> spans;
    if (!SpansOf(answer, &slices, &spans)) return absl::DataLossError(absl::StrCat(options_.address, ": unreadable answer"));
    return read(spans);
  }

  template <typename Req, typename Resp, typename Method>
  absl::StatusOr<Resp> Call(Method method, const Req& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + options_.deadline);
    Resp resp;
    const grpc::Status s = (stub_.get()->*method)(&ctx, req, &resp);
    if (!s.ok()) {
      return absl::Status(FromGrpc(s).code(), absl::StrCat(options_.address, ": ", s.error_message()));
    }
    return resp;
  }

  absl::StatusOr<v1::DatasetMeta> GetDatasetMeta(const v1::GetDatasetMetaRequest& req) override {
    return Call<v1::GetDatasetMetaRequest, v1::DatasetMeta>(&v1::GraphStore::Stub::GetDatasetMeta, req);
  }
  absl::StatusOr<v1::LookupPartitionsResponse> LookupPartitions(const v1::LookupPartitionsRequest& r) override {
    return Call<v1::LookupPartitionsRequest, v1::LookupPartitionsResponse>(&v1::GraphStore::Stub::LookupPartitions, r);
  }
  absl::StatusOr<v1::GetNodeIdsResponse> GetNodeIds(const v1::GetNodeIdsRequest& r) override {
    return Call<v1::GetNodeIdsRequest, v1::GetNodeIdsResponse>(&v1::GraphStore::Stub::GetNodeIds, r);
  }
  absl::StatusOr<v1::GetNodeFeaturesResponse> GetNodeFeatures(const v1::GetNodeFeaturesRequest& r) override {
    return Call<v1::GetNodeFeaturesRequest, v1::GetNodeFeaturesResponse>(&v1::GraphStore::Stub::GetNodeFeatures, r);
  }
  absl::Status ReadNodeFeatures(const v1::GetNodeFeaturesRequest& r,
                                const std::function<absl::Status(const std::vector<Span>&)>& read) override {
    const grpc::internal::RpcMethod method(kGetNodeFeatures.c_str(), grpc::internal::RpcMethod::NORMAL_RPC);
    grpc::ByteBuffer request, answer;
    bool own_buffer = false;
    if (const grpc::Status s = grpc::GenericSerialize<grpc::ProtoBufferWriter, v1::GetNodeFeaturesRequest>(
            r, &request, &own_buffer);
        !s.ok()) {
      return absl::InternalError(absl::StrCat("serialising GetNodeFeaturesRequest failed: ", s.error_message()));
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + options_.deadline);
    const grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
        channel_.get(), method, &ctx, request, &answer);
    if (absl::Status st = Answered(s); !st.ok()) return st;
    return ReadAnswer(&answer, read);
  }
  void ReadNodeFeaturesAsync(const v1::GetNodeFeaturesRequest& r,
                             std::function<absl::Status(const std::vector<Span>&)> read,
                             std::function<void(absl::Status)> done) override {
    // The call's state lives until its completion, which runs on one of gRPC's threads.
    struct Call {
      grpc::ClientContext ctx;
      grpc::ByteBuffer request, answer;
      std::function<absl::Status(const std::vector<Span>&)> read;
      std::function<void(absl::Status)> done;
    };
    auto call = std::make_unique<Call>();
    bool own_buffer = false;
    if (const grpc::Status s = grpc::GenericSerialize<grpc::ProtoBufferWriter, v1::GetNodeFeaturesRequest>(
            r, &call->request, &own_buffer);
        !s.ok()) {
      done(absl::InternalError(absl::StrCat("serialising GetNodeFeaturesRequest failed: ", s.error_message())));
      return;
    }
    call->ctx.set_deadline(std::chrono::system_clock::now() + options_.deadline);
    call->read = std::move(read);
    call->done = std::move(done);
    Call* c = call.release();
    generic_.UnaryCall(&c->ctx, kGetNodeFeatures, grpc::StubOptions(), &c->request, &c->answer,
                       [this, c](grpc::Status s) {
                         std::unique_ptr<Call> owned(c);
                         absl::Status status = Answered(s);
                         if (status.ok()) status = ReadAnswer(&owned->answer, owned->read);
                         owned->done(std::move(status));
                       });
  }
  void GetNodeLabelsAsync(const v1::GetNodeLabelsRequest& r,
                          std::function<void(absl::StatusOr<v1::GetNodeLabelsResponse>)> done) override {
    struct Call {
      grpc::ClientContext ctx;
      v1::GetNodeLabelsRequest request;
      v1::GetNodeLabelsResponse answer;
      std::function<void(absl::StatusOr<v1::GetNodeLabelsResponse>)> done;
    };
    auto* c = new Call;
    c->ctx.set_deadline(std::chrono::system_clock::now() + options_.deadline);
    c->request = r;
    c->done = std::move(done);
    stub_->async()->GetNodeLabels(&c->ctx, &c->request, &c->answer, [this, c](grpc::Status s) {
      std::unique_ptr<Call> owned(c);
      absl::Status status = Answered(s);
      if (!status.ok()) {
        owned->done(std::move(status));
      } else {
        owned->done(std::move(owned->answer));
      }
    });
  }
  absl::StatusOr<v1::GetAblpInputResponse> GetAblpInput(const v1::GetAblpInputRequest& r) override {
    return Call<v1::GetAblpInputRequest, v1::GetAblpInputResponse>(&v1::GraphStore::Stub::GetAblpInput, r);
  }
  absl::StatusOr<v1::GetEdgeFeaturesResponse> GetEdgeFeatures(const v1::GetEdgeFeaturesRequest& r) override {
    return Call<v1::GetEdgeFeaturesRequest, v1::GetEdgeFeaturesResponse>(&v1::GraphStore::Stub::GetEdgeFeatures, r);
  }
  absl::StatusOr<v1::GetNodeLabelsResponse> GetNodeLabels(const v1::GetNodeLabelsRequest& r) override {
    return Call<v1::GetNodeLabelsRequest, v1::GetNodeLabelsResponse>(&v1::GraphStore::Stub::GetNodeLabels, r);
  }
  absl::StatusOr<v1::InitSamplingBackendResponse> InitSamplingBackend(const v1::InitSamplingBackendRequest& r) override {
    return Call<v1::InitSamplingBackendRequest, v1::InitSamplingBackendResponse>(
        &v1::GraphStore::Stub::InitSamplingBackend, r);
  }
  absl::StatusOr<v1::RegisterSamplingInputResponse> RegisterSamplingInput(
      const v1::RegisterSamplingInputRequest& r) override {
    return Call<v1::RegisterSamplingInputRequest, v1::RegisterSamplingInputResponse>(
        &v1::GraphStore::Stub::RegisterSamplingInput, r);
  }
  absl::StatusOr<v1::StartEpochResponse> StartEpoch(const v1::StartEpochRequest& r) override {
    return Call<v1::StartEpochRequest, v1::StartEpochResponse>(&v1::GraphStore::Stub::StartEpoch, r);
  }
  absl::StatusOr<v1::RenewLeaseResponse> RenewLease(const v1::RenewLeaseRequest& r) override {
    return Call<v1::RenewLeaseRequest, v1::RenewLeaseResponse>(&v1::GraphStore::Stub::RenewLease, r);
  }
  absl::StatusOr<v1::DestroySamplingInputResponse> DestroySamplingInput(
      const v1::DestroySamplingInputRequest& r) override {
    return Call<v1::DestroySamplingInputRequest, v1::DestroySamplingInputResponse>(
        &v1::GraphStore::Stub::DestroySamplingInput, r);
  }
  absl::StatusOr<v1::ReleaseSharedBuffersResponse> ReleaseSharedBuffers(
      const v1::ReleaseSharedBuffersRequest& r) override {
    return Call<v1::ReleaseSharedBuffersRequest, v1::ReleaseSharedBuffersResponse>(
        &v1::GraphStore::Stub::ReleaseSharedBuffers, r);
  }
  absl::StatusOr<v1::ChannelStats> DescribeChannel(const v1::DescribeChannelRequest& r) override {
    return Call<v1::DescribeChannelRequest, v1::ChannelStats>(&v1::GraphStore::Stub::DescribeChannel, r);
  }
  absl::StatusOr<v1::BackendStats> DescribeBackend(const v1::DescribeBackendRequest& r) override {
    return Call<v1::DescribeBackendRequest, v1::BackendStats>(&v1::GraphStore::Stub::DescribeBackend, r);
  }
  absl::StatusOr<v1::ServerStats> GetServerStats() override {
    return Call<v1::GetServerStatsRequest, v1::ServerStats>(&v1::GraphStore::Stub::GetServerStats, {});
  }
  absl::StatusOr<v1::ExitResponse> Exit() override {
    return Call<v1::ExitRequest, v1::ExitResponse>(&v1::GraphStore::Stub::Exit, {});
  }

  std::unique_ptr<MessageStream> Stream(const v1::StreamSampledMessagesRequest& req) override {
    return std::make_unique<GrpcStream>(stub_.get(), req);
  }

  std::unique_ptr<BatchStream> StreamBatches(const v1::StreamSampledMessagesRequest& req,
                                             DecodeOptions options) override {
    return std::make_unique<GrpcBatchStream>(channel_.get(), req, std::move(options));
  }

 private:
  static inline const std::string kGetNodeFeatures = "/graphstore.v1.GraphStore/GetNodeFeatures";
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::GraphStore::Stub> stub_;
  grpc::GenericStub generic_{channel_};
};

}  // namespace

void Client::ReadNodeFeaturesAsync(const v1::GetNodeFeaturesRequest& req,
                                   std::function<absl::Status(const std::vector<Span>&)> read,
                                   std::function<void(absl::Status)> done) {
  done(ReadNodeFeatures(req, read));
}

void Client::GetNodeLabelsAsync(const v1::GetNodeLabelsRequest& req,
                                std::function<void(absl::StatusOr<v1::GetNodeLabelsResponse>)> done) {
  done(GetNodeLabels(req));
}

absl::Status Client::ReadNodeFeatures(const v1::GetNodeFeaturesRequest& req,
                                      const std::function<absl::Status(const std::vector<Span>&)>& read) {
  auto answer = GetNodeFeatures(req);
  if (!answer.ok()) return answer.status();
  const std::string bytes = answer->SerializeAsString();
  return read({Span{bytes.data(), bytes.size()}});
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  if (options.address.empty()) return absl::InvalidArgumentError("address is empty");
  RetainFreedHeap();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  // A subchannel pool of its own: gRPC would otherwise hand this channel the connection that
  // another channel of the same settings already holds.
  if (options.connection > 0) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (options.stream_window_bytes > 0) {
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, options.stream_window_bytes);
  }
  if (options.keepalive_time.count() > 0) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(std::min<int64_t>(options.keepalive_time.count(), 1 << 30)));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                static_cast<int>(std::clamp<int64_t>(options.keepalive_timeout.count(), 1, 1 << 30)));
    // Keep pinging while the server sends nothing (it may be the one that hangs).
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  if (options.reconnect_backoff_max.count() > 0) {
    const int max_ms = static_cast<int>(std::min<int64_t>(options.reconnect_backoff_max.count(), 1 << 30));
    const int first_ms = std::min(100, max_ms);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, first_ms);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, first_ms);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_ms);
  }
  auto opened = OpenChannel(options.address, options.security, args);
  if (!opened.ok()) return opened.status();
  std::shared_ptr<grpc::Channel> channel = *std::move(opened);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + options.connect_timeout)) {
    return absl::UnavailableError(absl::StrCat(
        "cannot connect to ", options.address, " within ", options.connect_timeout.count(), " ms",
        options.security.uses_tls()
            ? " (TLS: is the server's certificate signed by tls_ca, for this name, and not expired? does the server "
              "require a client certificate?)"
            : " (plaintext: does the server require TLS?)"));
  }
  return std::unique_ptr<Client>(new GrpcClient(options, std::move(channel)));
}

}  // namespace graphstore::client
