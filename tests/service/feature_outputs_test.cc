#include "server/service/feature_outputs.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "server/graph/partition.h"
#include "tests/fixtures.h"

namespace graphstore {
namespace {

TEST_CASE("a trainer cache's hot nodes are the k of highest degree, ties to the lower id, held for k alone",
          "[feature_outputs]") {
  auto p = Partition::Load(testing::GeneratedDataset(3000, 8, 4, 2, 11) + "/part-1");
  REQUIRE(p.ok());
  const NodeTypeStore& t = (*p)->node_type(0);
  const int64_t* degree = t.degree.data<int64_t>();
  FeatureOutputs outputs(p->get());
  for (int64_t k : {int64_t{1}, int64_t{17}, int64_t{500}, t.num_nodes, t.num_nodes + 5}) {
    INFO("k " << k);
    // The ranking, by sorting every node.
    std::vector<int64_t> order(t.num_nodes);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return degree[a] != degree[b] ? degree[a] > degree[b] : a < b; });
    order.resize(std::min(k, t.num_nodes));
    std::sort(order.begin(), order.end());
    auto hot = outputs.HotNodes(0, k);
    REQUIRE(hot.ok());
    CHECK((*hot)->ids == order);
    const std::set<int64_t> in(order.begin(), order.end());
    for (int64_t id = 0; id < t.num_nodes; ++id) REQUIRE((*hot)->Contains(id) == (in.count(id) > 0));
  }
  // Ties matter at this size: many nodes share each degree.
  std::set<int64_t> degrees(degree, degree + t.num_nodes);
  CHECK(degrees.size() < static_cast<size_t>(t.num_nodes) / 10);
}

}  // namespace
}  // namespace graphstore
