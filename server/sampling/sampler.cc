#include "server/sampling/sampler.h"

#include "proto/feature_codec.h"

namespace graphstore {

size_t SampledSubgraph::ByteSize() const {
  size_t bytes = 0;
  for (const auto& n : nodes) {
    bytes += (n.ids.size() + n.num_sampled_nodes.size() + n.batch.size() + n.labels.size() + n.seed_times.size() +
              n.times.size() + n.sampled_times.size() + n.input_ids.size()) *
                 8 +
             n.feature_bytes() + n.cached.size() + n.owners.ByteSize();
  }
  for (const auto& e : edges) {
    bytes += (e.rows.size() + e.cols.size()) * 4 + (e.eids.size() + e.num_sampled_edges.size()) * 8 + e.features.size();
  }
  bytes += (ablp.anchors.size() + ablp.positive.size() + ablp.negative.size()) * 8;
  for (const auto& p : ppr) bytes += (p.seed_index.size() + p.node_index.size()) * 8 + p.weight.size() * 4;
  return bytes;
}

void SampledSubgraph::Reset(size_t num_node_types, size_t num_edge_types) {
  nodes.resize(num_node_types);
  edges.resize(num_edge_types);
  temporal = false;
  node_times = false;
  for (auto& n : nodes) {
    n.ids.clear();
    n.num_sampled_nodes.clear();
    n.batch.clear();
    n.features.clear();
    n.placed_features = nullptr;
    n.placed_feature_bytes = 0;
    n.feature_dim = 0;
    n.feature_bits = 0;
    n.feature_dtype = NpyDtype::kFloat32;
    n.labels.clear();
    n.seed_times.clear();
    n.times.clear();
    n.sampled_times.clear();
    n.input_ids.clear();
    n.cached.clear();
    n.owners.clear();
    n.rows_left_to_owners = 0;
    n.matrix_rows = -1;
    n.other_partitions_rows = 0;
    n.feature_scale = nullptr;
    n.feature_offset = nullptr;
  }
  for (auto& e : edges) {
    e.rows.clear();
    e.cols.clear();
    e.eids.clear();
    e.with_eids = false;
    e.num_sampled_edges.clear();
    e.features.clear();
    e.feature_dim = 0;
    e.feature_dtype = NpyDtype::kFloat32;
  }
  ablp.present = false;
  ablp.anchors.clear();
  ablp.positive.clear();
  ablp.negative.clear();
  ablp.max_positive = ablp.max_negative = 0;
  ppr.clear();
}

NpyDtype FeatureOutput::RowType(NpyDtype stored) const {
  switch (encoding) {
    case Encoding::kAsStored: return stored;
    case Encoding::kFloat32: return NpyDtype::kFloat32;
    case Encoding::kFloat16: return NpyDtype::kFloat16;
    case Encoding::kBfloat16: return NpyDtype::kBfloat16;
    case Encoding::kInt8:
    case Encoding::kInt4:
    case Encoding::kInt2:
    case Encoding::kInt1: return NpyDtype::kUint8;
  }
  return stored;
}

int FeatureOutput::bits() const {
  switch (encoding) {
    case Encoding::kInt8: return 8;
    case Encoding::kInt4: return 4;
    case Encoding::kInt2: return 2;
    case Encoding::kInt1: return 1;
    default: return 0;
  }
}

size_t FeatureOutput::RowBytes(NpyDtype stored, int64_t dim) const {
  const size_t d = static_cast<size_t>(dim);
  return bits() > 0 ? codec::CodeRowBytes(d, bits()) : d * DtypeSize(RowType(stored));
}

int64_t SampledSubgraph::NumEdges() const {
  int64_t n = 0;
  for (const auto& e : edges) n += static_cast<int64_t>(e.rows.size());
  return n;
}

std::shared_ptr<const HotSet> HotSet::Of(std::vector<int64_t> ids, int64_t num_nodes) {
  auto set = std::make_shared<HotSet>();
  set->ids = std::move(ids);
  set->index.Reset(num_nodes);
  for (size_t i = 0; i < set->ids.size(); ++i) set->index.Slot(set->ids[i], set->ids) = static_cast<int32_t>(i);
  return set;
}

}  // namespace graphstore
