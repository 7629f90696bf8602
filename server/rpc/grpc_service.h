#ifndef GRAPHSTORE_SERVER_RPC_GRPC_SERVICE_H_
#define GRAPHSTORE_SERVER_RPC_GRPC_SERVICE_H_

// The gRPC face of the core: a thin callback-API adapter. Every call is first authenticated
// and checked against its method's roles (server/security/auth.h); unary methods then unpack,
// call the core with the caller and convert its status; StreamSampledMessages is a
// ServerWriteReactor fed by the channel's listener, so no thread blocks while a stream waits
// for batches. InitSamplingBackend runs on threads of its own (a new backend may first build
// its sampling indexes, seconds on a large partition), so the threads that answer every other
// call never wait for it. Each call's method, code and latency go to the observer (metrics).

#include <chrono>
#include <cstddef>
#include <functional>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "graphstore/v1/graphstore.grpc.pb.h"
#include "server/rpc/send_share.h"
#include "server/security/auth.h"
#include "server/service/core.h"
#include "server/util/job_queue.h"

namespace graphstore {

/// Sees every call once it is answered (for a stream: once it is attached or refused).
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  virtual void OnCall(const char* method, grpc::StatusCode code, double seconds) = 0;
};

/// Every method is registered raw (ByteBuffer in, ByteBuffer out), so that the service parses
/// requests itself: a body that is not the method's request message answers INVALID_ARGUMENT
/// with a message naming the expected message type (gRPC's own parsing answers with no text).
using RawGraphStoreService = v1::GraphStore::WithRawCallbackMethod_GetDatasetMeta<
    v1::GraphStore::WithRawCallbackMethod_LookupPartitions<
    v1::GraphStore::WithRawCallbackMethod_GetNodeIds<
    v1::GraphStore::WithRawCallbackMethod_GetAblpInput<
    v1::GraphStore::WithRawCallbackMethod_GetNodeFeatures<
    v1::GraphStore::WithRawCallbackMethod_GetNodeLabels<
    v1::GraphStore::WithRawCallbackMethod_GetNodeTimes<
    v1::GraphStore::WithRawCallbackMethod_FindDegreeNodes<
    v1::GraphStore::WithRawCallbackMethod_GetEdgeFeatures<
    v1::GraphStore::WithRawCallbackMethod_SampleNeighbors<
    v1::GraphStore::WithRawCallbackMethod_InitSamplingBackend<
    v1::GraphStore::WithRawCallbackMethod_RegisterSamplingInput<
    v1::GraphStore::WithRawCallbackMethod_StartEpoch<
    v1::GraphStore::WithRawCallbackMethod_RenewLease<
    v1::GraphStore::WithRawCallbackMethod_DestroySamplingInput<
    v1::GraphStore::WithRawCallbackMethod_ReleaseSharedBuffers<
    v1::GraphStore::WithRawCallbackMethod_DescribeChannel<
    v1::GraphStore::WithRawCallbackMethod_DescribeBackend<
    v1::GraphStore::WithRawCallbackMethod_GetServerStats<
    v1::GraphStore::WithRawCallbackMethod_Exit<
    v1::GraphStore::WithRawCallbackMethod_StreamSampledMessages<
    v1::GraphStore::CallbackService>>>>>>>>>>>>>>>>>>>>>;

/// The GraphStore service over a Core. The partition queries (the lookups, features, labels and
/// the one-hop draws that peers ask for) go straight to the core's PartitionQueries; the rest to
/// the core. StreamSampledMessages writes the wire encoding of each batch
/// (server/rpc/sampled_message_stream.h) instead of SampledMessage objects, so that the
/// tensors' bytes are not copied into a message and serialised again; clients see ordinary
/// SampledMessages.
class GraphStoreService final : public RawGraphStoreService {
 public:
  /// `on_exit` is called (once, from a gRPC thread, after the reply is sent) when a client
  /// calls Exit; the owner shuts the server down. `auth` (required) and `observer` (optional)
  /// outlive the service.
  /// `send_share` (optional, outlives the service's streams) shares the sending of streams
  /// over the network between them by bytes.
  GraphStoreService(Core* core, const Authenticator* auth, CallObserver* observer, std::function<void()> on_exit,
                    SendShare* send_share = nullptr)
      : core_(core),
        queries_(&core->queries()),
        auth_(auth),
        observer_(observer),
        on_exit_(std::move(on_exit)),
        send_share_(send_share) {}

  // One handler per method (grpc_service.cc), each written out.
  grpc::ServerUnaryReactor* GetDatasetMeta(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* LookupPartitions(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetNodeIds(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetAblpInput(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetNodeFeatures(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetNodeLabels(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetNodeTimes(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* FindDegreeNodes(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetEdgeFeatures(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* SampleNeighbors(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* InitSamplingBackend(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RegisterSamplingInput(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* StartEpoch(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RenewLease(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* DestroySamplingInput(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ReleaseSharedBuffers(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* DescribeChannel(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* DescribeBackend(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetServerStats(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Exit(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamSampledMessages(grpc::CallbackServerContext* ctx,
                                                                    const grpc::ByteBuffer* request) override;

 private:
  using Clock = std::chrono::steady_clock;

  // The caller of a call that may use `roles`, or why it may not.
  absl::StatusOr<Principal> Admit(grpc::CallbackServerContext* ctx, uint32_t roles, const char* method) const;
  // A unary call: admits the caller with `roles`, parses a `Req`, runs `call(req, &resp,
  // principal)` and writes the answer with `serialise`; every failure ends through Reply. The
  // answer counts in the send share's link rate; with `asker_share` (rows a trainer asks of
  // their owner) in the share of the asker's stream on the same connection too.
  template <typename Req, typename Resp, typename Call, typename Serialise>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response, const char* method, uint32_t roles, Call call,
                                  Serialise serialise, bool asker_share = false);
  template <typename Req, typename Resp, typename Call>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response, const char* method, uint32_t roles, Call call,
                                  bool asker_share = false);
  // Finishes a unary call with `status` and reports it.
  grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, const absl::Status& status, const char* method,
                                  Clock::time_point start);
  void Observe(const char* method, grpc::StatusCode code, Clock::time_point start);

  Core* core_;
  const PartitionQueries* const queries_;
  const Authenticator* auth_;
  CallObserver* observer_;
  std::function<void()> on_exit_;
  SendShare* const send_share_;
  // Backend creations: kCreators at a time, up to kMaxWaitingCreations more waiting.
  static constexpr int kCreators = 4;
  static constexpr size_t kMaxWaitingCreations = 256;
  JobQueue creations_{kCreators, kMaxWaitingCreations};
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_RPC_GRPC_SERVICE_H_
