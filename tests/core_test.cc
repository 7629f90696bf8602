// The service core called directly, with no server (the first of the three test levels).

#include <catch2/catch.hpp>

#include <cstring>

#include "server/service/core.h"
#include "server/graph/partition.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"
#include "server/graph/dataset_writer.h"

namespace graphstore {
namespace {

using testing::TempDir;

// The tiny graph with one feature per edge: edge i carries 10 * i.
GraphData TinyWithEdgeFeatures() {
  GraphData g = testing::TinyGraph();
  EdgeTypeData& e = g.edge_types[0];
  e.relation = "cites";
  e.feature_dim = 1;
  for (size_t i = 0; i < e.src.size(); ++i) e.features.push_back(10.0f * i);
  return g;
}

std::unique_ptr<Core> CoreFor(const std::string& dir) {
  auto p = Partition::Load(dir);
  REQUIRE(p.ok());
  CoreOptions o;
  o.state_log_interval_s = 0;
  return std::make_unique<Core>(*std::move(p), o);
}

TEST_CASE("GetDatasetMeta names each edge type's relation", "[core]") {
  TempDir dir;
  const GraphData g = TinyWithEdgeFeatures();
  REQUIRE(WritePartitions(g, RandomAssignment(g, 1, 0), WriteOptions(), dir.path()).ok());
  auto core = CoreFor(dir.path());
  v1::DatasetMeta meta;
  REQUIRE(core->GetDatasetMeta({}, &meta).ok());
  REQUIRE(meta.edge_types_size() == 1);
  CHECK(meta.edge_types(0).name() == "node__cites__node");
  CHECK(meta.edge_types(0).src_type() == "node");
  CHECK(meta.edge_types(0).relation() == "cites");
  CHECK(meta.edge_types(0).dst_type() == "node");
  CHECK(meta.edge_types(0).features().dim() == 1);
}

TEST_CASE("GetEdgeFeatures finds stored edges by global edge id", "[core]") {
  TempDir dir;
  const GraphData g = TinyWithEdgeFeatures();
  WriteOptions w;
  w.num_partitions = 2;
  REQUIRE(WritePartitions(g, RandomAssignment(g, 2, 4), w, dir.path()).ok());
  int found = 0;
  for (int p = 0; p < 2; ++p) {
    auto core = CoreFor(PartitionDir(dir.path(), 2, p));
    const EdgeTypeStore& e = core->partition().edge_type(0);
    for (int64_t k = 0; k < e.num_local; ++k) {
      const int64_t id = e.EdgeId(k);
      v1::GetEdgeFeaturesRequest req;
      req.add_ids(id);
      v1::GetEdgeFeaturesResponse resp;
      REQUIRE(core->GetEdgeFeatures(req, &resp).ok());
      float value = 0;
      std::memcpy(&value, resp.features().data().data(), sizeof(float));
      CHECK(value == 10.0f * id);
      ++found;
    }
    // An edge stored by the other partition is not found here.
    v1::GetEdgeFeaturesRequest missing;
    missing.add_ids(99);
    v1::GetEdgeFeaturesResponse resp;
    const absl::Status s = core->GetEdgeFeatures(missing, &resp);
    CHECK(absl::IsInvalidArgument(s));
    CHECK_THAT(std::string(s.message()), Catch::Contains("ids[0]=99"));
  }
  CHECK(found == 7);
}

}  // namespace
}  // namespace graphstore
