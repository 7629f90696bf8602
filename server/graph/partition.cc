#include "server/graph/partition.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/graph/manifest.h"
#include "server/graph/partition_verify.h"

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
  // The edge times are verified: the node times of the whole graph give way to the owned ones.
  for (NodeTypeStore& t : p->nodes_) p->KeepOwnTimes(&t);
  return p;
}

void Partition::KeepOwnTimes(NodeTypeStore* t) {
  if (!t->times.is_open()) return;
  t->has_times = true;
  const int64_t* all = t->times.data<int64_t>();
  const int64_t* ids = t->global_ids();
  t->own_times.resize(static_cast<size_t>(t->num_local));
  for (int64_t r = 0; r < t->num_local; ++r) t->own_times[r] = all[ids[r]];
  t->times = MappedNpy();
}

absl::Status Partition::LoadNodeType(int index, Progress* verify) {
  if (auto s = OpenNodeType(index); !s.ok()) return s;
  NodeTypeStore& t = nodes_[index];
  if (verify != nullptr) {
    if (auto s = VerifyNodeType(t, partition_id(), num_partitions(), verify); !s.ok()) return s;
  }
  // The book in memory at about a byte a node, or none where the owners were dealt; the file's
  // 4 bytes a node are read once (only to verify them, where dealt).
  t.owners = t.deal.has_value() ? NodeBook::Dealt(*t.deal, partition_id())
                                : NodeBook::FromOwners(t.book.data<int32_t>(), t.num_nodes, num_partitions(), partition_id());
  t.book = MappedNpy();
  t.local = MappedNpy();
  // Verification read every degree; the server reads them again only for a trainer's cache.
  t.degree.DropResident();
  return absl::OkStatus();
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
  if (m.has_owner_deal() && num_partitions() > 1) t.deal = OwnerDeal(t.num_nodes, num_partitions(), m.owner_deal().key());
  // Each owned node's row is derived from the owners (NodeBook); a dataset written by older
  // tools also has it in .local.npy, which verification checks when it is there.
  if (num_partitions() > 1 && std::filesystem::exists(BookFile(dir_, t.name, "local"))) {
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

absl::Status Partition::LoadEdgeType(int index, Progress* verify) {
  if (auto s = OpenEdgeType(index); !s.ok()) return s;
  // The indptr checks are O(rows) and always run: a bad indptr would send the sampler out of
  // bounds.
  if (auto s = CheckIndptr(edges_[index], nodes_[edges_[index].row_type].num_local); !s.ok()) return s;
  return verify != nullptr ? VerifyEdgeType(edges_[index], nodes_, partition_id(), verify) : absl::OkStatus();
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

const DegreeIndex& Partition::DegreeSums(const EdgeTypeStore& e, int64_t whole_bytes) const {
  const int64_t n = e.dst_degree.num_elements();
  const auto [parts, self] = DegreeIndex::Ranges(n, num_partitions(), partition_id(), whole_bytes);
  const DegreeIndex& index = e.dst_degree_index->Get(e.dst_degree.data<int64_t>(), n, parts, self);
  e.dst_degree.DropResident();  // read once into the index
  return index;
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
