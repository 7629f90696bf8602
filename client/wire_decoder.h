#ifndef GRAPHSTORE_CLIENT_WIRE_DECODER_H_
#define GRAPHSTORE_CLIENT_WIRE_DECODER_H_

// Decodes sampled batches straight from the bytes gRPC received (the SampledMessage wire format,
// in the pieces it arrived in) into the tensors a trainer uses: one copy from the receive buffers
// into pooled memory, no protobuf message in between. Along the way, in the same pass:
//
// - a batch sent in several parts (SampledMessage.part) is assembled, each part decoded as it
//   arrives, so decoding overlaps the transfer of the next part;
// - int32 local indices are widened to int64 and laid out as edge_index [2, m] in
//   message-passing direction (neighbour -> node that sampled it), as PyG's MessagePassing takes;
// - feature rows in a compact encoding are decoded to float32 (client/feature_rows.h), or kept
//   encoded with their per-column scale and offset;
// - rows the trainer caches (NodeTensors.cached) are filled in from its FeatureCache, so `x`
//   has every sampled node's row in node order (rows left to owners: client/own_nodes.h,
//   client/owner_rows.h).
//
// No LibTorch and no gRPC types: the Loader views the decoded memory as at::Tensors.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "client/buffer_pool.h"
#include "client/decoded_batch.h"
#include "client/feature_rows.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// A run of received bytes.
struct Span {
  const char* data = nullptr;
  size_t size = 0;
};

/// How batches are decoded.
struct DecodeOptions {
  /// The dataset's CSR rows are sources (edge_dir "out"); else destinations.
  bool rows_are_sources = true;
  /// float32 features (the default); false keeps the wire encoding (float16, bfloat16, or INT8
  /// with its scale and offset) for the trainer to decode on its device.
  bool decode_features = true;
  /// The trainer's cache, for channels that have one; must outlive the decoder.
  const FeatureCache* cache = nullptr;
  /// Where decoded tensors live.
  std::shared_ptr<BufferPool> pool;
  /// Called on the decoding thread once a node type's ids and owners (rows_from_owners) are
  /// whole, its other tensors allocated, while the rest of the batch may still be on its way:
  /// the owners can be asked for their rows meanwhile (client/owner_rows.h). The nodes share
  /// their buffers with the batch.
  std::function<void(const DecodedNodes&)> owners_known;
  /// The partition of the server sending the stream (-1: not known): with owners, what it sends
  /// of its own nodes alone is placed by it (client/own_nodes.h).
  int sender = -1;
};

/// Assembles and decodes the batches of one stream, part by part. Not thread-safe.
class BatchDecoder {
 public:
  explicit BatchDecoder(DecodeOptions options);
  ~BatchDecoder();
  BatchDecoder(const BatchDecoder&) = delete;
  BatchDecoder& operator=(const BatchDecoder&) = delete;

  /// Decodes one received message (a SampledMessage encoding in pieces). Returns the batch once
  /// its last part is in, nullptr before; DataLoss naming the problem for a malformed message
  /// or parts out of order.
  absl::StatusOr<std::shared_ptr<DecodedBatch>> Add(const std::vector<Span>& message);

 private:
  class State;
  DecodeOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_WIRE_DECODER_H_
