#ifndef GRAPHSTORE_CLIENT_FEATURE_ROWS_H_
#define GRAPHSTORE_CLIENT_FEATURE_ROWS_H_

// Feature rows as the client receives them, in one place for every path that receives them:
// the stream decoder (client/wire_decoder.h) and the trainer's feature cache
// (client/loader_core.cc). Sizes of wire dtypes, the dtype an encoding travels in, and decoding
// rows to float32 with proto/feature_codec.h. No gRPC, no LibTorch.

#include <cstddef>
#include <cstdint>

#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// Bytes per element of a wire dtype (0 for an unknown one, and for the packed ones).
size_t DtypeSize(v1::DType dtype);
/// Bits per element of the packed wire dtypes (DTYPE_UINT4, UINT2, UINT1); 0 for the others.
int PackedBits(v1::DType dtype);
/// Bits of each code of a quantised wire dtype: the packed ones' bits, 8 for DTYPE_UINT8.
int CodeBits(v1::DType dtype);
/// Bytes of a row of `dim` elements of a wire dtype (packed ones start each row on a byte).
size_t RowBytes(v1::DType dtype, int64_t dim);
/// The wire dtype of feature rows stored as `stored` and sent in `encoding` (UNSPECIFIED: as
/// stored).
v1::DType WireDtype(v1::FeatureEncoding encoding, v1::DType stored);

/// Whether rows in wire dtype `wire` are quantised codes: packed ones, or uint8 sent with each
/// column's scale and offset (`has_scale`; uint8 without is plain data).
bool IsCodes(v1::DType wire, bool has_scale);
/// The dtype rows that arrived in `wire` are handed out in: float32 when `decode` and they are
/// float16, bfloat16 or codes; packed codes kept encoded as a uint8 byte matrix of their rows;
/// otherwise as they came.
v1::DType OutputDtype(v1::DType wire, bool has_scale, bool decode);

/// Writes `rows` rows of `dim` columns that arrived in wire dtype `wire` (RowBytes(wire, dim)
/// bytes each, back to back) to `dst` as float32: FLOAT32 copied, FLOAT16 and BFLOAT16 widened,
/// quantised codes (UINT8 and the packed UINT4 / UINT2 / UINT1) dequantised with each column's
/// `scale` and `offset` (`dim` floats each; unread for the other dtypes).
void DecodeFeatureRows(v1::DType wire, const char* src, size_t rows, size_t dim, const float* scale,
                       const float* offset, float* dst);

/// Copies one row of `bytes` into a batch that is larger than the caches, bypassing them where
/// `dst` is 16-byte aligned (streaming stores: the destination's lines are not first read in).
/// Rows scattered one by one would otherwise read each line before writing it. Call
/// FinishRowCopies before the rows are read by another thread.
void CopyRowUncached(char* dst, const char* src, size_t bytes);
/// Orders the streaming stores of CopyRowUncached before later stores.
void FinishRowCopies();

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_FEATURE_ROWS_H_
