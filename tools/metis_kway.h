#ifndef GRAPHSTORE_TOOLS_METIS_KWAY_H_
#define GRAPHSTORE_TOOLS_METIS_KWAY_H_

// The one call of METIS's k-way partitioner, shared by the METIS method (the whole graph) and
// the streaming method (the graph of clusters).

#include <metis.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace graphstore {

/// A graph as METIS takes it: the CSR of its undirected adjacency, and optionally `ncon`
/// weights per vertex, a weight per adjacency entry and the allowed imbalance per weight.
struct KwayGraph {
  std::vector<idx_t> xadj;
  std::vector<idx_t> adjncy;
  idx_t ncon = 1;
  std::vector<idx_t> vwgt;      // empty: every vertex weighs 1
  std::vector<idx_t> adjwgt;    // empty: every entry weighs 1
  std::vector<real_t> ubvec;    // empty: METIS's default (1.03)
};

/// The part of each vertex of `g` in a k-way partition into `num_partitions`, seeded with
/// `seed`. Internal naming METIS's code when it fails.
absl::StatusOr<std::vector<idx_t>> KwayPartition(KwayGraph* g, int num_partitions, uint64_t seed);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_METIS_KWAY_H_
