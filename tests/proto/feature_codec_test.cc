// The feature encodings shared by servers and clients: float16 and bfloat16 round to nearest
// even and the bulk (F16C) path agrees with the scalar one bit for bit; INT8 stays within half
// a step of each column and clamps outside its range.

#include "proto/feature_codec.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace graphstore::codec {
namespace {

float FromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Float bit patterns across every exponent, plus the special values.
std::vector<float> Samples() {
  std::vector<float> v;
  for (uint64_t x = 0; x <= 0xffffffffull; x += 65521) v.push_back(FromBits(static_cast<uint32_t>(x)));
  for (float f : {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, 1e-8f, 6.1e-5f, 5.96e-8f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()}) {
    v.push_back(f);
  }
  return v;
}

TEST_CASE("float16: every half survives a round trip; bulk and scalar agree", "[codec]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    float bulk;
    const uint16_t hh = static_cast<uint16_t>(h);
    HalfToFloat(&hh, 1, &bulk);
    if (std::isnan(f)) {
      CHECK(std::isnan(bulk));
      CHECK(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    REQUIRE(std::memcmp(&f, &bulk, 4) == 0);
    REQUIRE(FloatToHalf(f) == h);
  }
  const std::vector<float> in = Samples();
  std::vector<uint16_t> bulk(in.size());
  FloatToHalf(in.data(), in.size(), bulk.data());
  for (size_t i = 0; i < in.size(); ++i) {
    const float x = in[i];
    INFO(x);
    if (std::isnan(x)) {
      CHECK(std::isnan(HalfToFloat(bulk[i])));
      CHECK(std::isnan(HalfToFloat(FloatToHalf(x))));
      continue;
    }
    REQUIRE(bulk[i] == FloatToHalf(x));
    const float back = HalfToFloat(bulk[i]);
    if (std::fabs(x) >= 65520.0f) {
      CHECK(std::isinf(back));
    } else {
      // Half a unit in the last place: 2^-11 relative, or 2^-25 among the subnormals.
      CHECK(std::fabs(back - x) <= std::max(std::fabs(x) * std::ldexp(1.0f, -11), std::ldexp(1.0f, -25)));
    }
  }
  // Ties go to even.
  CHECK(FloatToHalf(1.0f + std::ldexp(1.0f, -11)) == FloatToHalf(1.0f));
  CHECK(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == FloatToHalf(1.0f + std::ldexp(1.0f, -9)));
}

TEST_CASE("bfloat16: within 2^-8 relative, ties to even, NaN stays NaN", "[codec]") {
  const std::vector<float> in = Samples();
  std::vector<uint16_t> enc(in.size());
  std::vector<float> out(in.size());
  FloatToBfloat16(in.data(), in.size(), enc.data());
  Bfloat16ToFloat(enc.data(), enc.size(), out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    INFO(in[i]);
    if (std::isnan(in[i])) {
      CHECK(std::isnan(out[i]));
    } else if (std::isfinite(out[i])) {
      // Relative among normal numbers; among subnormals half of bfloat16's spacing, 2^-134.
      CHECK(std::fabs(out[i] - in[i]) <= std::max(std::fabs(in[i]) * std::ldexp(1.0f, -8), std::ldexp(1.0f, -134)));
    } else {
      CHECK(std::fabs(in[i]) >= FromBits(0x7f7f8000u));  // rounds past the largest bfloat16
    }
  }
  CHECK(FloatToBfloat16(1.0f + std::ldexp(1.0f, -8)) == FloatToBfloat16(1.0f));
}

TEST_CASE("int8: half a step per column, clamped outside the range, constant columns exact", "[codec]") {
  const size_t dim = 5, rows = 2000;
  std::vector<float> min = {-1.0f, 0.0f, 100.0f, -3e-3f, 7.0f};
  std::vector<float> max = {1.0f, 255.0f, 1e4f, 5e-3f, 7.0f};
  std::vector<float> scale, offset;
  Int8Parameters(min, max, &scale, &offset);
  CHECK(scale[4] == 1.0f);
  std::mt19937 rng(5);
  std::vector<float> x(rows * dim);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < dim; ++c) {
      x[r * dim + c] = std::uniform_real_distribution<float>(min[c], max[c])(rng);
    }
  }
  x[0] = min[0];
  x[1] = max[1];
  std::vector<uint8_t> q(x.size());
  std::vector<float> back(x.size());
  QuantizeRows(x.data(), rows, dim, scale.data(), offset.data(), q.data());
  DequantizeRows(q.data(), rows, dim, scale.data(), offset.data(), back.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i % dim;
    INFO("column " << c << ": " << x[i] << " -> " << back[i]);
    CHECK(std::fabs(back[i] - x[i]) <= scale[c] / 2 * (1 + 1e-5f) + std::fabs(x[i]) * 1e-6f);
  }
  CHECK(q[0] == 0);
  CHECK(q[1] == 255);
  CHECK(back[4] == 7.0f);
  // Outside the range the value clamps to its end; NaN becomes the range's start.
  const float outside[dim] = {-5.0f, 999.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 8.0f};
  uint8_t qo[dim];
  QuantizeRows(outside, 1, dim, scale.data(), offset.data(), qo);
  CHECK(qo[0] == 0);
  CHECK(qo[1] == 255);
  CHECK(qo[2] == 0);
}

}  // namespace
}  // namespace graphstore::codec
