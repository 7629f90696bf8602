#include "server/graph/partition.h"

#include <cmath>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/graph/manifest.h"

namespace graphstore {

std::pair<int64_t, int64_t> SliceRange(int64_t n, int rank, int world_size) {
  if (world_size <= 1) return {0, n};
  const int64_t base = n / world_size;
  const int64_t extra = n % world_size;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

std::string NodeDir(const std::string& dir, const std::string& node_type) {
  return absl::StrCat(dir, "/nodes/", node_type);
}

std::string EdgeDir(const std::string& dir, const std::string& edge_type) {
  return absl::StrCat(dir, "/edges/", edge_type);
}

std::string BookFile(const std::string& dir, const std::string& node_type, const std::string& what) {
  return absl::StrCat(dir, "/book/", node_type, ".", what, ".npy");
}

namespace {

absl::Status Corrupt(const MappedNpy& file, const std::string& what) {
  return absl::DataLossError(absl::StrCat(file.path(), ": ", what));
}

// Opens `path` and checks dtype and shape.
absl::Status OpenExpect(const std::string& path, NpyDtype dtype, const std::vector<int64_t>& shape,
                        MappedNpy* out) {
  auto f = MappedNpy::Open(path);
  if (!f.ok()) return f.status();
  if (auto s = f->Expect(dtype, shape); !s.ok()) return s;
  *out = *std::move(f);
  return absl::OkStatus();
}

absl::StatusOr<NpyDtype> FeatureDtype(const std::string& name) {
  return DtypeFromName(name.empty() ? "float32" : name);
}

// Checks that every value of an int64 array lies in [0, limit).
absl::Status CheckRange(const MappedNpy& f, int64_t limit, const std::string& what) {
  const int64_t* v = f.data<int64_t>();
  const int64_t n = f.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] < 0 || v[i] >= limit) {
      return Corrupt(f, absl::StrCat("entry ", i, " is ", v[i], ", outside [0, ", limit, ") (",
                                     what, ")"));
    }
  }
  return absl::OkStatus();
}

// Owned ids: strictly ascending, in range, and owned by partition `part` per the book, which
// assigns every node to one of `num_parts`.
absl::Status VerifyOwnership(const NodeTypeStore& t, int part, int num_parts, Progress* progress) {
  const int64_t* ids = t.global_ids();
  const int32_t* book = t.book.data<int32_t>();
  for (int64_t i = 0; i < t.num_local; ++i) {
    if (ids[i] < 0 || ids[i] >= t.num_nodes) {
      return Corrupt(t.ids, absl::StrCat("entry ", i, " is ", ids[i], ", outside [0, ", t.num_nodes, ")"));
    }
    if (i > 0 && ids[i] <= ids[i - 1]) {
      return Corrupt(t.ids, absl::StrCat("not strictly ascending at entry ", i, " (", ids[i - 1],
                                         " then ", ids[i], ")"));
    }
    if (book[ids[i]] != part) {
      return Corrupt(t.book, absl::StrCat("node ", ids[i], " is listed in ", t.ids.path(),
                                          " but the book assigns it to partition ", book[ids[i]]));
    }
    if (t.local.is_open() && t.local.data<int64_t>()[ids[i]] != i) {
      return Corrupt(t.local, absl::StrCat("entry ", ids[i], " is ", t.local.data<int64_t>()[ids[i]],
                                           ", but that node is row ", i, " of ", t.ids.path()));
    }
  }
  int64_t owned = 0;
  for (int64_t g = 0; g < t.num_nodes; ++g) {
    if (book[g] < 0 || book[g] >= num_parts) {
      return Corrupt(t.book, absl::StrCat("entry ", g, " is ", book[g], ", outside [0, ",
                                          num_parts, ")"));
    }
    owned += book[g] == part;
  }
  progress->Add(t.num_nodes + t.num_local);
  if (owned != t.num_local) {
    return Corrupt(t.book, absl::StrCat("assigns ", owned, " nodes to partition ", part,
                                        ", but the manifest says ", t.num_local));
  }
  return absl::OkStatus();
}

// The per-node columns: owner rows, feature ranges, degrees and labels within their bounds.
absl::Status VerifyNodeColumns(const NodeTypeStore& t) {
  if (t.local.is_open()) {
    if (auto st = CheckRange(t.local, t.num_nodes, "row in the owner partition"); !st.ok()) return st;
  }
  if (t.feature_range.is_open()) {
    const float* r = t.feature_range.data<float>();
    for (int64_t c = 0; c < t.feature_dim; ++c) {
      if (!(r[c] <= r[t.feature_dim + c])) {
        return Corrupt(t.feature_range, absl::StrCat("column ", c, ": minimum ", r[c], " is not <= maximum ",
                                                     r[t.feature_dim + c]));
      }
    }
  }
  if (t.degree.is_open()) {
    const int64_t* d = t.degree.data<int64_t>();
    for (int64_t g = 0; g < t.num_nodes; ++g) {
      if (d[g] < 0) return Corrupt(t.degree, absl::StrCat("entry ", g, " is negative"));
    }
  }
  if (t.labels.is_open()) {
    const int64_t* lab = t.labels.data<int64_t>();
    for (int64_t i = 0; i < t.num_local; ++i) {
      if (lab[i] < -1 || lab[i] >= t.num_classes) {
        return Corrupt(t.labels, absl::StrCat("entry ", i, " is ", lab[i], ", outside [-1, ",
                                              t.num_classes, ") (num_classes in the manifest)"));
      }
    }
  }
  return absl::OkStatus();
}

// The splits: nodes this partition owns, each in at most one split, once.
absl::Status VerifySplits(const NodeTypeStore& t, int part) {
  const int32_t* book = t.book.data<int32_t>();
  // A node is in at most one split, once: a repeated seed would be sampled twice an epoch, and
  // a node in two splits leaks evaluation nodes into training.
  std::vector<int8_t> split_of(t.splits.empty() ? 0 : t.num_nodes, -1);
  std::vector<const std::string*> split_names;
  for (const auto& [name, f] : t.splits) {
    const int8_t mark = static_cast<int8_t>(split_names.size());
    split_names.push_back(&name);
    const int64_t* v = f.data<int64_t>();
    for (int64_t i = 0; i < f.num_elements(); ++i) {
      if (v[i] < 0 || v[i] >= t.num_nodes || book[v[i]] != part) {
        return Corrupt(f, absl::StrCat("entry ", i, " is node ", v[i],
                                       ", which this partition does not own"));
      }
      if (split_of[v[i]] == mark) return Corrupt(f, absl::StrCat("entry ", i, ": node ", v[i], " is listed twice"));
      if (split_of[v[i]] >= 0) {
        return Corrupt(f, absl::StrCat("entry ", i, ": node ", v[i], " is also in split '",
                                       *split_names[split_of[v[i]]], "' (splits must not overlap)"));
      }
      split_of[v[i]] = mark;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Partition>> Partition::Load(const std::string& dir,
                                                           const LoadOptions& options) {
  auto manifest = ReadManifest(dir);
  if (!manifest.ok()) return manifest.status();
  std::unique_ptr<Partition> p(new Partition());
  p->dir_ = dir;
  p->manifest_ = *std::move(manifest);
  p->nodes_.resize(p->manifest_.node_types_size());
  p->edges_.resize(p->manifest_.edge_types_size());
  // Reading every array of a large partition takes a while: say how far it got.
  std::unique_ptr<Progress> verify;
  if (options.verify_contents) {
    int64_t entries = 0;
    for (const auto& n : p->manifest_.node_types()) entries += n.num_nodes() + n.num_local_nodes();
    for (const auto& e : p->manifest_.edge_types()) entries += e.num_local_edges();
    verify = std::make_unique<Progress>(absl::StrCat("verifying ", dir), entries, "entries");
  }
  for (int i = 0; i < p->manifest_.node_types_size(); ++i) {
    if (auto s = p->LoadNodeType(i, verify.get()); !s.ok()) return s;
  }
  for (int i = 0; i < p->manifest_.edge_types_size(); ++i) {
    if (auto s = p->LoadEdgeType(i, verify.get()); !s.ok()) return s;
  }
  return p;
}

absl::Status Partition::LoadNodeType(int index, Progress* verify) {
  if (auto s = OpenNodeType(index); !s.ok()) return s;
  return verify != nullptr ? VerifyNodeType(nodes_[index], verify) : absl::OkStatus();
}

absl::Status Partition::OpenNodeType(int index) {
  const auto& m = manifest_.node_types(index);
  NodeTypeStore& t = nodes_[index];
  t.name = m.name();
  t.num_nodes = m.num_nodes();
  t.num_local = m.num_local_nodes();
  t.feature_dim = m.feature_dim();
  t.num_classes = m.has_labels() ? m.num_classes() : 0;
  const std::string ndir = NodeDir(dir_, t.name);

  absl::Status s = OpenExpect(ndir + "/ids.npy", NpyDtype::kInt64, {t.num_local}, &t.ids);
  if (!s.ok()) return s;
  s = OpenExpect(BookFile(dir_, t.name, "partition"), NpyDtype::kInt32, {t.num_nodes}, &t.book);
  if (!s.ok()) return s;
  if (num_partitions() > 1) {
    s = OpenExpect(BookFile(dir_, t.name, "local"), NpyDtype::kInt64, {t.num_nodes}, &t.local);
    if (!s.ok()) return s;
  }
  if (m.has_raw_ids()) {
    s = OpenExpect(BookFile(dir_, t.name, "raw_ids"), NpyDtype::kInt64, {t.num_nodes}, &t.raw_ids);
    if (!s.ok()) return s;
  }
  if (m.has_degree()) {
    s = OpenExpect(BookFile(dir_, t.name, "degree"), NpyDtype::kInt64, {t.num_nodes}, &t.degree);
    if (!s.ok()) return s;
  }
  if (m.has_node_times()) {
    s = OpenExpect(BookFile(dir_, t.name, "time"), NpyDtype::kInt64, {t.num_nodes}, &t.times);
    if (!s.ok()) return s;
  }
  if (t.feature_dim > 0) {
    auto dtype = FeatureDtype(m.feature_dtype());
    if (!dtype.ok()) return dtype.status();
    t.feature_dtype = *dtype;
    s = OpenExpect(ndir + "/features.npy", t.feature_dtype, {t.num_local, t.feature_dim}, &t.features);
    if (!s.ok()) return s;
    if (m.has_feature_range()) {
      s = OpenExpect(ndir + "/feature_range.npy", NpyDtype::kFloat32, {2, t.feature_dim}, &t.feature_range);
      if (!s.ok()) return s;
    }
  }
  if (m.has_labels()) {
    s = OpenExpect(ndir + "/labels.npy", NpyDtype::kInt64, {t.num_local}, &t.labels);
    if (!s.ok()) return s;
  }
  for (const auto& split : m.splits()) {
    MappedNpy f;
    s = OpenExpect(absl::StrCat(ndir, "/", split, ".npy"), NpyDtype::kInt64, {-1}, &f);
    if (!s.ok()) return s;
    t.splits.emplace(split, std::move(f));
  }
  return absl::OkStatus();
}

absl::Status Partition::VerifyNodeType(const NodeTypeStore& t, Progress* progress) const {
  if (auto s = VerifyOwnership(t, partition_id(), num_partitions(), progress); !s.ok()) return s;
  if (auto s = VerifyNodeColumns(t); !s.ok()) return s;
  return VerifySplits(t, partition_id());
}

absl::Status Partition::LoadEdgeType(int index, Progress* verify) {
  if (auto s = OpenEdgeType(index); !s.ok()) return s;
  // The indptr checks are O(rows) and always run: a bad indptr would send the sampler out of
  // bounds.
  if (auto s = CheckIndptr(edges_[index]); !s.ok()) return s;
  return verify != nullptr ? VerifyEdgeType(edges_[index], verify) : absl::OkStatus();
}

absl::Status Partition::OpenEdgeType(int index) {
  const auto& m = manifest_.edge_types(index);
  EdgeTypeStore& e = edges_[index];
  e.name = EdgeTypeName(m);
  e.weight_index->label = e.name;
  e.time_rows->label = e.name;
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
    if (nodes_[i].name == m.src_type()) e.src_type = i;
    if (nodes_[i].name == m.dst_type()) e.dst_type = i;
  }
  e.row_type = rows_are_sources() ? e.src_type : e.dst_type;
  e.col_type = rows_are_sources() ? e.dst_type : e.src_type;
  e.num_edges = m.num_edges();
  e.num_local = m.num_local_edges();
  e.feature_dim = m.feature_dim();
  const std::string edir = EdgeDir(dir_, e.name);
  const int64_t rows = nodes_[e.row_type].num_local;

  absl::Status s = OpenExpect(edir + "/indptr.npy", NpyDtype::kInt64, {rows + 1}, &e.indptr);
  if (!s.ok()) return s;
  s = OpenExpect(edir + "/indices.npy", NpyDtype::kInt64, {e.num_local}, &e.indices);
  if (!s.ok()) return s;
  if (m.has_edge_ids()) {
    s = OpenExpect(edir + "/edge_ids.npy", NpyDtype::kInt64, {e.num_local}, &e.edge_ids);
    if (!s.ok()) return s;
  }
  if (m.has_edge_weights()) {
    s = OpenExpect(edir + "/weights.npy", NpyDtype::kFloat32, {e.num_local}, &e.weights);
    if (!s.ok()) return s;
  }
  if (m.has_edge_times()) {
    s = OpenExpect(edir + "/time.npy", NpyDtype::kInt64, {e.num_local}, &e.times);
    if (!s.ok()) return s;
  }
  if (e.feature_dim > 0) {
    auto dtype = FeatureDtype(m.feature_dtype());
    if (!dtype.ok()) return dtype.status();
    e.feature_dtype = *dtype;
    s = OpenExpect(edir + "/features.npy", e.feature_dtype, {e.num_local, e.feature_dim}, &e.features);
    if (!s.ok()) return s;
  }

  for (const auto& split : m.label_splits()) {
    MappedNpy& f = e.label_splits[split];
    auto opened = MappedNpy::Open(absl::StrCat(edir, "/labels_", split, ".npy"));
    if (!opened.ok()) return opened.status();
    f = *std::move(opened);
    if (f.dtype() != NpyDtype::kInt64 || f.shape().size() != 2 || f.shape()[1] != 2) {
      return Corrupt(f, "expected an int64 [k, 2] array of (src, dst) label edges");
    }
  }
  if (!e.label_splits.empty()) {
    s = OpenExpect(edir + "/dst_degree.npy", NpyDtype::kInt64, {nodes_[e.dst_type].num_nodes}, &e.dst_degree);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Partition::CheckIndptr(const EdgeTypeStore& e) const {
  const int64_t rows = nodes_[e.row_type].num_local;
  const int64_t* ptr = e.indptr_data();
  if (ptr[0] != 0) return Corrupt(e.indptr, absl::StrCat("indptr[0] is ", ptr[0], ", expected 0"));
  for (int64_t r = 0; r < rows; ++r) {
    if (ptr[r + 1] < ptr[r]) {
      return Corrupt(e.indptr, absl::StrCat("not monotone at row ", r, " (indptr[", r, "]=", ptr[r],
                                            " > indptr[", r + 1, "]=", ptr[r + 1], ")"));
    }
  }
  if (ptr[rows] != e.num_local) {
    return Corrupt(e.indptr, absl::StrCat("last entry is ", ptr[rows], ", but ", e.indices.path(),
                                          " holds ", e.num_local, " edges"));
  }
  return absl::OkStatus();
}

absl::Status Partition::VerifyEdgeType(const EdgeTypeStore& e, Progress* progress) const {
  if (auto st = CheckRange(e.indices, nodes_[e.col_type].num_nodes,
                           absl::StrCat("not a ", nodes_[e.col_type].name, " node id"));
      !st.ok()) {
    return st;
  }
  if (e.edge_ids.is_open()) {
    if (auto st = CheckRange(e.edge_ids, e.num_edges, "edge id"); !st.ok()) return st;
  }
  // Within a row, neighbours are sorted by id, then edge id (the format's rule); by time first
  // when the type stores edge times. An edge's time is at least its neighbour's node time.
  const int64_t* ptr = e.indptr_data();
  const int64_t* idx = e.indices_data();
  const int64_t* eid = e.edge_ids.is_open() ? e.edge_ids.data<int64_t>() : nullptr;
  const int64_t* time = e.times_data();
  const int64_t* node_time = nodes_[e.col_type].times_data();
  for (int64_t r = 0; r < nodes_[e.row_type].num_local; ++r) {
    if ((r & 0xffff) == 0xffff) progress->Add(ptr[r + 1] - ptr[r - 0xffff]);
    for (int64_t k = ptr[r] + 1; k < ptr[r + 1]; ++k) {
      if (time != nullptr && time[k - 1] != time[k]) {
        if (time[k - 1] < time[k]) continue;
        return Corrupt(e.times, absl::StrCat("row ", r, " is not sorted by time at entry ", k, " (", time[k - 1],
                                             " then ", time[k], ")"));
      }
      if (idx[k - 1] < idx[k] || (idx[k - 1] == idx[k] && (eid == nullptr || eid[k - 1] <= eid[k]))) continue;
      return Corrupt(e.indices, absl::StrCat("row ", r, " is not sorted at entry ", k, " (", idx[k - 1], " then ",
                                             idx[k], "); neighbours are sorted by ", time != nullptr ? "time, " : "",
                                             "id, then edge id"));
    }
  }
  if (time != nullptr && node_time != nullptr) {
    for (int64_t k = 0; k < e.num_local; ++k) {
      if (time[k] < node_time[idx[k]]) {
        return Corrupt(e.times, absl::StrCat("entry ", k, " is ", time[k], ", before the time ", node_time[idx[k]],
                                             " of its neighbour ", idx[k], "; an edge is visible from its "
                                             "neighbour's time on"));
      }
    }
  }
  {
    // The rows after the last whole block of 65536 (the loop above counted the blocks).
    const int64_t rows = nodes_[e.row_type].num_local;
    progress->Add(ptr[rows] - ptr[rows & ~int64_t{0xffff}]);
  }
  if (e.weights.is_open()) {
    const float* w = e.weights.data<float>();
    for (int64_t k = 0; k < e.num_local; ++k) {
      if (!(w[k] >= 0) || !std::isfinite(w[k])) {
        return Corrupt(e.weights, absl::StrCat("entry ", k, " is ", w[k], "; edge weights are finite and >= 0"));
      }
    }
  }
  if (auto st = VerifyLabelEdges(e); !st.ok()) return st;
  if (e.dst_degree.is_open()) {
    const int64_t* d = e.dst_degree.data<int64_t>();
    for (int64_t i = 0; i < e.dst_degree.num_elements(); ++i) {
      if (d[i] < 0) return Corrupt(e.dst_degree, absl::StrCat("entry ", i, " is negative"));
    }
  }
  return absl::OkStatus();
}

absl::Status Partition::VerifyLabelEdges(const EdgeTypeStore& e) const {
  const NodeTypeStore& src = nodes_[e.src_type];
  const NodeTypeStore& dst = nodes_[e.dst_type];
  for (const auto& [split, f] : e.label_splits) {
    const int64_t* v = f.data<int64_t>();
    const int64_t k = f.shape()[0];
    for (int64_t i = 0; i < k; ++i) {
      const int64_t a = v[2 * i];
      const int64_t b = v[2 * i + 1];
      if (a < 0 || a >= src.num_nodes || src.Owner(a) != partition_id()) {
        return Corrupt(f, absl::StrCat("row ", i, ": source ", a, " is not a '", src.name,
                                       "' node this partition owns"));
      }
      if (b < 0 || b >= dst.num_nodes) {
        return Corrupt(f, absl::StrCat("row ", i, ": destination ", b, " is not a '", dst.name, "' node id"));
      }
      if (i > 0 && (v[2 * i - 2] > a || (v[2 * i - 2] == a && v[2 * i - 1] >= b))) {
        return Corrupt(f, absl::StrCat("rows are not sorted and unique at row ", i));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Partition::FindNodeType(const std::string& name) const {
  if (name.empty()) {
    if (nodes_.size() == 1) return 0;
    return absl::InvalidArgumentError("node_type is required: the graph has several node types");
  }
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
    if (nodes_[i].name == name) return i;
  }
  return absl::InvalidArgumentError(absl::StrCat("node_type '", name, "' does not exist"));
}

absl::StatusOr<int> Partition::FindEdgeType(const std::string& name) const {
  if (name.empty()) {
    if (edges_.size() == 1) return 0;
    return absl::InvalidArgumentError("edge_type is required: the graph has several edge types");
  }
  for (int i = 0; i < static_cast<int>(edges_.size()); ++i) {
    if (edges_[i].name == name) return i;
  }
  return absl::InvalidArgumentError(absl::StrCat("edge_type '", name, "' does not exist"));
}

}  // namespace graphstore
