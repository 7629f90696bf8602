#ifndef GRAPHSTORE_TESTS_FIXTURES_H_
#define GRAPHSTORE_TESTS_FIXTURES_H_

// Small graphs whose answers the tests know exactly.

#include <string>

#include "tools/dataset/writer.h"
#include "tools/graph_input.h"

namespace graphstore::testing {

/// Six nodes: 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 3, 3 -> 4, 4 -> 5, 5 -> 0 (edge ids in that order),
/// two features per node (id, -id) and label id % 3; splits train {0, 1, 2, 3}, test {4, 5}.
GraphData TinyGraph();

/// Users u0..u2 and items i0..i3. user__buys__item edges, edge id = position, feature 10 * id:
///   e0 u0->i0, e1 u0->i1, e2 u1->i1, e3 u1->i2, e4 u2->i3, e5 u0->i2
/// plus the reverse type item__rev_buys__user. Label splits of buys: train (u0,i0) (u0,i1)
/// (u1,i2); val (u2,i3) (u0,i3). Explicit negatives in the label-only type user__dislikes__item:
/// train (u0,i3) (u1,i0). User features [id], item features [100 + id].
GraphData Shop();

/// A generated dataset (8 average out-degree, edge weights as tools/generator.h's EdgeWeight;
/// with `times`, node and edge times as its NodeTime and EdgeTime), written once per test binary
/// and arguments and shared by its tests; returns its directory (with several partitions,
/// part-K below it).
const std::string& GeneratedDataset(int64_t num_nodes, int feature_dim, int num_classes, int num_partitions = 1,
                                    uint64_t seed = 5, bool times = false);

/// Cora's citation list from the shared datasets, read as citing -> cited.
GraphInputSpec CoraSpec();

}  // namespace graphstore::testing

#endif  // GRAPHSTORE_TESTS_FIXTURES_H_
