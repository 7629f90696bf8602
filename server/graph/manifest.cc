#include "server/graph/manifest.h"

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "server/graph/npy.h"
#include "server/graph/owner_deal.h"

namespace graphstore {

std::string EdgeTypeName(const v1::ManifestEdgeType& type) {
  return absl::StrCat(type.src_type(), "__", type.relation(), "__", type.dst_type());
}

bool IsValidTypeName(const std::string& name) {
  if (name.empty() || name.find("__") != std::string::npos) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsReservedNodeFile(const std::string& split) {
  return split == "ids" || split == "features" || split == "labels" || split == "feature_range";
}

namespace {

// A manifest problem, without the file (ValidateManifest adds it).
absl::Status Bad(const std::string& what) { return absl::DataLossError(what); }

// One node type's counts, feature shape, limits and splits.
absl::Status CheckNodeType(const v1::PartitionManifest& m, const v1::ManifestNodeType& n) {
  if (n.num_nodes() < 0 || n.num_local_nodes() < 0 || n.num_local_nodes() > n.num_nodes()) {
    return Bad(absl::StrCat("node type '", n.name(), "': need 0 <= num_local_nodes <= num_nodes"));
  }
  if (n.feature_dim() < 0) return Bad(absl::StrCat("node type '", n.name(), "': feature_dim < 0"));
  if (!n.feature_dtype().empty() && n.feature_dtype() != "float32" && n.feature_dtype() != "float16") {
    return Bad(absl::StrCat("node type '", n.name(), "': feature_dtype '", n.feature_dtype(),
                            "' is not float32 or float16"));
  }
  if (n.has_labels() && n.num_classes() < 0) {
    return Bad(absl::StrCat("node type '", n.name(), "': num_classes < 0"));
  }
  if (n.num_nodes() > kMaxCount) {
    return Bad(absl::StrCat("node type '", n.name(), "': num_nodes ", n.num_nodes(), " is above the limit ", kMaxCount));
  }
  if (n.feature_dim() > kMaxFeatureDim) {
    return Bad(absl::StrCat("node type '", n.name(), "': feature_dim ", n.feature_dim(), " is above the limit ",
                            kMaxFeatureDim));
  }
  if (m.num_partitions() == 1 && n.num_local_nodes() != n.num_nodes()) {
    return Bad(absl::StrCat("node type '", n.name(), "': the only partition must own all ", n.num_nodes(),
                            " nodes, not num_local_nodes=", n.num_local_nodes()));
  }
  if (n.has_owner_deal() && m.num_partitions() > 1 && m.partition_id() >= 0 && m.partition_id() < m.num_partitions()) {
    // A server trusts the deal for its rows: what it deals here must be what the partition holds.
    const int64_t dealt = OwnerDeal(n.num_nodes(), m.num_partitions(), n.owner_deal().key()).OwnedCount(m.partition_id());
    if (dealt != n.num_local_nodes()) {
      return Bad(absl::StrCat("node type '", n.name(), "': num_local_nodes is ", n.num_local_nodes(), ", but its owner_deal deals ",
                              dealt, " nodes to partition ", m.partition_id()));
    }
  }
  if (n.splits_size() > kMaxSplits) {
    return Bad(absl::StrCat("node type '", n.name(), "': ", n.splits_size(), " splits, the limit is ", kMaxSplits));
  }
  std::set<std::string> splits;
  for (const auto& s : n.splits()) {
    if (!IsValidTypeName(s) || !splits.insert(s).second) {
      return Bad(absl::StrCat("node type '", n.name(), "': bad or repeated split '", s, "'"));
    }
    if (IsReservedNodeFile(s)) {
      return Bad(absl::StrCat("node type '", n.name(), "': split '", s, "' would be stored as ", s,
                              ".npy, a file of the format itself"));
    }
  }
  return absl::OkStatus();
}

// One edge type's counts, feature shape, ids, times and label splits (its node types exist).
absl::Status CheckEdgeType(const v1::PartitionManifest& m, const v1::ManifestEdgeType& e, const std::string& name) {
  if (!IsValidTypeName(e.relation())) {
    return Bad(absl::StrCat("edge type '", name, "': bad relation name"));
  }
  if (e.num_edges() < 0 || e.num_local_edges() < 0 || e.num_local_edges() > e.num_edges()) {
    return Bad(absl::StrCat("edge type '", name, "': need 0 <= num_local_edges <= num_edges"));
  }
  if (e.num_edges() > kMaxCount) {
    return Bad(absl::StrCat("edge type '", name, "': num_edges ", e.num_edges(), " is above the limit ", kMaxCount));
  }
  if (m.num_partitions() == 1 && e.num_local_edges() != e.num_edges()) {
    return Bad(absl::StrCat("edge type '", name, "': the only partition must store all ", e.num_edges(),
                            " edges, not num_local_edges=", e.num_local_edges()));
  }
  if (e.feature_dim() < 0) return Bad(absl::StrCat("edge type '", name, "': feature_dim < 0"));
  if (e.feature_dim() > kMaxFeatureDim) {
    return Bad(absl::StrCat("edge type '", name, "': feature_dim ", e.feature_dim(), " is above the limit ",
                            kMaxFeatureDim));
  }
  if (!e.feature_dtype().empty() && e.feature_dtype() != "float32" && e.feature_dtype() != "float16") {
    return Bad(absl::StrCat("edge type '", name, "': feature_dtype '", e.feature_dtype(),
                            "' is not float32 or float16"));
  }
  if (m.num_partitions() > 1 && !e.has_edge_ids()) {
    return Bad(absl::StrCat("edge type '", name,
                            "': a dataset with several partitions must store edge_ids"));
  }
  const std::string& col_type = m.edge_dir() == "in" ? e.src_type() : e.dst_type();
  for (const auto& n : m.node_types()) {
    if (n.name() == col_type && n.has_node_times() && !e.has_edge_times()) {
      return Bad(absl::StrCat("edge type '", name, "': its neighbours' type '", col_type,
                              "' stores node times, so the edge type must store edge times (has_edge_times; "
                              "each edge's time is at least its neighbour's)"));
    }
  }
  std::set<std::string> label_splits;
  for (const auto& s : e.label_splits()) {
    if (!IsValidTypeName(s) || !label_splits.insert(s).second) {
      return Bad(absl::StrCat("edge type '", name, "': bad or repeated label split '", s, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateManifest(const v1::PartitionManifest& m, const std::string& file) {
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(file, ": ", what));
  };
  auto in_file = [&](const absl::Status& s) { return bad(std::string(s.message())); };
  if (m.format_version() != kFormatVersion) {
    return bad(absl::StrCat("format_version is ", m.format_version(), ", this build reads ",
                            kFormatVersion));
  }
  if (m.num_partitions() < 1) return bad("num_partitions must be >= 1");
  if (m.partition_id() < 0 || m.partition_id() >= m.num_partitions()) {
    return bad(absl::StrCat("partition_id ", m.partition_id(), " is outside [0, ",
                            m.num_partitions(), ")"));
  }
  if (m.edge_dir() != "in" && m.edge_dir() != "out") {
    return bad(absl::StrCat("edge_dir is '", m.edge_dir(), "', expected \"in\" or \"out\""));
  }
  if (m.node_types_size() == 0) return bad("node_types is empty");
  std::set<std::string> node_names;
  for (const auto& n : m.node_types()) {
    if (!IsValidTypeName(n.name())) {
      return bad(absl::StrCat("node type name '", n.name(), "' must match [A-Za-z0-9_-]+ and not contain \"__\""));
    }
    if (!node_names.insert(n.name()).second) return bad(absl::StrCat("node type '", n.name(), "' repeated"));
    if (auto s = CheckNodeType(m, n); !s.ok()) return in_file(s);
  }
  std::set<std::string> edge_names;
  for (const auto& e : m.edge_types()) {
    const std::string name = EdgeTypeName(e);
    if (!node_names.count(e.src_type()) || !node_names.count(e.dst_type())) {
      return bad(absl::StrCat("edge type '", name, "' names an unknown node type"));
    }
    if (!edge_names.insert(name).second) return bad(absl::StrCat("edge type '", name, "' repeated"));
    if (auto s = CheckEdgeType(m, e, name); !s.ok()) return in_file(s);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::PartitionManifest> ReadManifest(const std::string& dir) {
  const std::string file = absl::StrCat(dir, "/", kManifestFile);
  std::ifstream in(file);
  if (!in) return absl::NotFoundError(absl::StrCat(file, ": file is missing"));
  std::stringstream buf;
  buf << in.rdbuf();
  v1::PartitionManifest m;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  const auto st = google::protobuf::util::JsonStringToMessage(buf.str(), &m, opts);
  if (!st.ok()) {
    return absl::DataLossError(absl::StrCat(file, ": not a valid manifest: ", st.ToString()));
  }
  if (auto s = ValidateManifest(m, file); !s.ok()) return s;
  return m;
}

absl::Status WriteManifest(const std::string& dir, const v1::PartitionManifest& manifest) {
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  const auto st = google::protobuf::util::MessageToJsonString(manifest, &json, opts);
  if (!st.ok()) return absl::InternalError(st.ToString());
  const std::string file = absl::StrCat(dir, "/", kManifestFile);
  std::ofstream out(file);
  out << json;
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat(file, ": write failed"));
  return absl::OkStatus();
}

}  // namespace graphstore
