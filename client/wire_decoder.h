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
// - feature rows in a compact encoding are decoded to float32 (proto/feature_codec.h), or kept
//   encoded with their per-column scale and offset;
// - rows the trainer caches (NodeTensors.cached) are filled in from its FeatureCache, so `x`
//   has every sampled node's row in node order.
//
// No LibTorch and no gRPC types: the Loader views the decoded memory as at::Tensors.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/buffer_pool.h"
#include "client/feature_rows.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// A run of received bytes.
struct Span {
  const char* data = nullptr;
  size_t size = 0;
};

/// A decoded tensor: its dtype and full shape, its bytes in a pooled buffer.
struct DecodedTensor {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  std::shared_ptr<Buffer> buffer;
  char* data = nullptr;
  size_t bytes = 0;
  bool defined() const { return dtype != v1::DTYPE_UNSPECIFIED; }
};

/// One node type of a decoded batch.
struct DecodedNodes {
  std::string node_type;
  /// int64 [n] global ids (seeds first), int64 [hops + 1], int64 [b] seeds as registered,
  /// int64 [n] labels.
  DecodedTensor ids, num_sampled_nodes, batch, labels;
  /// Temporal batches: int64 [b] each seed's time, int64 [n] the time each node was sampled
  /// at; with_node_times: int64 [n] each node's stored time (types that store node times).
  DecodedTensor seed_times, times, sampled_times;
  /// The seed type's int64 [b]: each seed's position in the channel's input (PyG's input_id).
  DecodedTensor input_ids;
  /// [n, dim]: every node's feature row in node order (cached rows filled in): float32, or the
  /// wire encoding when DecodeOptions::decode_features is false.
  DecodedTensor features;
  /// Quantized rows left encoded only: float32 [dim] each column's scale and offset, and the
  /// bits of each code (8: features is uint8 [n, dim]; 4, 2, 1: uint8 [n, ceil(dim * bits / 8)],
  /// the codes packed as graphstore.v1's DTYPE_UINT4 / UINT2 / UINT1 lay them out).
  DecodedTensor feature_scale, feature_offset;
  int feature_bits = 0;
};

/// One edge type of a decoded batch (named as stored).
struct DecodedEdges {
  std::string edge_type;
  /// int64 [2, m]: row 0 the sampled neighbours (messages' sources), row 1 the nodes that
  /// sampled them, as local indices.
  DecodedTensor edge_index;
  DecodedTensor eids, num_sampled_edges, features;
};

struct DecodedAblp {
  std::string supervision_edge_type;
  DecodedTensor anchors, positive, negative;
};

struct DecodedPpr {
  std::string seed_type, node_type;
  DecodedTensor seed_index, node_index, weight;
};

/// A whole decoded batch.
struct DecodedBatch {
  uint64_t channel_id = 0;
  int64_t epoch = 0;
  int64_t batch_index = 0;
  int64_t num_batches = 0;
  std::vector<DecodedNodes> nodes;
  std::vector<DecodedEdges> edges;
  std::optional<DecodedAblp> ablp;
  std::vector<DecodedPpr> ppr;
  /// Bytes received for the batch.
  size_t wire_bytes = 0;
};

/// The feature rows a trainer keeps (RegisterSamplingInputRequest.feature_cache_rows), per node
/// type, in the form batches need them (decoded or encoded). Read-only once filled.
struct FeatureCache {
  struct Type {
    /// Per global id: the row holding the node, -1 when not cached.
    std::vector<int32_t> slot_of;
    /// Row-major rows, row_bytes each, of `dtype`.
    std::vector<char> rows;
    v1::DType dtype = v1::DTYPE_FLOAT32;
    int64_t dim = 0;
    size_t row_bytes = 0;
  };
  std::map<std::string, Type> types;
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
