#ifndef GRAPHSTORE_CLIENT_HOST_BATCH_H_
#define GRAPHSTORE_CLIENT_HOST_BATCH_H_

// A sampled batch as the torch-free client core hands it out: typed tensors in host memory,
// each a view (dtype, shape, address) plus a reference that keeps its bytes alive. The bytes
// are the decoded buffers of a socket stream or a mapped shared-memory file; nothing here
// copies them. The LibTorch Loader (client/loader.h) wraps each view in an at::Tensor, the
// Python extension in a DLPack capsule any torch can take. No LibTorch, no gRPC types.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/batch_tensors.h"
#include "graphstore/v1/types.pb.h"

namespace graphstore::client {

/// One tensor of a batch: `shape` elements of `dtype`, row-major at `data`. Undefined (dtype
/// UNSPECIFIED) for a field the batch does not carry. `owner` keeps the bytes alive; a tensor
/// with no elements may have a null `data`.
struct HostTensor {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  const char* data = nullptr;
  size_t bytes = 0;
  std::shared_ptr<const void> owner;

  bool defined() const { return dtype != v1::DTYPE_UNSPECIFIED; }
  int64_t numel() const;
};

/// The tensors of one node type in a batch (client/batch_tensors.h says what each holds;
/// input_id is defined for the seed type only).
struct HostNodes : NodeTensorsOf<HostTensor> {
  /// Quantized codes kept as they travelled: the bits of each code (see NodeView); else 0.
  int x_bits = 0;
  int64_t batch_size = 0;
  std::vector<int64_t> num_sampled_nodes;
};

/// The edges of one edge type in a batch, in message-passing direction (see client::EdgeView).
struct HostEdges : EdgeTensorsOf<HostTensor> {
  std::string stored_type;
  std::vector<int64_t> num_sampled_edges;
};

/// Link-prediction labels of a batch, as local indices (see v1::AblpLabels).
struct HostAblp {
  HostTensor anchors, positive, negative;
};

/// PPR weights of one (seed type, node type) pair (see v1::PprWeights).
struct HostPpr {
  std::string seed_type, node_type;
  HostTensor seed_index, node_index, weight;
};

/// One sampled subgraph in host memory.
struct HostBatch {
  int64_t epoch = 0;
  int64_t batch_index = 0;
  /// Which server (index into LoaderOptions::servers) produced it.
  int server = 0;
  /// Its tensors view a mapped shared-memory file (else decoded socket bytes).
  bool shared_memory = false;
  /// Bytes received over the connection for it (0 through shared memory).
  size_t wire_bytes = 0;
  /// Every node type by name, and every edge type by its message-passing name.
  std::map<std::string, HostNodes> nodes;
  std::map<std::string, HostEdges> edges;
  /// The keys of the first node and edge type (the homogeneous view); empty when none.
  std::string first_node_type, first_edge_type;
  /// The seed type's input_id (see HostNodes), and that type; undefined and empty for a batch
  /// without one (link prediction, or split seeds batched per server).
  HostTensor input_id;
  std::string input_type;
  std::optional<HostAblp> ablp;
  std::vector<HostPpr> ppr;
  /// (address, size) of every block of memory the tensors view: a test's way to check that
  /// nothing was copied on the way to the trainer.
  std::vector<std::pair<const void*, size_t>> memory;

  /// The first node type's, and edge type's, views (null when the batch has none).
  const HostNodes* first_nodes() const;
  const HostEdges* first_edges() const;
};

/// Bytes per element of a dtype as a batch's tensors carry it (0 for the packed wire dtypes,
/// which batches hand out as uint8 bytes, and for unknown ones).
size_t HostDtypeSize(v1::DType dtype);

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_HOST_BATCH_H_
