#ifndef GRAPHSTORE_TOOLS_DATASET_TRANSFORMS_H_
#define GRAPHSTORE_TOOLS_DATASET_TRANSFORMS_H_

// What the tools do to a graph in memory before they write it: reverse edge types, splits,
// and a random assignment of nodes to partitions.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/graph/owner_deal.h"
#include "tools/dataset/graph_data.h"

namespace graphstore {

/// The seeded shuffle ChooseSplits makes its choice of: `ids` permuted by `rng`. The
/// permutation depends on the values and `rng` alone, not on `Id`, so a caller short of memory
/// shuffles uint32 ids and gets what a caller with int64 ids gets.
template <typename Id>
void ShuffleIds(std::vector<Id>* ids, std::mt19937_64* rng) {
  std::shuffle(ids->begin(), ids->end(), *rng);
}

/// RandomAssignment's deal of node type `type` of `num_nodes` nodes in a run seeded `seed`:
/// `place(node, partition)` for every node, the partition computed from the node alone
/// (OwnerDeal: the node's position in a keyed shuffle, mod num_partitions), so no shuffle is
/// held and a server can compute the owners again from the key the manifest records.
template <typename Place>
void DealNodes(int64_t num_nodes, int num_partitions, uint64_t seed, int type, Place place) {
  const OwnerDeal deal(num_nodes, num_partitions, OwnerDeal::TypeKey(seed, type));
  for (int64_t g = 0; g < num_nodes; ++g) place(g, static_cast<int>(deal.Owner(g)));
}

/// The fractions of --split: which part of a type's labelled nodes goes to train, val and test.
struct SplitFractions {
  double train = 0.8;
  double val = 0.1;
  double test = 0.1;
  /// Only these node types; empty: every type with labels (every type when none has labels).
  std::vector<std::string> only_types;
};

/// OK when the fractions are each >= 0 and add up to at most 1.
absl::Status CheckSplitFractions(const SplitFractions& f);

/// Whether AssignSplits splits a type: named in `only_types`, or (none named) labelled when any
/// type is.
bool SplitsType(const SplitFractions& f, const std::string& type, bool has_labels, bool any_labels);

/// AssignSplits' choice for one type: `eligible` (a node's label is >= 0, or every node when the
/// type has none) in ascending order, shuffled with the type's turn of `rng`; then
/// `take(split, ids, n)` for split 0 (train), 1 (val) and 2 (test), each a run of the shuffle.
template <typename Id, typename Take>
void ChooseSplits(std::vector<Id> eligible, const SplitFractions& f, std::mt19937_64* rng, Take take) {
  ShuffleIds(&eligible, rng);
  const auto n = static_cast<double>(eligible.size());
  const auto n_train = static_cast<size_t>(n * f.train);
  const auto n_val = static_cast<size_t>(n * f.val);
  const auto n_test = std::min(eligible.size() - n_train - n_val, static_cast<size_t>(n * f.test + 0.5));
  take(0, eligible.data(), n_train);
  take(1, eligible.data() + n_train, n_val);
  take(2, eligible.data() + n_train + n_val, n_test);
}

/// The names of ChooseSplits' splits 0, 1 and 2.
inline const char* const kSplitNames[] = {"train", "val", "test"};

/// Every node assigned by a seeded random permutation, dealt round-robin so partition sizes
/// differ by at most one (DealNodes, type by type).
Assignment RandomAssignment(const GraphData& graph, int num_partitions, uint64_t seed);

/// The seed a writer records as the nodes' deal (WriteOptions::deal_seed) for an assignment by
/// `method` in a run seeded `seed`: "random" deals (RandomAssignment); no other method does.
inline std::optional<uint64_t> DealSeed(const std::string& method, uint64_t seed) {
  return method == "random" ? std::optional<uint64_t>(seed) : std::nullopt;
}

/// Adds, for every edge type src__rel__dst whose reverse (dst__rev_rel__src) is not there yet,
/// the reverse type: every edge flipped, features kept, no label splits. Sampling can then
/// follow a relation both ways, as PyG's ToUndirected does for heterogeneous graphs.
void AddReverseEdgeTypes(GraphData* graph);

/// Assigns each node of every type with a label (or, when no type has labels, of every type)
/// to "train", "val" or "test" by a seeded permutation, in the given fractions.
absl::Status AssignSplits(GraphData* graph, double train, double val, double test, uint64_t seed,
                          const std::vector<std::string>& only_types = {});
absl::Status AssignSplits(GraphData* graph, const SplitFractions& fractions, uint64_t seed);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_DATASET_TRANSFORMS_H_
