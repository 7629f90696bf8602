#ifndef GRAPHSTORE_TESTS_FIXTURES_H_
#define GRAPHSTORE_TESTS_FIXTURES_H_

// Small graphs whose answers the tests know exactly.

#include <string>

#include "server/graph/dataset_writer.h"
#include "tools/graph_input.h"

namespace graphstore::testing {

/// Six nodes: 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 3, 3 -> 4, 4 -> 5, 5 -> 0 (edge ids in that order),
/// two features per node (id, -id) and label id % 3; splits train {0, 1, 2, 3}, test {4, 5}.
GraphData TinyGraph();

/// A generated single-partition dataset (seed 5, 8 average out-degree), written once per test
/// binary and shared by its tests; returns its directory.
const std::string& GeneratedDataset(int64_t num_nodes, int feature_dim, int num_classes);

/// Cora's citation list from the shared datasets, read as citing -> cited.
GraphInputSpec CoraSpec();

}  // namespace graphstore::testing

#endif  // GRAPHSTORE_TESTS_FIXTURES_H_
