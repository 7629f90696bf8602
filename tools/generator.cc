#include "tools/generator.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graphstore/v1/manifest.pb.h"
#include "tools/dataset/writer.h"
#include "server/graph/manifest.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "server/util/progress.h"
#include "tools/metis_partition.h"

namespace graphstore {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A small per-node generator: splitmix64 over a state derived from (seed, stream, node).
class NodeRng {
 public:
  NodeRng(uint64_t seed, uint64_t stream, int64_t node)
      : state_(Mix(Mix(seed ^ (stream * 0xd1b54a32d192ed03ULL)) ^ static_cast<uint64_t>(node))) {}
  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; one value per call keeps the stream simple).
  double Normal() {
    const double u1 = 1.0 - Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

enum Stream : uint64_t { kLabel = 1, kEdges = 2, kFeatures = 3, kCentroid = 4, kSplit = 5 };

// Per-graph state shared by the row generators: labels and community member lists.
struct Communities {
  std::vector<int32_t> label;         // [N]
  std::vector<int64_t> member_start;  // [C + 1]
  std::vector<int64_t> members;       // [N], grouped by community, ascending within
  std::vector<float> centroids;       // [C, D]
};

Communities MakeCommunities(const GeneratorOptions& o) {
  Communities c;
  const int64_t n = o.num_nodes;
  c.label.resize(n);
  c.member_start.assign(o.num_classes + 1, 0);
  for (int64_t v = 0; v < n; ++v) {
    c.label[v] = static_cast<int32_t>(NodeRng(o.seed, kLabel, v).Next() % o.num_classes);
    ++c.member_start[c.label[v] + 1];
  }
  for (int k = 0; k < o.num_classes; ++k) c.member_start[k + 1] += c.member_start[k];
  c.members.resize(n);
  std::vector<int64_t> fill(c.member_start.begin(), c.member_start.end() - 1);
  for (int64_t v = 0; v < n; ++v) c.members[fill[c.label[v]]++] = v;
  c.centroids.resize(static_cast<size_t>(o.num_classes) * o.feature_dim);
  for (int k = 0; k < o.num_classes; ++k) {
    NodeRng rng(o.seed, kCentroid, k);
    for (int d = 0; d < o.feature_dim; ++d) {
      c.centroids[k * o.feature_dim + d] = static_cast<float>(o.feature_signal * rng.Normal());
    }
  }
  return c;
}

// Out-neighbours of `v`, sorted, without duplicates or self loops.
void GenerateRow(const GeneratorOptions& o, const Communities& c, int64_t v, std::vector<int64_t>* out) {
  NodeRng rng(o.seed, kEdges, v);
  const double a = o.degree_exponent;
  const double xm = std::max(0.5, o.avg_degree * (a - 1.0) / a);
  const double u = 1.0 - rng.Uniform();
  const int64_t degree = std::min<int64_t>(
      {static_cast<int64_t>(xm * std::pow(u, -1.0 / a)), o.max_degree, o.num_nodes - 1});
  out->clear();
  const int k = c.label[v];
  const int64_t begin = c.member_start[k];
  const int64_t size = c.member_start[k + 1] - begin;
  for (int64_t i = 0; i < degree; ++i) {
    // u^2 skews choices towards the first members: a few popular nodes per community.
    const double x = rng.Uniform();
    if (rng.Uniform() < o.homophily && size > 1) {
      out->push_back(c.members[begin + static_cast<int64_t>(size * x * x)]);
    } else {
      out->push_back(static_cast<int64_t>(o.num_nodes * x * x));
    }
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  out->erase(std::remove(out->begin(), out->end(), v), out->end());
}

void GenerateFeatures(const GeneratorOptions& o, const Communities& c, int64_t v, float* out) {
  NodeRng rng(o.seed, kFeatures, v);
  const float* centroid = &c.centroids[static_cast<size_t>(c.label[v]) * o.feature_dim];
  for (int d = 0; d < o.feature_dim; ++d) out[d] = centroid[d] + static_cast<float>(rng.Normal());
}

// 0 = train, 1 = val, 2 = test, 3 = none.
int SplitOf(const GeneratorOptions& o, int64_t v) {
  const double u = NodeRng(o.seed, kSplit, v).Uniform();
  if (u < o.train_fraction) return 0;
  if (u < o.train_fraction + o.val_fraction) return 1;
  if (u < o.train_fraction + o.val_fraction + o.test_fraction) return 2;
  return 3;
}

}  // namespace

float EdgeWeight(uint64_t seed, int64_t src, int64_t dst) {
  const uint64_t h = Mix(Mix(seed ^ 0x5bd1e995u) ^ static_cast<uint64_t>(src) * 0x9e3779b97f4a7c15ULL ^
                         static_cast<uint64_t>(dst));
  return h % 10 == 0 ? 0.0f : static_cast<float>(1 + (h >> 8) % 8);
}

int64_t NodeTime(uint64_t seed, int64_t v) {
  return static_cast<int64_t>(Mix(Mix(seed ^ 0x7e3a11cfu) ^ static_cast<uint64_t>(v)) % 1000000);
}

int64_t EdgeTime(uint64_t seed, int64_t src, int64_t dst) {
  return std::max(NodeTime(seed, src), NodeTime(seed, dst));
}

namespace {

// Puts the neighbours of `v` in the order of a temporal CSR row: by (edge time, neighbour).
void SortRowByTime(uint64_t seed, int64_t v, std::vector<int64_t>* row) {
  std::sort(row->begin(), row->end(), [&](int64_t a, int64_t b) {
    const int64_t ta = EdgeTime(seed, v, a), tb = EdgeTime(seed, v, b);
    return ta != tb ? ta < tb : a < b;
  });
}

// A streaming writer of `path` when `wanted` (else null, so that the caller skips the file).
absl::StatusOr<std::unique_ptr<NpyWriter>> WriterIf(bool wanted, const std::string& path, NpyDtype dtype,
                                                    std::vector<int64_t> row_shape = {}) {
  if (!wanted) return std::unique_ptr<NpyWriter>();
  return NpyWriter::Create(path, dtype, std::move(row_shape));
}

// The whole graph as one partition, streamed to disk.
// What streaming the rows leaves for the node arrays and the manifest.
struct StreamedRows {
  std::vector<int64_t> indptr;
  std::vector<int64_t> degree;  // how often each node is a neighbour
};

// Streams the rows (CSR indices), their weights and times, and the nodes' features to their
// files a chunk of nodes at a time, so that the graph is never whole in memory.
absl::StatusOr<StreamedRows> WriteRows(const GeneratorOptions& o, const Communities& c, const std::string& ndir,
                                       const std::string& edir) {
  const int64_t n = o.num_nodes;
  auto indices = NpyWriter::Create(edir + "/indices.npy", NpyDtype::kInt64);
  if (!indices.ok()) return indices.status();
  auto weights_writer = WriterIf(o.edge_weights, edir + "/weights.npy", NpyDtype::kFloat32);
  auto times_writer = WriterIf(o.times, edir + "/time.npy", NpyDtype::kInt64);
  auto features_writer = WriterIf(o.feature_dim > 0, ndir + "/features.npy", NpyDtype::kFloat32, {o.feature_dim});
  for (const auto* w : {&weights_writer, &times_writer, &features_writer}) {
    if (!w->ok()) return w->status();
  }
  std::unique_ptr<NpyWriter> weights = *std::move(weights_writer);
  std::unique_ptr<NpyWriter> times = *std::move(times_writer);
  std::unique_ptr<NpyWriter> features = *std::move(features_writer);
  StreamedRows out;
  out.indptr.assign(n + 1, 0);
  out.degree.assign(n, 0);
  std::vector<float> row_weights;
  std::vector<int64_t> row_times;
  std::vector<int64_t> row;
  constexpr int64_t kChunk = 4096;
  std::vector<float> fbuf(static_cast<size_t>(kChunk) * o.feature_dim);
  std::vector<float> range(2 * static_cast<size_t>(o.feature_dim));  // min row, max row
  Progress progress("generating and writing the graph", n, "nodes");
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t end = std::min(n, base + kChunk);
    progress.Add(end - base);
    for (int64_t v = base; v < end; ++v) {
      GenerateRow(o, c, v, &row);
      if (times) {
        SortRowByTime(o.seed, v, &row);
        row_times.clear();
        for (int64_t w : row) row_times.push_back(EdgeTime(o.seed, v, w));
        if (auto s = times->Append(row_times.data(), static_cast<int64_t>(row.size())); !s.ok()) return s;
      }
      out.indptr[v + 1] = out.indptr[v] + static_cast<int64_t>(row.size());
      for (int64_t w : row) ++out.degree[w];
      if (auto s = (*indices)->Append(row.data(), static_cast<int64_t>(row.size())); !s.ok()) return s;
      if (weights) {
        row_weights.clear();
        for (int64_t w : row) row_weights.push_back(EdgeWeight(o.seed, v, w));
        if (auto s = weights->Append(row_weights.data(), static_cast<int64_t>(row.size())); !s.ok()) return s;
      }
      if (features) GenerateFeatures(o, c, v, &fbuf[(v - base) * o.feature_dim]);
    }
    if (features) {
      UpdateFeatureRange(fbuf.data(), end - base, o.feature_dim, base == 0, &range);
      if (auto s = features->Append(fbuf.data(), end - base); !s.ok()) return s;
    }
  }
  for (NpyWriter* w : {indices->get(), weights.get(), times.get(), features.get()}) {
    if (w == nullptr) continue;
    if (auto s = w->Finish(); !s.ok()) return s;
  }
  if (auto s = WriteNpyVector(edir + "/indptr.npy", out.indptr); !s.ok()) return s;
  if (features) {
    if (auto s = WriteNpy(ndir + "/feature_range.npy", NpyDtype::kFloat32, {2, o.feature_dim}, range.data()); !s.ok()) {
      return s;
    }
  }
  return out;
}

// The nodes' ids, labels, splits, times and book entries (owner, degree).
absl::Status WriteNodeArrays(const GeneratorOptions& o, const Communities& c, const std::string& dir,
                             const std::string& ndir, const std::vector<int64_t>& degree) {
  const int64_t n = o.num_nodes;
  std::vector<int64_t> ids(n);
  std::vector<int64_t> labels(n);
  std::vector<int64_t> splits[3];
  for (int64_t v = 0; v < n; ++v) {
    ids[v] = v;
    labels[v] = c.label[v];
    const int s = SplitOf(o, v);
    if (s < 3) splits[s].push_back(v);
  }
  if (auto s = WriteNpyVector(ndir + "/ids.npy", ids); !s.ok()) return s;
  if (auto s = WriteNpyVector(ndir + "/labels.npy", labels); !s.ok()) return s;
  for (int i = 0; i < 3; ++i) {
    if (auto s = WriteNpyVector(absl::StrCat(ndir, "/", kSplitNames[i], ".npy"), splits[i]); !s.ok()) return s;
  }
  if (o.times) {
    std::vector<int64_t> node_times(n);
    for (int64_t v = 0; v < n; ++v) node_times[v] = NodeTime(o.seed, v);
    if (auto s = WriteNpyVector(BookFile(dir, "node", "time"), node_times); !s.ok()) return s;
  }
  if (auto s = WriteNpyVector(BookFile(dir, "node", "partition"), std::vector<int32_t>(n, 0)); !s.ok()) return s;
  return WriteNpyVector(BookFile(dir, "node", "degree"), degree);
}

// The manifest of the single partition.
v1::PartitionManifest SingleManifest(const GeneratorOptions& o, int64_t num_edges) {
  v1::PartitionManifest m;
  m.set_format_version(kFormatVersion);
  m.set_dataset_name(o.name);
  m.set_num_partitions(1);
  m.set_partition_id(0);
  m.set_edge_dir("out");
  m.set_partition_method("single");
  auto* nt = m.add_node_types();
  nt->set_name("node");
  nt->set_num_nodes(o.num_nodes);
  nt->set_num_local_nodes(o.num_nodes);
  nt->set_feature_dim(o.feature_dim);
  nt->set_feature_dtype("float32");
  nt->set_has_labels(true);
  nt->set_num_classes(o.num_classes);
  nt->set_has_degree(true);
  nt->set_has_feature_range(o.feature_dim > 0);
  nt->set_has_node_times(o.times);
  for (const char* s : kSplitNames) nt->add_splits(s);
  auto* et = m.add_edge_types();
  et->set_src_type("node");
  et->set_relation("to");
  et->set_dst_type("node");
  et->set_num_edges(num_edges);
  et->set_num_local_edges(num_edges);
  et->set_has_edge_weights(o.edge_weights);
  et->set_has_edge_times(o.times);
  return m;
}

absl::Status WriteSingle(const GeneratorOptions& o, const Communities& c, const std::string& dir) {
  if (o.edge_dir != "out") {
    return absl::InvalidArgumentError("--edge_dir=in needs the in-memory writer; use --partitions>1 "
                                      "or graphstore-partition");
  }
  const std::string ndir = NodeDir(dir, "node");
  const std::string edir = EdgeDir(dir, "node__to__node");
  for (const auto& d : {dir + "/book", ndir, edir}) {
    if (auto s = MakeDirs(d); !s.ok()) return s;
  }
  auto rows = WriteRows(o, c, ndir, edir);
  if (!rows.ok()) return rows.status();
  if (auto s = WriteNodeArrays(o, c, dir, ndir, rows->degree); !s.ok()) return s;
  return WriteManifest(dir, SingleManifest(o, rows->indptr.back()));
}

GraphData Materialise(const GeneratorOptions& o, const Communities& c) {
  GraphData g;
  g.name = o.name;
  NodeTypeData nt;
  nt.name = "node";
  nt.num_nodes = o.num_nodes;
  nt.feature_dim = o.feature_dim;
  nt.features.resize(static_cast<size_t>(o.num_nodes) * o.feature_dim);
  nt.labels.resize(o.num_nodes);
  EdgeTypeData et;
  et.src_type = et.dst_type = "node";
  et.relation = "to";
  std::vector<int64_t> row;
  Progress progress("generating the graph", o.num_nodes, "nodes");
  for (int64_t v = 0; v < o.num_nodes; ++v) {
    if ((v & 0xfff) == 0) progress.Add(std::min<int64_t>(0x1000, o.num_nodes - v));
    GenerateRow(o, c, v, &row);
    if (o.times) SortRowByTime(o.seed, v, &row);  // edge ids in the order one partition stores them
    for (int64_t u : row) {
      et.src.push_back(v);
      et.dst.push_back(u);
      if (o.edge_weights) et.weights.push_back(EdgeWeight(o.seed, v, u));
      if (o.times) et.times.push_back(EdgeTime(o.seed, v, u));
    }
    if (o.feature_dim > 0) GenerateFeatures(o, c, v, &nt.features[v * o.feature_dim]);
    nt.labels[v] = c.label[v];
    if (o.times) nt.times.push_back(NodeTime(o.seed, v));
    const int s = SplitOf(o, v);
    if (s < 3) nt.splits[kSplitNames[s]].push_back(v);
  }
  for (const char* s : kSplitNames) nt.splits[s];  // every split exists, even if empty
  g.node_types.push_back(std::move(nt));
  g.edge_types.push_back(std::move(et));
  return g;
}

// Several partitions: materialise the graph and hand it to the dataset writer.
absl::Status WriteMany(const GeneratorOptions& o, const Communities& c, const std::string& dir) {
  const GraphData g = Materialise(o, c);
  auto assigned = AssignPartitions(g, o.method, o.num_partitions, o.seed);
  if (!assigned.ok()) return assigned.status();
  const Assignment& a = *assigned;
  WriteOptions w;
  w.num_partitions = o.num_partitions;
  w.edge_dir = o.edge_dir;
  w.method = o.method;
  w.deal_seed = DealSeed(o.method, static_cast<uint64_t>(o.seed));
  return WritePartitions(g, a, w, dir);
}

}  // namespace

absl::Status WriteInputFiles(const GeneratorOptions& o, const std::string& dir) {
  if (auto s = ValidateGeneratorOptions(o); !s.ok()) return s;
  if (auto s = MakeDirs(dir); !s.ok()) return s;
  const Communities c = MakeCommunities(o);
  auto src = NpyWriter::Create(dir + "/src.npy", NpyDtype::kInt64);
  if (!src.ok()) return src.status();
  auto dst = NpyWriter::Create(dir + "/dst.npy", NpyDtype::kInt64);
  if (!dst.ok()) return dst.status();
  auto features = WriterIf(o.feature_dim > 0, dir + "/features.npy", NpyDtype::kFloat32, {o.feature_dim});
  if (!features.ok()) return features.status();
  std::vector<int64_t> row, sources, labels(o.num_nodes);
  std::vector<float> fbuf;
  std::vector<int64_t> splits[3];
  Progress progress("generating edge lists", o.num_nodes, "nodes");
  constexpr int64_t kChunk = 4096;
  for (int64_t base = 0; base < o.num_nodes; base += kChunk) {
    const int64_t end = std::min(o.num_nodes, base + kChunk);
    fbuf.resize(static_cast<size_t>(end - base) * o.feature_dim);
    for (int64_t v = base; v < end; ++v) {
      GenerateRow(o, c, v, &row);
      sources.assign(row.size(), v);
      if (auto s = (*src)->Append(sources.data(), static_cast<int64_t>(row.size())); !s.ok()) return s;
      if (auto s = (*dst)->Append(row.data(), static_cast<int64_t>(row.size())); !s.ok()) return s;
      if (*features) GenerateFeatures(o, c, v, &fbuf[(v - base) * o.feature_dim]);
      labels[v] = c.label[v];
      const int split = SplitOf(o, v);
      if (split < 3) splits[split].push_back(v);
    }
    if (*features) {
      if (auto s = (*features)->Append(fbuf.data(), end - base); !s.ok()) return s;
    }
    progress.Add(end - base);
  }
  for (NpyWriter* w : {src->get(), dst->get(), features->get()}) {
    if (w == nullptr) continue;
    if (auto s = w->Finish(); !s.ok()) return s;
  }
  if (auto s = WriteNpyVector(dir + "/labels.npy", labels); !s.ok()) return s;
  for (int i = 0; i < 3; ++i) {
    if (auto s = WriteNpyVector(absl::StrCat(dir, "/", kSplitNames[i], ".npy"), splits[i]); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ValidateGeneratorOptions(const GeneratorOptions& o) {
  auto bad = [](const std::string& m) { return absl::InvalidArgumentError(m); };
  if (o.num_nodes < 2) return bad("--nodes must be >= 2");
  if (!(o.avg_degree >= 0)) return bad("--avg_degree must be >= 0");
  if (!(o.degree_exponent > 1.0)) return bad("--degree_exponent must be > 1");
  if (o.max_degree < 0) return bad("--max_degree must be >= 0");
  if (o.num_classes < 1 || o.num_classes > 100000) return bad("--classes must be in [1, 100000]");
  if (!(o.homophily >= 0 && o.homophily <= 1)) return bad("--homophily must be in [0, 1]");
  if (o.feature_dim < 0 || o.feature_dim > 65536) return bad("--feature_dim must be in [0, 65536]");
  if (!(o.feature_signal >= 0)) return bad("--feature_signal must be >= 0");
  if (o.train_fraction < 0 || o.val_fraction < 0 || o.test_fraction < 0 ||
      o.train_fraction + o.val_fraction + o.test_fraction > 1.0 + 1e-9) {
    return bad("--split fractions must be >= 0 and add up to at most 1");
  }
  if (o.num_partitions < 1 || o.num_partitions > 4096) return bad("--partitions must be in [1, 4096]");
  if (o.edge_dir != "in" && o.edge_dir != "out") return bad("--edge_dir must be \"in\" or \"out\"");
  if (o.method != "random" && o.method != "metis" && o.method != "stream") {
    return bad("--method must be \"random\", \"metis\" or \"stream\"");
  }
  return absl::OkStatus();
}

absl::StatusOr<GraphData> GenerateGraph(const GeneratorOptions& options) {
  if (auto s = ValidateGeneratorOptions(options); !s.ok()) return s;
  return Materialise(options, MakeCommunities(options));
}

absl::Status GenerateDataset(const GeneratorOptions& options, const std::string& out_dir) {
  if (auto s = ValidateGeneratorOptions(options); !s.ok()) return s;
  if (auto s = MakeDirs(out_dir); !s.ok()) return s;
  const Communities c = MakeCommunities(options);
  if (options.num_partitions == 1 && options.edge_dir == "out") return WriteSingle(options, c, out_dir);
  return WriteMany(options, c, out_dir);
}

}  // namespace graphstore
