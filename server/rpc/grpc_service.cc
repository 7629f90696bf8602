#include "server/rpc/grpc_service.h"

#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/rpc/sampled_message_stream.h"
#include "server/rpc/status.h"
#include "server/service/wire_encoder.h"
#include "server/util/log.h"

namespace graphstore {

namespace {

// Who may call what (server/security/auth.h explains the roles).
constexpr uint32_t kAnyone = kAllRoles;
constexpr uint32_t kReaders = kRoleTrainer | kRolePeer;
constexpr uint32_t kTrainers = kRoleTrainer;
constexpr uint32_t kDescribers = kRoleTrainer | kRoleOperator;
constexpr uint32_t kOperators = kRoleOperator;

}  // namespace

absl::StatusOr<Principal> GraphStoreService::Admit(grpc::CallbackServerContext* ctx, uint32_t roles,
                                                   const char* method) const {
  if (!auth_->enabled()) return Principal();
  Authenticator::Presented presented;
  const auto& metadata = ctx->client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    presented.authorization = std::string(it->second.data(), it->second.size());
  }
  const std::shared_ptr<const grpc::AuthContext> auth_context = ctx->auth_context();
  if (auth_context != nullptr && auth_context->IsPeerAuthenticated()) {
    const auto names = auth_context->FindPropertyValues("x509_common_name");
    if (!names.empty()) presented.certificate_name = std::string(names.front().data(), names.front().size());
  }
  auto principal = auth_->Authenticate(presented);
  if (!principal.ok()) {
    Logger("auth")->info("{} from {} refused: {}", method, ctx->peer(), std::string(principal.status().message()));
    return principal.status();
  }
  if (auto s = Authenticator::Authorize(*principal, roles, method); !s.ok()) {
    Logger("auth")->info("{} from {} refused: {}", method, ctx->peer(), std::string(s.message()));
    return s;
  }
  return principal;
}

void GraphStoreService::Observe(const char* method, grpc::StatusCode code, Clock::time_point start) {
  if (observer_ != nullptr) {
    observer_->OnCall(method, code, std::chrono::duration<double>(Clock::now() - start).count());
  }
}

grpc::ServerUnaryReactor* GraphStoreService::Reply(grpc::CallbackServerContext* ctx, const absl::Status& status,
                                                   const char* method, Clock::time_point start) {
  if (!status.ok()) Logger("service")->debug("{} failed: {}", method, status.ToString());
  const grpc::Status reply = ToGrpcStatus(status);
  Observe(method, reply.error_code(), start);
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(reply);
  return reactor;
}

namespace {

// Parses a raw request body; a body that is not a `Req` is the caller's error.
template <typename Req>
absl::Status ParseRequest(const grpc::ByteBuffer* raw, Req* req) {
  grpc::ByteBuffer body(*raw);  // shares the slices; parsing clears it
  if (grpc::GenericDeserialize<grpc::ProtoBufferReader, Req>(&body, req).ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the request body is not a valid ", Req::descriptor()->full_name(),
                                                 " (malformed protobuf, or a string field that is not UTF-8)"));
}

// Serialises a response; the core bounds every response before building it, so failing here
// means a bound is missing, and the caller gets RESOURCE_EXHAUSTED instead of a dead server.
absl::Status SerializeResponse(const google::protobuf::Message& resp, grpc::ByteBuffer* out) {
  const size_t size = resp.ByteSizeLong();
  if (size > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::ResourceExhaustedError(absl::StrCat("the response would be ", size >> 20,
                                                     " MiB, above protobuf's 2 GiB message limit"));
  }
  bool own_buffer = false;
  const grpc::Status s = grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::Message>(resp, out, &own_buffer);
  if (!s.ok()) return absl::InternalError(absl::StrCat("serialising the response failed: ", s.error_message()));
  return absl::OkStatus();
}

// GetNodeFeatures' answer is mostly its rows: their bytes go out as slices of the strings the
// query filled instead of being copied once more into a serialised message
// (EncodeWithTensorData: the message without them, then `features` and `labels` once more).
absl::Status SerializeSlicedFeatures(v1::GetNodeFeaturesResponse& resp, grpc::ByteBuffer* out) {
  constexpr size_t kReferenceFrom = 64 << 10;
  auto kept = std::make_shared<std::vector<std::pair<int, std::string>>>();
  for (auto [field, tensor] : {std::pair{v1::GetNodeFeaturesResponse::kFeaturesFieldNumber, resp.mutable_features()},
                               {v1::GetNodeFeaturesResponse::kLabelsFieldNumber, resp.mutable_labels()}}) {
    if (tensor->data().size() < kReferenceFrom) continue;
    kept->emplace_back(field, std::move(*tensor->mutable_data()));
    tensor->clear_data();
  }
  if (kept->empty()) return SerializeResponse(static_cast<const google::protobuf::Message&>(resp), out);
  std::vector<std::pair<int, std::string_view>> data;
  for (const auto& [field, bytes] : *kept) data.emplace_back(field, bytes);
  std::shared_ptr<const EncodedMessage> encoded = EncodeWithTensorData(resp.SerializeAsString(), data, 1024, kept);
  if (encoded->bytes > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::ResourceExhaustedError(absl::StrCat("the response would be ", encoded->bytes >> 20,
                                                     " MiB, above protobuf's 2 GiB message limit"));
  }
  *out = PartBuffer(encoded, 0);
  return absl::OkStatus();
}

}  // namespace

template <typename Req, typename Resp, typename Call, typename Serialise>
grpc::ServerUnaryReactor* GraphStoreService::Unary(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response, const char* method, uint32_t roles,
                                                   Call call, Serialise serialise, bool asker_share) {
  const auto start = Clock::now();
  auto principal = Admit(ctx, roles, method);
  if (!principal.ok()) return Reply(ctx, principal.status(), method, start);
  Req req;
  if (auto s = ParseRequest(request, &req); !s.ok()) return Reply(ctx, s, method, start);
  Resp resp;
  absl::Status status = call(req, &resp, *principal);
  if (status.ok()) status = serialise(resp, response);
  // Answers share the uplink with the streams: the send share counts them in the link's rate,
  // and the rows a trainer asks of their owner in that trainer's share too.
  if (status.ok() && send_share_ != nullptr) {
    const auto bytes = static_cast<int64_t>(response->Length());
    asker_share ? send_share_->CountAnswer(ctx->peer(), bytes) : send_share_->CountOther(bytes);
  }
  return Reply(ctx, status, method, start);
}

template <typename Req, typename Resp, typename Call>
grpc::ServerUnaryReactor* GraphStoreService::Unary(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response, const char* method, uint32_t roles,
                                                   Call call, bool asker_share) {
  return Unary<Req, Resp>(
      ctx, request, response, method, roles, std::move(call),
      [](const Resp& resp, grpc::ByteBuffer* out) { return SerializeResponse(resp, out); }, asker_share);
}

// ----- Metadata and the partition's queries (answered without the core's lock) -------------

grpc::ServerUnaryReactor* GraphStoreService::GetDatasetMeta(grpc::CallbackServerContext* ctx,
                                                            const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::GetDatasetMetaRequest, v1::DatasetMeta>(
      ctx, request, response, "GetDatasetMeta", kAnyone,
      [this](const auto& req, auto* resp, const Principal&) { return core_->GetDatasetMeta(req, resp); });
}

grpc::ServerUnaryReactor* GraphStoreService::LookupPartitions(grpc::CallbackServerContext* ctx,
                                                              const grpc::ByteBuffer* request,
                                                              grpc::ByteBuffer* response) {
  return Unary<v1::LookupPartitionsRequest, v1::LookupPartitionsResponse>(
      ctx, request, response, "LookupPartitions", kAnyone,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->LookupPartitions(req, resp); });
}

grpc::ServerUnaryReactor* GraphStoreService::GetNodeIds(grpc::CallbackServerContext* ctx,
                                                        const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::GetNodeIdsRequest, v1::GetNodeIdsResponse>(
      ctx, request, response, "GetNodeIds", kReaders,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->GetNodeIds(req, resp); });
}

grpc::ServerUnaryReactor* GraphStoreService::GetAblpInput(grpc::CallbackServerContext* ctx,
                                                          const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::GetAblpInputRequest, v1::GetAblpInputResponse>(
      ctx, request, response, "GetAblpInput", kTrainers,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->GetAblpInput(req, resp); });
}

grpc::ServerUnaryReactor* GraphStoreService::GetNodeFeatures(grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  // The rows go out as slices of what the query wrote (SerializeSlicedFeatures).
  return Unary<v1::GetNodeFeaturesRequest, v1::GetNodeFeaturesResponse>(
      ctx, request, response, "GetNodeFeatures", kReaders,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->GetNodeFeatures(req, resp); },
      SerializeSlicedFeatures, /*asker_share=*/true);
}

grpc::ServerUnaryReactor* GraphStoreService::GetNodeLabels(grpc::CallbackServerContext* ctx,
                                                           const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::GetNodeLabelsRequest, v1::GetNodeLabelsResponse>(
      ctx, request, response, "GetNodeLabels", kReaders,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->GetNodeLabels(req, resp); },
      /*asker_share=*/true);
}

grpc::ServerUnaryReactor* GraphStoreService::GetNodeTimes(grpc::CallbackServerContext* ctx,
                                                          const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::GetNodeTimesRequest, v1::GetNodeTimesResponse>(
      ctx, request, response, "GetNodeTimes", kReaders,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->GetNodeTimes(req, resp); });
}

grpc::ServerUnaryReactor* GraphStoreService::FindDegreeNodes(grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::FindDegreeNodesRequest, v1::FindDegreeNodesResponse>(
      ctx, request, response, "FindDegreeNodes", kReaders,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->FindDegreeNodes(req, resp); });
}

grpc::ServerUnaryReactor* GraphStoreService::GetEdgeFeatures(grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  return Unary<v1::GetEdgeFeaturesRequest, v1::GetEdgeFeaturesResponse>(
      ctx, request, response, "GetEdgeFeatures", kReaders,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->GetEdgeFeatures(req, resp); });
}

grpc::ServerUnaryReactor* GraphStoreService::SampleNeighbors(grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  return Unary<v1::SampleNeighborsRequest, v1::SampleNeighborsResponse>(
      ctx, request, response, "SampleNeighbors", kReaders,
      [this](const auto& req, auto* resp, const Principal&) { return queries_->SampleNeighbors(req, resp); });
}

// ----- Channels (they belong to the identity that registered them) --------------------------

grpc::ServerUnaryReactor* GraphStoreService::RegisterSamplingInput(grpc::CallbackServerContext* ctx,
                                                                   const grpc::ByteBuffer* request,
                                                                   grpc::ByteBuffer* response) {
  return Unary<v1::RegisterSamplingInputRequest, v1::RegisterSamplingInputResponse>(
      ctx, request, response, "RegisterSamplingInput", kTrainers,
      [this](const auto& req, auto* resp, const Principal& p) { return core_->RegisterSamplingInput(req, resp, p.caller); });
}

grpc::ServerUnaryReactor* GraphStoreService::StartEpoch(grpc::CallbackServerContext* ctx,
                                                        const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::StartEpochRequest, v1::StartEpochResponse>(
      ctx, request, response, "StartEpoch", kTrainers,
      [this](const auto& req, auto* resp, const Principal& p) { return core_->StartEpoch(req, resp, p.caller); });
}

grpc::ServerUnaryReactor* GraphStoreService::RenewLease(grpc::CallbackServerContext* ctx,
                                                        const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::RenewLeaseRequest, v1::RenewLeaseResponse>(
      ctx, request, response, "RenewLease", kTrainers,
      [this](const auto& req, auto* resp, const Principal& p) { return core_->RenewLease(req, resp, p.caller); });
}

grpc::ServerUnaryReactor* GraphStoreService::DestroySamplingInput(grpc::CallbackServerContext* ctx,
                                                                  const grpc::ByteBuffer* request,
                                                                  grpc::ByteBuffer* response) {
  return Unary<v1::DestroySamplingInputRequest, v1::DestroySamplingInputResponse>(
      ctx, request, response, "DestroySamplingInput", kTrainers,
      [this](const auto& req, auto* resp, const Principal& p) { return core_->DestroySamplingInput(req, resp, p.caller); });
}

grpc::ServerUnaryReactor* GraphStoreService::ReleaseSharedBuffers(grpc::CallbackServerContext* ctx,
                                                                  const grpc::ByteBuffer* request,
                                                                  grpc::ByteBuffer* response) {
  return Unary<v1::ReleaseSharedBuffersRequest, v1::ReleaseSharedBuffersResponse>(
      ctx, request, response, "ReleaseSharedBuffers", kTrainers,
      [this](const auto& req, auto* resp, const Principal& p) { return core_->ReleaseSharedBuffers(req, resp, p.caller); });
}

// ----- Introspection --------------------------------------------------------------------------

grpc::ServerUnaryReactor* GraphStoreService::DescribeChannel(grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  return Unary<v1::DescribeChannelRequest, v1::ChannelStats>(
      ctx, request, response, "DescribeChannel", kDescribers,
      [this](const auto& req, auto* resp, const Principal& p) { return core_->DescribeChannel(req, resp, p.caller); });
}

grpc::ServerUnaryReactor* GraphStoreService::DescribeBackend(grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  return Unary<v1::DescribeBackendRequest, v1::BackendStats>(
      ctx, request, response, "DescribeBackend", kDescribers,
      [this](const auto& req, auto* resp, const Principal& p) { return core_->DescribeBackend(req, resp, p.caller); });
}

grpc::ServerUnaryReactor* GraphStoreService::GetServerStats(grpc::CallbackServerContext* ctx,
                                                            const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return Unary<v1::GetServerStatsRequest, v1::ServerStats>(
      ctx, request, response, "GetServerStats", kOperators,
      [this](const auto& req, auto* resp, const Principal&) { return core_->GetServerStats(req, resp); });
}

// ----- Backends, streams and the daemon's end -------------------------------------------------

grpc::ServerUnaryReactor* GraphStoreService::InitSamplingBackend(grpc::CallbackServerContext* ctx,
                                                                 const grpc::ByteBuffer* request,
                                                                 grpc::ByteBuffer* response) {
  const auto start = Clock::now();
  auto principal = Admit(ctx, kTrainers, "InitSamplingBackend");
  if (!principal.ok()) return Reply(ctx, principal.status(), "InitSamplingBackend", start);
  v1::InitSamplingBackendRequest req;
  if (auto s = ParseRequest(request, &req); !s.ok()) return Reply(ctx, s, "InitSamplingBackend", start);
  auto* reactor = ctx->DefaultReactor();
  // The core answers when the backend is up, or when a concurrent creation of the same key it
  // waits for is (from that creation's thread).
  auto resp = std::make_shared<v1::InitSamplingBackendResponse>();
  auto answer = [this, reactor, start, resp, response](absl::Status s) {
    if (s.ok()) s = SerializeResponse(*resp, response);
    if (!s.ok()) Logger("service")->debug("InitSamplingBackend failed: {}", s.ToString());
    const grpc::Status reply = ToGrpcStatus(s);
    Observe("InitSamplingBackend", reply.error_code(), start);
    reactor->Finish(reply);
  };
  const bool queued = creations_.Post([this, req = std::move(req), resp, answer, caller = principal->caller] {
    core_->InitSamplingBackend(req, resp.get(), answer, caller);
  });
  if (!queued) {
    answer(absl::ResourceExhaustedError(
        absl::StrCat(kMaxWaitingCreations, " backend creations are already waiting; retry later")));
  }
  return reactor;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* GraphStoreService::StreamSampledMessages(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* raw) {
  const auto start = Clock::now();
  const char* method = "StreamSampledMessages";
  auto fail = [&](const grpc::Status& status) {
    Observe(method, status.error_code(), start);
    return SampledMessageStream::Failed(status);
  };
  auto principal = Admit(ctx, kTrainers, method);
  if (!principal.ok()) return fail(ToGrpcStatus(principal.status()));
  v1::StreamSampledMessagesRequest req;
  if (auto s = ParseRequest(raw, &req); !s.ok()) return fail(ToGrpcStatus(s));
  auto attachment = core_->AttachStream(req, principal->caller);
  if (!attachment.ok()) {
    Logger("service")->debug("StreamSampledMessages refused: {}", attachment.status().ToString());
    return fail(ToGrpcStatus(attachment.status()));
  }
  Observe(method, grpc::StatusCode::OK, start);
  // Shared-memory streams send descriptors, not the batches' bytes: nothing to share.
  SendShare* share = attachment->shared_memory ? nullptr : send_share_;
  auto* stream = new SampledMessageStream(core_, *std::move(attachment), share, ctx->peer());
  stream->Begin();
  return stream;
}

grpc::ServerUnaryReactor* GraphStoreService::Exit(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
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
  const auto start = Clock::now();
  auto principal = Admit(ctx, kOperators, "Exit");
  if (!principal.ok()) return Reply(ctx, principal.status(), "Exit", start);
  v1::ExitRequest req;
  if (auto s = ParseRequest(request, &req); !s.ok()) return Reply(ctx, s, "Exit", start);
  Logger("service")->info("Exit requested by {}{}", ctx->peer(),
                          principal->caller.identity.empty() ? "" : " ('" + principal->caller.identity + "')");
  auto* reactor = new ExitReactor(on_exit_);
  v1::ExitResponse resp;
  resp.set_channels_destroyed(core_->num_channels());
  const absl::Status s = SerializeResponse(resp, response);
  Observe("Exit", ToGrpcStatus(s).error_code(), start);
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

}  // namespace graphstore
