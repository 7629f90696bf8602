#include "tools/dataset/writer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "graphstore/v1/manifest.pb.h"
#include "server/graph/manifest.h"
#include "server/graph/npy.h"
#include "server/graph/owner_deal.h"
#include "server/graph/partition.h"
#include "server/util/progress.h"
#include "tools/dataset/layout.h"
#include "tools/dataset/validate.h"

namespace graphstore {
namespace {

int64_t MaxLabel(const std::vector<int64_t>& labels) {
  int64_t m = -1;
  for (int64_t l : labels) m = std::max(m, l);
  return m;
}

// Writes the label splits of `e` whose source partition `p` owns, and the destination degrees.
absl::Status WriteLabelSplits(const GraphData& g, const EdgeTypeData& e, const Assignment& assignment, int p,
                              const std::string& edir, v1::ManifestEdgeType* me) {
  if (e.label_splits.empty()) return absl::OkStatus();
  const int src_t = FindType(g, e.src_type);
  const int dst_t = FindType(g, e.dst_type);
  for (const auto& [split, l] : e.label_splits) {
    std::vector<std::pair<int64_t, int64_t>> mine;
    for (size_t i = 0; i < l.src.size(); ++i) {
      if (assignment[src_t][l.src[i]] == p) mine.emplace_back(l.src[i], l.dst[i]);
    }
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    std::vector<int64_t> flat;
    flat.reserve(2 * mine.size());
    for (const auto& [a, b] : mine) {
      flat.push_back(a);
      flat.push_back(b);
    }
    me->add_label_splits(split);
    if (auto s = WriteNpy(absl::StrCat(edir, "/labels_", split, ".npy"), NpyDtype::kInt64,
                          {static_cast<int64_t>(mine.size()), 2}, flat.data());
        !s.ok()) {
      return s;
    }
  }
  // Degree in the graph's edges of the type; a type that only holds labels counts its labels.
  std::vector<int64_t> degree(g.node_types[dst_t].num_nodes, 0);
  if (!e.dst.empty()) {
    for (int64_t d : e.dst) ++degree[d];
  } else {
    for (const auto& [split, l] : e.label_splits) {
      for (int64_t d : l.dst) ++degree[d];
    }
  }
  return WriteNpyVector(edir + "/dst_degree.npy", degree);
}

// Each feature column's minimum (first row) and maximum (second) over every node of the type.
std::vector<float> FeatureRange(const NodeTypeData& nt) {
  std::vector<float> range(2 * nt.feature_dim, 0.0f);
  UpdateFeatureRange(nt.features.data(), nt.num_nodes, nt.feature_dim, true, &range);
  return range;
}

absl::Status WriteFeatures(const std::vector<int64_t>& ids, const FeatureSource& features, const std::string& ndir,
                           v1::ManifestNodeType* mt) {
  auto w = FeatureWriter::Start(features, ndir, mt);
  if (!w.ok()) return w.status();
  if (auto s = (*w)->Add(ids.data(), ids.size()); !s.ok()) return s;
  return (*w)->Finish();
}

}  // namespace

absl::StatusOr<std::unique_ptr<FeatureWriter>> FeatureWriter::Start(const FeatureSource& features,
                                                                   const std::string& ndir, v1::ManifestNodeType* mt) {
  const int64_t dim = features.dim;
  mt->set_feature_dim(dim);
  mt->set_feature_dtype("float32");
  mt->set_has_feature_range(true);
  if (auto s = WriteNpy(ndir + "/feature_range.npy", NpyDtype::kFloat32, {2, dim}, features.range.data()); !s.ok()) {
    return s;
  }
  auto w = NpyWriter::Create(ndir + "/features.npy", NpyDtype::kFloat32, {dim});
  if (!w.ok()) return w.status();
  return std::unique_ptr<FeatureWriter>(new FeatureWriter(features, *std::move(w)));
}

absl::Status FeatureWriter::Add(const int64_t* ids, size_t count) {
  // A bounded piece at a time, so that a streaming writer holds no whole feature matrix.
  const int64_t dim = features_.dim;
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, (int64_t{4} << 20) / (dim * 4)));
  for (size_t from = 0; from < count; from += chunk) {
    const size_t n = std::min(chunk, count - from);
    rows_.resize(n * dim);
    if (auto s = features_.read(ids + from, n, rows_.data()); !s.ok()) return s;
    if (auto s = writer_->Append(rows_.data(), static_cast<int64_t>(n)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status FeatureWriter::Finish() { return writer_->Finish(); }

void UpdateFeatureRange(const float* data, int64_t rows, int64_t dim, bool first, std::vector<float>* range) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < dim; ++c) {
      const float v = data[r * dim + c];
      float& lo = (*range)[c];
      float& hi = (*range)[dim + c];
      if ((first && r == 0) || v < lo) lo = v;
      if ((first && r == 0) || v > hi) hi = v;
    }
  }
}

FeatureSource InMemoryFeatures(const NodeTypeData& nt) {
  FeatureSource f;
  f.dim = nt.feature_dim;
  if (f.dim == 0) return f;
  f.range = FeatureRange(nt);
  f.read = [&nt](const int64_t* ids, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) {
      std::copy_n(nt.features.begin() + ids[i] * nt.feature_dim, nt.feature_dim, out + i * nt.feature_dim);
    }
    return absl::OkStatus();
  };
  return f;
}

absl::Status WriteNodeType(const GraphData& g, const Assignment& assignment, const Layout& l, size_t t, int p,
                           const std::string& dir, const FeatureSource& features, v1::PartitionManifest* m) {
  const auto& nt = g.node_types[t];
  const auto& ids = l.owned[t][p];
  const int64_t n = static_cast<int64_t>(ids.size());
  const std::string ndir = NodeDir(dir, nt.name);
  if (auto s = MakeDirs(ndir); !s.ok()) return s;
  auto* mt = m->add_node_types();
  mt->set_name(nt.name);
  mt->set_num_nodes(nt.num_nodes);
  mt->set_num_local_nodes(n);
  if (auto s = WriteNpyVector(ndir + "/ids.npy", ids); !s.ok()) return s;
  if (auto s = WriteNpyVector(BookFile(dir, nt.name, "partition"), assignment[t]); !s.ok()) return s;
  mt->set_has_degree(true);
  if (auto s = WriteNpyVector(BookFile(dir, nt.name, "degree"), l.degree[t]); !s.ok()) return s;
  if (!nt.times.empty()) {
    mt->set_has_node_times(true);
    if (auto s = WriteNpyVector(BookFile(dir, nt.name, "time"), nt.times); !s.ok()) return s;
  }
  if (!nt.raw_ids.empty()) {
    mt->set_has_raw_ids(true);
    if (auto s = WriteNpyVector(BookFile(dir, nt.name, "raw_ids"), nt.raw_ids); !s.ok()) return s;
  }
  if (features.dim > 0) {
    if (auto s = WriteFeatures(ids, features, ndir, mt); !s.ok()) return s;
  }
  if (!nt.labels.empty()) {
    mt->set_has_labels(true);
    mt->set_num_classes(MaxLabel(nt.labels) + 1);
    std::vector<int64_t> lab(n);
    for (int64_t i = 0; i < n; ++i) lab[i] = nt.labels[ids[i]];
    if (auto s = WriteNpyVector(ndir + "/labels.npy", lab); !s.ok()) return s;
  }
  for (const auto& [split, all] : nt.splits) {
    std::vector<int64_t> mine;
    for (int64_t id : all) {
      if (assignment[t][id] == p) mine.push_back(id);
    }
    std::sort(mine.begin(), mine.end());
    mt->add_splits(split);
    if (auto s = WriteNpyVector(absl::StrCat(ndir, "/", split, ".npy"), mine); !s.ok()) return s;
  }
  return absl::OkStatus();
}

v1::ManifestEdgeType* AddEdgeType(const EdgeTypeData& e, int64_t num_edges, int64_t num_local_edges,
                                  v1::PartitionManifest* m) {
  auto* me = m->add_edge_types();
  me->set_src_type(e.src_type);
  me->set_relation(e.relation);
  me->set_dst_type(e.dst_type);
  me->set_num_edges(num_edges);
  me->set_num_local_edges(num_local_edges);
  me->set_has_edge_ids(true);
  return me;
}

v1::PartitionManifest StartManifest(const std::string& name, int num_partitions, int p, const WriteOptions& options) {
  v1::PartitionManifest m;
  m.set_format_version(kFormatVersion);
  m.set_dataset_name(name);
  m.set_num_partitions(num_partitions);
  m.set_partition_id(p);
  m.set_edge_dir(options.edge_dir);
  m.set_partition_method(num_partitions == 1 ? "single" : options.method);
  return m;
}

void RecordOwnerDeal(const WriteOptions& options, v1::PartitionManifest* m) {
  if (!options.deal_seed.has_value() || m->num_partitions() <= 1) return;
  for (int t = 0; t < m->node_types_size(); ++t) {
    m->mutable_node_types(t)->mutable_owner_deal()->set_key(OwnerDeal::TypeKey(*options.deal_seed, t));
  }
}

absl::Status FinishPartition(const std::string& dir, const v1::PartitionManifest& m) {
  if (auto s = ValidateManifest(m, dir + "/manifest.json"); !s.ok()) return s;
  return WriteManifest(dir, m);
}

namespace {

absl::Status WriteEdgeType(const GraphData& g, const Assignment& assignment, Layout* l, size_t et, int p,
                           const std::string& dir, v1::PartitionManifest* m) {
  const auto& e = g.edge_types[et];
  const int row_t = FindType(g, l->rows_are_sources ? e.src_type : e.dst_type);
  const auto& rows = l->rows_are_sources ? e.src : e.dst;
  const auto& cols = l->rows_are_sources ? e.dst : e.src;
  const auto& row_ids = l->owned[row_t][p];
  const std::string edir = EdgeDir(dir, EdgeName(e));
  if (auto s = MakeDirs(edir); !s.ok()) return s;

  // This partition's edges are the next run of the order, grouped by row.
  std::vector<int64_t> indptr(row_ids.size() + 1, 0);
  std::vector<int64_t> indices;
  std::vector<int64_t> eids;
  std::vector<float> feats;
  std::vector<float> weights;
  std::vector<int64_t> times;
  const std::optional<std::vector<int64_t>>& edge_time = l->time[et];
  const std::vector<int64_t>& order = l->order[et];
  int64_t& cur = l->cursor[et];
  for (size_t r = 0; r < row_ids.size(); ++r) {
    while (cur < static_cast<int64_t>(order.size()) && rows[order[cur]] == row_ids[r]) {
      const int64_t i = order[cur++];
      indices.push_back(cols[i]);
      eids.push_back(i);
      if (!e.weights.empty()) weights.push_back(e.weights[i]);
      if (edge_time.has_value()) times.push_back((*edge_time)[i]);
      if (e.feature_dim > 0) {
        feats.insert(feats.end(), e.features.begin() + i * e.feature_dim, e.features.begin() + (i + 1) * e.feature_dim);
      }
    }
    indptr[r + 1] = static_cast<int64_t>(indices.size());
  }
  auto* me = AddEdgeType(e, static_cast<int64_t>(e.src.size()), static_cast<int64_t>(indices.size()), m);
  if (auto s = WriteNpyVector(edir + "/indptr.npy", indptr); !s.ok()) return s;
  if (auto s = WriteNpyVector(edir + "/indices.npy", indices); !s.ok()) return s;
  if (auto s = WriteNpyVector(edir + "/edge_ids.npy", eids); !s.ok()) return s;
  if (!e.weights.empty()) {
    me->set_has_edge_weights(true);
    if (auto s = WriteNpyVector(edir + "/weights.npy", weights); !s.ok()) return s;
  }
  if (edge_time.has_value()) {
    me->set_has_edge_times(true);
    if (auto s = WriteNpyVector(edir + "/time.npy", times); !s.ok()) return s;
  }
  if (e.feature_dim > 0) {
    me->set_feature_dim(e.feature_dim);
    me->set_feature_dtype("float32");
    const int64_t n = static_cast<int64_t>(indices.size());
    if (auto s = WriteNpy(edir + "/features.npy", NpyDtype::kFloat32, {n, e.feature_dim}, feats.data()); !s.ok()) {
      return s;
    }
  }
  return WriteLabelSplits(g, e, assignment, p, edir, me);
}

}  // namespace

std::string PartitionDir(const std::string& out_dir, int num_partitions, int p) {
  return num_partitions == 1 ? out_dir : absl::StrCat(out_dir, "/part-", p);
}

absl::Status MakeDirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') {
      const std::string prefix = path.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::PermissionDeniedError(
            absl::StrCat(prefix, ": cannot create directory: ", std::strerror(errno)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status WritePartitions(const GraphData& g, const Assignment& assignment, const WriteOptions& options,
                             const std::string& out_dir) {
  if (auto s = ValidateGraph(g); !s.ok()) return s;
  if (options.num_partitions < 1) return absl::InvalidArgumentError("num_partitions must be >= 1");
  if (options.edge_dir != "in" && options.edge_dir != "out") {
    return absl::InvalidArgumentError("edge_dir must be \"in\" or \"out\"");
  }
  if (assignment.size() != g.node_types.size()) {
    return absl::InvalidArgumentError("assignment has the wrong number of node types");
  }
  if (options.deal_seed.has_value() && options.num_partitions > 1) {
    // The manifest will say the owners are the deal's: they must be.
    for (size_t t = 0; t < g.node_types.size(); ++t) {
      const OwnerDeal deal(g.node_types[t].num_nodes, options.num_partitions, OwnerDeal::TypeKey(*options.deal_seed, static_cast<int>(t)));
      for (int64_t node = 0; node < g.node_types[t].num_nodes; ++node) {
        if (assignment[t][static_cast<size_t>(node)] != deal.Owner(node)) {
          return absl::InvalidArgumentError(absl::StrCat("the assignment of node ", node, " of type '", g.node_types[t].name,
                                                         "' is not the deal of seed ", *options.deal_seed));
        }
      }
    }
  }
  auto laid = LayOut(g, assignment, options.num_partitions, options.edge_dir == "out");
  if (!laid.ok()) return laid.status();
  Layout& l = *laid;

  std::vector<FeatureSource> features;
  for (const auto& nt : g.node_types) features.push_back(InMemoryFeatures(nt));
  int64_t edges = 0;
  for (const auto& e : g.edge_types) edges += static_cast<int64_t>(e.src.size());
  Progress progress(absl::StrCat("writing ", l.num_partitions, " partition(s)"), edges, "edges");
  for (int p = 0; p < l.num_partitions; ++p) {
    const std::string dir = PartitionDir(out_dir, l.num_partitions, p);
    if (auto s = MakeDirs(dir + "/book"); !s.ok()) return s;
    v1::PartitionManifest m = StartManifest(g.name, l.num_partitions, p, options);
    for (size_t t = 0; t < g.node_types.size(); ++t) {
      if (auto s = WriteNodeType(g, assignment, l, t, p, dir, features[t], &m); !s.ok()) return s;
    }
    for (size_t et = 0; et < g.edge_types.size(); ++et) {
      if (auto s = WriteEdgeType(g, assignment, &l, et, p, dir, &m); !s.ok()) return s;
      progress.Add(m.edge_types(static_cast<int>(et)).num_local_edges());
    }
    RecordOwnerDeal(options, &m);
    if (auto s = FinishPartition(dir, m); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace graphstore
