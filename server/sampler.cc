#include "server/sampler.h"

namespace graphstore {

size_t SampledSubgraph::ByteSize() const {
  size_t bytes = 0;
  for (const auto& n : nodes) {
    bytes += (n.ids.size() + n.num_sampled_nodes.size() + n.batch.size() + n.labels.size()) * 8 +
             n.features.size();
  }
  for (const auto& e : edges) {
    bytes += (e.rows.size() + e.cols.size() + e.eids.size() + e.num_sampled_edges.size()) * 8;
  }
  return bytes;
}

int64_t SampledSubgraph::NumEdges() const {
  int64_t n = 0;
  for (const auto& e : edges) n += static_cast<int64_t>(e.rows.size());
  return n;
}

}  // namespace graphstore
