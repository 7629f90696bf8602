#ifndef GRAPHSTORE_SERVER_MESSAGE_H_
#define GRAPHSTORE_SERVER_MESSAGE_H_

// Conversions from the storage and sampling core's plain types to graphstore.v1 messages.
// Protobuf messages only: no gRPC.

#include <cstdint>
#include <vector>

#include "graphstore/v1/graphstore.pb.h"
#include "server/npy.h"
#include "server/partition.h"
#include "server/sampler.h"

namespace graphstore {

/// The wire dtype of a storage dtype.
v1::DType ToProtoDtype(NpyDtype dtype);

/// Fills `out` with `bytes` bytes of `dtype` elements shaped `shape` (copied).
void SetTensor(v1::DType dtype, const std::vector<int64_t>& shape, const void* data, size_t bytes,
               v1::Tensor* out);

/// A 1-D int64 tensor of `values`.
void SetInt64Tensor(const std::vector<int64_t>& values, v1::Tensor* out);

/// Writes a sampled subgraph's tensors into `msg` (nodes and edges per type, named by the
/// partition's types). Types with nothing sampled are still listed, with empty tensors, so a
/// homogeneous graph always has exactly one entry each.
void ToSampledMessage(const Partition& partition, const SampledSubgraph& subgraph, v1::SampledMessage* msg);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_MESSAGE_H_
