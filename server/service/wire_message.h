#ifndef GRAPHSTORE_SERVER_SERVICE_WIRE_MESSAGE_H_
#define GRAPHSTORE_SERVER_SERVICE_WIRE_MESSAGE_H_

// What passes from the service's workers to the gRPC adapter for each batch: made by
// SamplingWorkers (worker.h), buffered by the scheduler as an opaque payload, written by the
// stream reactor (server/rpc/sampled_message_stream.h).

#include <memory>

#include "server/service/stream_host.h"
#include "server/service/wire_encoder.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// A sampled batch as the backend buffers it and a stream sends it: its encoded parts, and on a
/// shared-memory channel the use of the file holding its tensor bytes (the file returns to its
/// pool with the last reference).
struct WireMessage {
  std::unique_ptr<EncodedMessage> encoded;
  std::shared_ptr<SharedUse> shared;
  /// What the batch counts for once sent.
  BatchCounts counts;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_WIRE_MESSAGE_H_
