#ifndef GRAPHSTORE_SERVER_SAMPLING_SHORT_ROWS_H_
#define GRAPHSTORE_SERVER_SAMPLING_SHORT_ROWS_H_

// Weighted draws without replacement from short rows (up to 64 candidates): successive sampling
// by running sums of the row's weights, four candidates to a vector on any x86-64 processor and
// sixteen to a register with AVX-512, with the same roundings, so both give the same bits.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace graphstore {

/// The longest row these draws take.
inline constexpr int64_t kShortWeightedRow = 64;

/// DrawWeightedPositions (draw.h) without replacement from a row of at most 64 candidates, as a
/// bit mask of the positions taken (bit k: candidate k): the same draws, without scratch vectors.
uint64_t DrawWeightedShortRow(uint64_t key, const float* weights, int64_t n, int fanout);

/// Appends base + k for every bit k of `mask`, in increasing order; returns how many.
inline int64_t AppendMaskPositions(uint64_t mask, int64_t base, std::vector<int64_t>* out) {
  int64_t c = 0;
  for (; mask != 0; mask &= mask - 1, ++c) out->push_back(base + __builtin_ctzll(mask));
  return c;
}

/// DrawWeightedShortRow's two implementations, for tests: four lanes at a time (any x86-64),
/// and sixteen (AVX-512; only where HaveVectorShortRows()). DrawWeightedShortRow takes the
/// second where the processor has it; both give the same bits.
uint64_t DrawWeightedShortRowPortable(uint64_t key, const float* weights, int64_t n, int fanout);
uint64_t DrawWeightedShortRowVector(uint64_t key, const float* weights, int64_t n, int fanout);
bool HaveVectorShortRows();

/// DrawWeightedShortRow for `rows` rows at once, row j keyed keys[j] with n[j] <= 64 candidates
/// whose weights start at weights[j], its picks to masks[j]: the same masks, faster, as the
/// picks of several rows overlap (a row's own picks wait on each other).
void DrawWeightedShortRows(const uint64_t* keys, const float* const* weights, const int64_t* n, size_t rows,
                           int fanout, uint64_t* masks);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_SHORT_ROWS_H_
