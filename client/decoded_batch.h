#ifndef GRAPHSTORE_CLIENT_DECODED_BATCH_H_
#define GRAPHSTORE_CLIENT_DECODED_BATCH_H_

// A sampled batch as the client decoded it from the bytes it received (client/wire_decoder.h):
// its tensors in pooled memory, per node type and edge type, and the trainer's feature cache
// whose rows the decoder fills in. The LoaderCore views these as HostBatch tensors.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/batch_tensors.h"
#include "client/buffer_pool.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// A decoded tensor: its dtype and full shape, its bytes in a pooled buffer.
struct DecodedTensor {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  std::shared_ptr<Buffer> buffer;
  char* data = nullptr;
  size_t bytes = 0;
  bool defined() const { return dtype != v1::DTYPE_UNSPECIFIED; }
};

/// One node type of a decoded batch: its tensors (client/batch_tensors.h) with `x` holding every
/// sampled node's row in node order (cached rows filled in): float32, or the wire encoding when
/// DecodeOptions::decode_features is false.
struct DecodedNodes : NodeTensorsOf<DecodedTensor> {
  std::string node_type;
  /// int64 [hops + 1]: nodes added at each hop.
  DecodedTensor num_sampled_nodes;
  /// Quantized rows left encoded: the bits of each code (8: x is uint8 [n, dim]; 4, 2, 1:
  /// uint8 [n, ceil(dim * bits / 8)], the codes packed as graphstore.v1's DTYPE_UINT4 / UINT2 /
  /// UINT1 lay them out); 0 otherwise.
  int feature_bits = 0;
  /// With rows_from_owners, uint8 [n] up to 256 partitions, int32 [n] beyond: the partition
  /// owning each node; the rows and labels of nodes another partition owns are filled in from
  /// their owners (client/owner_rows.h).
  DecodedTensor owners;

  /// Whether `owners` has one entry of a known width per node of `n_id`.
  bool OwnersMatchIds() const {
    const size_t count = n_id.bytes / 8;
    return (owners.dtype == v1::DTYPE_UINT8 && owners.bytes == count) ||
           (owners.dtype == v1::DTYPE_INT32 && owners.bytes == count * 4);
  }
  /// Node i's owner (OwnersMatchIds checked).
  int32_t OwnerAt(size_t i) const {
    if (owners.dtype == v1::DTYPE_UINT8) return reinterpret_cast<const uint8_t*>(owners.data)[i];
    return reinterpret_cast<const int32_t*>(owners.data)[i];
  }
};

/// One edge type of a decoded batch (named as stored), edge_index in message-passing direction.
struct DecodedEdges : EdgeTensorsOf<DecodedTensor> {
  std::string edge_type;
  DecodedTensor num_sampled_edges;
};

struct DecodedAblp {
  std::string supervision_edge_type;
  DecodedTensor anchors, positive, negative;

  /// The tensor AblpLabels field `number` decodes into (null: one this client does not keep).
  DecodedTensor* Field(int number) {
    return number == v1::AblpLabels::kAnchorsFieldNumber    ? &anchors
           : number == v1::AblpLabels::kPositiveFieldNumber ? &positive
           : number == v1::AblpLabels::kNegativeFieldNumber ? &negative
                                                            : nullptr;
  }
};

struct DecodedPpr {
  std::string seed_type, node_type;
  DecodedTensor seed_index, node_index, weight;

  /// The tensor PprWeights field `number` decodes into (any other tensor field is the weights).
  DecodedTensor* Field(int number) {
    return number == v1::PprWeights::kSeedIndexFieldNumber   ? &seed_index
           : number == v1::PprWeights::kNodeIndexFieldNumber ? &node_index
                                                             : &weight;
  }
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
  /// Feature bytes that waited for the batch's last part before they could be placed (rows
  /// that arrived before the cached mask or the scales that place or decode them): copied twice.
  size_t staged_bytes = 0;
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

  /// The cache of `node_type`, or null.
  const Type* Find(const std::string& node_type) const {
    auto it = types.find(node_type);
    return it != types.end() ? &it->second : nullptr;
  }
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_DECODED_BATCH_H_
