#ifndef GRAPHSTORE_TESTS_SAMPLING_SAMPLING_FIXTURES_H_
#define GRAPHSTORE_TESTS_SAMPLING_SAMPLING_FIXTURES_H_

// Helpers for the samplers' tests: writing a graph as partitions and loading one, the shop's
// link-prediction input, running a sampler.

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/sampling/ppr_sampler.h"
#include "server/sampling/sampler.h"
#include "tests/fixtures.h"

namespace graphstore::testing {

/// Writes `g` to `dir` as `parts` random partitions with `edge_dir` and loads partition `which`.
std::unique_ptr<Partition> WritePartition(const GraphData& g, const std::string& dir,
                                          const std::string& edge_dir = "out", int parts = 1, int which = 0);

/// The train-split input of user anchors over user__buys__item of Shop().
AblpInput TrainInput(const Partition& p, const std::string& negative_edge_type = "");

/// PPR options with the given parameters.
PprSamplerOptions Ppr(double alpha, double eps, int max_nodes_per_seed);

/// Where a test batch's randomness comes from.
struct SampleAt {
  int node_type = 0;
  uint64_t seed = 1;
  int64_t epoch = 0;
  int64_t batch = 0;
  const AblpBatch* ablp = nullptr;
  /// Temporal sampling: each seed's time (null: their node times).
  const int64_t* times = nullptr;
};

/// Samples `seeds` with fresh scratch; the sample must succeed.
SampledSubgraph RunSampler(const Sampler& s, std::vector<int64_t> seeds, const SampleAt& at = {});

/// The sampling tests' common case: one partition written with `edge_dir`, loaded.
inline std::unique_ptr<Partition> Write(const GraphData& g, const std::string& dir, const std::string& edge_dir = "out") {
  return WritePartition(g, dir, edge_dir);
}

/// RunSampler with seed 7 for batch `batch` of seeds of `node_type`.
inline SampledSubgraph Run(const Sampler& s, int node_type, std::vector<int64_t> seeds, const AblpBatch* ablp = nullptr,
                           int64_t batch = 0) {
  SampleAt at;
  at.node_type = node_type;
  at.seed = 7;
  at.batch = batch;
  at.ablp = ablp;
  return RunSampler(s, std::move(seeds), at);
}

/// Index of a node type / edge type by name; it must exist.
inline int TypeIndex(const Partition& p, const std::string& name) { return *p.FindNodeType(name); }
inline int EdgeTypeIndex(const Partition& p, const std::string& name) { return *p.FindEdgeType(name); }

/// Global (src, dst) pairs of an edge type's sampled edges.
std::set<std::pair<int64_t, int64_t>> EdgePairs(const Partition& p, const SampledSubgraph& g, int edge_type);

}  // namespace graphstore::testing

#endif  // GRAPHSTORE_TESTS_SAMPLING_SAMPLING_FIXTURES_H_
