#include "tools/graph_input.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/graph/npy.h"
#include "tools/dataset/graph_data.h"
#include "server/util/progress.h"
#include "tools/edge_stream.h"
#include "tools/int_fields.h"

namespace graphstore {
namespace {

constexpr char kDefaultRelation[] = "to";

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Integer column values of one npy file as int64.
absl::StatusOr<std::vector<int64_t>> ReadNpyInts(const std::string& path) {
  auto f = MappedNpy::Open(path);
  if (!f.ok()) return f.status();
  if (f->shape().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a 1-D array of ids"));
  }
  std::vector<int64_t> out(f->num_elements());
  if (f->dtype() == NpyDtype::kInt64) {
    std::copy_n(f->data<int64_t>(), out.size(), out.begin());
  } else if (f->dtype() == NpyDtype::kInt32) {
    std::copy_n(f->data<int32_t>(), out.size(), out.begin());
  } else {
    return absl::InvalidArgumentError(absl::StrCat(path, ": dtype is ", DtypeName(f->dtype()),
                                                   ", expected int64 or int32"));
  }
  return out;
}

// Parses text into rows of `columns` integers; lines starting with # or % are comments.
absl::Status ParseIntColumns(const std::string& path, const std::string& text, int columns,
                             std::vector<std::vector<int64_t>>* out) {
  out->assign(columns, {});
  size_t pos = 0;
  int64_t line_no = 0;
  Progress progress(absl::StrCat("reading ", path), static_cast<int64_t>(text.size()), "bytes");
  size_t counted = 0;
  while (pos < text.size()) {
    if (pos - counted >= (size_t{1} << 20)) {
      progress.Add(static_cast<int64_t>(pos - counted));
      counted = pos;
    }
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    const char* p = text.data() + pos;
    const char* e = text.data() + end;
    pos = end + 1;
    int64_t values[2];
    const LineKind kind = ParseIntFields(p, e, columns, values);
    if (kind == LineKind::kBlank) continue;
    if (kind == LineKind::kBad) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": expected ", columns,
                                                     " integer ids, got '", std::string(p, e - p), "'"));
    }
    for (int c = 0; c < columns; ++c) (*out)[c].push_back(values[c]);
  }
  progress.Add(static_cast<int64_t>(text.size() - counted));
  return absl::OkStatus();
}

struct TypeIds {
  std::set<int64_t> raw;  // every raw id seen for the type
};

}  // namespace

absl::Status EdgeFileType(const GraphInputSpec& spec, const TypedFile& f, EdgeTypeData* meta) {
  if (f.type.empty() && spec.edges.size() > 1) {
    return absl::InvalidArgumentError("with several --edges files, each needs TYPE= (src__rel__dst)");
  }
  if (f.type.empty()) {
    meta->src_type = meta->dst_type = kHomogeneousNodeType;
    meta->relation = kDefaultRelation;
    return absl::OkStatus();
  }
  const std::string& type = f.type;
  const size_t a = type.find("__");
  const size_t b = a == std::string::npos ? a : type.find("__", a + 2);
  if (a == std::string::npos || b == std::string::npos || type.find("__", b + 2) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("edge type '", type, "' is not of the form src__rel__dst"));
  }
  meta->src_type = type.substr(0, a);
  meta->relation = type.substr(a + 2, b - a - 2);
  meta->dst_type = type.substr(b + 2);
  return absl::OkStatus();
}

TypedFile ParseTypedFile(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) return {"", spec};
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

absl::StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ReadEdgeList(
    const std::string& path, bool swap_columns) {
  const size_t comma = path.find(',');
  if (IsNpyPair(path)) {
    const std::string a = path.substr(0, comma);
    const std::string b = path.substr(comma + 1);
    auto src = ReadNpyInts(a);
    if (!src.ok()) return src.status();
    auto dst = ReadNpyInts(b);
    if (!dst.ok()) return dst.status();
    if (src->size() != dst->size()) {
      return absl::InvalidArgumentError(absl::StrCat(a, " has ", src->size(), " ids but ", b,
                                                     " has ", dst->size()));
    }
    return std::make_pair(*std::move(src), *std::move(dst));
  }
  auto text = ReadText(path);
  if (!text.ok()) return text.status();
  std::vector<std::vector<int64_t>> cols;
  if (auto s = ParseIntColumns(path, *text, 2, &cols); !s.ok()) return s;
  if (swap_columns) std::swap(cols[0], cols[1]);
  return std::make_pair(std::move(cols[0]), std::move(cols[1]));
}

absl::StatusOr<std::vector<int64_t>> ReadIdList(const std::string& path) {
  if (absl::EndsWith(path, ".npy")) return ReadNpyInts(path);
  auto text = ReadText(path);
  if (!text.ok()) return text.status();
  std::vector<std::vector<int64_t>> cols;
  if (auto s = ParseIntColumns(path, *text, 1, &cols); !s.ok()) return s;
  return std::move(cols[0]);
}

absl::StatusOr<std::pair<std::vector<float>, int64_t>> ReadFloatMatrix(const std::string& path) {
  auto f = MappedNpy::Open(path);
  if (!f.ok()) return f.status();
  if (f->shape().empty() || f->shape().size() > 2) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a 1-D or 2-D feature array"));
  }
  const int64_t dim = f->shape().size() == 2 ? f->shape()[1] : 1;
  std::vector<float> out(f->num_elements());
  if (f->dtype() == NpyDtype::kFloat32) {
    std::copy_n(f->data<float>(), out.size(), out.begin());
  } else if (f->dtype() == NpyDtype::kFloat64) {
    std::copy_n(f->data<double>(), out.size(), out.begin());
  } else {
    return absl::InvalidArgumentError(absl::StrCat(path, ": dtype is ", DtypeName(f->dtype()),
                                                   ", expected float32 or float64"));
  }
  return std::make_pair(std::move(out), dim);
}

namespace {

// Builds a GraphData from the input files in phases: edges (raw ids), per-node files, then
// the remap of raw ids to dense global ids, node data and splits in global ids.
class GraphBuilder {
 public:
  explicit GraphBuilder(const GraphInputSpec& spec)
      : spec_(spec), homogeneous_(spec.edges.size() == 1 && spec.edges[0].type.empty()) {
    g_.name = spec.name;
  }

  absl::StatusOr<GraphData> Build() {
    if (spec_.edges.empty()) return absl::InvalidArgumentError("no edge list given (--edges)");
    if (auto s = ReadEdges(); !s.ok()) return s;
    if (auto s = ReadNodeFiles(); !s.ok()) return s;
    if (auto s = AlignRows(); !s.ok()) return s;
    Remap();
    if (auto s = AttachNodeData(); !s.ok()) return s;
    if (auto s = ReadSplits(); !s.ok()) return s;
    return std::move(g_);
  }

 private:
  std::string NodeTypeOf(const std::string& t) const { return t.empty() && homogeneous_ ? kHomogeneousNodeType : t; }

  TypeIds* NoteType(const std::string& t) {
    if (!seen_.count(t)) type_order_.push_back(t);
    return &seen_[t];
  }

  // The node type a per-node file names; it must be an endpoint type of some edge file.
  absl::StatusOr<std::string> KnownType(const std::string& type, const char* flag) const {
    const std::string t = NodeTypeOf(type);
    if (!seen_.count(t)) return absl::InvalidArgumentError(absl::StrCat(flag, " names unknown node type '", t, "'"));
    return t;
  }

  // Edges, with raw endpoint ids.
  absl::Status ReadEdges() {
    for (const auto& ef : spec_.edges) {
      EdgeTypeData e;
      if (auto s = EdgeFileType(spec_, ef, &e); !s.ok()) return s;
      auto lists = ReadEdgeList(ef.path, spec_.swap_columns);
      if (!lists.ok()) return lists.status();
      e.src = std::move(lists->first);
      e.dst = std::move(lists->second);
      NoteType(e.src_type)->raw.insert(e.src.begin(), e.src.end());
      NoteType(e.dst_type)->raw.insert(e.dst.begin(), e.dst.end());
      g_.edge_types.push_back(std::move(e));
    }
    for (const auto& wf : spec_.edge_weights) {
      auto found = EdgeTypeOf(wf, "--edge_weights");
      if (!found.ok()) return found.status();
      EdgeTypeData* e = *found;
      auto w = ReadWeights(wf.path);
      if (!w.ok()) return w.status();
      if (w->size() != e->src.size()) {
        return absl::InvalidArgumentError(absl::StrCat(wf.path, ": ", w->size(), " weights for ", e->src.size(),
                                                       " edges; give one per edge, in the edge list's order"));
      }
      for (size_t i = 0; i < w->size(); ++i) {
        if (!((*w)[i] >= 0) || !std::isfinite((*w)[i])) {
          return absl::InvalidArgumentError(
              absl::StrCat(wf.path, ": weight ", i, " is ", (*w)[i], "; weights are finite and >= 0"));
        }
      }
      e->weights = *std::move(w);
    }
    for (const auto& tf : spec_.edge_times) {
      auto e = EdgeTypeOf(tf, "--edge_times");
      if (!e.ok()) return e.status();
      auto times = ReadIdList(tf.path);
      if (!times.ok()) return times.status();
      if (times->size() != (*e)->src.size()) {
        return absl::InvalidArgumentError(absl::StrCat(tf.path, ": ", times->size(), " times for ", (*e)->src.size(),
                                                       " edges; give one per edge, in the edge list's order"));
      }
      (*e)->times = *std::move(times);
    }
    return absl::OkStatus();
  }

  // The edge type a per-edge file (--edge_weights, --edge_times) names.
  absl::StatusOr<EdgeTypeData*> EdgeTypeOf(const TypedFile& f, const std::string& flag) {
    for (auto& t : g_.edge_types) {
      if (f.type.empty() ? g_.edge_types.size() == 1 : EdgeName(t) == f.type) {
        return &t;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(flag, "=", f.type.empty() ? "" : f.type + "=", f.path,
                                                   f.type.empty() ? ": with several edge types, name one (TYPE=PATH)"
                                                                  : ": no --edges file has that type"));
  }

  // Weights: a 1-D float .npy, or text with one number per line.
  static absl::StatusOr<std::vector<float>> ReadWeights(const std::string& path) {
    if (path.size() > 4 && path.substr(path.size() - 4) == ".npy") {
      auto m = ReadFloatMatrix(path);
      if (!m.ok()) return m.status();
      if (m->second != 1) return absl::InvalidArgumentError(absl::StrCat(path, ": expected a 1-D array of weights"));
      return std::move(m->first);
    }
    std::ifstream in(path);
    if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
    std::vector<float> out;
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
      if (line.empty() || line[0] == '#') continue;
      char* end = nullptr;
      const float v = std::strtof(line.c_str(), &end);
      if (end == line.c_str()) return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": not a number"));
      out.push_back(v);
    }
    return out;
  }

  // --node_ids (the raw id of each row of a type's files), --features and --labels.
  absl::Status ReadNodeFiles() {
    for (const auto& nf : spec_.node_ids) {
      auto t = KnownType(nf.type, "--node_ids");
      if (!t.ok()) return t.status();
      auto ids = ReadIdList(nf.path);
      if (!ids.ok()) return ids.status();
      row_ids_[*t] = *std::move(ids);
      seen_[*t].raw.insert(row_ids_[*t].begin(), row_ids_[*t].end());
    }
    for (const auto& ff : spec_.features) {
      auto t = KnownType(ff.type, "--features");
      if (!t.ok()) return t.status();
      auto m = ReadFloatMatrix(ff.path);
      if (!m.ok()) return m.status();
      features_[*t] = *std::move(m);
    }
    for (const auto& lf : spec_.labels) {
      auto t = KnownType(lf.type, "--labels");
      if (!t.ok()) return t.status();
      auto l = ReadIdList(lf.path);
      if (!l.ok()) return l.status();
      labels_[*t] = *std::move(l);
    }
    for (const auto& tf : spec_.node_times) {
      auto t = KnownType(tf.type, "--node_times");
      if (!t.ok()) return t.status();
      auto times = ReadIdList(tf.path);
      if (!times.ok()) return times.status();
      times_[*t] = {tf.path, *std::move(times)};
    }
    return absl::OkStatus();
  }

  // The raw id of each of `n` rows of a file of type `t`: --node_ids when given, else row i is
  // raw id i.
  absl::StatusOr<std::vector<int64_t>> RowsOf(const std::string& t, int64_t n, const std::string& what) {
    if (row_ids_.count(t)) {
      if (static_cast<int64_t>(row_ids_[t].size()) != n) {
        return absl::InvalidArgumentError(absl::StrCat(what, " of '", t, "' has ", n, " rows but --node_ids lists ",
                                                       row_ids_[t].size(), " ids"));
      }
      return row_ids_[t];
    }
    std::vector<int64_t> r(n);
    for (int64_t i = 0; i < n; ++i) r[i] = i;
    seen_[t].raw.insert(r.begin(), r.end());
    return r;
  }

  absl::Status AlignRows() {
    for (auto& [t, m] : features_) {
      const int64_t n = m.second > 0 ? static_cast<int64_t>(m.first.size()) / m.second : 0;
      auto r = RowsOf(t, n, "--features");
      if (!r.ok()) return r.status();
      feature_rows_[t] = *std::move(r);
    }
    for (auto& [t, l] : labels_) {
      auto r = RowsOf(t, static_cast<int64_t>(l.size()), "--labels");
      if (!r.ok()) return r.status();
      label_rows_[t] = *std::move(r);
    }
    for (auto& [t, f] : times_) {
      auto r = RowsOf(t, static_cast<int64_t>(f.second.size()), "--node_times");
      if (!r.ok()) return r.status();
      time_rows_[t] = *std::move(r);
    }
    return absl::OkStatus();
  }

  int64_t ToGlobal(const std::string& t, int64_t raw) const {
    const auto& v = sorted_raw_.at(t);
    return static_cast<int64_t>(std::lower_bound(v.begin(), v.end(), raw) - v.begin());
  }

  // Global id = rank of the raw id within its type; the raw ids are kept unless they already
  // are 0..n-1.
  void Remap() {
    for (const auto& t : type_order_) {
      NodeTypeData nt;
      nt.name = t;
      std::vector<int64_t> raw(seen_[t].raw.begin(), seen_[t].raw.end());
      nt.num_nodes = static_cast<int64_t>(raw.size());
      bool identity = true;
      for (int64_t i = 0; i < nt.num_nodes && identity; ++i) identity = raw[i] == i;
      if (!identity) nt.raw_ids = raw;
      sorted_raw_[t] = std::move(raw);
      g_.node_types.push_back(std::move(nt));
    }
    for (auto& e : g_.edge_types) {
      for (auto& x : e.src) x = ToGlobal(e.src_type, x);
      for (auto& x : e.dst) x = ToGlobal(e.dst_type, x);
    }
  }

  absl::Status AttachNodeData() {
    for (auto& nt : g_.node_types) {
      if (features_.count(nt.name)) {
        const auto& [data, dim] = features_[nt.name];
        const auto& rows = feature_rows_[nt.name];
        std::vector<bool> covered(nt.num_nodes, false);
        nt.feature_dim = dim;
        nt.features.assign(nt.num_nodes * dim, 0.0f);
        for (size_t i = 0; i < rows.size(); ++i) {
          const int64_t gid = ToGlobal(nt.name, rows[i]);
          std::copy_n(data.begin() + i * dim, dim, nt.features.begin() + gid * dim);
          covered[gid] = true;
        }
        for (int64_t gid = 0; gid < nt.num_nodes; ++gid) {
          if (!covered[gid]) {
            return absl::InvalidArgumentError(absl::StrCat("the features of node type '", nt.name,
                                                           "' have no row for raw id ", sorted_raw_[nt.name][gid]));
          }
        }
      }
      if (labels_.count(nt.name)) {
        const auto& l = labels_[nt.name];
        const auto& rows = label_rows_[nt.name];
        nt.labels.assign(nt.num_nodes, -1);
        for (size_t i = 0; i < rows.size(); ++i) nt.labels[ToGlobal(nt.name, rows[i])] = l[i];
      }
      if (times_.count(nt.name)) {
        const auto& [path, times] = times_[nt.name];
        const auto& rows = time_rows_[nt.name];
        std::vector<bool> covered(nt.num_nodes, false);
        nt.times.assign(nt.num_nodes, 0);
        for (size_t i = 0; i < rows.size(); ++i) {
          const int64_t gid = ToGlobal(nt.name, rows[i]);
          nt.times[gid] = times[i];
          covered[gid] = true;
        }
        for (int64_t gid = 0; gid < nt.num_nodes; ++gid) {
          if (!covered[gid]) {
            return absl::InvalidArgumentError(absl::StrCat(path, ": no time for node ", sorted_raw_[nt.name][gid],
                                                           " of type '", nt.name, "'; every node needs one"));
          }
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadSplits() {
    for (const auto& [split, files] : spec_.splits) {
      for (const auto& sf : files) {
        const std::string t = NodeTypeOf(sf.type);
        if (!sorted_raw_.count(t)) {
          return absl::InvalidArgumentError(absl::StrCat(sf.path, ": unknown node type '", t, "'"));
        }
        auto ids = ReadIdList(sf.path);
        if (!ids.ok()) return ids.status();
        auto& out = g_.node_types[FindType(g_, t)].splits[split];
        const auto& v = sorted_raw_[t];
        for (int64_t raw : *ids) {
          const int64_t gid = ToGlobal(t, raw);
          if (gid >= static_cast<int64_t>(v.size()) || v[gid] != raw) {
            return absl::InvalidArgumentError(absl::StrCat(sf.path, ": id ", raw, " is not a node of type '", t, "'"));
          }
          out.push_back(gid);
        }
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
      }
    }
    return absl::OkStatus();
  }

  const GraphInputSpec& spec_;
  const bool homogeneous_;
  GraphData g_;
  std::map<std::string, TypeIds> seen_;
  std::vector<std::string> type_order_;
  std::map<std::string, std::vector<int64_t>> row_ids_;
  std::map<std::string, std::pair<std::vector<float>, int64_t>> features_;
  std::map<std::string, std::vector<int64_t>> labels_;
  std::map<std::string, std::vector<int64_t>> feature_rows_;
  std::map<std::string, std::vector<int64_t>> label_rows_;
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>> times_;  // path, times per row
  std::map<std::string, std::vector<int64_t>> time_rows_;
  std::map<std::string, std::vector<int64_t>> sorted_raw_;
};

}  // namespace

absl::StatusOr<GraphData> BuildGraph(const GraphInputSpec& spec) { return GraphBuilder(spec).Build(); }

}  // namespace graphstore
