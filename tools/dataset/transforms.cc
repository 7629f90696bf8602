#include "tools/dataset/transforms.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "proto/type_names.h"
#include "tools/dataset/validate.h"

namespace graphstore {

void AddReverseEdgeTypes(GraphData* g) {
  const size_t n = g->edge_types.size();
  for (size_t i = 0; i < n; ++i) {
    const EdgeTypeData& e = g->edge_types[i];
    EdgeTypeData r;
    r.src_type = e.dst_type;
    r.relation = ReverseRelation(e.relation);
    r.dst_type = e.src_type;
    bool exists = false;
    for (const auto& other : g->edge_types) {
      exists |= other.src_type == r.src_type && other.relation == r.relation && other.dst_type == r.dst_type;
    }
    if (exists) continue;
    r.src = e.dst;
    r.dst = e.src;
    r.feature_dim = e.feature_dim;
    r.features = e.features;
    r.weights = e.weights;
    r.times = e.times;
    g->edge_types.push_back(std::move(r));
  }
}

Assignment RandomAssignment(const GraphData& g, int num_partitions, uint64_t seed) {
  Assignment out;
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    std::vector<int32_t> a(static_cast<size_t>(g.node_types[t].num_nodes));
    DealNodes(g.node_types[t].num_nodes, num_partitions, seed, static_cast<int>(t),
              [&](int64_t node, int p) { a[static_cast<size_t>(node)] = p; });
    out.push_back(std::move(a));
  }
  return out;
}

absl::Status CheckSplitFractions(const SplitFractions& f) {
  if (f.train < 0 || f.val < 0 || f.test < 0 || f.train + f.val + f.test > 1.0 + 1e-9) {
    return absl::InvalidArgumentError("split fractions must be >= 0 and add up to at most 1");
  }
  return absl::OkStatus();
}

bool SplitsType(const SplitFractions& f, const std::string& type, bool has_labels, bool any_labels) {
  if (f.only_types.empty()) return !any_labels || has_labels;
  return std::find(f.only_types.begin(), f.only_types.end(), type) != f.only_types.end();
}

absl::Status AssignSplits(GraphData* g, double train, double val, double test, uint64_t seed,
                          const std::vector<std::string>& only_types) {
  return AssignSplits(g, SplitFractions{train, val, test, only_types}, seed);
}

absl::Status AssignSplits(GraphData* g, const SplitFractions& f, uint64_t seed) {
  if (auto s = CheckSplitFractions(f); !s.ok()) return s;
  bool any_labels = false;
  for (const auto& t : g->node_types) any_labels |= !t.labels.empty();
  std::mt19937_64 rng(seed);
  for (auto& t : g->node_types) {
    if (!SplitsType(f, t.name, !t.labels.empty(), any_labels)) continue;
    std::vector<int64_t> eligible;
    for (int64_t i = 0; i < t.num_nodes; ++i) {
      if (t.labels.empty() || t.labels[i] >= 0) eligible.push_back(i);
    }
    ChooseSplits(std::move(eligible), f, &rng, [&](int split, const int64_t* ids, size_t n) {
      std::vector<int64_t> sorted(ids, ids + n);
      std::sort(sorted.begin(), sorted.end());
      t.splits[kSplitNames[split]] = std::move(sorted);
    });
  }
  return absl::OkStatus();
}

}  // namespace graphstore
