#include "tools/dataset/validate.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "proto/type_names.h"
#include "server/graph/manifest.h"

namespace graphstore {

absl::Status ValidateGraph(const GraphData& g) {
  if (g.node_types.empty()) return absl::InvalidArgumentError("the graph has no node types");
  for (const auto& t : g.node_types) {
    const std::string who = absl::StrCat("node type '", t.name, "'");
    if (!IsValidTypeName(t.name)) return absl::InvalidArgumentError(absl::StrCat(who, ": bad name"));
    if (!t.raw_ids.empty() && static_cast<int64_t>(t.raw_ids.size()) != t.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": raw_ids length differs from num_nodes"));
    }
    if (t.feature_dim > 0 && static_cast<int64_t>(t.features.size()) != t.num_nodes * t.feature_dim) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": features are not num_nodes x feature_dim"));
    }
    if (!t.labels.empty() && static_cast<int64_t>(t.labels.size()) != t.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": labels length differs from num_nodes"));
    }
    if (!t.times.empty() && static_cast<int64_t>(t.times.size()) != t.num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": ", t.times.size(), " node times for ", t.num_nodes, " nodes"));
    }
    for (const auto& [split, ids] : t.splits) {
      for (int64_t id : ids) {
        if (id < 0 || id >= t.num_nodes) {
          return absl::InvalidArgumentError(absl::StrCat(who, ": split '", split, "' has id ", id,
                                                         " outside [0, ", t.num_nodes, ")"));
        }
      }
    }
  }
  for (const auto& e : g.edge_types) {
    const std::string who = absl::StrCat("edge type '", EdgeName(e), "'");
    const int s = FindType(g, e.src_type);
    const int d = FindType(g, e.dst_type);
    if (s < 0 || d < 0) return absl::InvalidArgumentError(absl::StrCat(who, ": unknown node type"));
    if (!IsValidTypeName(e.relation)) return absl::InvalidArgumentError(absl::StrCat(who, ": bad relation"));
    if (e.src.size() != e.dst.size()) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": src and dst lengths differ"));
    }
    if (e.feature_dim > 0 && e.features.size() != e.src.size() * e.feature_dim) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": features are not num_edges x feature_dim"));
    }
    if (!e.weights.empty() && e.weights.size() != e.src.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": ", e.weights.size(), " edge weights for ", e.src.size(), " edges"));
    }
    if (!e.times.empty() && e.times.size() != e.src.size()) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": ", e.times.size(), " edge times for ", e.src.size(), " edges"));
    }
    for (size_t i = 0; i < e.weights.size(); ++i) {
      if (!(e.weights[i] >= 0) || !std::isfinite(e.weights[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat(who, ": edge weight ", i, " is ", e.weights[i], "; weights are finite and >= 0"));
      }
    }
    for (size_t i = 0; i < e.src.size(); ++i) {
      if (e.src[i] < 0 || e.src[i] >= g.node_types[s].num_nodes || e.dst[i] < 0 ||
          e.dst[i] >= g.node_types[d].num_nodes) {
        return absl::InvalidArgumentError(
            absl::StrCat(who, ": edge ", i, " (", e.src[i], " -> ", e.dst[i], ") is out of range"));
      }
    }
    for (const auto& [split, l] : e.label_splits) {
      if (!IsValidTypeName(split)) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": bad label split name '", split, "'"));
      }
      if (l.src.size() != l.dst.size()) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": label split '", split, "': src and dst lengths differ"));
      }
      for (size_t i = 0; i < l.src.size(); ++i) {
        if (l.src[i] < 0 || l.src[i] >= g.node_types[s].num_nodes || l.dst[i] < 0 ||
            l.dst[i] >= g.node_types[d].num_nodes) {
          return absl::InvalidArgumentError(absl::StrCat(who, ": label split '", split, "': edge ", i, " (",
                                                         l.src[i], " -> ", l.dst[i], ") is out of range"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore
