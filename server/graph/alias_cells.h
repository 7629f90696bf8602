#ifndef GRAPHSTORE_SERVER_GRAPH_ALIAS_CELLS_H_
#define GRAPHSTORE_SERVER_GRAPH_ALIAS_CELLS_H_

// The layout of an alias table's cells (WeightIndex::Alias), shared by the index that builds
// them and the draws that read them.

#include <cstdint>

namespace graphstore {

/// Rows up to this long get an alias table: their aliases fit in 16 bits.
inline constexpr int64_t kAliasMaxDegree = 65535;

/// Bits of a cell of a row of `degree` (1..kAliasMaxDegree) edges that hold its alias, an
/// offset within the row; the 32 - AliasBits(degree) bits above them hold its threshold.
inline int AliasBits(int64_t degree) { return 64 - __builtin_clzll(static_cast<uint64_t>(degree)); }

/// The first cell of a row without a positive weight (threshold 0, an alias past the row).
inline uint32_t AliasNone(int64_t degree) { return (uint32_t{1} << AliasBits(degree)) - 1; }

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_ALIAS_CELLS_H_
