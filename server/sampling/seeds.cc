#include "server/sampling/seeds.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/sampling/ablp.h"

namespace graphstore {
namespace {

// Adds a link-prediction batch's label nodes as seeds (positives, then negatives, after the
// anchors) and records the labels as local indices, padded with -1.
template <typename AddSeed>
absl::Status AddLabelSeeds(const Partition& partition, const SeedBatch& batch, AddSeed add_seed,
                           SampledSubgraph* out) {
  const AblpBatch& a = *batch.ablp;
  const size_t n = batch.size;
  if (a.anchor_type != batch.node_type || a.pos_offsets.size() != n + 1 || a.neg_offsets.size() != n + 1) {
    return absl::InternalError("link-prediction labels do not match the batch's anchors");
  }
  const NodeTypeStore& label_type = partition.node_type(a.label_type);
  for (const auto* list : {&a.positives, &a.negatives}) {
    for (int64_t id : *list) {
      if (id < 0 || id >= label_type.num_nodes) {
        return absl::InternalError(absl::StrCat("label node ", id, " is not a '", label_type.name, "' node id"));
      }
    }
  }
  SampledAblp& out_labels = out->ablp;
  out_labels.present = true;
  out_labels.supervision_edge_type = a.supervision_edge_type;
  for (size_t i = 0; i < n; ++i) out_labels.anchors.push_back(add_seed(a.anchor_type, batch.ids[i]));
  auto matrix = [&](const std::vector<int64_t>& offsets, const std::vector<int64_t>& ids, std::vector<int64_t>* m,
                    int64_t* width) {
    *width = 0;
    for (size_t i = 0; i < n; ++i) *width = std::max(*width, offsets[i + 1] - offsets[i]);
    m->assign(n * static_cast<size_t>(*width), -1);
    for (size_t i = 0; i < n; ++i) {
      for (int64_t k = offsets[i]; k < offsets[i + 1]; ++k) {
        (*m)[i * *width + (k - offsets[i])] = add_seed(a.label_type, ids[k]);
      }
    }
  };
  matrix(a.pos_offsets, a.positives, &out_labels.positive, &out_labels.max_positive);
  matrix(a.neg_offsets, a.negatives, &out_labels.negative, &out_labels.max_negative);
  return absl::OkStatus();
}

absl::Status PlaceSeeds(const Partition& partition, const SeedBatch& batch, LocalIds* local_of,
                        SampledSubgraph* out) {
  // Seeds of other partitions are expanded through their servers like any other node
  // (global batches); what the channel may hold was checked at registration.
  const NodeTypeStore& seed_type = partition.node_type(batch.node_type);
  SampledNodes& seeds = out->nodes[batch.node_type];
  seeds.batch.assign(batch.ids, batch.ids + batch.size);
  seeds.ids.reserve(batch.size);
  auto add_seed = [&](int type, int64_t id) {
    int32_t& local = (*local_of)[type].Slot(id, out->nodes[type].ids);
    if (local < 0) {
      local = static_cast<int32_t>(out->nodes[type].ids.size());
      out->nodes[type].ids.push_back(id);
    }
    return static_cast<int64_t>(local);
  };
  for (size_t i = 0; i < batch.size; ++i) {
    const int64_t id = batch.ids[i];
    if (id < 0 || id >= seed_type.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat("seed ", id, " is not a '", seed_type.name,
                                                     "' node id (0 <= id < ", seed_type.num_nodes, ")"));
    }
    add_seed(batch.node_type, id);
  }
  if (batch.ablp != nullptr) return AddLabelSeeds(partition, batch, add_seed, out);
  return absl::OkStatus();
}

}  // namespace

ScopedLocalIds::~ScopedLocalIds() {
  for (size_t t = 0; t < subgraph_->nodes.size() && t < maps_->size(); ++t) (*maps_)[t].Clear(subgraph_->nodes[t].ids);
}

absl::Status StartSubgraph(const Partition& partition, const SeedBatch& batch, LocalIds* local_of,
                           SampledSubgraph* out, int64_t dense_nodes) {
  const int num_types = static_cast<int>(partition.node_types().size());
  if (batch.node_type < 0 || batch.node_type >= num_types) {
    return absl::InvalidArgumentError(absl::StrCat("node type index ", batch.node_type, " is out of range"));
  }
  out->Reset(num_types, partition.edge_types().size());
  if (local_of->size() != static_cast<size_t>(num_types)) {
    local_of->resize(num_types);
    for (int t = 0; t < num_types; ++t) (*local_of)[t].Reset(partition.node_type(t).num_nodes, dense_nodes);
  }
  return PlaceSeeds(partition, batch, local_of, out);
}

}  // namespace graphstore
