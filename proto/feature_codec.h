#ifndef GRAPHSTORE_PROTO_FEATURE_CODEC_H_
#define GRAPHSTORE_PROTO_FEATURE_CODEC_H_

// How feature rows are encoded on the wire (graphstore.v1.FeatureEncoding), shared by the
// servers that encode them and the clients that decode them, so both sides round alike.
//
//   FLOAT16   IEEE 754 half, round to nearest even.
//   BFLOAT16  the upper half of a float32, round to nearest even (NaN stays NaN).
//   INT8      per column c: q = clamp(round((x - offset[c]) / scale[c]), 0, 255) as one byte;
//             x ~= offset[c] + scale[c] * q. With offset = min and scale = (max - min) / 255,
//             inside [min, max] |x - decoded| <= scale / 2 up to float32 rounding (4 ulps of
//             the column's largest magnitude); outside it x decodes to the nearer end of the
//             range; NaN encodes as 0.
//   INT4, INT2, INT1
//             the same with 2^b - 1 steps (b = 4, 2, 1 bits), codes packed along the row: code
//             j of a row at bits [(j*b) % 8, (j*b) % 8 + b) of the row's byte (j*b) / 8, lowest
//             bits first, each row starting on a whole byte (graphstore.v1's DTYPE_UINT4/2/1).
//
// Conversions use the CPU's F16C instructions when it has them, else exact software rounding.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace graphstore::codec {

/// float32 -> float16 / bfloat16 (round to nearest even) and back, `n` values.
void FloatToHalf(const float* src, size_t n, uint16_t* dst);
void HalfToFloat(const uint16_t* src, size_t n, float* dst);
void FloatToBfloat16(const float* src, size_t n, uint16_t* dst);
void Bfloat16ToFloat(const uint16_t* src, size_t n, float* dst);

/// One value of each conversion (the rounding the bulk functions use).
uint16_t FloatToHalf(float x);
float HalfToFloat(uint16_t h);
uint16_t FloatToBfloat16(float x);
float Bfloat16ToFloat(uint16_t b);

/// Bytes of one row of `dim` codes of `bits` (8: one byte each; 4, 2, 1: packed).
inline size_t CodeRowBytes(size_t dim, int bits) { return (dim * static_cast<size_t>(bits) + 7) / 8; }

/// The per-column parameters of `bits`-bit codes (8, 4, 2 or 1) for values in [min[c], max[c]]:
/// offset = min, scale = (max - min) / (2^bits - 1) (1 for a constant column).
void QuantizationParameters(const std::vector<float>& min, const std::vector<float>& max, int bits,
                            std::vector<float>* scale, std::vector<float>* offset);

/// Quantizes `rows` rows of `dim` float32 values into codes of `bits`, CodeRowBytes(dim, bits)
/// bytes a row; values outside a column's range clamp, NaN becomes 0.
void QuantizeRows(const float* src, size_t rows, size_t dim, int bits, const float* scale, const float* offset,
                  uint8_t* dst);
/// One row, given each column's 1 / scale (the gather's form: it computes them once per batch).
void QuantizeRow(const float* src, size_t dim, int bits, const float* inverse_scale, const float* offset,
                 uint8_t* dst);
/// Decodes `rows` rows of `dim` codes of `bits` (CodeRowBytes(dim, bits) bytes a row).
void DequantizeRows(const uint8_t* src, size_t rows, size_t dim, int bits, const float* scale, const float* offset,
                    float* dst);

}  // namespace graphstore::codec

#endif  // GRAPHSTORE_PROTO_FEATURE_CODEC_H_
