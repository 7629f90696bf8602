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
absl::Status SerializeResponse(v1::GetNodeFeaturesResponse& resp, grpc::ByteBuffer* out) {
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

// A unary method admitted with `roles`: authenticate, parse, call `target` (the core, or its
// partition queries), serialise. GS_UNARY_AS also hands the core the caller (methods on
// channels and backends, which belong to identities).
#define GS_UNARY_CALL(Method, Req, Resp, roles, target, ...)                                                  \
  grpc::ServerUnaryReactor* GraphStoreService::Method(grpc::CallbackServerContext* ctx,                \
                                                      const grpc::ByteBuffer* request,                 \
                                                      grpc::ByteBuffer* response) {                    \
    const auto start = Clock::now();                                                                  \
    auto principal = Admit(ctx, roles, #Method);                                                      \
    if (!principal.ok()) return Reply(ctx, principal.status(), #Method, start);                       \
    Req req_message;                                                                                  \
    if (auto s = ParseRequest(request, &req_message); !s.ok()) return Reply(ctx, s, #Method, start);  \
    const Req* req = &req_message;                                                                    \
    Resp resp_message;                                                                                \
    Resp* resp = &resp_message;                                                                       \
    absl::Status status = target->Method(__VA_ARGS__);                                                \
    if (status.ok()) status = SerializeResponse(resp_message, response);                              \
    return Reply(ctx, status, #Method, start);                                                        \
  }
#define GS_UNARY(Method, Req, Resp, roles) GS_UNARY_CALL(Method, Req, Resp, roles, core_, *req, resp)
#define GS_QUERY(Method, Req, Resp, roles) GS_UNARY_CALL(Method, Req, Resp, roles, queries_, *req, resp)
#define GS_UNARY_AS(Method, Req, Resp, roles) GS_UNARY_CALL(Method, Req, Resp, roles, core_, *req, resp, principal->caller)

GS_UNARY(GetDatasetMeta, v1::GetDatasetMetaRequest, v1::DatasetMeta, kAnyone)
GS_QUERY(LookupPartitions, v1::LookupPartitionsRequest, v1::LookupPartitionsResponse, kAnyone)
GS_QUERY(GetNodeIds, v1::GetNodeIdsRequest, v1::GetNodeIdsResponse, kReaders)
GS_QUERY(GetAblpInput, v1::GetAblpInputRequest, v1::GetAblpInputResponse, kTrainers)
GS_QUERY(GetNodeFeatures, v1::GetNodeFeaturesRequest, v1::GetNodeFeaturesResponse, kReaders)
GS_QUERY(GetNodeLabels, v1::GetNodeLabelsRequest, v1::GetNodeLabelsResponse, kReaders)
GS_QUERY(GetEdgeFeatures, v1::GetEdgeFeaturesRequest, v1::GetEdgeFeaturesResponse, kReaders)
GS_QUERY(SampleNeighbors, v1::SampleNeighborsRequest, v1::SampleNeighborsResponse, kReaders)
GS_UNARY_AS(RegisterSamplingInput, v1::RegisterSamplingInputRequest, v1::RegisterSamplingInputResponse, kTrainers)
GS_UNARY_AS(StartEpoch, v1::StartEpochRequest, v1::StartEpochResponse, kTrainers)
GS_UNARY_AS(RenewLease, v1::RenewLeaseRequest, v1::RenewLeaseResponse, kTrainers)
GS_UNARY_AS(DestroySamplingInput, v1::DestroySamplingInputRequest, v1::DestroySamplingInputResponse, kTrainers)
GS_UNARY_AS(ReleaseSharedBuffers, v1::ReleaseSharedBuffersRequest, v1::ReleaseSharedBuffersResponse, kTrainers)
GS_UNARY_AS(DescribeChannel, v1::DescribeChannelRequest, v1::ChannelStats, kDescribers)
GS_UNARY_AS(DescribeBackend, v1::DescribeBackendRequest, v1::BackendStats, kDescribers)
GS_UNARY(GetServerStats, v1::GetServerStatsRequest, v1::ServerStats, kOperators)

#undef GS_UNARY_AS
#undef GS_QUERY
#undef GS_UNARY
#undef GS_UNARY_CALL

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
  auto* stream = new SampledMessageStream(core_, *std::move(attachment));
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
