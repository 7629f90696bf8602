#ifndef GRAPHSTORE_SERVER_GRPC_SERVICE_H_
#define GRAPHSTORE_SERVER_GRPC_SERVICE_H_

// The gRPC face of the core: a thin callback-API adapter. Every call is first authenticated
// and checked against its method's roles (server/security/auth.h); unary methods then unpack,
// call the core with the caller and convert its status; StreamSampledMessages is a
// ServerWriteReactor fed by the channel's listener, so no thread blocks while a stream waits
// for batches. Each call's method, code and latency go to the observer (metrics).

#include <chrono>
#include <functional>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "graphstore/v1/graphstore.grpc.pb.h"
#include "server/security/auth.h"
#include "server/service/core.h"

namespace graphstore {

/// Sees every call once it is answered (for a stream: once it is attached or refused).
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  virtual void OnCall(const char* method, grpc::StatusCode code, double seconds) = 0;
};

/// The GraphStore service over a Core. StreamSampledMessages is a raw method: it writes the
/// wire encoding of each batch (server/stream_writer.h) instead of SampledMessage objects, so
/// that the tensors' bytes are not copied into a message and serialised again; clients see
/// ordinary SampledMessages.
class GraphStoreService final
    : public v1::GraphStore::WithRawCallbackMethod_StreamSampledMessages<v1::GraphStore::CallbackService> {
 public:
  /// `on_exit` is called (once, from a gRPC thread, after the reply is sent) when a client
  /// calls Exit; the owner shuts the server down. `auth` (required) and `observer` (optional)
  /// outlive the service.
  GraphStoreService(Core* core, const Authenticator* auth, CallObserver* observer, std::function<void()> on_exit)
      : core_(core), auth_(auth), observer_(observer), on_exit_(std::move(on_exit)) {}

  grpc::ServerUnaryReactor* GetDatasetMeta(grpc::CallbackServerContext* ctx, const v1::GetDatasetMetaRequest* req,
                                           v1::DatasetMeta* resp) override;
  grpc::ServerUnaryReactor* LookupPartitions(grpc::CallbackServerContext* ctx, const v1::LookupPartitionsRequest* req,
                                             v1::LookupPartitionsResponse* resp) override;
  grpc::ServerUnaryReactor* GetNodeIds(grpc::CallbackServerContext* ctx, const v1::GetNodeIdsRequest* req,
                                       v1::GetNodeIdsResponse* resp) override;
  grpc::ServerUnaryReactor* GetAblpInput(grpc::CallbackServerContext* ctx, const v1::GetAblpInputRequest* req,
                                         v1::GetAblpInputResponse* resp) override;
  grpc::ServerUnaryReactor* GetNodeFeatures(grpc::CallbackServerContext* ctx, const v1::GetNodeFeaturesRequest* req,
                                            v1::GetNodeFeaturesResponse* resp) override;
  grpc::ServerUnaryReactor* GetNodeLabels(grpc::CallbackServerContext* ctx, const v1::GetNodeLabelsRequest* req,
                                          v1::GetNodeLabelsResponse* resp) override;
  grpc::ServerUnaryReactor* GetEdgeFeatures(grpc::CallbackServerContext* ctx, const v1::GetEdgeFeaturesRequest* req,
                                            v1::GetEdgeFeaturesResponse* resp) override;
  grpc::ServerUnaryReactor* SampleNeighbors(grpc::CallbackServerContext* ctx, const v1::SampleNeighborsRequest* req,
                                            v1::SampleNeighborsResponse* resp) override;
  grpc::ServerUnaryReactor* InitSamplingBackend(grpc::CallbackServerContext* ctx,
                                                const v1::InitSamplingBackendRequest* req,
                                                v1::InitSamplingBackendResponse* resp) override;
  grpc::ServerUnaryReactor* RegisterSamplingInput(grpc::CallbackServerContext* ctx,
                                                  const v1::RegisterSamplingInputRequest* req,
                                                  v1::RegisterSamplingInputResponse* resp) override;
  grpc::ServerUnaryReactor* StartEpoch(grpc::CallbackServerContext* ctx, const v1::StartEpochRequest* req,
                                       v1::StartEpochResponse* resp) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamSampledMessages(grpc::CallbackServerContext* ctx,
                                                                    const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* RenewLease(grpc::CallbackServerContext* ctx, const v1::RenewLeaseRequest* req,
                                       v1::RenewLeaseResponse* resp) override;
  grpc::ServerUnaryReactor* DestroySamplingInput(grpc::CallbackServerContext* ctx,
                                                 const v1::DestroySamplingInputRequest* req,
                                                 v1::DestroySamplingInputResponse* resp) override;
  grpc::ServerUnaryReactor* ReleaseSharedBuffers(grpc::CallbackServerContext* ctx,
                                                 const v1::ReleaseSharedBuffersRequest* req,
                                                 v1::ReleaseSharedBuffersResponse* resp) override;
  grpc::ServerUnaryReactor* DescribeChannel(grpc::CallbackServerContext* ctx, const v1::DescribeChannelRequest* req,
                                            v1::ChannelStats* resp) override;
  grpc::ServerUnaryReactor* DescribeBackend(grpc::CallbackServerContext* ctx, const v1::DescribeBackendRequest* req,
                                            v1::BackendStats* resp) override;
  grpc::ServerUnaryReactor* GetServerStats(grpc::CallbackServerContext* ctx, const v1::GetServerStatsRequest* req,
                                           v1::ServerStats* resp) override;
  grpc::ServerUnaryReactor* Exit(grpc::CallbackServerContext* ctx, const v1::ExitRequest* req,
                                 v1::ExitResponse* resp) override;

 private:
  using Clock = std::chrono::steady_clock;

  // The caller of a call that may use `roles`, or why it may not.
  absl::StatusOr<Principal> Admit(grpc::CallbackServerContext* ctx, uint32_t roles, const char* method) const;
  // Finishes a unary call with `status` and reports it.
  grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, const absl::Status& status, const char* method,
                                  Clock::time_point start);
  void Observe(const char* method, grpc::StatusCode code, Clock::time_point start);

  Core* core_;
  const Authenticator* auth_;
  CallObserver* observer_;
  std::function<void()> on_exit_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRPC_SERVICE_H_
