#include "python/dataset_binding.h"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "tools/metis_partition.h"

namespace graphstore::python {
namespace {

namespace py = pybind11;

// An input the package could not turn into the graph, or the writer refused: ValueError with the
// writer's message (it names the type and the entry); a file that cannot be written: OSError.
[[noreturn]] void Raise(const absl::Status& s) {
  const std::string m(s.message());
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      throw py::value_error(m);
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kResourceExhausted:
      PyErr_SetString(PyExc_OSError, m.c_str());
      throw py::error_already_set();
    default:
      throw std::runtime_error(m);
  }
}

template <typename T>
constexpr DLDataType DlTypeOf();
template <>
constexpr DLDataType DlTypeOf<int64_t>() { return {kDLInt, 64, 1}; }
template <>
constexpr DLDataType DlTypeOf<float>() { return {kDLFloat, 32, 1}; }

// Copies a DLPack capsule's tensor (C-contiguous, on the CPU, of T) out, consuming the capsule
// as the protocol asks; `what` names it in errors. Returns the values and the shape.
template <typename T>
std::pair<std::vector<T>, std::vector<int64_t>> Take(const py::handle& capsule, const std::string& what) {
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor")) throw py::value_error(what + ": not a DLPack tensor");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor& t = m->dl_tensor;
  const DLDataType want = DlTypeOf<T>();
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  // Contiguous: no strides, or the row-major ones.
  bool contiguous = true;
  if (t.strides != nullptr) {
    int64_t expect = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (shape[d] > 1 && t.strides[d] != expect) contiguous = false;
      expect *= shape[d];
    }
  }
  if (t.device.device_type != kDLCPU || t.dtype.code != want.code || t.dtype.bits != want.bits ||
      t.dtype.lanes != 1 || !contiguous) {
    throw py::value_error(what + ": expected a contiguous CPU tensor of " + (want.code == kDLInt ? "int64" : "float32"));
  }
  std::vector<T> values(static_cast<size_t>(n));
  if (n > 0) std::memcpy(values.data(), static_cast<const char*>(t.data) + t.byte_offset, n * sizeof(T));
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  if (m->deleter != nullptr) m->deleter(m);
  return {std::move(values), std::move(shape)};
}

bool Given(const py::dict& d, const char* key) { return d.contains(key) && !d[key].is_none(); }

NodeTypeData NodeType(const py::dict& d) {
  NodeTypeData nt;
  nt.name = d["name"].cast<std::string>();
  nt.num_nodes = d["num_nodes"].cast<int64_t>();
  const std::string who = "node type '" + nt.name + "'";
  if (Given(d, "x")) {
    auto [x, shape] = Take<float>(d["x"], who + ": x");
    if (shape.size() != 2 || shape[0] != nt.num_nodes) {
      throw py::value_error(absl::StrCat(who, ": x must be [num_nodes, features] = [", nt.num_nodes, ", F]"));
    }
    nt.feature_dim = shape[1];
    nt.features = std::move(x);
  }
  if (Given(d, "y")) {
    auto [y, shape] = Take<int64_t>(d["y"], who + ": y");
    if (shape.size() != 1 || shape[0] != nt.num_nodes) {
      throw py::value_error(absl::StrCat(who, ": y must be [num_nodes] class ids (-1: none), got ",
                                         shape.size(), " dimensions"));
    }
    nt.labels = std::move(y);
  }
  if (Given(d, "time")) nt.times = Take<int64_t>(d["time"], who + ": time").first;
  if (Given(d, "splits")) {
    for (const auto& [split, ids] : d["splits"].cast<py::dict>()) {
      const auto name = split.cast<std::string>();
      auto& out = nt.splits[name] = Take<int64_t>(ids, who + ": " + name + " ids").first;
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
    }
  }
  return nt;
}

EdgeTypeData EdgeType(const py::dict& d) {
  EdgeTypeData e;
  e.src_type = d["src"].cast<std::string>();
  e.relation = d["rel"].cast<std::string>();
  e.dst_type = d["dst"].cast<std::string>();
  const std::string who = "edge type '" + EdgeName(e) + "'";
  auto [index, shape] = Take<int64_t>(d["edge_index"], who + ": edge_index");
  if (shape.size() != 2 || shape[0] != 2) throw py::value_error(who + ": edge_index must be [2, num_edges]");
  const auto n = static_cast<size_t>(shape[1]);
  e.src.assign(index.begin(), index.begin() + n);
  e.dst.assign(index.begin() + n, index.end());
  if (Given(d, "edge_attr")) {
    auto [attr, ashape] = Take<float>(d["edge_attr"], who + ": edge_attr");
    if (ashape.empty() || ashape[0] != static_cast<int64_t>(n)) {
      throw py::value_error(absl::StrCat(who, ": edge_attr must have one row per edge (", n, ")"));
    }
    e.feature_dim = ashape.size() == 1 ? 1 : ashape[1];
    e.features = std::move(attr);
  }
  if (Given(d, "edge_weight")) e.weights = Take<float>(d["edge_weight"], who + ": edge_weight").first;
  if (Given(d, "time")) e.times = Take<int64_t>(d["time"], who + ": time").first;
  return e;
}

py::dict WriteDataset(const py::dict& graph, const std::string& out, int num_partitions, const std::string& method,
                      const std::string& edge_dir, uint64_t seed, const std::string& name,
                      std::optional<std::tuple<double, double, double>> split, bool reverse_edges) {
  GraphData g;
  g.name = name;
  for (const auto& n : graph["nodes"].cast<py::list>()) g.node_types.push_back(NodeType(n.cast<py::dict>()));
  for (const auto& e : graph["edges"].cast<py::list>()) g.edge_types.push_back(EdgeType(e.cast<py::dict>()));
  if (num_partitions < 1 || num_partitions > 4096) throw py::value_error("num_partitions must be in [1, 4096]");
  WriteOptions options;
  options.num_partitions = num_partitions;
  options.edge_dir = edge_dir;
  options.method = method;
  options.deal_seed = DealSeed(method, seed);
  PartitionReport report;
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = [&]() -> absl::Status {
      if (reverse_edges) AddReverseEdgeTypes(&g);
      if (split.has_value()) {
        bool any = false;
        for (const auto& t : g.node_types) any |= !t.splits.empty();
        if (!any) {
          const auto [tr, va, te] = *split;
          if (auto s = AssignSplits(&g, tr, va, te, seed, {}); !s.ok()) return s;
        }
      }
      auto assignment = AssignPartitions(g, method, num_partitions, seed, edge_dir != "in");
      if (!assignment.ok()) return assignment.status();
      if (auto s = WritePartitions(g, *assignment, options, out); !s.ok()) return s;
      report = EvaluateAssignment(g, *assignment, num_partitions, edge_dir != "in");
      return absl::OkStatus();
    }();
  }
  if (!status.ok()) Raise(status);
  py::dict r;
  r["num_partitions"] = report.num_partitions;
  r["num_nodes"] = report.num_nodes;
  r["num_edges"] = report.num_edges;
  r["cut_edges"] = report.cut_edges;
  r["node_imbalance"] = report.node_imbalance();
  r["edge_imbalance"] = report.edge_imbalance();
  r["nodes"] = report.nodes;
  r["edges"] = report.edges;
  return r;
}

}  // namespace

void DefineDatasetWriter(py::module_& m) {
  m.def("write_dataset", &WriteDataset, py::arg("graph"), py::arg("out"), py::arg("num_partitions"),
        py::arg("method"), py::arg("edge_dir"), py::arg("seed"), py::arg("name"), py::arg("split"),
        py::arg("reverse_edges"),
        "Writes partition directories from the graph graphstore.write_dataset gathered (node and edge types "
        "with DLPack tensors); returns the partition report.");
}

std::vector<int64_t> TakeInt64s(const py::handle& capsule, const std::string& what) {
  return Take<int64_t>(capsule, what).first;
}

}  // namespace graphstore::python
