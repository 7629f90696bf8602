#include "proto/feature_codec.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace graphstore::codec {
namespace {

uint32_t Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float FromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

bool HasF16c() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}

__attribute__((target("avx,f16c"))) void FloatToHalfF16c(const float* src, size_t n, uint16_t* dst) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}

__attribute__((target("avx,f16c"))) void HalfToFloatF16c(const uint16_t* src, size_t n, float* dst) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// One value: the scalar definition the vector path matches bit for bit (same operations, same
// order; max(0, t) turns NaN into 0). `top` is the largest code, 2^bits - 1.
inline uint8_t QuantizeOne(float x, float inverse_scale, float offset, float top) {
  float t = (x - offset) * inverse_scale;
  t = std::max(0.0f, t);
  t = std::min(top, t);
  return static_cast<uint8_t>(static_cast<int32_t>(t + 0.5f));
}

// Eight columns at a time, one byte per code; returns how many were done.
__attribute__((target("avx2"))) size_t QuantizeAvx2(const float* src, size_t dim, const float* inverse_scale,
                                                     const float* offset, float top_code, uint8_t* dst) {
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(top_code), half = _mm256_set1_ps(0.5f);
  size_t c = 0;
  for (; c + 8 <= dim; c += 8) {
    __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(src + c), _mm256_loadu_ps(offset + c)),
                             _mm256_loadu_ps(inverse_scale + c));
    t = _mm256_max_ps(t, zero);  // a NaN in t gives the second operand, 0
    t = _mm256_min_ps(t, top);
    const __m256i i = _mm256_cvttps_epi32(_mm256_add_ps(t, half));
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + c), _mm_packus_epi16(words, words));
  }
  return c;
}

// One byte per code for `dim` columns.
void QuantizeBytes(const float* src, size_t dim, const float* inverse_scale, const float* offset, float top,
                   uint8_t* dst) {
  size_t c = HasAvx2() ? QuantizeAvx2(src, dim, inverse_scale, offset, top, dst) : 0;
  for (; c < dim; ++c) dst[c] = QuantizeOne(src[c], inverse_scale[c], offset[c], top);
}

// Packed codes go through blocks of this many columns, one byte each: a whole number of bytes
// packed for every width.
constexpr size_t kBlock = 64;

// `n` one-byte codes of `bits` packed into CodeRowBytes(n, bits) bytes: a loop per width, each
// simple enough for the compiler to vectorise.
template <int kBits>
void PackWidth(const uint8_t* codes, size_t n, uint8_t* dst) {
  constexpr size_t kPerByte = 8 / kBits;
  const size_t whole = n / kPerByte;
  for (size_t i = 0; i < whole; ++i) {
    uint8_t byte = 0;
    for (size_t k = 0; k < kPerByte; ++k) byte |= static_cast<uint8_t>(codes[i * kPerByte + k] << (k * kBits));
    dst[i] = byte;
  }
  if (whole * kPerByte < n) {
    uint8_t byte = 0;
    for (size_t k = 0; whole * kPerByte + k < n; ++k) byte |= static_cast<uint8_t>(codes[whole * kPerByte + k] << (k * kBits));
    dst[whole] = byte;
  }
}

void Pack(const uint8_t* codes, size_t n, int bits, uint8_t* dst) {
  switch (bits) {
    case 4: return PackWidth<4>(codes, n, dst);
    case 2: return PackWidth<2>(codes, n, dst);
    default: return PackWidth<1>(codes, n, dst);
  }
}

template <int kBits>
void UnpackWidth(const uint8_t* src, size_t n, uint8_t* codes) {
  constexpr size_t kPerByte = 8 / kBits;
  constexpr uint8_t kMask = (1u << kBits) - 1;
  const size_t whole = n / kPerByte;
  for (size_t i = 0; i < whole; ++i) {
    for (size_t k = 0; k < kPerByte; ++k) codes[i * kPerByte + k] = static_cast<uint8_t>(src[i] >> (k * kBits)) & kMask;
  }
  for (size_t j = whole * kPerByte; j < n; ++j) {
    codes[j] = static_cast<uint8_t>(src[whole] >> ((j - whole * kPerByte) * kBits)) & kMask;
  }
}

void Unpack(const uint8_t* src, size_t n, int bits, uint8_t* codes) {
  switch (bits) {
    case 4: return UnpackWidth<4>(src, n, codes);
    case 2: return UnpackWidth<2>(src, n, codes);
    default: return UnpackWidth<1>(src, n, codes);
  }
}

__attribute__((target("avx2"))) size_t DequantizeAvx2(const uint8_t* src, size_t dim, const float* scale,
                                                       const float* offset, float* dst) {
  size_t c = 0;
  for (; c + 8 <= dim; c += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + c));
    const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    _mm256_storeu_ps(dst + c, _mm256_add_ps(_mm256_loadu_ps(offset + c), _mm256_mul_ps(_mm256_loadu_ps(scale + c), q)));
  }
  return c;
}

void DequantizeBytes(const uint8_t* src, size_t dim, const float* scale, const float* offset, float* dst) {
  size_t c = HasAvx2() ? DequantizeAvx2(src, dim, scale, offset, dst) : 0;
  for (; c < dim; ++c) dst[c] = offset[c] + scale[c] * static_cast<float>(src[c]);
}

}  // namespace

uint16_t FloatToHalf(float f) {
  // Round to nearest even, as F16C does (Fabian Giesen's float_to_half_fast3_rtne).
  constexpr uint32_t kInfinity = 255u << 23;
  constexpr uint32_t kHalfMax = (127u + 16) << 23;
  constexpr uint32_t kDenormMagic = ((127u - 15) + (23 - 10) + 1) << 23;
  uint32_t x = Bits(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint16_t out;
  if (x >= kHalfMax) {
    out = x > kInfinity ? 0x7e00 : 0x7c00;  // NaN stays NaN, too large becomes infinite
  } else if (x < (113u << 23)) {
    // A subnormal or zero half: the float addition rounds the mantissa into place.
    const uint32_t r = Bits(FromBits(x) + FromBits(kDenormMagic));
    out = static_cast<uint16_t>(r - kDenormMagic);
  } else {
    const uint32_t odd = (x >> 13) & 1;
    x += ((15u - 127u) << 23) + 0xfff;
    x += odd;
    out = static_cast<uint16_t>(x >> 13);
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return FromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return FromBits(sign);
    // Subnormal: normalise.
    exponent = 127 - 15 + 1;
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3ff;
    return FromBits(sign | (exponent << 23) | (mantissa << 13));
  }
  return FromBits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

uint16_t FloatToBfloat16(float f) {
  const uint32_t x = Bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

float Bfloat16ToFloat(uint16_t b) { return FromBits(static_cast<uint32_t>(b) << 16); }

void FloatToHalf(const float* src, size_t n, uint16_t* dst) {
  if (HasF16c()) return FloatToHalfF16c(src, n, dst);
  for (size_t i = 0; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}

void HalfToFloat(const uint16_t* src, size_t n, float* dst) {
  if (HasF16c()) return HalfToFloatF16c(src, n, dst);
  for (size_t i = 0; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

void FloatToBfloat16(const float* src, size_t n, uint16_t* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = FloatToBfloat16(src[i]);
}

void Bfloat16ToFloat(const uint16_t* src, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = Bfloat16ToFloat(src[i]);
}

void QuantizationParameters(const std::vector<float>& min, const std::vector<float>& max, int bits,
                            std::vector<float>* scale, std::vector<float>* offset) {
  const float steps = static_cast<float>((1u << bits) - 1);
  scale->resize(min.size());
  offset->resize(min.size());
  for (size_t c = 0; c < min.size(); ++c) {
    const float range = max[c] - min[c];
    (*offset)[c] = min[c];
    (*scale)[c] = range > 0 ? range / steps : 1.0f;
  }
}

void QuantizeRow(const float* src, size_t dim, int bits, const float* inverse_scale, const float* offset,
                 uint8_t* dst) {
  const float top = static_cast<float>((1u << bits) - 1);
  if (bits == 8) return QuantizeBytes(src, dim, inverse_scale, offset, top, dst);
  uint8_t codes[kBlock];
  for (size_t c = 0; c < dim; c += kBlock) {
    const size_t n = std::min(kBlock, dim - c);
    QuantizeBytes(src + c, n, inverse_scale + c, offset + c, top, codes);
    Pack(codes, n, bits, dst + CodeRowBytes(c, bits));
  }
}

void QuantizeRows(const float* src, size_t rows, size_t dim, int bits, const float* scale, const float* offset,
                  uint8_t* dst) {
  std::vector<float> inverse(dim);
  for (size_t c = 0; c < dim; ++c) inverse[c] = 1.0f / scale[c];
  const size_t row_bytes = CodeRowBytes(dim, bits);
  for (size_t r = 0; r < rows; ++r) QuantizeRow(src + r * dim, dim, bits, inverse.data(), offset, dst + r * row_bytes);
}

void DequantizeRows(const uint8_t* src, size_t rows, size_t dim, int bits, const float* scale, const float* offset,
                    float* dst) {
  const size_t row_bytes = CodeRowBytes(dim, bits);
  uint8_t codes[kBlock];
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* in = src + r * row_bytes;
    float* out = dst + r * dim;
    if (bits == 8) {
      DequantizeBytes(in, dim, scale, offset, out);
      continue;
    }
    for (size_t c = 0; c < dim; c += kBlock) {
      const size_t n = std::min(kBlock, dim - c);
      Unpack(in + CodeRowBytes(c, bits), n, bits, codes);
      DequantizeBytes(codes, n, scale + c, offset + c, out + c);
    }
  }
}

}  // namespace graphstore::codec
