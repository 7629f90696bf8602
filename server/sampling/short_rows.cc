#include "server/sampling/short_rows.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <utility>

#include <immintrin.h>

#include "server/sampling/draw.h"

namespace graphstore {
namespace {

// Successive sampling without replacement from a row of at most kShortRow candidates, four
// candidates to a vector: running sums of the weights not yet taken; a pick is the number of
// sums at or below a point drawn uniformly under the last sum (the first candidate whose sum
// passes the point, so never one of weight 0), and a taken candidate's weight leaves every sum
// from it on. Picks leave in row order through a bit mask. The same distribution as a scan of
// the row per pick, without its branch per candidate.
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

// Rows of more than kShortRow candidates, up to kMediumRow, are drawn in groups of kShortRow,
// each as a short row is: a pick first chooses its group by the groups' weight left, then its
// candidate at the rest of its point within that group.
constexpr int64_t kMediumRow = kMediumWeightedRow;
constexpr int kGroups = kMediumRowMasks;

// The group (of `groups`) that a pick drawn at `u` falls in, given each group's weight left
// (`last`, 0 for a group with nothing left), and in `x` its point within that group: the same
// double sums in the same order on every processor. Rounding past the end takes the end of the
// last group with weight left; -1 when none has any. (Inlined into each implementation: a call
// from the AVX-512 one into code without it would stall on the switch.)
__attribute__((always_inline)) inline int ChooseGroup(double u, const float* last, int groups, float* x) {
  double total = 0;
  for (int g = 0; g < groups; ++g) total += last[g];
  double point = u * total;
  // Kept apart from the subtraction below, which a processor with FMA would otherwise fuse with
  // this product, rounding once where the portable code rounds twice.
  asm("" : "+x"(point));
  double before = 0, chosen_before = 0;
  int chosen = -1;
  for (int g = 0; g < groups; ++g) {
    if (!(last[g] > 0)) continue;
    chosen = g;
    chosen_before = before;
    before += last[g];
    if (point < before) break;
  }
  *x = static_cast<float>(point - chosen_before);
  return chosen;
}

// Candidates and vectors of group g of a row of n.
int64_t GroupSize(int64_t n, int g) { return std::min<int64_t>(kShortRow, n - kShortRow * g); }
int GroupVectors(int64_t n, int g) { return static_cast<int>((GroupSize(n, g) + 3) / 4); }

// RunningSums and PickAt for 1 to kShortRow / 4 vectors, by vectors - 1.
template <int V>
void SumGroup(const float* w, Floats4* sums) {
  RunningSums<V>(w, sums);
}
template <int V>
void PickInGroup(float x, float* w, int64_t n, Floats4* sums, uint64_t& taken) {
  PickAt<V>(x, w, n, sums, taken);
}
template <int... V>
constexpr auto SumGroupTable(std::integer_sequence<int, V...>) {
  return std::array<void (*)(const float*, Floats4*), sizeof...(V)>{&SumGroup<V + 1>...};
}
template <int... V>
constexpr auto PickInGroupTable(std::integer_sequence<int, V...>) {
  return std::array<void (*)(float, float*, int64_t, Floats4*, uint64_t&), sizeof...(V)>{&PickInGroup<V + 1>...};
}
constexpr auto kSumGroup = SumGroupTable(std::make_integer_sequence<int, kShortRow / 4>());
constexpr auto kPickInGroup = PickInGroupTable(std::make_integer_sequence<int, kShortRow / 4>());

// `picks` picks from the row of n <= kMediumRow candidates whose usable weights are w[g] (by
// group; zeroed as they are taken) at positions usable[g], to taken[g].
void PickMediumRow(uint64_t key, float (*w)[kShortRow], const uint64_t* usable, int64_t n, int picks,
                   uint64_t* taken) {
  const int groups = static_cast<int>((n + kShortRow - 1) / kShortRow);
  Floats4 sums[kGroups][kShortRow / 4];
  float last[kGroups] = {};
  uint64_t avail[kGroups] = {};
  for (int g = 0; g < groups; ++g) {
    const int v = GroupVectors(n, g);
    kSumGroup[v - 1](w[g], sums[g]);
    last[g] = sums[g][v - 1][3];
    avail[g] = usable[g];
    taken[g] = 0;
  }
  DrawStream draws(key);
  for (int p = 0; p < picks; ++p) {
    float x;
    const int g = ChooseGroup(draws.Uniform(), last, groups, &x);
    if (g < 0) break;
    const int v = GroupVectors(n, g);
    kPickInGroup[v - 1](x, w[g], GroupSize(n, g), sums[g], taken[g]);
    avail[g] &= ~taken[g];
    last[g] = avail[g] == 0 ? 0.0f : sums[g][v - 1][3];
  }
}

// The picks of a row whose draw needs no randomness, given its usable positions (`masks`
// masks of them, 64 positions each): all of them (fanout -1, or no more of them than the
// fanout) or none (fanout 0); true with them in `picks`. Otherwise `picks` is left all 0.
bool PicksWithoutDraw(const uint64_t* usable, int masks, int fanout, uint64_t* picks) {
  int count = 0;
  for (int g = 0; g < masks; ++g) count += __builtin_popcountll(usable[g]);
  const bool all = fanout < 0 || count <= fanout;
  for (int g = 0; g < masks; ++g) picks[g] = all ? usable[g] : 0;
  return all || fanout == 0;
}

// The usable weights of a row of n <= kShortRow candidates into `w`, others as 0, four at a
// time; the last vector's lanes past the row are 0 (never read past the row: it may end its
// mapping). Returns the mask of usable positions.
uint64_t LoadUsable(const float* weights, int64_t n, float* w) {
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

// Rows drawn with AVX-512 take their picks in turns, this many at a time: a pick waits on the
// one before it in its row (its compares, count and subtractions), and eight rows fill more of
// that wait than four did (also at four registers a row, though their sums then spill).
constexpr int kRowsTogether = 8;

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

// The usable weights of a row of n <= kShortRow candidates into `w` (64-byte aligned), 0
// elsewhere; returns their positions.
GRAPHSTORE_AVX512 uint64_t LoadUsableZ(const float* weights, int64_t n, float* w) {
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

// PickMediumRow with AVX-512: each group a ShortRowZ, its pick by PickAtZ.
GRAPHSTORE_AVX512 void PickMediumRowZ(uint64_t key, float (*w)[kShortRow], const uint64_t* usable, int64_t n,
                                      int picks, uint64_t* taken) {
  const int groups = static_cast<int>((n + kShortRow - 1) / kShortRow);
  ShortRowZ<kShortRow / 16> rows[kGroups];
  float last[kGroups] = {};
  for (int g = 0; g < groups; ++g) {
    StartRowZ(w[g], usable[g], GroupSize(n, g), &rows[g]);
    last[g] = rows[g].last;
  }
  DrawStream draws(key);
  for (int p = 0; p < picks; ++p) {
    float x;
    const int g = ChooseGroup(draws.Uniform(), last, groups, &x);
    if (g < 0) break;
    PickAtZ(x, &rows[g]);
    last[g] = rows[g].avail == 0 ? 0.0f : rows[g].last;
  }
  for (int g = 0; g < groups; ++g) taken[g] = rows[g].taken;
}

// PickMediumRowZ for several rows, their picks taken in turns (a row's picks wait on each
// other, through its choice of group and its sums): the same picks, row by row.
constexpr int kMediumRowsTogether = 4;
struct MediumRowZ {
  alignas(64) float w[kGroups][kShortRow];
  ShortRowZ<kShortRow / 16> groups[kGroups];
  float last[kGroups];
  int num_groups;
  size_t row;  // its place among the rows drawn
  DrawStream draws{0};
  bool done;  // no weight left
};

GRAPHSTORE_AVX512 void PickMediumRowsZ(MediumRowZ* rows, int count, int picks, uint64_t* masks) {
  for (int p = 0; p < picks; ++p) {
    for (int r = 0; r < count; ++r) {
      MediumRowZ& row = rows[r];
      if (row.done) continue;
      float x;
      const int g = ChooseGroup(row.draws.Uniform(), row.last, row.num_groups, &x);
      if (g < 0) {
        row.done = true;
        continue;
      }
      PickAtZ(x, &row.groups[g]);
      row.last[g] = row.groups[g].avail == 0 ? 0.0f : row.groups[g].last;
    }
  }
  for (int r = 0; r < count; ++r) {
    for (int g = 0; g < kGroups; ++g) {
      masks[kGroups * rows[r].row + g] = g < rows[r].num_groups ? rows[r].groups[g].taken : 0;
    }
  }
}

// DrawWeightedMediumRows with AVX-512: rows that draw wait until kMediumRowsTogether of them
// can take their picks in turns.
GRAPHSTORE_AVX512 void DrawWeightedMediumRowsAvx512(const uint64_t* keys, const float* const* weights, const int64_t* n,
                                                    size_t rows, int fanout, uint64_t* masks) {
  MediumRowZ pending[kMediumRowsTogether];
  int size = 0;
  constexpr size_t kAhead = 4;  // (a row is 5 to 16 lines)
  for (size_t j = 0; j < rows; ++j) {
    if (j + kAhead < rows) PrefetchLines(weights[j + kAhead], weights[j + kAhead] + n[j + kAhead]);
    MediumRowZ& row = pending[size];
    uint64_t usable[kGroups] = {};
    row.num_groups = static_cast<int>((n[j] + kShortRow - 1) / kShortRow);
    for (int g = 0; g < row.num_groups; ++g) {
      usable[g] = LoadUsableZ(weights[j] + kShortRow * g, GroupSize(n[j], g), row.w[g]);
    }
    if (PicksWithoutDraw(usable, kGroups, fanout, masks + kGroups * j)) continue;
    for (int g = 0; g < row.num_groups; ++g) {
      StartRowZ(row.w[g], usable[g], GroupSize(n[j], g), &row.groups[g]);
      row.last[g] = row.groups[g].last;
    }
    row.row = j;
    row.draws = DrawStream(keys[j]);
    row.done = false;
    if (++size < kMediumRowsTogether) continue;
    PickMediumRowsZ(pending, size, fanout, masks);
    size = 0;
  }
  PickMediumRowsZ(pending, size, fanout, masks);
}

// DrawWeightedMediumRow with `load` reading each group's usable weights and `pick` drawing:
// LoadUsable and PickMediumRow, or their AVX-512 forms (each returns with its registers
// cleared, so the calls cost no switch).
using LoadGroup = uint64_t (*)(const float*, int64_t, float*);
using PickGroups = void (*)(uint64_t, float (*)[kShortRow], const uint64_t*, int64_t, int, uint64_t*);
void DrawMediumRowWith(LoadGroup load, PickGroups pick, uint64_t key, const float* weights, int64_t n, int fanout,
                       uint64_t* masks) {
  alignas(64) float w[kGroups][kShortRow];
  uint64_t usable[kGroups] = {};
  for (int g = 0; kShortRow * g < n; ++g) usable[g] = load(weights + kShortRow * g, GroupSize(n, g), w[g]);
  if (PicksWithoutDraw(usable, kGroups, fanout, masks)) return;
  pick(key, w, usable, n, fanout, masks);
}

// Whether this processor (and its operating system) run the AVX-512 picks. (Every processor
// with AVX-512 also has the bit instructions they use: POPCNT, LZCNT, BMI.)
bool HaveAvx512() {
  static const bool have = [] {
    __builtin_cpu_init();  // may run before the constructors that would have done it
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("bmi2");
  }();
  return have;
}

}  // namespace

uint64_t DrawWeightedShortRowPortable(uint64_t key, const float* weights, int64_t n, int fanout) {
  alignas(16) float w[kShortRow];
  const uint64_t usable = LoadUsable(weights, n, w);
  if (uint64_t mask; PicksWithoutDraw(&usable, 1, fanout, &mask)) return mask;
  DrawStream draws(key);
  return kPickShortRow[(n + 3) / 4 - 1](draws, w, n, fanout);
}

bool HaveVectorShortRows() { return HaveAvx512(); }

uint64_t DrawWeightedShortRowVector(uint64_t key, const float* weights, int64_t n, int fanout) {
  return DrawWeightedShortRowAvx512(key, weights, n, fanout);
}

uint64_t DrawWeightedShortRow(uint64_t key, const float* weights, int64_t n, int fanout) {
  return HaveAvx512() ? DrawWeightedShortRowAvx512(key, weights, n, fanout)
                     : DrawWeightedShortRowPortable(key, weights, n, fanout);
}

void DrawWeightedMediumRowPortable(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks) {
  DrawMediumRowWith(&LoadUsable, &PickMediumRow, key, weights, n, fanout, masks);
}

void DrawWeightedMediumRowVector(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks) {
  DrawMediumRowWith(&LoadUsableZ, &PickMediumRowZ, key, weights, n, fanout, masks);
}

void DrawWeightedMediumRow(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks) {
  if (HaveAvx512()) {
    DrawWeightedMediumRowVector(key, weights, n, fanout, masks);
  } else {
    DrawWeightedMediumRowPortable(key, weights, n, fanout, masks);
  }
}

void DrawWeightedMediumRows(const uint64_t* keys, const float* const* weights, const int64_t* n, size_t rows,
                            int fanout, uint64_t* masks) {
  if (HaveAvx512()) {
    DrawWeightedMediumRowsAvx512(keys, weights, n, rows, fanout, masks);
    return;
  }
  for (size_t j = 0; j < rows; ++j) {
    DrawWeightedMediumRowPortable(keys[j], weights[j], n[j], fanout, masks + kGroups * j);
  }
}

void DrawWeightedShortRows(const uint64_t* keys, const float* const* weights, const int64_t* n, size_t rows,
                           int fanout, uint64_t* masks) {
  if (HaveAvx512()) {
    DrawWeightedShortRowsAvx512(keys, weights, n, rows, fanout, masks);
    return;
  }
  for (size_t j = 0; j < rows; ++j) masks[j] = DrawWeightedShortRowPortable(keys[j], weights[j], n[j], fanout);
}

}  // namespace graphstore
