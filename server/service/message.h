#ifndef GRAPHSTORE_SERVER_SERVICE_MESSAGE_H_
#define GRAPHSTORE_SERVER_SERVICE_MESSAGE_H_

// Conversions from the storage and sampling core's plain types to graphstore.v1 messages.
// Protobuf messages only: no gRPC.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

#include "graphstore/v1/graphstore.pb.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "server/sampling/sampler.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// The wire dtype of a storage dtype.
v1::DType ToProtoDtype(NpyDtype dtype);
/// The wire type of a node type's feature rows: ToProtoDtype of their dtype, or the packed
/// DTYPE_UINT4 / UINT2 / UINT1 of their codes.
v1::DType FeatureDtype(const SampledNodes& nodes);

/// Fills `out` with `bytes` bytes of `dtype` elements shaped `shape` (copied).
void SetTensor(v1::DType dtype, const std::vector<int64_t>& shape, const void* data, size_t bytes,
               v1::Tensor* out);

/// A 1-D int64 tensor of `values`.
void SetInt64Tensor(const std::vector<int64_t>& values, v1::Tensor* out);

/// A 1-D tensor of `values`: int32 when `compact` and every value fits, else int64.
void SetIdTensor(const std::vector<int64_t>& values, bool compact, v1::Tensor* out);
/// A 1-D tensor of counts (each >= 0): uint8 when `narrow` and every count is below 256, else
/// as SetIdTensor.
void SetCountTensor(const std::vector<int64_t>& counts, bool narrow, bool compact, v1::Tensor* out);

/// One tensor of a sampled message: its field number in its entry, and its bytes (pointing
/// into the subgraph it describes).
struct TensorField {
  int number = 0;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  const char* data = nullptr;
  size_t bytes = 0;
  /// Never split over parts: it travels whole in part 0 (a decoder needs it before any row).
  bool whole = false;
};

/// One entry of a sampled message: a NodeTensors, EdgeTensors, AblpLabels or PprWeights
/// (`number` is its field in SampledMessage), with its string fields and tensors.
struct MessageEntry {
  int number = 0;
  std::vector<std::pair<int, std::string>> strings;
  std::vector<TensorField> tensors;
};

/// A sampled subgraph as graphstore.v1.SampledMessage lays it out: the one description both
/// the protobuf message (ToSampledMessage) and the socket's wire encoding (wire_encoder.h)
/// are built from. Types with nothing sampled are still listed, with empty tensors, so a
/// homogeneous graph always has exactly one entry each. Local indices (rows, cols) are int32.
std::vector<MessageEntry> MessageEntries(const Partition& partition, const SampledSubgraph& subgraph);

/// Writes a sampled subgraph's tensors into `msg` (nodes and edges per type, named by the
/// partition's types). Types with nothing sampled are still listed, with empty tensors, so a
/// homogeneous graph always has exactly one entry each.
void ToSampledMessage(const Partition& partition, const SampledSubgraph& subgraph, v1::SampledMessage* msg);

/// A shared buffer being filled with one message's tensors.
struct SharedLayout {
  std::shared_ptr<SharedUse> use;
  /// Bytes at the start of the file already taken (feature matrices gathered into it).
  size_t used = 0;
};

/// Sets `subgraph->feature_target` so that the sampler gathers feature matrices straight into a
/// buffer of `pool` big enough for the whole message; `layout` receives it. Both must outlive
/// the Sample call.
void GatherIntoSharedBuffer(SharedBufferPool* pool, SampledSubgraph* subgraph, SharedLayout* layout);

/// Like ToSampledMessage, but the tensor bytes go into a shared buffer: `layout->use` if the
/// sampler filled one (features already in place), else one of `pool`. Each tensor gets a
/// 64-byte aligned `shared` slice, `msg->shared_buffer` names the use, and files the pool
/// deleted lately are listed in `msg->retired_shared_paths`.
absl::Status ToSharedSampledMessage(const Partition& partition, const SampledSubgraph& subgraph,
                                    SharedBufferPool* pool, SharedLayout* layout, v1::SampledMessage* msg);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_MESSAGE_H_
