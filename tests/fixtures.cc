#include "tests/fixtures.h"

#include "tests/test_util.h"

namespace graphstore::testing {

GraphData TinyGraph() {
  GraphData g;
  g.name = "tiny";
  NodeTypeData n;
  n.name = "node";
  n.num_nodes = 6;
  n.feature_dim = 2;
  for (int i = 0; i < 6; ++i) {
    n.features.push_back(static_cast<float>(i));
    n.features.push_back(static_cast<float>(-i));
    n.labels.push_back(i % 3);
  }
  n.splits["train"] = {0, 1, 2, 3};
  n.splits["test"] = {4, 5};
  EdgeTypeData e;
  e.src_type = e.dst_type = "node";
  e.relation = "to";
  e.src = {0, 0, 1, 2, 3, 4, 5};
  e.dst = {1, 2, 2, 3, 4, 5, 0};
  g.node_types.push_back(n);
  g.edge_types.push_back(e);
  return g;
}

GraphInputSpec CoraSpec() {
  GraphInputSpec spec;
  spec.name = "cora";
  spec.edges.push_back({"", SharedDataPath("cora/cora.cites")});
  spec.swap_columns = true;
  return spec;
}

}  // namespace graphstore::testing
