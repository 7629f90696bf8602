#include "server/grpc_service.h"

#include <memory>
#include <mutex>

#include "server/service/message.h"
#include "server/util/log.h"

namespace graphstore {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  constexpr size_t kMaxMessage = 1024;
  std::string message(status.message().substr(0, kMaxMessage));
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(status.code())), message);
}

namespace {

// Finishes a unary call with the core's status.
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, const absl::Status& status,
                                const char* method) {
  if (!status.ok()) Logger("service")->debug("{} failed: {}", method, status.ToString());
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// Streams one epoch of a channel. Writes are driven by the channel's listener (a batch is
// ready, the epoch ended, the channel closed) and by OnWriteDone; a reaction never blocks:
// with nothing ready the stream goes idle until the listener calls MaybeWrite again.
// The stream detaches from its channel before its final status is sent, so a client that
// starts the next epoch at once can open the next stream. Lifetime: deleted in OnDone, after
// its own listener has been cleared (a newer stream's listener is left alone).
class SampledMessageStream : public grpc::ServerWriteReactor<v1::SampledMessage> {
 public:
  SampledMessageStream(Core* core, StreamAttachment attachment)
      : core_(core), a_(std::move(attachment)) {}

  // Called once after construction, from the method handler.
  void Begin() {
    auto token = a_.backend->SetListener(a_.channel_id, [this] { MaybeWrite(); });
    if (!token.ok()) {
      FinishOnce(ToGrpcStatus(token.status()), /*cancelled=*/false);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      listener_token_ = *token;
    }
    MaybeWrite();
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      current_.reset();
    }
    if (ok) {
      core_->Touch(a_.channel_id);
      MaybeWrite();
    } else {
      FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"), /*cancelled=*/true);
    }
  }

  void OnCancel() override { FinishOnce(grpc::Status::CANCELLED, /*cancelled=*/true); }

  void OnDone() override {
    uint64_t token;
    {
      std::lock_guard<std::mutex> lock(mu_);
      token = listener_token_;
    }
    // No call of this stream's listener runs after ClearListener returns, so `this` can go.
    if (token != 0) a_.backend->ClearListener(a_.channel_id, token);
    delete this;
  }

 private:
  // Runs on gRPC threads (reactions) and on backend worker threads (the listener).
  void MaybeWrite() {
    grpc::Status end;
    const v1::SampledMessage* next = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (writing_ || finished_) return;
      // A shared-memory reader that has not handed back enough buffers waits; its release
      // wakes the stream through the listener.
      if (a_.shared_memory && core_->SharedBacklogFull(a_.channel_id)) return;
      scheduler::Delivery d = a_.backend->TryPop(a_.channel_id, a_.epoch);
      switch (d.kind) {
        case scheduler::Delivery::Kind::kMessage:
          // current_ stays alive until OnWriteDone; the write starts outside the lock because
          // gRPC may run reactions inline.
          current_ = std::static_pointer_cast<const WireMessage>(d.batch.payload);
          writing_ = true;
          next = &current_->msg;
          // Recorded before the client can know the id, so its release always finds it.
          if (current_->shared) core_->HandOff(a_.channel_id, current_->shared);
          break;
        case scheduler::Delivery::Kind::kPending:
          return;
        case scheduler::Delivery::Kind::kEndOfEpoch:
          end = grpc::Status::OK;
          break;
        case scheduler::Delivery::Kind::kFailed:
        case scheduler::Delivery::Kind::kClosed:
          end = ToGrpcStatus(d.kind == scheduler::Delivery::Kind::kClosed && absl::IsCancelled(d.status)
                                 ? absl::AbortedError(d.status.message())
                                 : d.status);
          break;
      }
    }
    if (next != nullptr) {
      StartWrite(next);
      return;
    }
    FinishOnce(end, /*cancelled=*/false);
  }

  // Every end of the stream comes through here once. `cancelled`: the client went away before
  // the epoch ended, so the core drops the epoch's remaining work.
  void FinishOnce(const grpc::Status& status, bool cancelled) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_) return;
      finished_ = true;
    }
    core_->DetachStream(a_.channel_id, cancelled);
    Finish(status);
  }

  Core* const core_;
  const StreamAttachment a_;
  std::mutex mu_;
  bool writing_ = false;
  bool finished_ = false;
  uint64_t listener_token_ = 0;  // 0 until the listener is set
  // The message being written; gRPC reads it until OnWriteDone.
  std::shared_ptr<const WireMessage> current_;
};

// A stream that fails before it starts.
class FailedStream : public grpc::ServerWriteReactor<v1::SampledMessage> {
 public:
  explicit FailedStream(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

}  // namespace

#define GS_UNARY(Method, Req, Resp)                                                                    \
  grpc::ServerUnaryReactor* GraphStoreService::Method(grpc::CallbackServerContext* ctx, const Req* req, \
                                                      Resp* resp) {                                    \
    return Reply(ctx, core_->Method(*req, resp), #Method);                                             \
  }

GS_UNARY(GetDatasetMeta, v1::GetDatasetMetaRequest, v1::DatasetMeta)
GS_UNARY(LookupPartitions, v1::LookupPartitionsRequest, v1::LookupPartitionsResponse)
GS_UNARY(GetNodeIds, v1::GetNodeIdsRequest, v1::GetNodeIdsResponse)
GS_UNARY(GetAblpInput, v1::GetAblpInputRequest, v1::GetAblpInputResponse)
GS_UNARY(GetNodeFeatures, v1::GetNodeFeaturesRequest, v1::GetNodeFeaturesResponse)
GS_UNARY(GetNodeLabels, v1::GetNodeLabelsRequest, v1::GetNodeLabelsResponse)
GS_UNARY(GetEdgeFeatures, v1::GetEdgeFeaturesRequest, v1::GetEdgeFeaturesResponse)
GS_UNARY(SampleNeighbors, v1::SampleNeighborsRequest, v1::SampleNeighborsResponse)
GS_UNARY(RegisterSamplingInput, v1::RegisterSamplingInputRequest, v1::RegisterSamplingInputResponse)
GS_UNARY(StartEpoch, v1::StartEpochRequest, v1::StartEpochResponse)
GS_UNARY(RenewLease, v1::RenewLeaseRequest, v1::RenewLeaseResponse)
GS_UNARY(DestroySamplingInput, v1::DestroySamplingInputRequest, v1::DestroySamplingInputResponse)
GS_UNARY(ReleaseSharedBuffers, v1::ReleaseSharedBuffersRequest, v1::ReleaseSharedBuffersResponse)
GS_UNARY(DescribeChannel, v1::DescribeChannelRequest, v1::ChannelStats)
GS_UNARY(DescribeBackend, v1::DescribeBackendRequest, v1::BackendStats)
GS_UNARY(GetServerStats, v1::GetServerStatsRequest, v1::ServerStats)

#undef GS_UNARY

grpc::ServerUnaryReactor* GraphStoreService::InitSamplingBackend(grpc::CallbackServerContext* ctx,
                                                                 const v1::InitSamplingBackendRequest* req,
                                                                 v1::InitSamplingBackendResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  // The core answers at once, or later (from the thread that finishes a concurrent creation).
  core_->InitSamplingBackend(*req, resp, [reactor](absl::Status s) {
    if (!s.ok()) Logger("service")->debug("InitSamplingBackend failed: {}", s.ToString());
    reactor->Finish(ToGrpcStatus(s));
  });
  return reactor;
}

grpc::ServerWriteReactor<v1::SampledMessage>* GraphStoreService::StreamSampledMessages(
    grpc::CallbackServerContext* ctx, const v1::StreamSampledMessagesRequest* req) {
  auto attachment = core_->AttachStream(*req);
  if (!attachment.ok()) {
    Logger("service")->debug("StreamSampledMessages refused: {}", attachment.status().ToString());
    return new FailedStream(ToGrpcStatus(attachment.status()));
  }
  auto* stream = new SampledMessageStream(core_, *std::move(attachment));
  stream->Begin();
  return stream;
}

grpc::ServerUnaryReactor* GraphStoreService::Exit(grpc::CallbackServerContext* ctx, const v1::ExitRequest*,
                                                  v1::ExitResponse* resp) {
  class ExitReactor : public grpc::ServerUnaryReactor {
   public:
    explicit ExitReactor(std::function<void()> on_exit) : on_exit_(std::move(on_exit)) {}
    void OnDone() override {
      if (on_exit_) on_exit_();
      delete this;
    }

   private:
    std::function<void()> on_exit_;
  };
  Logger("service")->info("Exit requested by {}", ctx->peer());
  auto* reactor = new ExitReactor(on_exit_);
  resp->set_channels_destroyed(core_->num_channels());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace graphstore
