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
  std::mt19937_64 rng(seed);
  for (const auto& t : g.node_types) {
    std::vector<int64_t> perm(t.num_nodes);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> a(t.num_nodes);
    for (int64_t i = 0; i < t.num_nodes; ++i) a[perm[i]] = static_cast<int32_t>(i % num_partitions);
    out.push_back(std::move(a));
  }
  return out;
}

absl::Status AssignSplits(GraphData* g, double train, double val, double test, uint64_t seed,
                          const std::vector<std::string>& only_types) {
  if (train < 0 || val < 0 || test < 0 || train + val + test > 1.0 + 1e-9) {
    return absl::InvalidArgumentError("split fractions must be >= 0 and add up to at most 1");
  }
  bool any_labels = false;
  for (const auto& t : g->node_types) any_labels |= !t.labels.empty();
  std::mt19937_64 rng(seed);
  for (auto& t : g->node_types) {
    const bool chosen = only_types.empty()
                            ? (!any_labels || !t.labels.empty())
                            : std::find(only_types.begin(), only_types.end(), t.name) != only_types.end();
    if (!chosen) continue;
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < t.num_nodes; ++i) {
      if (t.labels.empty() || t.labels[i] >= 0) perm.push_back(i);
    }
    std::shuffle(perm.begin(), perm.end(), rng);
    const auto n = static_cast<double>(perm.size());
    const auto n_train = static_cast<size_t>(n * train);
    const auto n_val = static_cast<size_t>(n * val);
    const auto n_test = std::min(perm.size() - n_train - n_val, static_cast<size_t>(n * test + 0.5));
    auto take = [&](size_t from, size_t count) {
      std::vector<int64_t> ids(perm.begin() + from, perm.begin() + from + count);
      std::sort(ids.begin(), ids.end());
      return ids;
    };
    t.splits["train"] = take(0, n_train);
    t.splits["val"] = take(n_train, n_val);
    t.splits["test"] = take(n_train + n_val, n_test);
  }
  return absl::OkStatus();
}

}  // namespace graphstore
