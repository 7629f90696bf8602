// The feature encodings shared by servers and clients: float16 and bfloat16 round to nearest
// even and the bulk (F16C) path agrees with the scalar one bit for bit; INT8, INT4, INT2 and
// INT1 stay within half a step of each column and clamp outside its range, and the packed
// codes sit where graphstore.v1's DTYPE_UINT4/2/1 say.

#include "proto/feature_codec.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
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
  QuantizationParameters(min, max, 8, &scale, &offset);
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
  QuantizeRows(x.data(), rows, dim, 8, scale.data(), offset.data(), q.data());
  DequantizeRows(q.data(), rows, dim, 8, scale.data(), offset.data(), back.data());
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
  QuantizeRows(outside, 1, dim, 8, scale.data(), offset.data(), qo);
  CHECK(qo[0] == 0);
  CHECK(qo[1] == 255);
  CHECK(qo[2] == 0);
}

TEST_CASE("quantized codes at the bound: half a step at every midpoint, the range's end outside it", "[codec]") {
  // The documented bound, |x - (offset + scale * q)| <= scale / 2 inside [min, max] up to
  // float32 rounding (a few ulps of the column's largest magnitude), checked where it is tight:
  // at the midpoints between codes, where a value is half a step from both neighbours, and just
  // beside them; outside the range a value decodes to the range's nearer end.
  for (int bits : {8, 4, 2, 1}) {
    for (const auto& [lo, hi] : std::vector<std::pair<float, float>>{{-1.0f, 1.0f}, {0.0f, 255.0f}, {100.0f, 1e4f},
                                                                     {-3e-3f, 5e-3f}, {-7e5f, 3e5f}}) {
      INFO(bits << " bits over [" << lo << ", " << hi << "]");
      std::vector<float> scale, offset;
      QuantizationParameters({lo}, {hi}, bits, &scale, &offset);
      const int steps = (1 << bits) - 1;
      const float slack = 4 * std::numeric_limits<float>::epsilon() * std::max(std::fabs(lo), std::fabs(hi));
      std::vector<float> x;
      for (int k = 0; k < steps; ++k) {
        const float mid = offset[0] + scale[0] * (static_cast<float>(k) + 0.5f);
        x.push_back(mid);
        x.push_back(std::nextafter(mid, -INFINITY));
        x.push_back(std::nextafter(mid, INFINITY));
      }
      x.push_back(lo);
      x.push_back(hi);
      std::vector<uint8_t> q(x.size());
      std::vector<float> back(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        QuantizeRows(&x[i], 1, 1, bits, scale.data(), offset.data(), &q[i]);
        DequantizeRows(&q[i], 1, 1, bits, scale.data(), offset.data(), &back[i]);
        INFO(x[i] << " -> code " << int(q[i]) << " -> " << back[i]);
        CHECK(std::fabs(back[i] - x[i]) <= scale[0] / 2 + slack);
      }
      // Outside the range: the nearer end, so the error is the distance to the range (and no
      // more than half a step beyond what the range itself decodes to).
      const float below = lo - 3 * scale[0], above = hi + 5 * scale[0];
      uint8_t qb = 0, qa = 0;
      float b = 0, a = 0;
      QuantizeRows(&below, 1, 1, bits, scale.data(), offset.data(), &qb);
      QuantizeRows(&above, 1, 1, bits, scale.data(), offset.data(), &qa);
      DequantizeRows(&qb, 1, 1, bits, scale.data(), offset.data(), &b);
      DequantizeRows(&qa, 1, 1, bits, scale.data(), offset.data(), &a);
      CHECK(int(qb) == 0);
      CHECK(int(qa) == steps);
      CHECK(std::fabs(b - lo) <= slack);
      CHECK(std::fabs(a - hi) <= slack + scale[0] * 1e-5f);
    }
  }
}

TEST_CASE("int4, int2, int1: codes packed low bits first, each row on whole bytes", "[codec]") {
  // Hand-made codes: a column per code, range [0, top] with scale 1, so x = code.
  struct Case {
    int bits;
    std::vector<float> codes;
    std::vector<uint8_t> packed;
  };
  for (const Case& c : {Case{4, {1, 2, 3}, {0x21, 0x03}}, Case{2, {0, 1, 2, 3, 1}, {0xe4, 0x01}},
                        Case{1, {1, 0, 1, 1, 0, 0, 0, 1, 1}, {0x8d, 0x01}}}) {
    INFO("bits " << c.bits);
    const size_t dim = c.codes.size();
    const float top = static_cast<float>((1 << c.bits) - 1);
    std::vector<float> scale, offset;
    QuantizationParameters(std::vector<float>(dim, 0.0f), std::vector<float>(dim, top), c.bits, &scale, &offset);
    REQUIRE(CodeRowBytes(dim, c.bits) == c.packed.size());
    // Two rows: the second starts on its own byte.
    std::vector<float> x = c.codes;
    x.insert(x.end(), c.codes.begin(), c.codes.end());
    std::vector<uint8_t> q(2 * c.packed.size(), 0xff);
    QuantizeRows(x.data(), 2, dim, c.bits, scale.data(), offset.data(), q.data());
    CHECK(std::vector<uint8_t>(q.begin(), q.begin() + c.packed.size()) == c.packed);
    CHECK(std::vector<uint8_t>(q.begin() + c.packed.size(), q.end()) == c.packed);
    std::vector<float> back(x.size());
    DequantizeRows(q.data(), 2, dim, c.bits, scale.data(), offset.data(), back.data());
    CHECK(back == x);
  }
}

TEST_CASE("int4, int2, int1: half a step per column over wide rows; 0/1 columns exact in one bit", "[codec]") {
  const size_t dim = 150, rows = 300;  // past the 64-column blocks, not a whole number of bytes
  std::mt19937 rng(11);
  std::vector<float> min(dim), max(dim);
  for (size_t c = 0; c < dim; ++c) {
    min[c] = std::uniform_real_distribution<float>(-10.0f, 0.0f)(rng);
    max[c] = c % 7 == 0 ? min[c] : min[c] + std::uniform_real_distribution<float>(0.001f, 20.0f)(rng);
  }
  std::vector<float> x(rows * dim);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i % dim;
    x[i] = min[c] == max[c] ? min[c] : std::uniform_real_distribution<float>(min[c], max[c])(rng);
  }
  for (int bits : {4, 2, 1}) {
    INFO("bits " << bits);
    std::vector<float> scale, offset;
    QuantizationParameters(min, max, bits, &scale, &offset);
    std::vector<uint8_t> q(rows * CodeRowBytes(dim, bits));
    std::vector<float> back(x.size());
    QuantizeRows(x.data(), rows, dim, bits, scale.data(), offset.data(), q.data());
    DequantizeRows(q.data(), rows, dim, bits, scale.data(), offset.data(), back.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t c = i % dim;
      INFO("column " << c << ": " << x[i] << " -> " << back[i]);
      REQUIRE(std::fabs(back[i] - x[i]) <= scale[c] / 2 * (1 + 1e-5f) + std::fabs(x[i]) * 1e-6f);
      if (min[c] == max[c]) REQUIRE(back[i] == x[i]);
    }
  }
  // Bag-of-words columns: every 0 and 1 comes back as it was.
  std::vector<float> words(rows * dim);
  for (auto& w : words) w = static_cast<float>(rng() % 2);
  std::vector<float> scale, offset;
  QuantizationParameters(std::vector<float>(dim, 0.0f), std::vector<float>(dim, 1.0f), 1, &scale, &offset);
  std::vector<uint8_t> q(rows * CodeRowBytes(dim, 1));
  std::vector<float> back(words.size());
  QuantizeRows(words.data(), rows, dim, 1, scale.data(), offset.data(), q.data());
  DequantizeRows(q.data(), rows, dim, 1, scale.data(), offset.data(), back.data());
  CHECK(back == words);
  CHECK(q.size() * 32 == words.size() * 4 + rows * (CodeRowBytes(dim, 1) * 8 - dim) * 4);
}

}  // namespace
}  // namespace graphstore::codec
