#include "tools/graph_input.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "server/graph/npy.h"

namespace graphstore {
namespace {

constexpr char kDefaultNodeType[] = "node";
constexpr char kDefaultRelation[] = "to";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

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
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    const char* p = text.data() + pos;
    const char* e = text.data() + end;
    pos = end + 1;
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    if (p == e || *p == '#' || *p == '%') continue;
    for (int c = 0; c < columns; ++c) {
      while (p < e && (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r')) ++p;
      char* stop = nullptr;
      errno = 0;
      const long long v = std::strtoll(p, &stop, 10);
      const bool ends_ok = stop <= e && (stop == e || *stop == ' ' || *stop == '\t' ||
                                          *stop == ',' || *stop == '\r');
      if (stop == p || errno != 0 || !ends_ok) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", line_no, ": expected ", columns, " integer ids, got '",
                         std::string(text.data() + (p - text.data()), e - p), "'"));
      }
      (*out)[c].push_back(v);
      p = stop;
    }
  }
  return absl::OkStatus();
}

struct TypeIds {
  std::set<int64_t> raw;  // every raw id seen for the type
};

// Node type and edge type names of an edge spec.
absl::Status EdgeTypeParts(const std::string& type, std::string* src, std::string* rel, std::string* dst) {
  if (type.empty()) {
    *src = *dst = kDefaultNodeType;
    *rel = kDefaultRelation;
    return absl::OkStatus();
  }
  const size_t a = type.find("__");
  const size_t b = a == std::string::npos ? a : type.find("__", a + 2);
  if (a == std::string::npos || b == std::string::npos || type.find("__", b + 2) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("edge type '", type, "' is not of the form src__rel__dst"));
  }
  *src = type.substr(0, a);
  *rel = type.substr(a + 2, b - a - 2);
  *dst = type.substr(b + 2);
  return absl::OkStatus();
}

}  // namespace

TypedFile ParseTypedFile(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) return {"", spec};
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

absl::StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ReadEdgeList(
    const std::string& path, bool swap_columns) {
  const size_t comma = path.find(',');
  if (comma != std::string::npos && EndsWith(path, ".npy")) {
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
  if (EndsWith(path, ".npy")) return ReadNpyInts(path);
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

absl::StatusOr<GraphData> BuildGraph(const GraphInputSpec& spec) {
  if (spec.edges.empty()) return absl::InvalidArgumentError("no edge list given (--edges)");
  GraphData g;
  g.name = spec.name;
  std::map<std::string, TypeIds> seen;
  std::vector<std::string> type_order;
  auto note_type = [&](const std::string& t) {
    if (!seen.count(t)) type_order.push_back(t);
    return &seen[t];
  };
  const bool homogeneous = spec.edges.size() == 1 && spec.edges[0].type.empty();
  auto node_type_of = [&](const std::string& t) { return t.empty() && homogeneous ? kDefaultNodeType : t; };

  // Edges, with raw endpoint ids.
  for (const auto& ef : spec.edges) {
    if (ef.type.empty() && spec.edges.size() > 1) {
      return absl::InvalidArgumentError("with several --edges files, each needs TYPE= (src__rel__dst)");
    }
    EdgeTypeData e;
    if (auto s = EdgeTypeParts(ef.type, &e.src_type, &e.relation, &e.dst_type); !s.ok()) return s;
    auto lists = ReadEdgeList(ef.path, spec.swap_columns);
    if (!lists.ok()) return lists.status();
    e.src = std::move(lists->first);
    e.dst = std::move(lists->second);
    auto* s_ids = note_type(e.src_type);
    s_ids->raw.insert(e.src.begin(), e.src.end());
    auto* d_ids = note_type(e.dst_type);
    d_ids->raw.insert(e.dst.begin(), e.dst.end());
    g.edge_types.push_back(std::move(e));
  }

  // Rows of per-node files: their raw ids.
  std::map<std::string, std::vector<int64_t>> row_ids;
  for (const auto& nf : spec.node_ids) {
    const std::string t = node_type_of(nf.type);
    if (!seen.count(t)) return absl::InvalidArgumentError(absl::StrCat("--node_ids names unknown node type '", t, "'"));
    auto ids = ReadIdList(nf.path);
    if (!ids.ok()) return ids.status();
    row_ids[t] = *std::move(ids);
    seen[t].raw.insert(row_ids[t].begin(), row_ids[t].end());
  }
  std::map<std::string, std::pair<std::vector<float>, int64_t>> features;
  for (const auto& ff : spec.features) {
    const std::string t = node_type_of(ff.type);
    if (!seen.count(t)) return absl::InvalidArgumentError(absl::StrCat("--features names unknown node type '", t, "'"));
    auto m = ReadFloatMatrix(ff.path);
    if (!m.ok()) return m.status();
    features[t] = *std::move(m);
  }
  std::map<std::string, std::vector<int64_t>> labels;
  for (const auto& lf : spec.labels) {
    const std::string t = node_type_of(lf.type);
    if (!seen.count(t)) return absl::InvalidArgumentError(absl::StrCat("--labels names unknown node type '", t, "'"));
    auto l = ReadIdList(lf.path);
    if (!l.ok()) return l.status();
    labels[t] = *std::move(l);
  }
  // Without --node_ids, row i of a feature or label file is raw id i.
  auto rows_of = [&](const std::string& t, int64_t n, const std::string& what) -> absl::StatusOr<std::vector<int64_t>> {
    if (row_ids.count(t)) {
      if (static_cast<int64_t>(row_ids[t].size()) != n) {
        return absl::InvalidArgumentError(absl::StrCat(what, " of '", t, "' has ", n, " rows but --node_ids lists ",
                                                       row_ids[t].size(), " ids"));
      }
      return row_ids[t];
    }
    std::vector<int64_t> r(n);
    for (int64_t i = 0; i < n; ++i) r[i] = i;
    seen[t].raw.insert(r.begin(), r.end());
    return r;
  };
  std::map<std::string, std::vector<int64_t>> feature_rows;
  std::map<std::string, std::vector<int64_t>> label_rows;
  for (auto& [t, m] : features) {
    const int64_t n = m.second > 0 ? static_cast<int64_t>(m.first.size()) / m.second : 0;
    auto r = rows_of(t, n, "--features");
    if (!r.ok()) return r.status();
    feature_rows[t] = *std::move(r);
  }
  for (auto& [t, l] : labels) {
    auto r = rows_of(t, static_cast<int64_t>(l.size()), "--labels");
    if (!r.ok()) return r.status();
    label_rows[t] = *std::move(r);
  }

  // Remap: global id = rank of the raw id within its type.
  std::map<std::string, std::vector<int64_t>> sorted_raw;
  for (const auto& t : type_order) {
    NodeTypeData nt;
    nt.name = t;
    std::vector<int64_t> raw(seen[t].raw.begin(), seen[t].raw.end());
    nt.num_nodes = static_cast<int64_t>(raw.size());
    bool identity = true;
    for (int64_t i = 0; i < nt.num_nodes && identity; ++i) identity = raw[i] == i;
    if (!identity) nt.raw_ids = raw;
    sorted_raw[t] = std::move(raw);
    g.node_types.push_back(std::move(nt));
  }
  auto to_global = [&](const std::string& t, int64_t raw) {
    const auto& v = sorted_raw[t];
    return static_cast<int64_t>(std::lower_bound(v.begin(), v.end(), raw) - v.begin());
  };
  for (auto& e : g.edge_types) {
    for (auto& x : e.src) x = to_global(e.src_type, x);
    for (auto& x : e.dst) x = to_global(e.dst_type, x);
  }
  for (auto& nt : g.node_types) {
    if (features.count(nt.name)) {
      const auto& [data, dim] = features[nt.name];
      const auto& rows = feature_rows[nt.name];
      std::vector<bool> covered(nt.num_nodes, false);
      nt.feature_dim = dim;
      nt.features.assign(nt.num_nodes * dim, 0.0f);
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t gid = to_global(nt.name, rows[i]);
        std::copy_n(data.begin() + i * dim, dim, nt.features.begin() + gid * dim);
        covered[gid] = true;
      }
      for (int64_t gid = 0; gid < nt.num_nodes; ++gid) {
        if (!covered[gid]) {
          return absl::InvalidArgumentError(absl::StrCat(
              "the features of node type '", nt.name, "' have no row for raw id ", sorted_raw[nt.name][gid]));
        }
      }
    }
    if (labels.count(nt.name)) {
      const auto& l = labels[nt.name];
      const auto& rows = label_rows[nt.name];
      nt.labels.assign(nt.num_nodes, -1);
      for (size_t i = 0; i < rows.size(); ++i) nt.labels[to_global(nt.name, rows[i])] = l[i];
    }
  }
  for (const auto& [split, files] : spec.splits) {
    for (const auto& sf : files) {
      const std::string t = node_type_of(sf.type);
      if (!sorted_raw.count(t)) return absl::InvalidArgumentError(absl::StrCat(sf.path, ": unknown node type '", t, "'"));
      auto ids = ReadIdList(sf.path);
      if (!ids.ok()) return ids.status();
      for (auto& nt : g.node_types) {
        if (nt.name != t) continue;
        auto& out = nt.splits[split];
        const auto& v = sorted_raw[t];
        for (int64_t raw : *ids) {
          const int64_t gid = to_global(t, raw);
          if (gid >= static_cast<int64_t>(v.size()) || v[gid] != raw) {
            return absl::InvalidArgumentError(absl::StrCat(sf.path, ": id ", raw, " is not a node of type '", t, "'"));
          }
          out.push_back(gid);
        }
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
      }
    }
  }
  return g;
}

}  // namespace graphstore
