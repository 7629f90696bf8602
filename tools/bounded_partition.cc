#include "tools/bounded_partition.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/type_names.h"
#include "server/graph/manifest.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "server/util/progress.h"
#include "tools/dataset/transforms.h"
#include "tools/bounded_nodes.h"
#include "tools/dataset/transforms.h"
#include "server/util/log.h"
#include "tools/edge_stream.h"
#include "tools/stream_partition.h"

namespace graphstore {
namespace {

constexpr size_t kMaxReadChunk = size_t{1} << 20;  // edges per read
// Bytes per edge of a read: the two ids as read, and as global ids.
constexpr int64_t kReadBytes = 4 * sizeof(int64_t);
// The streaming method's own bytes per node: a cluster as uint32, and beside it a cluster's new
// number (uint32) while they are renumbered, otherwise a size or a place (uint16). A node's stored
// edges are counted from its adjacency each pass, not kept.
constexpr int64_t kStreamNodeBytes = 8;
// The program itself and its libraries.
constexpr int64_t kBaseBytes = int64_t{16} << 20;
constexpr int kMaxBuckets = 900;

// One edge type to store: an --edges file read as it is or reversed.
struct EdgeInput {
  EdgeTypeData meta;  // types and relation; no arrays
  size_t file = 0;
  bool reversed = false;
  int src_t = 0, dst_t = 0;
  int row_t = 0, col_t = 0;  // the CSR's row and column types
};

// A feature file read by row.
struct FeatureFile {
  NpyFile file;
  int64_t dim = 0;
};

absl::Status OpenFeatureFile(const std::string& path, FeatureFile* f) {
  if (auto s = f->file.Open(path, "row"); !s.ok()) return s;
  const NpyHeader& h = f->file.header();
  if (h.shape.empty() || h.shape.size() > 2) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a 1-D or 2-D feature array"));
  }
  if (h.dtype != NpyDtype::kFloat32 && h.dtype != NpyDtype::kFloat64) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": dtype is ", DtypeName(h.dtype), ", expected float32 or float64"));
  }
  f->dim = h.shape.size() == 2 ? h.shape[1] : 1;
  return absl::OkStatus();
}

// Calls fn(values, n, first) over a 1-D id or label file (.npy of int64 or int32, or text), a
// block of values at a time, so that a file with a value per node is never held whole.
template <typename Fn>
absl::Status ForEachIdBlock(const std::string& path, Fn fn) {
  if (!absl::EndsWith(path, ".npy")) {
    auto ids = ReadIdList(path);
    if (!ids.ok()) return ids.status();
    return fn(ids->data(), ids->size(), int64_t{0});
  }
  NpyFile f;
  if (auto s = f.Open(path, "value"); !s.ok()) return s;
  const NpyHeader& h = f.header();
  if (h.shape.size() != 1) return absl::InvalidArgumentError(absl::StrCat(path, ": expected a 1-D array of ids"));
  if (h.dtype != NpyDtype::kInt64 && h.dtype != NpyDtype::kInt32) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": dtype is ", DtypeName(h.dtype), ", expected int64 or int32"));
  }
  constexpr int64_t kBlock = 1 << 20;
  std::vector<int64_t> values;
  std::vector<int32_t> narrow;
  for (int64_t first = 0; first < f.rows(); first += kBlock) {
    const int64_t n = std::min(kBlock, f.rows() - first);
    values.resize(n);
    if (h.dtype == NpyDtype::kInt64) {
      if (auto s = f.ReadRows(first, n, values.data()); !s.ok()) return s;
    } else {
      narrow.resize(n);
      if (auto s = f.ReadRows(first, n, narrow.data()); !s.ok()) return s;
      std::copy(narrow.begin(), narrow.end(), values.begin());
    }
    if (auto s = fn(values.data(), static_cast<size_t>(n), first); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The values in a 1-D id or label file.
absl::StatusOr<int64_t> CountIds(const std::string& path) {
  int64_t count = 0;
  auto s = ForEachIdBlock(path, [&](const int64_t*, size_t n, int64_t) {
    count += static_cast<int64_t>(n);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return count;
}

// Resizes `v` to `n`, freeing its old storage before a larger one is allocated: the chunks are
// sized to the budget, and a reallocation that copies holds two of them at once.
template <typename T>
void GrowWithoutCopy(std::vector<T>* v, size_t n) {
  if (n > v->capacity()) std::vector<T>().swap(*v);
  v->resize(n);
}

// An edge record in a bucket: row and column as global ids, and the edge id.
using Record = std::array<int64_t, 3>;

class BoundedPartitioner {
 public:
  BoundedPartitioner(const GraphInputSpec& spec, const BoundedOptions& options)
      : spec_(spec),
        o_(options),
        P_(options.write.num_partitions),
        rows_are_sources_(options.write.edge_dir != "in"),
        homogeneous_(spec.edges.size() == 1 && spec.edges[0].type.empty()) {
    g_.name = spec.name;
  }

  absl::StatusOr<PartitionReport> Run(const std::string& out) {
    if (auto s = CheckStreamable(spec_); !s.ok()) return s;
    if (spec_.edges.empty()) return absl::InvalidArgumentError("no edge list given (--edges)");
    if (auto s = OpenEdges(); !s.ok()) return s;
    if (auto s = CollectIds(); !s.ok()) return s;
    if (auto s = BuildNodes(); !s.ok()) return s;
    if (auto s = SplitByFractions(); !s.ok()) return s;
    if (auto s = CheckBudget(); !s.ok()) return s;
    if (auto s = Assign(); !s.ok()) return s;
    report_.num_partitions = P_;
    report_.nodes.assign(P_, 0);
    report_.edges.assign(P_, 0);
    for (size_t t = 0; t < g_.node_types.size(); ++t) {
      report_.num_nodes += g_.node_types[t].num_nodes;
      const SmallInts& owner = nodes_[t].owner;
      for (int64_t gid = 0; gid < owner.size(); ++gid) ++report_.nodes[owner.Get(gid)];
    }
    local_edges_.assign(P_, std::vector<int64_t>(inputs_.size(), 0));
    for (size_t et = 0; et < inputs_.size(); ++et) {
      if (auto s = WriteEdgeType(et, out); !s.ok()) return s;
    }
    for (int p = 0; p < P_; ++p) {
      if (auto s = FinishPartition(p, out); !s.ok()) return s;
    }
    return report_;
  }

 private:
  std::string NodeTypeOf(const std::string& t) const { return t.empty() && homogeneous_ ? kHomogeneousNodeType : t; }

  int NoteType(const std::string& name) {
    int t = FindType(g_, name);
    if (t >= 0) return t;
    NodeTypeData nt;
    nt.name = name;
    g_.node_types.push_back(std::move(nt));
    nodes_.emplace_back();
    return static_cast<int>(g_.node_types.size()) - 1;
  }

  absl::StatusOr<int> KnownType(const std::string& type, const char* flag) const {
    const int t = FindType(g_, NodeTypeOf(type));
    if (t < 0) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " names unknown node type '", NodeTypeOf(type), "'"));
    }
    return t;
  }

  absl::Status OpenEdges() {
    for (const auto& ef : spec_.edges) {
      EdgeInput in;
      if (auto s = EdgeFileType(spec_, ef, &in.meta); !s.ok()) return s;
      for (const std::string* name : {&in.meta.src_type, &in.meta.relation, &in.meta.dst_type}) {
        if (!IsValidTypeName(*name)) {
          return absl::InvalidArgumentError(absl::StrCat("edge type '", EdgeName(in.meta), "': bad name '", *name, "'"));
        }
      }
      auto stream = EdgeStream::Open(ef.path, spec_.swap_columns);
      if (!stream.ok()) return stream.status();
      in.file = streams_.size();
      streams_.push_back(*std::move(stream));
      paths_.push_back(ef.path);
      in.src_t = NoteType(in.meta.src_type);
      in.dst_t = NoteType(in.meta.dst_type);
      inputs_.push_back(in);
    }
    if (o_.reverse_edges) {
      const size_t n = inputs_.size();
      for (size_t i = 0; i < n; ++i) {
        EdgeInput r = inputs_[i];
        r.meta.src_type = inputs_[i].meta.dst_type;
        r.meta.relation = ReverseRelation(inputs_[i].meta.relation);
        r.meta.dst_type = inputs_[i].meta.src_type;
        std::swap(r.src_t, r.dst_t);
        r.reversed = true;
        bool exists = false;
        for (const auto& other : inputs_) exists |= EdgeName(other.meta) == EdgeName(r.meta);
        if (!exists) inputs_.push_back(r);
      }
    }
    for (auto& in : inputs_) {
      in.row_t = rows_are_sources_ ? in.src_t : in.dst_t;
      in.col_t = rows_are_sources_ ? in.dst_t : in.src_t;
      g_.edge_types.push_back(in.meta);
    }
    return absl::OkStatus();
  }

  // Calls fn(src, dst, first, n) over input `in`'s edges as raw ids, in the type's direction.
  template <typename Fn>
  absl::Status ForEachEdge(const EdgeInput& in, const std::string& what, Fn fn) {
    EdgeStream* stream = streams_[in.file].get();
    Progress progress(absl::StrCat(what, " ", paths_[in.file]), stream->size_bytes(), "bytes");
    int64_t reported = 0;
    return ForEachChunk(stream, read_chunk_, [&](const int64_t* a, const int64_t* b, int64_t first, size_t n) {
      progress.Add(stream->bytes_read() - reported);
      reported = stream->bytes_read();
      return in.reversed ? fn(b, a, first, n) : fn(a, b, first, n);
    });
  }

  // Calls fn(rows, cols, first, n) over input `in`'s edges as the CSR's global row and column
  // ids; edge `first + i` is (rows[i], cols[i]).
  template <typename Fn>
  absl::Status ForEachGlobalEdge(const EdgeInput& in, const std::string& what, Fn fn) {
    std::vector<int64_t> rows, cols;
    return ForEachEdge(in, what, [&](const int64_t* a, const int64_t* b, int64_t first, size_t n) {
      const int64_t* raw_rows = rows_are_sources_ ? a : b;
      const int64_t* raw_cols = rows_are_sources_ ? b : a;
      rows.resize(n);
      cols.resize(n);
      for (size_t i = 0; i < n; ++i) {
        rows[i] = nodes_[in.row_t].ids.Global(raw_rows[i]);
        cols[i] = nodes_[in.col_t].ids.Global(raw_cols[i]);
      }
      return fn(rows.data(), cols.data(), first, n);
    });
  }

  absl::Status MarkIds(int t, const int64_t* ids, size_t n, const std::string& path, int64_t first) {
    IdSet& set = nodes_[t].ids;
    (void)path;
    (void)first;
    for (size_t i = 0; i < n; ++i) {
      if (auto s = set.Mark(ids[i]); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Pass 1: every raw id of every type, from the edges and the per-node files.
  absl::Status CollectIds() {
    // Each type's ids in a bitmap within a quarter of the budget, or, past it, in sorted runs of
    // a quarter of the budget over all types.
    const int64_t id_word_limit = std::max<int64_t>(1, o_.memory_bytes / 4 / 16);
    const int64_t run_ids = o_.memory_bytes / 4 / 8 / static_cast<int64_t>(std::max<size_t>(1, nodes_.size()));
    for (auto& n : nodes_) n.ids.SetLimits(id_word_limit, run_ids, o_.tmp_dir);
    read_chunk_ = static_cast<size_t>(std::clamp<int64_t>(o_.memory_bytes / 16 / kReadBytes, 4096, kMaxReadChunk));
    for (size_t i = 0; i < spec_.edges.size(); ++i) {
      const EdgeInput& in = inputs_[i];
      auto s = ForEachEdge(in, "reading ids of", [&](const int64_t* a, const int64_t* b, int64_t first, size_t n) {
        if (auto st = MarkIds(in.src_t, a, n, paths_[in.file], first); !st.ok()) return st;
        return MarkIds(in.dst_t, b, n, paths_[in.file], first);
      });
      if (!s.ok()) return s;
    }
    for (const auto& nf : spec_.node_ids) {
      auto t = KnownType(nf.type, "--node_ids");
      if (!t.ok()) return t.status();
      auto ids = ReadIdList(nf.path);
      if (!ids.ok()) return ids.status();
      if (auto s = MarkIds(*t, ids->data(), ids->size(), nf.path, 0); !s.ok()) return s;
      row_ids_[*t] = *std::move(ids);
    }
    for (const auto& ff : spec_.features) {
      auto t = KnownType(ff.type, "--features");
      if (!t.ok()) return t.status();
      auto f = std::make_unique<FeatureFile>();
      if (auto s = OpenFeatureFile(ff.path, f.get()); !s.ok()) return s;
      const int64_t rows = f->file.rows();
      if (auto s = MarkRows(*t, rows, "--features"); !s.ok()) return s;
      features_[*t] = std::move(f);
    }
    for (const auto& lf : spec_.labels) {
      auto t = KnownType(lf.type, "--labels");
      if (!t.ok()) return t.status();
      auto l = CountIds(lf.path);
      if (!l.ok()) return l.status();
      if (auto s = MarkRows(*t, *l, "--labels"); !s.ok()) return s;
      label_files_[*t] = lf.path;
    }
    for (size_t t = 0; t < nodes_.size(); ++t) {
      const bool sparse = nodes_[t].ids.sparse();
      if (auto s = nodes_[t].ids.Rank(); !s.ok()) return s;
      if (sparse) {
        Logger("partition")->info("ids of '{}': {} spread past a bitmap, held in Elias-Fano form at {:.2f} bytes an id",
                    g_.node_types[t].name, nodes_[t].ids.count(),
                    static_cast<double>(nodes_[t].ids.bytes()) / std::max<int64_t>(1, nodes_[t].ids.count()));
      }
    }
    return absl::OkStatus();
  }

  // The rows of a per-node file are --node_ids' ids, or 0 .. rows-1.
  absl::Status MarkRows(int t, int64_t rows, const char* flag) {
    if (row_ids_.count(t)) {
      if (static_cast<int64_t>(row_ids_[t].size()) != rows) {
        return absl::InvalidArgumentError(absl::StrCat(flag, " of '", g_.node_types[t].name, "' has ", rows,
                                                       " rows but --node_ids lists ", row_ids_[t].size(), " ids"));
      }
      return absl::OkStatus();
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (auto s = nodes_[t].ids.Mark(r); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // The nodes of every type: counts, labels, feature rows and splits, in their compact forms.
  absl::Status BuildNodes() {
    for (size_t t = 0; t < g_.node_types.size(); ++t) {
      NodeTypeData& nt = g_.node_types[t];
      BoundedNodeType& nodes = nodes_[t];
      nt.num_nodes = nodes.ids.count();
      const std::vector<int64_t>* rows = row_ids_.count(t) ? &row_ids_[t] : nullptr;
      // The global id of row i of a per-node file.
      auto gid_of_row = [&](size_t i) { return nodes.ids.Global(rows != nullptr ? (*rows)[i] : static_cast<int64_t>(i)); };
      if (label_files_.count(t)) {
        // Read twice: for the range the labels take, then into that many bytes a node.
        const std::string& path = label_files_[t];
        int64_t lo = -1, hi = -1;
        auto s = ForEachIdBlock(path, [&](const int64_t* l, size_t n, int64_t) {
          for (size_t i = 0; i < n; ++i) {
            lo = std::min(lo, l[i]);
            hi = std::max(hi, l[i]);
          }
          return absl::OkStatus();
        });
        if (!s.ok()) return s;
        nodes.labels.Reset(nt.num_nodes, lo, hi, -1);
        nodes.max_label = hi;
        s = ForEachIdBlock(path, [&](const int64_t* l, size_t n, int64_t first) {
          for (size_t i = 0; i < n; ++i) nodes.labels.Set(gid_of_row(first + i), l[i]);
          return absl::OkStatus();
        });
        if (!s.ok()) return s;
      }
      if (features_.count(t)) {
        FeatureFile& f = *features_[t];
        nt.feature_dim = f.dim;
        if (rows != nullptr) {
          nodes.feature_row.assign(nt.num_nodes, -1);
          for (size_t i = 0; i < rows->size(); ++i) nodes.feature_row[gid_of_row(i)] = static_cast<int64_t>(i);
        }
        if (auto s = CheckFeatureRows(nt, nodes, f); !s.ok()) return s;
      }
      row_ids_.erase(static_cast<int>(t));
    }
    for (const auto& [split, files] : spec_.splits) {
      for (const auto& sf : files) {
        const int t = FindType(g_, NodeTypeOf(sf.type));
        if (t < 0) return absl::InvalidArgumentError(absl::StrCat(sf.path, ": unknown node type '", NodeTypeOf(sf.type), "'"));
        BoundedNodeType& nodes = nodes_[t];
        NodeBits& bits = nodes.splits.try_emplace(split, g_.node_types[t].num_nodes).first->second;
        auto s = ForEachIdBlock(sf.path, [&](const int64_t* ids, size_t n, int64_t) {
          for (size_t i = 0; i < n; ++i) {
            if (!nodes.ids.Has(ids[i])) {
              return absl::InvalidArgumentError(
                  absl::StrCat(sf.path, ": id ", ids[i], " is not a node of type '", g_.node_types[t].name, "'"));
            }
            bits.Set(nodes.ids.Global(ids[i]));
          }
          return absl::OkStatus();
        });
        if (!s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // Every node of `nt` has a row in its feature file.
  static absl::Status CheckFeatureRows(const NodeTypeData& nt, const BoundedNodeType& nodes, const FeatureFile& f) {
    int64_t missing = -1;  // a raw id without a row
    if (!nodes.feature_row.empty()) {
      for (int64_t gid = 0; gid < nt.num_nodes && missing < 0; ++gid) {
        if (nodes.feature_row[gid] < 0) missing = nodes.ids.identity() ? gid : nodes.ids.Raw(gid);
      }
    } else {
      // Rows are raw ids: the first id at or past the file's end has none.
      missing = nodes.ids.NextAtOrAfter(f.file.rows());
    }
    if (missing < 0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("the features of node type '", nt.name, "' have no row for raw id ", missing));
  }

  // --split's fractions where no split file is given: AssignSplits' choice, held as bits.
  absl::Status SplitByFractions() {
    if (!o_.split_fractions.has_value()) return absl::OkStatus();
    const SplitFractions& f = *o_.split_fractions;
    if (auto s = CheckSplitFractions(f); !s.ok()) return s;
    bool any_labels = false;
    for (const auto& n : nodes_) any_labels |= !n.labels.empty();
    std::mt19937_64 rng(o_.seed);
    for (size_t t = 0; t < g_.node_types.size(); ++t) {
      BoundedNodeType& nodes = nodes_[t];
      if (!SplitsType(f, g_.node_types[t].name, !nodes.labels.empty(), any_labels)) continue;
      const int64_t n = g_.node_types[t].num_nodes;
      for (const char* name : kSplitNames) nodes.splits.insert_or_assign(name, NodeBits(n));
      auto take = [&](int split, const auto* ids, size_t count) {
        NodeBits& bits = nodes.splits.at(kSplitNames[split]);
        for (size_t i = 0; i < count; ++i) bits.Set(static_cast<int64_t>(ids[i]));
      };
      // The shuffle is the same over uint32 ids as over int64 ones, at half the memory.
      if (n <= int64_t{UINT32_MAX}) {
        ChooseSplits(Eligible<uint32_t>(nodes), f, &rng, take);
      } else {
        ChooseSplits(Eligible<int64_t>(nodes), f, &rng, take);
      }
    }
    return absl::OkStatus();
  }

  // The nodes a split may take: the labelled ones, or all when the type has no labels.
  template <typename Id>
  static std::vector<Id> Eligible(const BoundedNodeType& nodes) {
    std::vector<Id> out;
    const int64_t n = nodes.ids.count();
    for (int64_t i = 0; i < n; ++i) {
      if (nodes.labels.empty() || nodes.labels.Get(i) >= 0) out.push_back(static_cast<Id>(i));
    }
    return out;
  }

  // Whether edge type input `in` has node type `t` as its column.
  bool IsColumnType(size_t t) const {
    for (const auto& in : inputs_) {
      if (static_cast<size_t>(in.col_t) == t) return true;
    }
    return false;
  }

  // The per-node arrays must leave room for chunks of edges.
  absl::Status CheckBudget() {
    const int owner_width = SmallInts::WidthFor(0, P_ - 1);
    int64_t nodes = 0, held = 0, row_degrees = 0;
    for (size_t t = 0; t < g_.node_types.size(); ++t) {
      const int64_t n = g_.node_types[t].num_nodes;
      nodes += n;
      held += n * nodes_[t].BytesPerNodeAfterAssignment(owner_width, IsColumnType(t)) + nodes_[t].ids.bytes();
    }
    // One edge type's row degrees at a time.
    for (const auto& in : inputs_) row_degrees = std::max(row_degrees, 4 * g_.node_types[in.row_t].num_nodes);
    // The streaming method's arrays live while it assigns, a row degree per node while an edge
    // type is written: never both.
    const int64_t stream = o_.write.method == "stream" ? nodes * kStreamNodeBytes : 0;
    const int64_t fixed =
        kBaseBytes + held + std::max(row_degrees, stream) + static_cast<int64_t>(read_chunk_) * kReadBytes;
    // A chunk's records, the column copied out of them, and the buckets' write buffers (a quarter
    // of a chunk over all buckets).
    chunk_records_ = (o_.memory_bytes - fixed) / (2 * static_cast<int64_t>(sizeof(Record)));
    if (chunk_records_ < 4096) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "--memory_mb=", o_.memory_bytes >> 20, " is too small for ", nodes, " nodes: their arrays and the read buffers take about ",
          (fixed >> 20) + 1, " MiB; raise --memory_mb"));
    }
    return absl::OkStatus();
  }

  absl::Status Assign() {
    auto reset_owners = [&] {
      for (size_t t = 0; t < g_.node_types.size(); ++t) nodes_[t].owner.Reset(g_.node_types[t].num_nodes, 0, P_ - 1, 0);
    };
    if (o_.write.method == "random") {
      reset_owners();
      // RandomAssignment's deal: each node's owner computed from its id alone.
      for (size_t t = 0; t < g_.node_types.size(); ++t) {
        SmallInts& owner = nodes_[t].owner;
        DealNodes(owner.size(), P_, o_.seed, static_cast<int>(t), [&](int64_t node, int p) { owner.Set(node, p); });
      }
      return absl::OkStatus();
    }
    if (o_.write.method != "stream") {
      return absl::InvalidArgumentError(absl::StrCat("--method=", o_.write.method,
                                                     " holds the graph in memory; with inputs beyond --memory_mb use "
                                                     "random or stream"));
    }
    std::vector<int64_t> sizes;
    for (const auto& nt : g_.node_types) sizes.push_back(nt.num_nodes);
    int64_t edges = 0;
    for (const auto& in : inputs_) edges += streams_[in.file]->position();
    StreamOptions so;
    so.num_partitions = P_;
    so.seed = o_.seed;
    so.memory_bytes = chunk_records_ * static_cast<int64_t>(sizeof(Record));
    so.tmp_dir = o_.tmp_dir;
    StreamPartitioner sp(sizes, edges, so);
    for (const auto& in : inputs_) {
      auto s = ForEachGlobalEdge(in, "streaming", [&](const int64_t* rows, const int64_t* cols, int64_t, size_t n) {
        return sp.AddEdges(in.row_t, rows, in.col_t, cols, n);
      });
      if (!s.ok()) return s;
    }
    auto a = sp.Assign();
    if (!a.ok()) return a.status();
    reset_owners();  // (not held while the streaming method's arrays are)
    for (size_t t = 0; t < g_.node_types.size(); ++t) {
      for (int64_t gid = 0; gid < nodes_[t].owner.size(); ++gid) nodes_[t].owner.Set(gid, (*a)[t][gid]);
    }
    return absl::OkStatus();
  }

  // A nameless scratch file of one chunk's edge records.
  struct Bucket {
    std::string path;  // for messages; unlinked once open
    std::FILE* file = nullptr;
    int64_t records = 0;

    Bucket() = default;
    Bucket(const Bucket&) = delete;
    Bucket& operator=(const Bucket&) = delete;
    ~Bucket() { Close(); }
    void Close() {
      if (file != nullptr) std::fclose(file);
      file = nullptr;
    }
    absl::Status Create(const std::string& name, size_t buffer) {
      path = name;
      file = std::fopen(path.c_str(), "w+b");
      if (file == nullptr) {
        return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create (--tmp_dir): ", std::strerror(errno)));
      }
      ::unlink(path.c_str());  // nameless from now on: nothing is left behind, however the run ends
      std::setvbuf(file, nullptr, _IOFBF, buffer);
      return absl::OkStatus();
    }
    absl::Status Append(const Record& r) {
      if (std::fwrite(r.data(), sizeof(Record), 1, file) != 1) {
        return absl::ResourceExhaustedError(absl::StrCat(path, ": write failed (--tmp_dir full?): ", std::strerror(errno)));
      }
      ++records;
      return absl::OkStatus();
    }
    // Reads every record back into `out` and closes the file.
    absl::Status ReadAll(std::vector<Record>* out) {
      GrowWithoutCopy(out, static_cast<size_t>(records));
      if (records > 0 && (std::fflush(file) != 0 || std::fseek(file, 0, SEEK_SET) != 0 ||
                          std::fread(out->data(), sizeof(Record), records, file) != static_cast<size_t>(records))) {
        return absl::DataLossError(absl::StrCat(path, ": cannot read back: ", std::strerror(errno)));
      }
      Close();
      return absl::OkStatus();
    }
  };

  // Each partition's rows cut into ranges whose edges fit a chunk; a bucket per range. A range
  // is given by global ids: a partition's rows ascend with their global ids.
  struct ChunkPlan {
    std::vector<std::vector<int64_t>> start;  // [partition]: the first global id of each range
    std::vector<int> first_bucket;            // [partition + 1]
    int num_buckets() const { return first_bucket.back(); }
    int BucketOf(int p, int64_t row) const {
      const auto& s = start[p];
      return first_bucket[p] + static_cast<int>(std::upper_bound(s.begin(), s.end(), row) - s.begin()) - 1;
    }
  };

  // Edge type `et`: degrees, then buckets by (partition, row range), then each partition's CSR.
  absl::Status WriteEdgeType(size_t et, const std::string& out) {
    const EdgeInput& in = inputs_[et];
    std::vector<uint32_t> row_degree(g_.node_types[in.row_t].num_nodes, 0);
    if (auto s = CountEdges(in, &row_degree); !s.ok()) return s;
    num_edges_.push_back(streams_[in.file]->position());
    const ChunkPlan plan = PlanChunks(in.row_t, row_degree);
    if (plan.num_buckets() > kMaxBuckets) {
      return absl::ResourceExhaustedError(absl::StrCat("edge type '", EdgeName(in.meta), "' needs ", plan.num_buckets(),
                                                       " chunks of --memory_mb; raise --memory_mb"));
    }
    if (auto s = BucketEdges(et, plan); !s.ok()) return s;
    Progress progress(absl::StrCat("writing ", EdgeName(in.meta)), num_edges_.back(), "edges");
    for (int p = 0; p < P_; ++p) {
      if (auto s = WritePartitionEdges(et, p, plan, row_degree, out, &progress); !s.ok()) return s;
    }
    buckets_.clear();
    return absl::OkStatus();
  }

  // The pass that counts each row's edges and each column's degree, and the report's figures.
  absl::Status CountEdges(const EdgeInput& in, std::vector<uint32_t>* row_degree) {
    const SmallInts& row_owner = nodes_[in.row_t].owner;
    const SmallInts& col_owner = nodes_[in.col_t].owner;
    auto& col_degree = nodes_[in.col_t].col_degree;
    if (col_degree.empty()) col_degree.assign(g_.node_types[in.col_t].num_nodes, 0);
    return ForEachGlobalEdge(in, "counting degrees of", [&](const int64_t* rows, const int64_t* cols, int64_t first, size_t n) {
      for (size_t i = 0; i < n; ++i) {
        // Degrees are held in 4 bytes a node.
        if ((*row_degree)[rows[i]] == UINT32_MAX || col_degree[cols[i]] == UINT32_MAX) {
          return absl::ResourceExhaustedError(absl::StrCat(paths_[in.file], ": edge ", first + static_cast<int64_t>(i),
                                                           " gives a node more than ", UINT32_MAX,
                                                           " edges, more than the bounded path counts"));
        }
        ++(*row_degree)[rows[i]];
        ++col_degree[cols[i]];
        const int64_t owner = row_owner.Get(rows[i]);
        ++report_.num_edges;
        report_.cut_edges += owner != col_owner.Get(cols[i]);
        ++report_.edges[owner];
      }
      return absl::OkStatus();
    });
  }

  ChunkPlan PlanChunks(int row_t, const std::vector<uint32_t>& row_degree) const {
    ChunkPlan plan;
    plan.start.assign(P_, std::vector<int64_t>{0});
    plan.first_bucket.assign(P_ + 1, 0);
    std::vector<int64_t> held(P_, 0);
    const SmallInts& owner = nodes_[row_t].owner;
    for (int64_t gid = 0; gid < owner.size(); ++gid) {
      const int64_t p = owner.Get(gid);
      if (held[p] > 0 && held[p] + row_degree[gid] > chunk_records_) {
        plan.start[p].push_back(gid);
        held[p] = 0;
      }
      held[p] += row_degree[gid];
    }
    for (int p = 0; p < P_; ++p) {
      plan.first_bucket[p + 1] = plan.first_bucket[p] + static_cast<int>(plan.start[p].size());
    }
    return plan;
  }

  // The pass that writes each edge to the bucket of its partition and row range.
  absl::Status BucketEdges(size_t et, const ChunkPlan& plan) {
    const EdgeInput& in = inputs_[et];
    buckets_ = std::vector<Bucket>(plan.num_buckets());
    // A quarter of a chunk's bytes for the buckets' write buffers together.
    const size_t buffer = static_cast<size_t>(std::clamp<int64_t>(
        chunk_records_ * static_cast<int64_t>(sizeof(Record)) / 4 / plan.num_buckets(), 4096, 1 << 20));
    for (size_t k = 0; k < buckets_.size(); ++k) {
      const std::string name = absl::StrCat(o_.tmp_dir, "/graphstore-partition-", ::getpid(), "-", et, "-", k, ".bin");
      if (auto s = buckets_[k].Create(name, buffer); !s.ok()) return s;
    }
    const SmallInts& owner = nodes_[in.row_t].owner;
    return ForEachGlobalEdge(in, absl::StrCat("bucketing (", buckets_.size(), " chunks)"),
                             [&](const int64_t* rows, const int64_t* cols, int64_t first, size_t n) {
                               for (size_t i = 0; i < n; ++i) {
                                 const Record r{rows[i], cols[i], first + static_cast<int64_t>(i)};
                                 Bucket& b = buckets_[plan.BucketOf(static_cast<int>(owner.Get(r[0])), r[0])];
                                 if (auto s = b.Append(r); !s.ok()) return s;
                               }
                               return absl::OkStatus();
                             });
  }

  // Partition `p`'s CSR of edge type `et`: indptr from the row degrees, then each of its
  // buckets sorted into indices and edge ids.
  absl::Status WritePartitionEdges(size_t et, int p, const ChunkPlan& plan, const std::vector<uint32_t>& row_degree,
                                   const std::string& out, Progress* progress) {
    const EdgeInput& in = inputs_[et];
    const std::string edir = EdgeDir(PartitionDir(out, P_, p), EdgeName(in.meta));
    if (auto s = MakeDirs(edir); !s.ok()) return s;
    auto indptr = NpyWriter::Create(edir + "/indptr.npy", NpyDtype::kInt64);
    if (!indptr.ok()) return indptr.status();
    int64_t edges = 0;
    if (auto s = (*indptr)->Append(&edges, 1); !s.ok()) return s;
    auto s = ForEachOwned(nodes_[in.row_t].owner, p, [&](const int64_t* rows, size_t n) {
      std::vector<int64_t> ends(n);
      for (size_t i = 0; i < n; ++i) ends[i] = edges += row_degree[rows[i]];
      return (*indptr)->Append(ends.data(), static_cast<int64_t>(n));
    });
    if (!s.ok()) return s;
    if (auto st = (*indptr)->Finish(); !st.ok()) return st;
    local_edges_[p][et] = edges;
    auto indices = NpyWriter::Create(edir + "/indices.npy", NpyDtype::kInt64);
    if (!indices.ok()) return indices.status();
    auto eids = NpyWriter::Create(edir + "/edge_ids.npy", NpyDtype::kInt64);
    if (!eids.ok()) return eids.status();
    std::vector<Record> chunk;
    std::vector<int64_t> column;
    // Appends field `f` of every record of the chunk to `w`.
    auto append = [&](int f, NpyWriter* w) {
      GrowWithoutCopy(&column, chunk.size());
      for (size_t i = 0; i < chunk.size(); ++i) column[i] = chunk[i][f];
      return w->Append(column.data(), static_cast<int64_t>(column.size()));
    };
    for (int k = plan.first_bucket[p]; k < plan.first_bucket[p + 1]; ++k) {
      if (auto s = buckets_[k].ReadAll(&chunk); !s.ok()) return s;
      // Rows ascend with their local row within a partition; then by column, then edge id.
      std::sort(chunk.begin(), chunk.end());
      if (auto s = append(1, indices->get()); !s.ok()) return s;
      if (auto s = append(2, eids->get()); !s.ok()) return s;
      progress->Add(static_cast<int64_t>(chunk.size()));
    }
    if (auto s = (*indices)->Finish(); !s.ok()) return s;
    return (*eids)->Finish();
  }

  // The features of type `t` read from their file, with each column's range over every node.
  absl::StatusOr<FeatureSource> Features(size_t t) {
    FeatureSource src;
    if (!features_.count(static_cast<int>(t))) return src;
    const FeatureFile* f = features_[static_cast<int>(t)].get();
    const NodeTypeData& nt = g_.node_types[t];
    const BoundedNodeType* nodes = &nodes_[t];
    src.dim = f->dim;
    auto buf = std::make_shared<std::vector<char>>();
    src.read = [f, nodes, buf](const int64_t* ids, size_t n, float* out) -> absl::Status {
      auto row_of = [&](int64_t gid) {
        if (!nodes->feature_row.empty()) return nodes->feature_row[gid];
        return nodes->ids.identity() ? gid : nodes->ids.Raw(gid);
      };
      for (size_t i = 0; i < n;) {
        // A run of consecutive rows is one read.
        size_t j = i + 1;
        while (j < n && row_of(ids[j]) == row_of(ids[j - 1]) + 1) ++j;
        buf->resize((j - i) * f->file.row_bytes());
        if (auto s = f->file.ReadRows(row_of(ids[i]), static_cast<int64_t>(j - i), buf->data()); !s.ok()) return s;
        const size_t values = (j - i) * static_cast<size_t>(f->dim);
        float* dst = out + i * f->dim;
        if (f->file.header().dtype == NpyDtype::kFloat32) {
          std::memcpy(dst, buf->data(), values * sizeof(float));
        } else {
          const auto* d = reinterpret_cast<const double*>(buf->data());
          for (size_t v = 0; v < values; ++v) dst[v] = static_cast<float>(d[v]);
        }
        i = j;
      }
      return absl::OkStatus();
    };
    // Each column's minimum and maximum, a block of nodes at a time.
    src.range.assign(2 * f->dim, 0.0f);
    const int64_t block = std::max<int64_t>(1, (int64_t{4} << 20) / (f->dim * 4));
    std::vector<int64_t> ids;
    std::vector<float> rows;
    Progress progress(absl::StrCat("feature ranges of ", nt.name), nt.num_nodes, "nodes");
    for (int64_t from = 0; from < nt.num_nodes; from += block) {
      const int64_t n = std::min(block, nt.num_nodes - from);
      ids.resize(n);
      for (int64_t i = 0; i < n; ++i) ids[i] = from + i;
      rows.resize(n * f->dim);
      if (auto s = src.read(ids.data(), n, rows.data()); !s.ok()) return s;
      UpdateFeatureRange(rows.data(), n, f->dim, from == 0, &src.range);
      progress.Add(n);
    }
    return src;
  }

  absl::Status FinishPartition(int p, const std::string& out) {
    if (sources_.empty()) {
      for (size_t t = 0; t < g_.node_types.size(); ++t) {
        auto f = Features(t);
        if (!f.ok()) return f.status();
        sources_.push_back(*std::move(f));
      }
    }
    const std::string dir = PartitionDir(out, P_, p);
    if (auto s = MakeDirs(dir + "/book"); !s.ok()) return s;
    v1::PartitionManifest m = StartManifest(g_.name, P_, p, o_.write);
    for (size_t t = 0; t < g_.node_types.size(); ++t) {
      if (auto s = WriteBoundedNodeType(g_.node_types[t], nodes_[t], p, dir, sources_[t], &m); !s.ok()) return s;
    }
    for (size_t et = 0; et < inputs_.size(); ++et) AddEdgeType(inputs_[et].meta, num_edges_[et], local_edges_[p][et], &m);
    WriteOptions dealt = o_.write;
    dealt.deal_seed = DealSeed(dealt.method, o_.seed);  // Assign's deal
    RecordOwnerDeal(dealt, &m);
    return graphstore::FinishPartition(dir, m);
  }

  const GraphInputSpec& spec_;
  const BoundedOptions& o_;
  const int P_;
  const bool rows_are_sources_;
  const bool homogeneous_;
  GraphData g_;  // nodes only; edge types without their arrays
  std::vector<BoundedNodeType> nodes_;  // [node type]
  size_t read_chunk_ = 4096;
  std::vector<std::unique_ptr<EdgeStream>> streams_;
  std::vector<std::string> paths_;
  std::vector<EdgeInput> inputs_;
  std::map<int, std::vector<int64_t>> row_ids_;
  std::map<int, std::string> label_files_;
  std::map<int, std::unique_ptr<FeatureFile>> features_;
  std::vector<FeatureSource> sources_;
  int64_t chunk_records_ = 0;
  PartitionReport report_;
  std::vector<int64_t> num_edges_;
  std::vector<std::vector<int64_t>> local_edges_;  // [partition][edge type]
  std::vector<Bucket> buckets_;
};

}  // namespace

absl::Status CheckStreamable(const GraphInputSpec& spec) {
  const std::pair<const char*, bool> refused[] = {
      {"--edge_weights", !spec.edge_weights.empty()},
      {"--edge_times", !spec.edge_times.empty()},
      {"--node_times", !spec.node_times.empty()},
  };
  for (const auto& [flag, given] : refused) {
    if (given) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " is read in memory only; partition with a --memory_mb ",
                                                     "that holds the graph, or without ", flag));
    }
  }
  for (const auto& ff : spec.features) {
    if (!absl::EndsWith(ff.path, ".npy")) return absl::InvalidArgumentError(absl::StrCat(ff.path, ": features must be .npy"));
  }
  return absl::OkStatus();
}

absl::StatusOr<InputEstimate> EstimateInput(const GraphInputSpec& spec) {
  InputEstimate e;
  for (const auto& ef : spec.edges) {
    auto stream = EdgeStream::Open(ef.path, false);
    if (!stream.ok()) return stream.status();
    const bool npy = IsNpyPair(ef.path);
    // npy: 8 or 16 bytes per edge; a text line of two ids is rarely under 10 bytes.
    e.edges += (*stream)->size_bytes() / (npy ? 16 : 10);
  }
  for (const auto& ff : spec.features) {
    FeatureFile f;
    if (auto s = OpenFeatureFile(ff.path, &f); !s.ok()) return s;
    e.feature_values += f.file.header().num_elements();
  }
  return e;
}

int64_t InMemoryBytes(const InputEstimate& input, const std::string& method, bool reverse_edges) {
  const int64_t edges = input.edges * (reverse_edges ? 2 : 1);
  // Peak RSS per edge of the in-memory path, from docs/benchmarks.md's partitioning table (the
  // products-like graph: 125M edges, `bench/partition_bench.sh`): random 5.0 GB, about 40 bytes
  // (each edge's ids, the layout's order, a partition's arrays); METIS 17.7 GB, about 142 (its
  // undirected adjacency and work arrays on top). Stream holds its own adjacency besides METIS
  // over the whole graph when that fits the budget: 200. Features are held once as float32, and
  // once more per partition written.
  const int64_t per_edge = method == "metis" ? 145 : method == "stream" ? 200 : 40;
  return kBaseBytes + edges * per_edge + input.feature_values * 4 * 2;
}

absl::StatusOr<PartitionReport> PartitionBounded(const GraphInputSpec& spec, const BoundedOptions& options,
                                                 const std::string& out_dir) {
  return BoundedPartitioner(spec, options).Run(out_dir);
}

}  // namespace graphstore
