#include "tools/dataset/layout.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace graphstore {
namespace {

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

}  // namespace

absl::StatusOr<Layout> LayOut(const GraphData& g, const Assignment& assignment, int num_partitions,
                              bool rows_are_sources) {
  Layout l;
  l.num_partitions = num_partitions;
  l.rows_are_sources = rows_are_sources;
  if (auto s = PlaceNodes(g, assignment, &l); !s.ok()) return s;
  CountDegrees(g, &l);
  for (size_t et = 0; et < g.edge_types.size(); ++et) l.time.push_back(EdgeTimes(g, l, et));
  for (size_t et = 0; et < g.edge_types.size(); ++et) l.order.push_back(EdgeOrder(g, assignment, l, et));
  l.cursor.assign(g.edge_types.size(), 0);
  return l;
}

}  // namespace graphstore
