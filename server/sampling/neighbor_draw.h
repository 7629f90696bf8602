#ifndef GRAPHSTORE_SERVER_SAMPLING_NEIGHBOR_DRAW_H_
#define GRAPHSTORE_SERVER_SAMPLING_NEIGHBOR_DRAW_H_

// One hop's neighbour draw for a list of nodes: the one place a draw happens, whether a sampler
// expands its own frontier or a peer's SampleNeighbors asks, so every server draws alike. A
// node's draw is keyed by (hop key, node id) (server/sampling/draw.h), so it does not depend on
// which server makes it.

#include <cstdint>
#include <utility>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/sampler.h"

namespace graphstore {

/// Neighbours drawn for a list of nodes, and the memory the draw reuses.
struct NeighborDraw {
  /// Per node its number of neighbours drawn; the neighbours' global ids (and edge ids and edge
  /// feature rows, when asked for) concatenated in node order.
  std::vector<int64_t> counts;
  std::vector<int64_t> neighbors;
  std::vector<int64_t> edge_ids;
  std::vector<char> edge_features;
  /// Staging, kept for reuse.
  std::vector<int64_t> base, degree, positions, picked, candidates, weighted_picks;
  // Draws from rows anywhere in memory (owned CSR rows and cached lists together): each
  // node's first neighbour, and each neighbour picked.
  std::vector<const int64_t*> row_start, picked_at;
  std::vector<uint8_t> whole;     // temporal: the node may reach its whole row
  std::vector<size_t> searched;  // temporal: the nodes whose time cuts their row inside
  std::vector<std::pair<int64_t, int64_t>> search_ranges;  // and where in the row to search
  // temporal uniform: the nodes drawn before their cut is found, with the stretch that holds
  // it, and the draws among them that need the cut
  std::vector<size_t> deferred;
  std::vector<std::pair<int64_t, int64_t>> deferred_ranges;
  struct Pending {
    uint64_t key;     // the node's draw key
    int64_t base;     // its row's first CSR position
    int64_t lo, hi;   // the stretch
    int64_t time;     // the node's time
    size_t picks;     // where its picks start in `picked`
  };
  std::vector<Pending> pending;
  // Weighted rows drawn together (without replacement): the draws' keys, the rows' weights and
  // lengths, and the bit masks of the positions taken.
  struct RowsDrawnTogether {
    std::vector<uint64_t> keys, masks;
    std::vector<const float*> weights;
    std::vector<int64_t> degrees;
    void Clear() {
      keys.clear();
      weights.clear();
      degrees.clear();
    }
    void Add(uint64_t key, const float* w, int64_t degree) {
      keys.push_back(key);
      weights.push_back(w);
      degrees.push_back(degree);
    }
  };
  RowsDrawnTogether short_rows;   // up to 64 edges, a mask a row
  RowsDrawnTogether medium_rows;  // 65 to 256, kMediumRowMasks a row
  std::vector<float> candidate_weights;
  std::vector<double> weighted_keys;
  WeightedScratch weighted_scratch;
};

/// How one hop draws.
struct DrawSpec {
  /// Neighbours per node; -1 takes all.
  int fanout = -1;
  bool replace = false;
  /// Draw in proportion to the edge type's stored weights (it must store them); zero-weight
  /// edges are never drawn, even when the fanout takes all.
  bool weighted = false;
  bool with_edge_ids = false;
  bool with_edge_features = false;
  /// Node id's draw is keyed by HashCombine(hop_key, id).
  uint64_t hop_key = 0;
  /// Sorted (node, neighbour) global id pairs never drawn (the batch's label edges); null: none.
  const std::vector<std::pair<int64_t, int64_t>>* excluded = nullptr;
  /// Temporal draw (kUniform draws among the neighbours whose edge time is <= the node's time,
  /// a prefix of its row found by binary search; kLast takes the most recent `fanout` of them),
  /// on edge types that store times (others draw from the whole row), with `times` holding one
  /// time per node drawn for.
  TemporalStrategy temporal = TemporalStrategy::kNone;
  const int64_t* times = nullptr;
};

/// Draws neighbours along `edge_type` for each of `ids`, which `partition` owns (rows of the
/// edge type's row type). A node with excluded neighbours draws among the others.
void DrawOwnedNeighbors(const Partition& partition, int edge_type, const int64_t* ids, size_t n,
                        const DrawSpec& spec, NeighborDraw* out);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_NEIGHBOR_DRAW_H_
