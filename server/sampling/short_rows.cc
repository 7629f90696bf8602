#include "server/sampling/short_rows.h"

#include <array>
#include <utility>

#include <immintrin.h>

#include "server/sampling/draw.h"
#include "server/sampling/row_picks.h"

namespace graphstore {
namespace row_picks {
namespace {

// One pick drawn uniformly under the row's weight left.
template <int V>
__attribute__((always_inline)) inline void PickOnce(DrawStream& draws, float* w, int64_t n, Floats4* sums,
                                                    uint64_t& taken) {
  PickAt<V>(static_cast<float>(draws.Uniform()) * sums[V - 1][3], w, n, sums, taken);
}

// `picks` picks from the row of n <= 4 * V candidates whose usable weights are `w`, as a bit
// mask of positions.
template <int V>
uint64_t PickShortRow(DrawStream& draws, float* w, int64_t n, int picks) {
  Floats4 sums[V];
  RunningSums<V>(w, sums);
  uint64_t taken = 0;
  for (int p = 0; p < picks; ++p) PickOnce<V>(draws, w, n, sums, taken);
  return taken;
}

// PickShortRow for 1 to kShortRow / 4 vectors, by vectors - 1.
template <int... V>
constexpr auto PickShortRowTable(std::integer_sequence<int, V...>) {
  return std::array<uint64_t (*)(DrawStream&, float*, int64_t, int), sizeof...(V)>{&PickShortRow<V + 1>...};
}
constexpr auto kPickShortRow = PickShortRowTable(std::make_integer_sequence<int, kShortRow / 4>());

// Rows drawn with AVX-512 take their picks in turns, this many at a time: a pick waits on the
// one before it in its row (its compares, count and subtractions), and eight rows fill more of
// that wait than four did (also at four registers a row, though their sums then spill).
constexpr int kRowsTogether = 8;

// (GCC takes the shifts' own undefined operand, _mm512_undefined_epi32, for a variable used
// uninitialised wherever they are inlined.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The first `count` (<= kShortRow) values of DrawStream(key).Uniform(), each rounded to float
// as PickOnce rounds it, eight at a time (the same integer mix and the same roundings); room
// for `count` rounded up to 8.
GRAPHSTORE_AVX512 __attribute__((always_inline)) inline void UniformFloats(uint64_t key, int count, float* out) {
  __m512i k = _mm512_setr_epi64(1, 2, 3, 4, 5, 6, 7, 8);
  for (int i = 0; i < count; i += 8) {
    __m512i x = _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(key)),
                                 _mm512_mullo_epi64(k, _mm512_set1_epi64(0x632be59bd9b4e019LL)));
    x = _mm512_add_epi64(x, _mm512_set1_epi64(static_cast<int64_t>(0x9e3779b97f4a7c15ULL)));
    x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 30)),
                           _mm512_set1_epi64(static_cast<int64_t>(0xbf58476d1ce4e5b9ULL)));
    x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 27)),
                           _mm512_set1_epi64(static_cast<int64_t>(0x94d049bb133111ebULL)));
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
    const __m512d u = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(x, 11)), _mm512_set1_pd(0x1.0p-53));
    _mm256_storeu_ps(out + i, _mm512_cvtpd_ps(u));
    k = _mm512_add_epi64(k, _mm512_set1_epi64(8));
  }
}
#pragma GCC diagnostic pop

// PickOnce with AVX-512, `u` the pick's uniform draw.
template <int Z>
GRAPHSTORE_AVX512 __attribute__((always_inline)) inline void PickOnceZ(float u, ShortRowZ<Z>* row) {
  PickAtZ<Z>(u * row->last, row);
}

// PickShortRow's picks from the row of n <= 16 * Z candidates whose usable weights are `w`
// (0 elsewhere, kShortRow of them) and usable positions `avail`.
template <int Z>
GRAPHSTORE_AVX512 uint64_t PickShortRowZ(uint64_t key, const float* w, uint64_t avail, int64_t n, int picks) {
  float u[kShortRow];
  UniformFloats(key, picks, u);
  ShortRowZ<Z> row;
  StartRowZ<Z>(w, avail, n, &row);
  for (int p = 0; p < picks; ++p) PickOnceZ<Z>(u[p], &row);
  return row.taken;
}

// The same for R rows at once (keys[r], w[r], avail[r], n[r]), their picks taken in turns.
template <int Z, int R>
GRAPHSTORE_AVX512 void PickShortRowsZ(const uint64_t* keys, float (*w)[kShortRow], const uint64_t* avail,
                                      const int64_t* n, int picks, uint64_t* taken) {
  ShortRowZ<Z> rows[R];
  float u[R][kShortRow];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    UniformFloats(keys[r], picks, u[r]);
    StartRowZ<Z>(w[r], avail[r], n[r], &rows[r]);
  }
  for (int p = 0; p < picks; ++p) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) PickOnceZ<Z>(u[r][p], &rows[r]);
  }
  for (int r = 0; r < R; ++r) taken[r] = rows[r].taken;
}

// PickShortRowZ and PickShortRowsZ for 1 to 4 registers, by registers - 1.
constexpr uint64_t (*kPickShortRowZ[])(uint64_t, const float*, uint64_t, int64_t, int) = {
    &PickShortRowZ<1>, &PickShortRowZ<2>, &PickShortRowZ<3>, &PickShortRowZ<4>};
constexpr void (*kPickShortRowsZ[])(const uint64_t*, float (*)[kShortRow], const uint64_t*, const int64_t*, int,
                                    uint64_t*) = {
    &PickShortRowsZ<1, kRowsTogether>, &PickShortRowsZ<2, kRowsTogether>, &PickShortRowsZ<3, kRowsTogether>,
    &PickShortRowsZ<4, kRowsTogether>};

// DrawWeightedShortRow with AVX-512.
GRAPHSTORE_AVX512 uint64_t DrawWeightedShortRowAvx512(uint64_t key, const float* weights, int64_t n, int fanout) {
  alignas(64) float w[kShortRow];
  const uint64_t usable = LoadUsableZ(weights, n, w);
  if (uint64_t mask; PicksWithoutDraw(&usable, 1, fanout, &mask)) return mask;
  return kPickShortRowZ[(n + 15) / 16 - 1](key, w, usable, n, fanout);
}

// DrawWeightedShortRows with AVX-512: rows that draw wait by their number of registers until
// kRowsTogether of them can take their picks in turns.
GRAPHSTORE_AVX512 void DrawWeightedShortRowsAvx512(const uint64_t* keys, const float* const* weights,
                                                   const int64_t* n, size_t rows, int fanout, uint64_t* masks) {
  struct Pending {
    alignas(64) float w[kRowsTogether][kShortRow];
    uint64_t keys[kRowsTogether];
    uint64_t avail[kRowsTogether];
    int64_t n[kRowsTogether];
    size_t row[kRowsTogether];
    int size = 0;
  };
  std::array<Pending, 4> pending;
  constexpr size_t kAhead = 12;
  for (size_t j = 0; j < rows; ++j) {
    if (j + kAhead < rows) PrefetchLines(weights[j + kAhead], weights[j + kAhead] + n[j + kAhead]);
    masks[j] = 0;
    if (n[j] <= 0) continue;
    const int c = static_cast<int>((n[j] + 15) / 16) - 1;
    Pending& p = pending[c];
    const uint64_t usable = LoadUsableZ(weights[j], n[j], p.w[p.size]);
    if (PicksWithoutDraw(&usable, 1, fanout, &masks[j])) continue;
    p.keys[p.size] = keys[j];
    p.avail[p.size] = usable;
    p.n[p.size] = n[j];
    p.row[p.size] = j;
    if (++p.size < kRowsTogether) continue;
    uint64_t taken[kRowsTogether];
    kPickShortRowsZ[c](p.keys, p.w, p.avail, p.n, fanout, taken);
    for (int r = 0; r < kRowsTogether; ++r) masks[p.row[r]] = taken[r];
    p.size = 0;
  }
  for (int c = 0; c < 4; ++c) {
    Pending& p = pending[c];
    for (int r = 0; r < p.size; ++r) {
      masks[p.row[r]] = kPickShortRowZ[c](p.keys[r], p.w[r], p.avail[r], p.n[r], fanout);
    }
  }
}

}  // namespace
}  // namespace row_picks

uint64_t DrawWeightedShortRowPortable(uint64_t key, const float* weights, int64_t n, int fanout) {
  alignas(16) float w[row_picks::kShortRow];
  const uint64_t usable = row_picks::LoadUsable(weights, n, w);
  if (uint64_t mask; row_picks::PicksWithoutDraw(&usable, 1, fanout, &mask)) return mask;
  DrawStream draws(key);
  return row_picks::kPickShortRow[(n + 3) / 4 - 1](draws, w, n, fanout);
}

bool HaveVectorShortRows() { return row_picks::HaveAvx512(); }

uint64_t DrawWeightedShortRowVector(uint64_t key, const float* weights, int64_t n, int fanout) {
  return row_picks::DrawWeightedShortRowAvx512(key, weights, n, fanout);
}

uint64_t DrawWeightedShortRow(uint64_t key, const float* weights, int64_t n, int fanout) {
  return row_picks::HaveAvx512() ? row_picks::DrawWeightedShortRowAvx512(key, weights, n, fanout)
                                 : DrawWeightedShortRowPortable(key, weights, n, fanout);
}

void DrawWeightedShortRows(const uint64_t* keys, const float* const* weights, const int64_t* n, size_t rows,
                           int fanout, uint64_t* masks) {
  if (row_picks::HaveAvx512()) {
    row_picks::DrawWeightedShortRowsAvx512(keys, weights, n, rows, fanout, masks);
    return;
  }
  for (size_t j = 0; j < rows; ++j) masks[j] = DrawWeightedShortRowPortable(keys[j], weights[j], n[j], fanout);
}

}  // namespace graphstore
