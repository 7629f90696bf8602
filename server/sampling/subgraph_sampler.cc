#include "server/sampling/subgraph_sampler.h"

namespace graphstore {

absl::StatusOr<std::unique_ptr<SubgraphSampler>> SubgraphSampler::Create(const Partition* partition,
                                                                         NeighborSamplerOptions options) {
  // The checks and the per-type fanouts are the neighbour sampler's; only Sample differs.
  std::unique_ptr<SubgraphSampler> s(new SubgraphSampler(partition, std::move(options)));
  if (auto st = s->Init(); !st.ok()) return st;
  return s;
}

absl::Status SubgraphSampler::Sample(const SeedBatch& batch, SamplerScratch* scratch, SampledSubgraph* out) const {
  auto* s = static_cast<Scratch*>(scratch);
  ScopedLocalIds reset(&s->local_of, out);
  if (auto st = SampleHops(batch, s, out); !st.ok()) return st;
  // Every stored edge between two sampled nodes, each type's rows in local id order: a full
  // expansion of all sampled nodes that adds no node.
  for (int e = 0; e < static_cast<int>(partition_->edge_types().size()); ++e) {
    SampledEdges& edges = out->edges[e];
    edges.rows.clear();
    edges.cols.clear();
    edges.eids.clear();
    edges.features.clear();
    edges.num_sampled_edges.clear();
    const int row_type = partition_->edge_type(e).row_type;
    if (auto st = ExpandHop(e, -1, 0, batch, num_hops(), 0, out->nodes[row_type].ids.size(), /*add_nodes=*/false, s,
                            out);
        !st.ok()) {
      return st;
    }
    edges.num_sampled_edges.push_back(static_cast<int64_t>(edges.rows.size()));
  }
  return GatherData(batch, out);
}

}  // namespace graphstore
