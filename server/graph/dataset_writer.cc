#include "server/graph/dataset_writer.h"

#include <cmath>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "graphstore/v1/manifest.pb.h"
#include "proto/type_names.h"
#include "server/graph/manifest.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "server/util/progress.h"

namespace graphstore {
int FindType(const GraphData& g, const std::string& name) {
  for (int i = 0; i < static_cast<int>(g.node_types.size()); ++i) {
    if (g.node_types[i].name == name) return i;
  }
  return -1;
}

namespace {

std::string EdgeName(const EdgeTypeData& e) {
  return absl::StrCat(e.src_type, "__", e.relation, "__", e.dst_type);
}

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

void AddReverseEdgeTypes(GraphData* g) {
  const size_t n = g->edge_types.size();
  for (size_t i = 0; i < n; ++i) {
    const EdgeTypeData& e = g->edge_types[i];
    EdgeTypeData r;
    r.src_type = e.dst_type;
    r.relation = ReverseRelation(e.relation);
    r.dst_type = e.src_type;
    bool exists = false;
    for (const auto& other : g->edge_types) {
      exists |= other.src_type == r.src_type && other.relation == r.relation && other.dst_type == r.dst_type;
    }
    if (exists) continue;
    r.src = e.dst;
    r.dst = e.src;
    r.feature_dim = e.feature_dim;
    r.features = e.features;
    r.weights = e.weights;
    r.times = e.times;
    g->edge_types.push_back(std::move(r));
  }
}

Assignment RandomAssignment(const GraphData& g, int num_partitions, uint64_t seed) {
  Assignment out;
  std::mt19937_64 rng(seed);
  for (const auto& t : g.node_types) {
    std::vector<int64_t> perm(t.num_nodes);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> a(t.num_nodes);
    for (int64_t i = 0; i < t.num_nodes; ++i) a[perm[i]] = static_cast<int32_t>(i % num_partitions);
    out.push_back(std::move(a));
  }
  return out;
}

absl::Status AssignSplits(GraphData* g, double train, double val, double test, uint64_t seed,
                          const std::vector<std::string>& only_types) {
  if (train < 0 || val < 0 || test < 0 || train + val + test > 1.0 + 1e-9) {
    return absl::InvalidArgumentError("split fractions must be >= 0 and add up to at most 1");
  }
  bool any_labels = false;
  for (const auto& t : g->node_types) any_labels |= !t.labels.empty();
  std::mt19937_64 rng(seed);
  for (auto& t : g->node_types) {
    const bool chosen = only_types.empty()
                            ? (!any_labels || !t.labels.empty())
                            : std::find(only_types.begin(), only_types.end(), t.name) != only_types.end();
    if (!chosen) continue;
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < t.num_nodes; ++i) {
      if (t.labels.empty() || t.labels[i] >= 0) perm.push_back(i);
    }
    std::shuffle(perm.begin(), perm.end(), rng);
    const auto n = static_cast<double>(perm.size());
    const auto n_train = static_cast<size_t>(n * train);
    const auto n_val = static_cast<size_t>(n * val);
    const auto n_test = std::min(perm.size() - n_train - n_val, static_cast<size_t>(n * test + 0.5));
    auto take = [&](size_t from, size_t count) {
      std::vector<int64_t> ids(perm.begin() + from, perm.begin() + from + count);
      std::sort(ids.begin(), ids.end());
      return ids;
    };
    t.splits["train"] = take(0, n_train);
    t.splits["val"] = take(n_train, n_val);
    t.splits["test"] = take(n_train + n_val, n_test);
  }
  return absl::OkStatus();
}

namespace {

// Where every node and edge of a graph goes; computed once, then each partition is written
// from it.
struct Layout {
  int num_partitions = 1;
  bool rows_are_sources = true;
  // Per node type: the row of each node within its owner, and each partition's owned ids in
  // ascending order.
  std::vector<std::vector<int64_t>> local;
  std::vector<std::vector<std::vector<int64_t>>> owned;
  // Per edge type: edges ordered by (owner of row node, row, column, edge id), i.e. every
  // partition's CSR back to back, and where the next partition's run starts.
  std::vector<std::vector<int64_t>> order;
  std::vector<int64_t> cursor;
  // Per edge type: the stored time of each edge (the later of its own time and its column
  // node's), when its edges or its column nodes have times.
  std::vector<std::optional<std::vector<int64_t>>> time;
  // Per node type: how many edges of any type have each node as their column endpoint.
  std::vector<std::vector<int64_t>> degree;
};

// The column degree of every node (book/<type>.degree.npy): the endpoint a hop samples.
void CountDegrees(const GraphData& g, Layout* l) {
  l->degree.assign(g.node_types.size(), {});
  for (size_t t = 0; t < g.node_types.size(); ++t) l->degree[t].assign(g.node_types[t].num_nodes, 0);
  for (const auto& e : g.edge_types) {
    const int col_t = FindType(g, l->rows_are_sources ? e.dst_type : e.src_type);
    for (int64_t v : l->rows_are_sources ? e.dst : e.src) ++l->degree[col_t][v];
  }
}

absl::Status PlaceNodes(const GraphData& g, const Assignment& assignment, Layout* l) {
  const int P = l->num_partitions;
  l->local.resize(g.node_types.size());
  l->owned.resize(g.node_types.size());
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    const auto& a = assignment[t];
    if (static_cast<int64_t>(a.size()) != g.node_types[t].num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("assignment of node type '", g.node_types[t].name, "' has the wrong length"));
    }
    l->local[t].resize(a.size());
    l->owned[t].resize(P);
    for (int64_t gid = 0; gid < static_cast<int64_t>(a.size()); ++gid) {
      if (a[gid] < 0 || a[gid] >= P) {
        return absl::InvalidArgumentError(absl::StrCat("node ", gid, " assigned to partition ", a[gid]));
      }
      l->local[t][gid] = static_cast<int64_t>(l->owned[t][a[gid]].size());
      l->owned[t][a[gid]].push_back(gid);
    }
  }
  return absl::OkStatus();
}

// The stored time of every edge of type `et` (Layout::time).
std::optional<std::vector<int64_t>> EdgeTimes(const GraphData& g, const Layout& l, size_t et) {
  const auto& e = g.edge_types[et];
  const auto& col_times = g.node_types[FindType(g, l.rows_are_sources ? e.dst_type : e.src_type)].times;
  const auto& cols = l.rows_are_sources ? e.dst : e.src;
  if (e.times.empty() && col_times.empty()) return std::nullopt;
  std::vector<int64_t> t(e.src.size(), INT64_MIN);
  for (size_t i = 0; i < t.size(); ++i) {
    if (!e.times.empty()) t[i] = e.times[i];
    if (!col_times.empty()) t[i] = std::max(t[i], col_times[cols[i]]);
  }
  return t;
}

// The CSR order of one edge type's edges over all partitions (a counting sort by row key, then
// each row by column, or by time and column when the type has times).
std::vector<int64_t> EdgeOrder(const GraphData& g, const Assignment& assignment, const Layout& l, size_t et) {
  const auto& e = g.edge_types[et];
  const int row_t = FindType(g, l.rows_are_sources ? e.src_type : e.dst_type);
  const auto& rows = l.rows_are_sources ? e.src : e.dst;
  const auto& cols = l.rows_are_sources ? e.dst : e.src;
  std::vector<int64_t> part_base(l.num_partitions + 1, 0);
  for (int p = 0; p < l.num_partitions; ++p) part_base[p + 1] = part_base[p] + l.owned[row_t][p].size();
  auto key = [&](int64_t i) {
    const int64_t r = rows[i];
    return part_base[assignment[row_t][r]] + l.local[row_t][r];
  };
  const int64_t n_rows = g.node_types[row_t].num_nodes;
  std::vector<int64_t> start(n_rows + 1, 0);
  for (size_t i = 0; i < rows.size(); ++i) ++start[key(i) + 1];
  for (int64_t r = 0; r < n_rows; ++r) start[r + 1] += start[r];
  std::vector<int64_t> ord(rows.size());
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (size_t i = 0; i < rows.size(); ++i) ord[fill[key(i)]++] = static_cast<int64_t>(i);
  const std::optional<std::vector<int64_t>>& time = l.time[et];
  for (int64_t r = 0; r < n_rows; ++r) {
    std::sort(ord.begin() + start[r], ord.begin() + start[r + 1], [&](int64_t x, int64_t y) {
      if (time.has_value() && (*time)[x] != (*time)[y]) return (*time)[x] < (*time)[y];
      return cols[x] != cols[y] ? cols[x] < cols[y] : x < y;
    });
  }
  return ord;
}

// Each feature column's minimum (first row) and maximum (second) over every node of the type.
std::vector<float> FeatureRange(const NodeTypeData& nt) {
  const int64_t dim = nt.feature_dim;
  std::vector<float> range(2 * dim, 0.0f);
  for (int64_t v = 0; v < nt.num_nodes; ++v) {
    for (int64_t c = 0; c < dim; ++c) {
      const float x = nt.features[v * dim + c];
      if (v == 0 || x < range[c]) range[c] = x;
      if (v == 0 || x > range[dim + c]) range[dim + c] = x;
    }
  }
  return range;
}

absl::Status WriteNodeType(const GraphData& g, const Assignment& assignment, const Layout& l, size_t t, int p,
                           const std::string& dir, v1::PartitionManifest* m) {
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
  if (l.num_partitions > 1) {
    if (auto s = WriteNpyVector(BookFile(dir, nt.name, "local"), l.local[t]); !s.ok()) return s;
  }
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
  if (nt.feature_dim > 0) {
    mt->set_feature_dim(nt.feature_dim);
    mt->set_feature_dtype("float32");
    mt->set_has_feature_range(true);
    if (auto s = WriteNpy(ndir + "/feature_range.npy", NpyDtype::kFloat32, {2, nt.feature_dim},
                          FeatureRange(nt).data());
        !s.ok()) {
      return s;
    }
    std::vector<float> f(n * nt.feature_dim);
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(nt.features.begin() + ids[i] * nt.feature_dim, nt.feature_dim, f.begin() + i * nt.feature_dim);
    }
    if (auto s = WriteNpy(ndir + "/features.npy", NpyDtype::kFloat32, {n, nt.feature_dim}, f.data()); !s.ok()) {
      return s;
    }
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
  auto* me = m->add_edge_types();
  me->set_src_type(e.src_type);
  me->set_relation(e.relation);
  me->set_dst_type(e.dst_type);
  me->set_num_edges(static_cast<int64_t>(e.src.size()));
  me->set_num_local_edges(static_cast<int64_t>(indices.size()));
  me->set_has_edge_ids(true);
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
  Layout l;
  l.num_partitions = options.num_partitions;
  l.rows_are_sources = options.edge_dir == "out";
  if (auto s = PlaceNodes(g, assignment, &l); !s.ok()) return s;
  CountDegrees(g, &l);
  for (size_t et = 0; et < g.edge_types.size(); ++et) l.time.push_back(EdgeTimes(g, l, et));
  for (size_t et = 0; et < g.edge_types.size(); ++et) l.order.push_back(EdgeOrder(g, assignment, l, et));
  l.cursor.assign(g.edge_types.size(), 0);

  int64_t edges = 0;
  for (const auto& e : g.edge_types) edges += static_cast<int64_t>(e.src.size());
  Progress progress(absl::StrCat("writing ", l.num_partitions, " partition(s)"), edges, "edges");
  for (int p = 0; p < l.num_partitions; ++p) {
    const std::string dir = PartitionDir(out_dir, l.num_partitions, p);
    if (auto s = MakeDirs(dir + "/book"); !s.ok()) return s;
    v1::PartitionManifest m;
    m.set_format_version(kFormatVersion);
    m.set_dataset_name(g.name);
    m.set_num_partitions(l.num_partitions);
    m.set_partition_id(p);
    m.set_edge_dir(options.edge_dir);
    m.set_partition_method(l.num_partitions == 1 ? "single" : options.method);
    for (size_t t = 0; t < g.node_types.size(); ++t) {
      if (auto s = WriteNodeType(g, assignment, l, t, p, dir, &m); !s.ok()) return s;
    }
    for (size_t et = 0; et < g.edge_types.size(); ++et) {
      if (auto s = WriteEdgeType(g, assignment, &l, et, p, dir, &m); !s.ok()) return s;
      progress.Add(m.edge_types(static_cast<int>(et)).num_local_edges());
    }
    if (auto s = ValidateManifest(m, dir + "/manifest.json"); !s.ok()) return s;
    if (auto s = WriteManifest(dir, m); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace graphstore
