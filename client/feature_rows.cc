#include "client/feature_rows.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstring>

#include "proto/feature_codec.h"

namespace graphstore::client {

size_t DtypeSize(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_INT64:
    case v1::DTYPE_FLOAT64: return 8;
    case v1::DTYPE_INT32:
    case v1::DTYPE_FLOAT32: return 4;
    case v1::DTYPE_FLOAT16:
    case v1::DTYPE_BFLOAT16: return 2;
    case v1::DTYPE_UINT8:
    case v1::DTYPE_BOOL: return 1;
    default: return 0;
  }
}

int PackedBits(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_UINT4: return 4;
    case v1::DTYPE_UINT2: return 2;
    case v1::DTYPE_UINT1: return 1;
    default: return 0;
  }
}

int CodeBits(v1::DType dtype) { return PackedBits(dtype) > 0 ? PackedBits(dtype) : 8; }

size_t RowBytes(v1::DType dtype, int64_t dim) {
  const int bits = PackedBits(dtype);
  const auto d = static_cast<size_t>(dim);
  return bits > 0 ? codec::CodeRowBytes(d, bits) : d * DtypeSize(dtype);
}

v1::DType WireDtype(v1::FeatureEncoding encoding, v1::DType stored) {
  switch (encoding) {
    case v1::FEATURE_ENCODING_FLOAT32: return v1::DTYPE_FLOAT32;
    case v1::FEATURE_ENCODING_FLOAT16: return v1::DTYPE_FLOAT16;
    case v1::FEATURE_ENCODING_BFLOAT16: return v1::DTYPE_BFLOAT16;
    case v1::FEATURE_ENCODING_INT8: return v1::DTYPE_UINT8;
    case v1::FEATURE_ENCODING_INT4: return v1::DTYPE_UINT4;
    case v1::FEATURE_ENCODING_INT2: return v1::DTYPE_UINT2;
    case v1::FEATURE_ENCODING_INT1: return v1::DTYPE_UINT1;
    default: return stored;
  }
}

bool IsCodes(v1::DType wire, bool has_scale) {
  return PackedBits(wire) > 0 || (wire == v1::DTYPE_UINT8 && has_scale);
}

v1::DType OutputDtype(v1::DType wire, bool has_scale, bool decode) {
  if (PackedBits(wire) > 0) return decode ? v1::DTYPE_FLOAT32 : v1::DTYPE_UINT8;
  if (!decode) return wire;
  switch (wire) {
    case v1::DTYPE_FLOAT16:
    case v1::DTYPE_BFLOAT16: return v1::DTYPE_FLOAT32;
    case v1::DTYPE_UINT8: return has_scale ? v1::DTYPE_FLOAT32 : v1::DTYPE_UINT8;
    default: return wire;
  }
}

void DecodeFeatureRows(v1::DType wire, const char* src, size_t rows, size_t dim, const float* scale,
                       const float* offset, float* dst) {
  switch (wire) {
    case v1::DTYPE_FLOAT32: std::memcpy(dst, src, rows * dim * sizeof(float)); return;
    case v1::DTYPE_FLOAT16: codec::HalfToFloat(reinterpret_cast<const uint16_t*>(src), rows * dim, dst); return;
    case v1::DTYPE_BFLOAT16: codec::Bfloat16ToFloat(reinterpret_cast<const uint16_t*>(src), rows * dim, dst); return;
    default:
      codec::DequantizeRows(reinterpret_cast<const uint8_t*>(src), rows, dim, CodeBits(wire), scale, offset, dst);
  }
}

void CopyRowUncached(char* dst, const char* src, size_t bytes) {
#if defined(__SSE2__)
  if ((reinterpret_cast<uintptr_t>(dst) & 15) == 0) {
    size_t i = 0;
    for (; i + 64 <= bytes; i += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
    }
    for (; i + 16 <= bytes; i += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    }
    if (i < bytes) std::memcpy(dst + i, src + i, bytes - i);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

void FinishRowCopies() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace graphstore::client
