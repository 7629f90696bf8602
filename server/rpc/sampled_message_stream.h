#ifndef GRAPHSTORE_SERVER_RPC_SAMPLED_MESSAGE_STREAM_H_
#define GRAPHSTORE_SERVER_RPC_SAMPLED_MESSAGE_STREAM_H_

// The gRPC writer of one StreamSampledMessages call: a ServerWriteReactor of raw ByteBuffers.
// Each batch's encoded parts (server/service/wire_encoder.h) become slices that point at the
// sampled tensors, so the bytes go from the sampler's memory to the socket without a copy.
//
// Writes are driven by the channel's listener (a batch is ready, the epoch ended, the channel
// closed) and by OnWriteDone; a reaction never blocks: with nothing ready the stream goes idle
// until the listener calls MaybeWrite again. With a send share, a part ready to go may be held
// until the server's other streams catch up (the share wakes the stream). One write is in
// flight at a time, and the final
// status never overtakes it: a stream that ends (a cancel, a closed channel) while a write is
// decided or on its way sends its status from that write's OnWriteDone. The stream
// detaches from its channel before its final status is sent, so a client that starts the next
// epoch at once can open the next stream. Lifetime: deleted in OnDone, after its own listener
// has been cleared (a newer stream's listener is left alone).

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "server/rpc/send_share.h"
#include "server/service/stream_host.h"
#include "server/service/wire_message.h"

namespace graphstore {

class SampledMessageStream : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  /// `share` (optional) paces this stream's writes against the server's other streams; `peer`
  /// names the connection it came on (answers on it count in its share).
  SampledMessageStream(StreamHost* host, StreamAttachment attachment, SendShare* share = nullptr,
                       std::string peer = "")
      : host_(host), a_(std::move(attachment)), share_(share), peer_(std::move(peer)) {}

  /// Called once after construction, from the method handler.
  void Begin();

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  /// A stream that fails before it starts (deleted in its OnDone).
  static grpc::ServerWriteReactor<grpc::ByteBuffer>* Failed(const grpc::Status& status);

 private:
  // Runs on gRPC threads (reactions) and on backend worker threads (the listener).
  void MaybeWrite();
  // Every end of the stream comes through here once. `cancelled`: the client went away before
  // the epoch ended, so the core drops the epoch's remaining work.
  void FinishOnce(const grpc::Status& status, bool cancelled);

  StreamHost* const host_;
  const StreamAttachment a_;
  SendShare* const share_;
  const std::string peer_;
  uint64_t share_id_ = 0;  // set in Begin, before any write
  std::mutex mu_;
  bool writing_ = false;
  // buffer_ holds the next part, not yet written: the send share held it back.
  bool ready_ = false;
  bool finished_ = false;
  uint64_t listener_token_ = 0;  // 0 until the listener is set
  // The final status, when the stream ended with a write in flight (sent from its OnWriteDone).
  std::optional<grpc::Status> deferred_finish_;
  // The batch being written and its next part; gRPC holds the written parts' slices, which keep
  // the batch alive until it has sent them.
  std::shared_ptr<const WireMessage> current_;
  size_t next_part_ = 0;
  grpc::ByteBuffer buffer_;
};

/// The slices of part `part` of an encoded message, pointing at its memory; each holds a
/// reference to `message` (and what it shares ownership with) until gRPC is done with it.
grpc::ByteBuffer PartBuffer(const std::shared_ptr<const EncodedMessage>& message, size_t part);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_RPC_SAMPLED_MESSAGE_STREAM_H_
