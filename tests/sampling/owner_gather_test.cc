// A batch whose rows and labels are left to their owners (rows_from_owners): over a socket the
// server gathers its own nodes' rows and labels alone and no mask (the owners say which rows
// are absent); into shared memory every node keeps its place, -1 for the others' labels; with
// a trainer cache the mask marks both the cached rows and the others'.

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "server/graph/partition.h"
#include "server/sampling/gather.h"
#include "tests/fixtures.h"

namespace graphstore {
namespace {

std::unique_ptr<Partition> Part(int k) {
  auto loaded = Partition::Load(testing::GeneratedDataset(800, 4, 3, 2, 13) + "/part-" + std::to_string(k));
  REQUIRE(loaded.ok());
  return *std::move(loaded);
}

// Every node of the graph, in id order (partition 0's and 1's mixed).
SampledNodes AllNodes(const Partition& p) {
  SampledNodes n;
  for (int64_t id = 0; id < p.node_type(0).num_nodes; ++id) n.ids.push_back(id);
  return n;
}

TEST_CASE("rows and labels left to owners: the sender's own alone over a socket, every place in shared memory",
          "[gather]") {
  auto p0 = Part(0);
  const NodeTypeStore& t = p0->node_type(0);
  FeatureOutput output;
  output.rows_from_owners = true;
  const size_t row_bytes = static_cast<size_t>(t.feature_dim) * 4;

  SampledNodes socket = AllNodes(*p0);
  REQUIRE(GatherNodeData(*p0, 0, true, true, &output, nullptr, &socket).ok());
  const size_t n = socket.ids.size();
  REQUIRE(socket.owners.bytes.size() == n);
  std::vector<int64_t> own_labels;
  size_t own = 0;
  for (size_t i = 0; i < n; ++i) {
    if (socket.owners[i] != 0) continue;
    ++own;
    auto label = p0->node_type(0).labels.data<int64_t>()[t.OwnerRow(socket.ids[i])];
    own_labels.push_back(label);
  }
  REQUIRE(own > 0);
  REQUIRE(own < n);
  CHECK(socket.cached.empty());
  CHECK(socket.labels == own_labels);
  CHECK(socket.feature_bytes() == own * row_bytes);
  CHECK(socket.rows_left_to_owners == static_cast<int64_t>(n - own));

  // In place: one label per node, the others' -1, and a row's place for every node.
  std::vector<char> buffer(n * row_bytes);
  SampledNodes shared = AllNodes(*p0);
  REQUIRE(GatherNodeData(*p0, 0, true, true, &output, buffer.data(), &shared, nullptr, nullptr, /*in_place=*/true).ok());
  REQUIRE(shared.labels.size() == n);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (shared.owners[i] == 0) {
      CHECK(shared.labels[i] == own_labels[k++]);
    } else {
      CHECK(shared.labels[i] == -1);
    }
  }
  CHECK(shared.cached.empty());
  // Labels alone into shared memory (no feature buffer) keep their places too.
  SampledNodes labels_only = AllNodes(*p0);
  REQUIRE(GatherNodeData(*p0, 0, false, true, &output, nullptr, &labels_only, nullptr, nullptr, true).ok());
  CHECK(labels_only.labels.size() == n);

  // A trainer cache of every even id: the mask marks cached and other partitions' rows alike.
  std::vector<int64_t> even;
  for (size_t i = 0; i < n; i += 2) even.push_back(static_cast<int64_t>(i));
  output.cached = {HotSet::Of(std::move(even), static_cast<int64_t>(n))};
  SampledNodes masked = AllNodes(*p0);
  REQUIRE(GatherNodeData(*p0, 0, true, true, &output, nullptr, &masked).ok());
  REQUIRE(masked.cached.size() == n);
  size_t rows = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool absent = masked.owners[i] != 0 || i % 2 == 0;
    CHECK(masked.cached[i] == absent);
    rows += !absent;
  }
  CHECK(masked.feature_bytes() == rows * row_bytes);
  CHECK(masked.labels == own_labels);
}

}  // namespace
}  // namespace graphstore
