// Checks of a partition's arrays against the format's rules (docs/format.md), run on load:
// the indptr always, every entry when LoadOptions::verify_contents asks. Each failure names
// the file and the entry.

#include "server/graph/partition_verify.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace graphstore {

absl::Status Corrupt(const MappedNpy& file, const std::string& what) {
  return absl::DataLossError(absl::StrCat(file.path(), ": ", what));
}

namespace {

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
    if (t.deal.has_value() && book[g] != t.deal->Owner(g)) {
      return Corrupt(t.book, absl::StrCat("entry ", g, " is ", book[g], ", but the manifest's owner_deal deals that node to ",
                                          "partition ", t.deal->Owner(g)));
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

// A link-prediction split's (source, destination) rows: sources this partition owns, sorted
// and unique.
absl::Status VerifyLabelEdges(const EdgeTypeStore& e, const std::vector<NodeTypeStore>& nodes, int part) {
  const NodeTypeStore& src = nodes[e.src_type];
  const NodeTypeStore& dst = nodes[e.dst_type];
  for (const auto& [split, f] : e.label_splits) {
    const int64_t* v = f.data<int64_t>();
    const int64_t k = f.shape()[0];
    for (int64_t i = 0; i < k; ++i) {
      const int64_t a = v[2 * i];
      const int64_t b = v[2 * i + 1];
      if (a < 0 || a >= src.num_nodes || src.Owner(a) != part) {
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

}  // namespace

absl::Status VerifyNodeType(const NodeTypeStore& t, int part, int num_parts, Progress* progress) {
  if (auto s = VerifyOwnership(t, part, num_parts, progress); !s.ok()) return s;
  if (auto s = VerifyNodeColumns(t); !s.ok()) return s;
  return VerifySplits(t, part);
}

absl::Status CheckIndptr(const EdgeTypeStore& e, int64_t rows) {
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

absl::Status VerifyEdgeType(const EdgeTypeStore& e, const std::vector<NodeTypeStore>& nodes, int part,
                            Progress* progress) {
  if (auto st = CheckRange(e.indices, nodes[e.col_type].num_nodes,
                           absl::StrCat("not a ", nodes[e.col_type].name, " node id"));
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
  const MappedNpy& node_times = nodes[e.col_type].times;
  const int64_t* node_time = node_times.is_open() ? node_times.data<int64_t>() : nullptr;
  for (int64_t r = 0; r < nodes[e.row_type].num_local; ++r) {
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
    const int64_t rows = nodes[e.row_type].num_local;
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
  if (auto st = VerifyLabelEdges(e, nodes, part); !st.ok()) return st;
  if (e.dst_degree.is_open()) {
    const int64_t* d = e.dst_degree.data<int64_t>();
    for (int64_t i = 0; i < e.dst_degree.num_elements(); ++i) {
      if (d[i] < 0) return Corrupt(e.dst_degree, absl::StrCat("entry ", i, " is negative"));
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore
