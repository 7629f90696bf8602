#include "server/sampling/medium_rows.h"

#include <algorithm>
#include <array>
#include <utility>

#include <immintrin.h>

#include "server/sampling/draw.h"
#include "server/sampling/row_picks.h"

namespace graphstore {
namespace row_picks {
namespace {

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

// RunningSums and PickAt for 1 to kShortRow / 4 vectors, by vectors - 1 (each wrapped in an
// ordinary function, since the primitives themselves are always inlined, for the table to hold).
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

// PickMediumRow with AVX-512, for several rows at once, their picks taken in turns (a row's
// picks wait on each other, through its choice of group and its sums): each group a ShortRowZ,
// its pick by PickAtZ; the same picks as row by row.
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

}  // namespace
}  // namespace row_picks

void DrawWeightedMediumRowPortable(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks) {
  using row_picks::kShortRow;
  alignas(16) float w[kMediumRowMasks][kShortRow];
  uint64_t usable[kMediumRowMasks] = {};
  for (int g = 0; kShortRow * g < n; ++g) {
    usable[g] = row_picks::LoadUsable(weights + kShortRow * g, row_picks::GroupSize(n, g), w[g]);
  }
  if (row_picks::PicksWithoutDraw(usable, kMediumRowMasks, fanout, masks)) return;
  row_picks::PickMediumRow(key, w, usable, n, fanout, masks);
}

void DrawWeightedMediumRowVector(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks) {
  row_picks::DrawWeightedMediumRowsAvx512(&key, &weights, &n, 1, fanout, masks);
}

void DrawWeightedMediumRow(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks) {
  if (row_picks::HaveAvx512()) {
    DrawWeightedMediumRowVector(key, weights, n, fanout, masks);
  } else {
    DrawWeightedMediumRowPortable(key, weights, n, fanout, masks);
  }
}

void DrawWeightedMediumRows(const uint64_t* keys, const float* const* weights, const int64_t* n, size_t rows,
                            int fanout, uint64_t* masks) {
  if (row_picks::HaveAvx512()) {
    row_picks::DrawWeightedMediumRowsAvx512(keys, weights, n, rows, fanout, masks);
    return;
  }
  for (size_t j = 0; j < rows; ++j) {
    DrawWeightedMediumRowPortable(keys[j], weights[j], n[j], fanout, masks + kMediumRowMasks * j);
  }
}

}  // namespace graphstore
