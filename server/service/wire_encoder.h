#ifndef GRAPHSTORE_SERVER_SERVICE_WIRE_ENCODER_H_
#define GRAPHSTORE_SERVER_SERVICE_WIRE_ENCODER_H_

// graphstore.v1.SampledMessage in protobuf's wire format, written without building a protobuf
// message: the small fields (tags, lengths, ids of small tensors) are written into an arena,
// and the bytes of large tensors are referenced where the sampler left them, so they reach the
// socket without being copied again. Any protobuf parser reads the result as SampledMessage.
//
// A batch larger than the part size is split (SampledMessage.part, Tensor.byte_offset; the
// proto says exactly what each part carries): part 0 names every tensor with its dtype and full
// shape and carries the whole rows that fit, later parts the rest of the node and edge tensors
// (each piece repeating its tensor's dtype and shape), so the client decodes one part while the
// next is on the wire. Tensors marked `whole` (a quantized encoding's scale and offset) and
// link-prediction and PPR entries are always complete in part 0.
// Within a Tensor the encoder writes byte_offset before data (protobuf accepts fields in any
// order), so a streaming decoder knows where the bytes go before they arrive.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphstore/v1/graphstore.pb.h"
#include "server/service/message.h"

namespace graphstore {

/// One or more SampledMessage encodings, ready to send. Plain memory: the gRPC adapter turns
/// each part's segments into slices.
struct EncodedMessage {
  /// A run of bytes of a part.
  struct Segment {
    const char* data = nullptr;
    size_t size = 0;
  };
  /// Each part's segments; concatenated, one SampledMessage.
  std::vector<std::vector<Segment>> parts;
  /// Total bytes of all parts.
  size_t bytes = 0;
  /// The fields written by the encoder (segments point into it; never resized after encoding).
  std::string arena;
  /// Keeps the memory of the referenced tensor bytes alive.
  std::shared_ptr<const void> owner;
};

/// The batch coordinates every part carries.
struct WireHeader {
  uint64_t channel_id = 0;
  int64_t epoch = 0;
  int64_t batch_index = 0;
  int64_t num_batches = 0;
};

/// Encodes `entries` (MessageEntries of a subgraph that `owner` keeps alive) as parts of about
/// `part_bytes` each (at least one; 0: one part). Tensor bytes below `copy_below` are copied into
/// the arena, larger ones referenced.
std::unique_ptr<EncodedMessage> EncodeParts(const WireHeader& header, const std::vector<MessageEntry>& entries,
                                            size_t part_bytes, size_t copy_below, std::shared_ptr<const void> owner);

/// One part: `head` (a serialised message, copied) followed, for each (field, bytes) of
/// `tensor_data`, by that Tensor field once more holding only its `data`, referenced where it
/// lies (copied below `copy_below`; `owner` keeps it alive). Protobuf merges a message field
/// that occurs twice, so any parser reads one message whose tensors carry those bytes: a reply
/// mostly made of rows goes out without copying them into a serialised message.
std::unique_ptr<EncodedMessage> EncodeWithTensorData(const std::string& head,
                                                     const std::vector<std::pair<int, std::string_view>>& tensor_data,
                                                     size_t copy_below, std::shared_ptr<const void> owner);

/// A whole protobuf message as one part (copied into the arena): shared-memory messages, whose
/// tensors are byte ranges in a file and small.
std::unique_ptr<EncodedMessage> EncodeWhole(const v1::SampledMessage& message);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_WIRE_ENCODER_H_
