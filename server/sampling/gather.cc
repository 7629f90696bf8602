#include "server/sampling/gather.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/sampling/owner_split.h"

namespace graphstore {
namespace {

// Where a gather writes: the node type's feature rows (row_bytes each) and labels.
struct GatherTarget {
  char* features = nullptr;  // null: no features
  size_t row_bytes = 0;
  int64_t* labels = nullptr;  // null: no labels
};

// Sizes `nodes`' outputs for a gather and says where the rows go.
GatherTarget Prepare(const NodeTypeStore& t, bool features, bool labels, char* feature_dst, SampledNodes* nodes) {
  GatherTarget g;
  const size_t n = nodes->ids.size();
  if (features) {
    g.row_bytes = static_cast<size_t>(t.feature_dim) * DtypeSize(t.feature_dtype);
    nodes->feature_dim = t.feature_dim;
    nodes->feature_dtype = t.feature_dtype;
    if (feature_dst != nullptr) {
      nodes->features.clear();
      nodes->placed_features = feature_dst;
      nodes->placed_feature_bytes = n * g.row_bytes;
      g.features = feature_dst;
    } else {
      nodes->features.resize(n * g.row_bytes);
      g.features = nodes->features.data();
    }
  }
  if (labels) {
    nodes->labels.resize(n);
    g.labels = nodes->labels.data();
  }
  return g;
}

// Copies the rows of the nodes this partition owns.
void CopyOwned(const NodeTypeStore& t, int self, const std::vector<int64_t>& ids, const GatherTarget& g) {
  const char* src = g.features != nullptr ? static_cast<const char*>(t.features.raw()) : nullptr;
  const int64_t* lab = g.labels != nullptr ? t.labels.data<int64_t>() : nullptr;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (t.Owner(ids[i]) != self) continue;
    const int64_t row = t.OwnerRow(ids[i]);
    if (src != nullptr) std::memcpy(g.features + i * g.row_bytes, src + row * g.row_bytes, g.row_bytes);
    if (lab != nullptr) g.labels[i] = lab[row];
  }
}

}  // namespace

absl::Status CheckGatherable(const Partition& partition, bool node_features, bool labels, bool edge_features) {
  bool any_features = false, any_labels = false, any_edge_features = false;
  for (const auto& n : partition.node_types()) {
    any_features |= n.feature_dim > 0;
    any_labels |= n.labels.is_open();
  }
  for (const auto& e : partition.edge_types()) any_edge_features |= e.feature_dim > 0;
  if (node_features && !any_features) {
    return absl::InvalidArgumentError("with_node_features: the dataset has no node features");
  }
  if (labels && !any_labels) return absl::InvalidArgumentError("with_labels: the dataset has no labels");
  if (edge_features && !any_edge_features) {
    return absl::InvalidArgumentError("with_edge_features: the dataset has no edge features");
  }
  return absl::OkStatus();
}

absl::Status GatherNodeData(const Partition& partition, int node_type, bool features, bool labels,
                            char* feature_dst, SampledNodes* nodes, PeerSampling* peers, RemoteCache* cache) {
  const NodeTypeStore& t = partition.node_type(node_type);
  features = features && t.feature_dim > 0;
  labels = labels && t.labels.is_open();
  if (!features && !labels) return absl::OkStatus();
  const GatherTarget g = Prepare(t, features, labels, feature_dst, nodes);
  const std::vector<int64_t>& ids = nodes->ids;
  if (partition.num_partitions() == 1) {
    CopyOwned(t, partition.partition_id(), ids, g);
    return absl::OkStatus();
  }

  // Nodes owned elsewhere and not cached: one call per owner, answered while the local rows
  // are copied.
  OwnerSplit<PeerSampling::NodeDataCall> split;
  auto cached = [&](size_t i) {
    return cache != nullptr && (!features || cache->GetFeatures(node_type, ids[i], g.features + i * g.row_bytes)) &&
           (!labels || cache->GetLabel(node_type, ids[i], &g.labels[i]));
  };
  if (auto st = split.Split(partition, t, ids.data(), ids.size(), peers != nullptr, "its features and labels need",
                            cached);
      !st.ok()) {
    return st;
  }
  auto issue = [&](std::vector<PeerSampling::NodeDataCall>* calls) {
    return peers->FetchNodeData(t.name, features, labels, calls);
  };
  auto local = [&] {
    CopyOwned(t, partition.partition_id(), ids, g);
    return absl::OkStatus();
  };
  auto check = [&](const PeerSampling::NodeDataCall& c) {
    if ((features && c.features.size() != c.ids.size() * g.row_bytes) || (labels && c.labels.size() != c.ids.size())) {
      return absl::InternalError(absl::StrCat("partition ", c.partition, " answered the data of ", c.ids.size(), " '",
                                              t.name, "' nodes with the wrong size"));
    }
    return absl::OkStatus();
  };
  if (auto st = split.Run(issue, local, check); !st.ok()) return st;

  // Each call's rows in list order, into their nodes' places (and the cache).
  std::vector<size_t> next(split.calls.size(), 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t c = split.call_of_item(i);
    if (c < 0) continue;
    const size_t k = next[c]++;
    const PeerSampling::NodeDataCall& call = split.calls[c];
    if (features) {
      const char* row = call.features.data() + k * g.row_bytes;
      std::memcpy(g.features + i * g.row_bytes, row, g.row_bytes);
      if (cache != nullptr) cache->PutFeatures(node_type, ids[i], row);
    }
    if (labels) {
      g.labels[i] = call.labels[k];
      if (cache != nullptr) cache->PutLabel(node_type, ids[i], call.labels[k]);
    }
  }
  return absl::OkStatus();
}

absl::Status GatherSubgraphData(const Partition& partition, bool features, bool labels, PeerSampling* peers,
                                RemoteCache* cache, SampledSubgraph* out) {
  const int num_types = static_cast<int>(partition.node_types().size());
  std::vector<char*> targets(num_types, nullptr);
  if (out->feature_target) {
    std::vector<size_t> bytes(num_types, 0);
    for (int t = 0; t < num_types; ++t) {
      const NodeTypeStore& nt = partition.node_type(t);
      if (features && nt.feature_dim > 0) {
        bytes[t] = out->nodes[t].ids.size() * static_cast<size_t>(nt.feature_dim) * DtypeSize(nt.feature_dtype);
      }
    }
    auto placed = out->feature_target(*out, bytes);
    if (!placed.ok()) return placed.status();
    if (placed->size() != targets.size()) return absl::InternalError("feature_target returned a wrong count");
    targets = *std::move(placed);
  }
  for (int t = 0; t < num_types; ++t) {
    if (auto st = GatherNodeData(partition, t, features, labels, targets[t], &out->nodes[t], peers, cache);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore
