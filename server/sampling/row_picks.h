#ifndef GRAPHSTORE_SERVER_SAMPLING_ROW_PICKS_H_
#define GRAPHSTORE_SERVER_SAMPLING_ROW_PICKS_H_

// What weighted draws without replacement from short rows (short_rows.cc) and from the groups
// of 64 of medium rows (medium_rows.cc) are made of; not for other code.
//
// Successive sampling from a row of at most kShortRow candidates, four candidates to a vector:
// running sums of the weights not yet taken; a pick is the number of sums at or below a point
// drawn uniformly under the last sum (the first candidate whose sum passes the point, so never
// one of weight 0), and a taken candidate's weight leaves every sum from it on. Picks leave in
// row order through a bit mask. The same distribution as a scan of the row per pick, without
// its branch per candidate.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include <immintrin.h>

#include "server/sampling/short_rows.h"

namespace graphstore {
namespace row_picks {

constexpr int64_t kShortRow = kShortWeightedRow;
typedef float Floats4 __attribute__((vector_size(16)));
typedef int32_t Ints4 __attribute__((vector_size(16)));

const Floats4 kZeros = {0, 0, 0, 0};

// The running sums of the first 4 * V weights of `w` (a row's usable weights, 0 past its end,
// so the lanes past the row repeat the row's total), four at a time: each vector's own sums in
// two shifted adds, plus the total before it.
template <int V>
__attribute__((always_inline)) inline void RunningSums(const float* w, Floats4* sums) {
  Floats4 carry = kZeros;
#pragma GCC unroll 16
  for (int v = 0; v < V; ++v) {
    Floats4 x;
    std::memcpy(&x, w + 4 * v, sizeof x);
    Floats4 sum = x + __builtin_shufflevector(x, kZeros, 4, 0, 1, 2);
    sum += __builtin_shufflevector(sum, kZeros, 4, 4, 0, 1);
    sums[v] = sum + carry;
    carry = Floats4{sums[v][3], sums[v][3], sums[v][3], sums[v][3]};
  }
}

// The pick at point x (at or above 0, under the last sum) from the row of n <= 4 * V
// candidates whose usable weights are `w` (zeroed as they are taken) and whose running sums are
// `sums`: adds its bit to `taken` and takes its weight out of the sums. V is a constant so the
// sums stay in registers and every loop over them unrolls.
template <int V>
__attribute__((always_inline)) inline void PickAt(float x, float* w, int64_t n, Floats4* sums, uint64_t& taken) {
  const Ints4 lane = {0, 1, 2, 3};
  const float last = sums[V - 1][3];
  const Floats4 xs = {x, x, x, x};
  Ints4 below = {0, 0, 0, 0};
#pragma GCC unroll 16
  for (int v = 0; v < V; ++v) below -= sums[v] <= xs;  // true is -1
  // Rounding can leave the point on or past the last sum, or on a candidate whose weight the
  // subtractions left as a sliver: take the nearest one still in the row.
  int pick = std::min<int>(below[0] + below[1] + below[2] + below[3], static_cast<int>(n) - 1);
  while (pick > 0 && w[pick] == 0) --pick;
  while (w[pick] == 0) ++pick;
  taken |= uint64_t{1} << pick;
  const float wp = w[pick];
  w[pick] = 0;
  if (wp > 0.5f * last) {
    // Most of the total leaves with it: the sums of what is left are summed afresh, as
    // subtracting would leave them with the rounding of the larger total.
    RunningSums<V>(w, sums);
    return;
  }
  const Floats4 wps = {wp, wp, wp, wp};
  const Ints4 from = {pick, pick, pick, pick};
#pragma GCC unroll 16
  for (int v = 0; v < V; ++v) {
    sums[v] -= reinterpret_cast<Floats4>(reinterpret_cast<Ints4>(wps) & (lane + 4 * v >= from));
  }
}

// The picks of a row whose draw needs no randomness, given its usable positions (`masks`
// masks of them, 64 positions each): all of them (fanout -1, or no more of them than the
// fanout) or none (fanout 0); true with them in `picks`. Otherwise `picks` is left all 0.
inline bool PicksWithoutDraw(const uint64_t* usable, int masks, int fanout, uint64_t* picks) {
  int count = 0;
  for (int g = 0; g < masks; ++g) count += __builtin_popcountll(usable[g]);
  const bool all = fanout < 0 || count <= fanout;
  for (int g = 0; g < masks; ++g) picks[g] = all ? usable[g] : 0;
  return all || fanout == 0;
}

// The usable weights of a row of n <= kShortRow candidates into `w`, others as 0, four at a
// time; the last vector's lanes past the row are 0 (never read past the row: it may end its
// mapping). Returns the mask of usable positions.
inline uint64_t LoadUsable(const float* weights, int64_t n, float* w) {
  const int vectors = static_cast<int>((n + 3) / 4);
  const Floats4 largest = {std::numeric_limits<float>::max(), std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
  uint64_t usable = 0;
  for (int v = 0; v < vectors; ++v) {
    Floats4 x;
    if (4 * v + 4 <= n) {
      std::memcpy(&x, weights + 4 * v, sizeof x);
    } else {
      for (int l = 0; l < 4; ++l) x[l] = 4 * v + l < n ? weights[4 * v + l] : 0.0f;
    }
    const Ints4 keep = (x > kZeros) & (x <= largest);  // false for NaN
    usable |= static_cast<uint64_t>(_mm_movemask_ps(reinterpret_cast<__m128>(keep))) << (4 * v);
    x = reinterpret_cast<Floats4>(reinterpret_cast<Ints4>(x) & keep);
    std::memcpy(w + 4 * v, &x, sizeof x);
  }
  return usable;
}

// The same picks with AVX-512: sixteen candidates to a register, the sums compared and
// taken from under masks. Every lane goes through the same IEEE operations in the same order
// as in PickShortRow (the running sums four lanes at a time, carried from one four to the
// next; each pick's weight subtracted from the lanes at and after it), so both give the same
// bits: which one a machine runs never changes a draw.
#define GRAPHSTORE_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,popcnt,lzcnt,bmi,bmi2")))

// The running sums of 16 weights `x` as PickShortRow's four vectors would hold them, after
// the total `carry` (broadcast) of the lanes before; `carry` becomes this register's total.
GRAPHSTORE_AVX512 inline __m512 RunningSums16(__m512 x, __m512* carry) {
  __m512 s = _mm512_add_ps(x, _mm512_castsi512_ps(_mm512_bslli_epi128(_mm512_castps_si512(x), 4)));
  s = _mm512_add_ps(s, _mm512_castsi512_ps(_mm512_bslli_epi128(_mm512_castps_si512(s), 8)));
  __m512 c = *carry;
  s = _mm512_mask_add_ps(s, 0x000F, s, c);
  c = _mm512_maskz_permutexvar_ps(0xFFFF, _mm512_set1_epi32(3), s);
  s = _mm512_mask_add_ps(s, 0x00F0, s, c);
  c = _mm512_maskz_permutexvar_ps(0xFFFF, _mm512_set1_epi32(7), s);
  s = _mm512_mask_add_ps(s, 0x0F00, s, c);
  c = _mm512_maskz_permutexvar_ps(0xFFFF, _mm512_set1_epi32(11), s);
  s = _mm512_mask_add_ps(s, 0xF000, s, c);
  *carry = _mm512_maskz_permutexvar_ps(0xFFFF, _mm512_set1_epi32(15), s);
  return s;
}

// The running sums of the weights in `w` still in `avail`, Z registers of them.
template <int Z>
GRAPHSTORE_AVX512 __attribute__((always_inline)) inline void RunningSumsZ(const float* w, uint64_t avail,
                                                                          __m512* sums) {
  __m512 carry = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int z = 0; z < Z; ++z) {
    sums[z] = RunningSums16(_mm512_maskz_loadu_ps(static_cast<__mmask16>(avail >> (16 * z)), w + 16 * z), &carry);
  }
}

// A row drawn with AVX-512: its usable weights (0 elsewhere), which of them are still in the
// row, the lanes PickShortRow would count (its V = ceil(n / 4) vectors), and its sums.
template <int Z>
struct ShortRowZ {
  const float* w;
  uint64_t avail;
  uint64_t counted;
  int64_t n;
  uint64_t taken;
  float last;  // the last sum (lanes past PickShortRow's repeat it)
  __m512 sums[Z];
};

template <int Z>
GRAPHSTORE_AVX512 __attribute__((always_inline)) inline void StartRowZ(const float* w, uint64_t avail, int64_t n,
                                                                       ShortRowZ<Z>* row) {
  const int lanes = static_cast<int>((n + 3) / 4) * 4;
  row->w = w;
  row->avail = avail;
  row->counted = lanes == 64 ? ~uint64_t{0} : (uint64_t{1} << lanes) - 1;
  row->n = n;
  row->taken = 0;
  RunningSumsZ<Z>(w, avail, row->sums);
  row->last = row->sums[Z - 1][15];
}

// The usable weights of a row of n <= kShortRow candidates into `w` (64-byte aligned), 0
// elsewhere; returns their positions.
GRAPHSTORE_AVX512 inline uint64_t LoadUsableZ(const float* weights, int64_t n, float* w) {
  const __m512 largest = _mm512_set1_ps(std::numeric_limits<float>::max());
  uint64_t usable = 0;
  const int registers = static_cast<int>((n + 15) / 16);
  for (int z = 0; z < registers; ++z) {
    const int64_t left = n - 16 * z;
    const auto in_row = static_cast<__mmask16>(left >= 16 ? 0xFFFF : (1u << left) - 1);
    // Lanes past the row are not read (it may end its mapping).
    const __m512 x = _mm512_maskz_loadu_ps(in_row, weights + 16 * z);
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ) &
                           _mm512_cmp_ps_mask(x, largest, _CMP_LE_OQ);  // false for NaN
    _mm512_store_ps(w + 16 * z, _mm512_maskz_mov_ps(keep, x));
    usable |= static_cast<uint64_t>(keep) << (16 * z);
  }
  return usable;
}

// PickAt with AVX-512.
template <int Z>
GRAPHSTORE_AVX512 __attribute__((always_inline)) inline void PickAtZ(float x, ShortRowZ<Z>* row) {
  const __m512 xs = _mm512_set1_ps(x);
  int below = 0;
#pragma GCC unroll 4
  for (int z = 0; z < Z; ++z) {
    const auto lanes_z = static_cast<__mmask16>(row->counted >> (16 * z));
    below += __builtin_popcount(_mm512_mask_cmp_ps_mask(lanes_z, row->sums[z], xs, _CMP_LE_OQ));
  }
  int pick = std::min<int>(below, static_cast<int>(row->n) - 1);
  if ((row->avail >> pick & 1) == 0) {
    // As PickOnce: the nearest still in the row at or before it, else the first after.
    const uint64_t before = row->avail & (pick == 63 ? ~uint64_t{0} : (uint64_t{2} << pick) - 1);
    pick = before != 0 ? 63 - __builtin_clzll(before) : __builtin_ctzll(row->avail);
  }
  row->taken |= uint64_t{1} << pick;
  row->avail &= ~(uint64_t{1} << pick);
  const float wp = row->w[pick];
  if (wp > 0.5f * row->last) {
    RunningSumsZ<Z>(row->w, row->avail, row->sums);
    row->last = row->sums[Z - 1][15];
    return;
  }
  const __m512 wps = _mm512_set1_ps(wp);
  const uint64_t from = ~uint64_t{0} << pick;
#pragma GCC unroll 4
  for (int z = 0; z < Z; ++z) {
    row->sums[z] = _mm512_mask_sub_ps(row->sums[z], static_cast<__mmask16>(from >> (16 * z)), row->sums[z], wps);
  }
  row->last -= wp;  // what the last lane holds now
}

// Whether this processor (and its operating system) run the AVX-512 picks. (Every processor
// with AVX-512 also has the bit instructions they use: POPCNT, LZCNT, BMI.)
inline bool HaveAvx512() {
  static const bool have = [] {
    __builtin_cpu_init();  // may run before the constructors that would have done it
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("bmi2");
  }();
  return have;
}

}  // namespace row_picks
}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_ROW_PICKS_H_
