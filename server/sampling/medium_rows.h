#ifndef GRAPHSTORE_SERVER_SAMPLING_MEDIUM_ROWS_H_
#define GRAPHSTORE_SERVER_SAMPLING_MEDIUM_ROWS_H_

// Weighted draws without replacement from rows of 65 to 256 candidates: the short rows' picks
// (short_rows.h) in groups of 64, with the same bits on every processor.

#include <cstddef>
#include <cstdint>

#include "server/sampling/short_rows.h"

namespace graphstore {

/// The longest row DrawWeightedMediumRow takes: four groups of 64 candidates.
inline constexpr int64_t kMediumWeightedRow = 256;

/// The bit masks DrawWeightedMediumRow writes, one per group of 64 candidates.
inline constexpr int kMediumRowMasks = static_cast<int>(kMediumWeightedRow / kShortWeightedRow);

/// DrawWeightedPositions without replacement from a row of at most 256 candidates (meant for
/// rows longer than 64), as kMediumRowMasks bit masks of the positions taken (bit k of
/// masks[g]: candidate 64 g + k): successive sampling in groups of 64, each pick choosing its
/// group by the groups' weight left (summed in double), then its candidate in that group as a
/// short row's pick does. Every processor draws the same bits (sixteen candidates to a register
/// with AVX-512).
void DrawWeightedMediumRow(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks);

/// DrawWeightedMediumRow's two implementations, for tests (the second only where
/// HaveVectorShortRows()).
void DrawWeightedMediumRowPortable(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks);
void DrawWeightedMediumRowVector(uint64_t key, const float* weights, int64_t n, int fanout, uint64_t* masks);

/// DrawWeightedMediumRow for `rows` rows at once (as DrawWeightedShortRows for short rows), row j
/// keyed keys[j] with 64 < n[j] <= 256 candidates whose weights start at weights[j], its
/// kMediumRowMasks masks to masks[kMediumRowMasks * j ...]: the same masks, faster.
void DrawWeightedMediumRows(const uint64_t* keys, const float* const* weights, const int64_t* n, size_t rows,
                            int fanout, uint64_t* masks);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_MEDIUM_ROWS_H_
