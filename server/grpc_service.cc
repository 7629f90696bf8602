#include "server/grpc_service.h"

#include <memory>
#include <mutex>

#include "server/stream_writer.h"
#include "server/util/log.h"

namespace graphstore {

namespace {

// Finishes a unary call with the core's status.
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, const absl::Status& status,
                                const char* method) {
  if (!status.ok()) Logger("service")->debug("{} failed: {}", method, status.ToString());
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

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

grpc::ServerWriteReactor<grpc::ByteBuffer>* GraphStoreService::StreamSampledMessages(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* raw) {
  v1::StreamSampledMessagesRequest req;
  grpc::ByteBuffer request(*raw);  // shares the slices; parsing clears it
  if (!grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::StreamSampledMessagesRequest>(&request, &req).ok()) {
    return SampledMessageStream::Failed(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the request is not a StreamSampledMessagesRequest"));
  }
  auto attachment = core_->AttachStream(req);
  if (!attachment.ok()) {
    Logger("service")->debug("StreamSampledMessages refused: {}", attachment.status().ToString());
    return SampledMessageStream::Failed(ToGrpcStatus(attachment.status()));
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
