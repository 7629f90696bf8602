#include "tests/sampling/sampling_fixtures.h"
#include "tools/dataset/transforms.h"

#include <catch2/catch.hpp>

namespace graphstore::testing {

std::unique_ptr<Partition> WritePartition(const GraphData& g, const std::string& dir, const std::string& edge_dir,
                                          int parts, int which) {
  WriteOptions o;
  o.edge_dir = edge_dir;
  o.num_partitions = parts;
  const absl::Status written = WritePartitions(g, RandomAssignment(g, parts, 3), o, dir);
  INFO(written.ToString());
  REQUIRE(written.ok());
  auto p = Partition::Load(PartitionDir(dir, parts, which));
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return *std::move(p);
}

AblpInput TrainInput(const Partition& p, const std::string& negative_edge_type) {
  AblpRequest req;
  req.split = "train";
  req.node_type = "user";
  req.supervision_edge_type = "user__buys__item";
  req.negative_edge_type = negative_edge_type;
  auto in = LoadAblpInput(p, req);
  INFO(in.status().ToString());
  REQUIRE(in.ok());
  return *std::move(in);
}
PprSamplerOptions Ppr(double alpha, double eps, int max_nodes_per_seed) {
  PprSamplerOptions o;
  o.alpha = alpha;
  o.eps = eps;
  o.max_nodes_per_seed = max_nodes_per_seed;
  return o;
}
SampledSubgraph RunSampler(const Sampler& s, std::vector<int64_t> seeds, const SampleAt& at) {
  auto scratch = s.NewScratch();
  SeedBatch b;
  b.node_type = at.node_type;
  b.ids = seeds.data();
  b.size = seeds.size();
  b.seed = at.seed;
  b.epoch = at.epoch;
  b.batch_index = at.batch;
  b.ablp = at.ablp;
  b.times = at.times;
  SampledSubgraph out;
  const absl::Status st = s.Sample(b, scratch.get(), &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

std::set<std::pair<int64_t, int64_t>> EdgePairs(const Partition& p, const SampledSubgraph& g, int e) {
  const EdgeTypeStore& et = p.edge_type(e);
  std::set<std::pair<int64_t, int64_t>> out;
  for (size_t k = 0; k < g.edges[e].rows.size(); ++k) {
    out.emplace(g.nodes[et.src_type].ids[g.edges[e].rows[k]], g.nodes[et.dst_type].ids[g.edges[e].cols[k]]);
  }
  return out;
}
}  // namespace graphstore::testing
