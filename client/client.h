#ifndef GRAPHSTORE_CLIENT_CLIENT_H_
#define GRAPHSTORE_CLIENT_CLIENT_H_

// A connection to one graphstored. Every unary call carries a deadline; failures come back as
// absl::Status with the server's canonical code and message. Callers see graphstore.v1
// messages, never gRPC types.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/security.h"
#include "client/wire_decoder.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// The connection's security (common/security.h), shared with servers calling their peers.
using ChannelSecurity = graphstore::ChannelSecurity;

/// How to reach a server.
struct ClientOptions {
  /// host:port.
  std::string address;
  /// Deadline of each unary call.
  std::chrono::milliseconds deadline{30000};
  /// How long Connect waits for the server to accept a connection.
  std::chrono::milliseconds connect_timeout{10000};
  /// Largest message received, in bytes.
  int max_message_bytes = 512 << 20;
  /// HTTP/2 flow-control window of a stream, in bytes: how much the server may send ahead of
  /// the reader. 0 keeps gRPC's self-tuning window, which can grow to many megabytes.
  int stream_window_bytes = 0;
  /// TLS and credentials (default: plaintext, none).
  ChannelSecurity security;
  /// Longest wait between attempts to reconnect to a server that went away (0: gRPC's default,
  /// which grows to two minutes).
  std::chrono::milliseconds reconnect_backoff_max{0};
  /// While a call is open, a ping goes to the server after this long without hearing from it,
  /// and the connection fails (UNAVAILABLE) when none is answered within keepalive_timeout:
  /// a server that hangs, or a link that silently drops everything, ends an open stream instead
  /// of leaving its reader waiting for ever. A slow but live server answers pings. Servers
  /// accept pings every 5 s at most. 0: no pings.
  std::chrono::milliseconds keepalive_time{20000};
  std::chrono::milliseconds keepalive_timeout{10000};
  /// Clients of one address with different numbers never share a TCP connection (gRPC shares
  /// one among channels of equal settings): a client numbered > 0 keeps its connection to
  /// itself, so that streams read through several clients travel apart.
  int connection = 0;
};

/// The messages of one StreamSampledMessages call, read in order.
class MessageStream {
 public:
  virtual ~MessageStream() = default;
  /// The next message; nullptr once the stream ended OK; the stream's error otherwise.
  /// Blocks until one of those is known.
  virtual absl::StatusOr<std::shared_ptr<v1::SampledMessage>> Next() = 0;
  /// Cancels the call; a blocked Next returns CANCELLED. Thread-safe.
  virtual void Cancel() = 0;
};

/// The batches of one StreamSampledMessages call, decoded from the bytes as they arrive (see
/// client/wire_decoder.h): no protobuf message is built.
class BatchStream {
 public:
  virtual ~BatchStream() = default;
  /// The next whole batch; nullptr once the stream ended OK; the stream's error otherwise
  /// (DataLoss for a malformed message). Blocks until one of those is known.
  virtual absl::StatusOr<std::shared_ptr<DecodedBatch>> Next() = 0;
  /// Cancels the call; a blocked Next returns CANCELLED. Thread-safe.
  virtual void Cancel() = 0;
};

/// A connection to one server. Thread-safe; it outlives the asynchronous calls made on it.
class Client {
 public:
  /// Connects and waits until the server accepts (UNAVAILABLE after connect_timeout). The
  /// first connection of a process also keeps freed heap memory in the process
  /// (common/heap_retention.h), so that the slices each received message is read into
  /// reuse pages instead of faulting in new ones; an environment that sets glibc's malloc
  /// thresholds itself is left as it is.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  virtual ~Client() = default;

  virtual const std::string& address() const = 0;

  virtual absl::StatusOr<v1::DatasetMeta> GetDatasetMeta(const v1::GetDatasetMetaRequest& req) = 0;
  absl::StatusOr<v1::DatasetMeta> GetDatasetMeta() { return GetDatasetMeta(v1::GetDatasetMetaRequest()); }
  virtual absl::StatusOr<v1::LookupPartitionsResponse> LookupPartitions(const v1::LookupPartitionsRequest& req) = 0;
  virtual absl::StatusOr<v1::GetNodeIdsResponse> GetNodeIds(const v1::GetNodeIdsRequest& req) = 0;
  virtual absl::StatusOr<v1::GetNodeFeaturesResponse> GetNodeFeatures(const v1::GetNodeFeaturesRequest& req) = 0;
  /// GetNodeFeatures with the answer handed to `read` as received: GetNodeFeaturesResponse in
  /// protobuf's wire format, in pieces valid while `read` runs, so that the rows are written
  /// where they belong straight from the bytes that arrived. Returns the call's or `read`'s error.
  virtual absl::Status ReadNodeFeatures(const v1::GetNodeFeaturesRequest& req,
                                        const std::function<absl::Status(const std::vector<Span>&)>& read);
  /// ReadNodeFeatures without waiting for the answer: `read` is handed it as received, then
  /// `done` the call's (or `read`'s) status; each is called once at most and `done` always, on a
  /// thread of the connection's (this default: on the caller's, before it returns).
  virtual void ReadNodeFeaturesAsync(const v1::GetNodeFeaturesRequest& req,
                                     std::function<absl::Status(const std::vector<Span>&)> read,
                                     std::function<void(absl::Status)> done);
  virtual absl::StatusOr<v1::GetNodeLabelsResponse> GetNodeLabels(const v1::GetNodeLabelsRequest& req) = 0;
  virtual absl::StatusOr<v1::GetEdgeFeaturesResponse> GetEdgeFeatures(const v1::GetEdgeFeaturesRequest& req) = 0;
  /// GetNodeLabels without waiting: `done` is called once with the answer, as above.
  virtual void GetNodeLabelsAsync(const v1::GetNodeLabelsRequest& req,
                                  std::function<void(absl::StatusOr<v1::GetNodeLabelsResponse>)> done);
  virtual absl::StatusOr<v1::GetAblpInputResponse> GetAblpInput(const v1::GetAblpInputRequest& req) = 0;
  virtual absl::StatusOr<v1::InitSamplingBackendResponse> InitSamplingBackend(
      const v1::InitSamplingBackendRequest& req) = 0;
  virtual absl::StatusOr<v1::RegisterSamplingInputResponse> RegisterSamplingInput(
      const v1::RegisterSamplingInputRequest& req) = 0;
  virtual absl::StatusOr<v1::StartEpochResponse> StartEpoch(const v1::StartEpochRequest& req) = 0;
  virtual absl::StatusOr<v1::RenewLeaseResponse> RenewLease(const v1::RenewLeaseRequest& req) = 0;
  virtual absl::StatusOr<v1::DestroySamplingInputResponse> DestroySamplingInput(
      const v1::DestroySamplingInputRequest& req) = 0;
  virtual absl::StatusOr<v1::ReleaseSharedBuffersResponse> ReleaseSharedBuffers(
      const v1::ReleaseSharedBuffersRequest& req) = 0;
  virtual absl::StatusOr<v1::ChannelStats> DescribeChannel(const v1::DescribeChannelRequest& req) = 0;
  virtual absl::StatusOr<v1::BackendStats> DescribeBackend(const v1::DescribeBackendRequest& req) = 0;
  virtual absl::StatusOr<v1::ServerStats> GetServerStats() = 0;
  virtual absl::StatusOr<v1::ExitResponse> Exit() = 0;

  /// Opens the stream of `req.epoch()` of a channel. Messages not yet read wait in gRPC's
  /// flow-control window and, beyond it, in the channel's bounded buffer on the server.
  virtual std::unique_ptr<MessageStream> Stream(const v1::StreamSampledMessagesRequest& req) = 0;
  /// The same stream, decoded into batches with `options` (a batch sent in parts is one batch).
  /// For channels without shared memory.
  virtual std::unique_ptr<BatchStream> StreamBatches(const v1::StreamSampledMessagesRequest& req,
                                                     DecodeOptions options) = 0;
};

/// How a LoaderCore opens its connections: Client::Connect, or a test's fake servers.
using ClientFactory = std::function<absl::StatusOr<std::unique_ptr<Client>>(const ClientOptions&)>;

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_CLIENT_H_
