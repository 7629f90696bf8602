#include "tests/fixtures.h"

#include <map>
#include <stdexcept>
#include <tuple>

#include "tests/test_util.h"
#include "tools/generator.h"
#include "tools/dataset/transforms.h"

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

GraphData Shop() {
  GraphData g;
  g.name = "shop";
  NodeTypeData user;
  user.name = "user";
  user.num_nodes = 3;
  user.feature_dim = 1;
  user.features = {0, 1, 2};
  NodeTypeData item;
  item.name = "item";
  item.num_nodes = 4;
  item.feature_dim = 1;
  item.features = {100, 101, 102, 103};
  g.node_types = {user, item};
  EdgeTypeData buys;
  buys.src_type = "user";
  buys.relation = "buys";
  buys.dst_type = "item";
  buys.src = {0, 0, 1, 1, 2, 0};
  buys.dst = {0, 1, 1, 2, 3, 2};
  buys.feature_dim = 1;
  buys.features = {0, 10, 20, 30, 40, 50};
  buys.label_splits["train"] = LabelEdges{{0, 0, 1}, {0, 1, 2}};
  buys.label_splits["val"] = LabelEdges{{2, 0}, {3, 3}};
  EdgeTypeData dislikes;
  dislikes.src_type = "user";
  dislikes.relation = "dislikes";
  dislikes.dst_type = "item";
  dislikes.label_splits["train"] = LabelEdges{{0, 1}, {3, 0}};
  g.edge_types = {buys, dislikes};
  AddReverseEdgeTypes(&g);
  return g;
}
const std::string& GeneratedDataset(int64_t num_nodes, int feature_dim, int num_classes, int num_partitions,
                                    uint64_t seed, bool times) {
  static TempDir* dir = new TempDir();  // lives until the binary exits
  static std::map<std::tuple<int64_t, int, int, int, uint64_t, bool>, std::string> made;
  const auto key = std::make_tuple(num_nodes, feature_dim, num_classes, num_partitions, seed, times);
  auto it = made.find(key);
  if (it != made.end()) return it->second;
  GeneratorOptions o;
  o.num_nodes = num_nodes;
  o.avg_degree = 8;
  o.feature_dim = feature_dim;
  o.num_classes = num_classes;
  o.num_partitions = num_partitions;
  o.seed = seed;
  o.edge_weights = true;  // uniform sampling ignores them; weighted sampling tests use them
  o.times = times;
  const std::string path = dir->path() + "/data-" + std::to_string(made.size());
  if (!GenerateDataset(o, path).ok()) throw std::runtime_error("cannot generate a test dataset");
  return made.emplace(key, path).first->second;
}

GraphInputSpec CoraSpec() {
  GraphInputSpec spec;
  spec.name = "cora";
  spec.edges.push_back({"", SharedDataPath("cora/cora.cites")});
  spec.swap_columns = true;
  return spec;
}

}  // namespace graphstore::testing
