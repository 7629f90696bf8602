// graphstore._graphstore: the torch-free client core (client/loader_core.h) for Python. The
// protocol lives in the core alone; this file only converts. Options arrive as the Python
// values the package converted them to and are checked by python/loader_schema.h; batches leave
// as RawBatch, whose tensors leave as DLPack capsules over the core's memory (no copy), which
// the package turns into torch.Tensors of whatever torch the trainer runs. No LibTorch here:
// one build serves every torch from 1.13 on. Errors become graphstore.GraphstoreError with the
// gRPC code and the server's message. Blocking calls release the GIL.

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/loader_core.h"
#include "proto/ppr_defaults.h"
#include "python/dataset_binding.h"
#include "python/loader_schema.h"
#include "python/option_values.h"
#include "python/store_binding.h"

namespace graphstore::python {
namespace {

namespace py = pybind11;
using client::HostBatch;
using client::HostTensor;
using client::LoaderCore;

// ----- Tensors: DLPack capsules over the core's memory -------------------------------------

// The dtype a tensor is handed to torch as. Torch 1.13's DLPack has no bool: bool tensors go
// as uint8 and the package views them as bool.
DLDataType DlType(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT64: return {kDLInt, 64, 1};
    case v1::DTYPE_INT32: return {kDLInt, 32, 1};
    case v1::DTYPE_FLOAT32: return {kDLFloat, 32, 1};
    case v1::DTYPE_FLOAT16: return {kDLFloat, 16, 1};
    case v1::DTYPE_BFLOAT16: return {kDLBfloat, 16, 1};
    case v1::DTYPE_FLOAT64: return {kDLFloat, 64, 1};
    case v1::DTYPE_UINT8:
    case v1::DTYPE_BOOL: return {kDLUInt, 8, 1};
    default: break;
  }
  throw client::Error(absl::DataLossError(absl::StrCat("tensor has unknown dtype ", static_cast<int>(d))));
}

const char* DtypeName(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT64: return "int64";
    case v1::DTYPE_INT32: return "int32";
    case v1::DTYPE_FLOAT32: return "float32";
    case v1::DTYPE_FLOAT16: return "float16";
    case v1::DTYPE_BFLOAT16: return "bfloat16";
    case v1::DTYPE_FLOAT64: return "float64";
    case v1::DTYPE_UINT8: return "uint8";
    case v1::DTYPE_BOOL: return "bool";
    default: return "unknown";
  }
}

// What a capsule's DLManagedTensor owns: the view's shape and the reference that keeps its
// bytes alive. Freed by the consumer's call of the deleter (any thread; no Python API).
struct Held {
  DLManagedTensor managed;
  std::vector<int64_t> shape;
  std::shared_ptr<const void> owner;
};

void DeleteHeld(DLManagedTensor* m) { delete static_cast<Held*>(m->manager_ctx); }

// A capsule that torch has not taken frees its tensor itself.
void CapsuleDestructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor") == 0) return;  // consumed ("used_dltensor")
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (m != nullptr && m->deleter != nullptr) m->deleter(m);
}

// A tensor for Python: None when undefined; (dtype name, shape) when it has no element (torch
// makes an empty one); else (dtype name, DLPack capsule viewing the bytes).
py::object Export(const HostTensor& t) {
  if (!t.defined()) return py::none();
  if (t.data == nullptr || t.numel() == 0) return py::make_tuple(DtypeName(t.dtype), py::cast(t.shape));
  auto* held = new Held();
  held->shape = t.shape;
  held->owner = t.owner;
  DLTensor& dl = held->managed.dl_tensor;
  dl.data = const_cast<char*>(t.data);
  dl.device = {kDLCPU, 0};
  dl.ndim = static_cast<int>(held->shape.size());
  dl.dtype = DlType(t.dtype);
  dl.shape = held->shape.data();
  dl.strides = nullptr;  // row-major
  dl.byte_offset = 0;
  held->managed.manager_ctx = held;
  held->managed.deleter = DeleteHeld;
  PyObject* capsule = PyCapsule_New(&held->managed, "dltensor", CapsuleDestructor);
  if (capsule == nullptr) {
    delete held;
    throw py::error_already_set();
  }
  return py::make_tuple(DtypeName(t.dtype), py::reinterpret_steal<py::object>(capsule));
}

py::list Ints(const std::vector<int64_t>& v) {
  py::list out;
  for (int64_t x : v) out.append(x);
  return out;
}

// ----- Batches ------------------------------------------------------------------------------

// A node or edge type's tensors by the names client/batch_tensors.h gives them.
py::dict NodeDict(const client::HostNodes& n) {
  py::dict d;
  for (const auto& f : client::kNodeFields<client::HostTensor>) d[f.name] = Export(n.*f.member);
  d["x_bits"] = n.x_bits;
  d["batch_size"] = n.batch_size;
  d["num_sampled_nodes"] = Ints(n.num_sampled_nodes);
  return d;
}

py::dict EdgeDict(const client::HostEdges& e) {
  py::dict d;
  for (const auto& f : client::kEdgeFields<client::HostTensor>) d[f.name] = Export(e.*f.member);
  d["stored_type"] = e.stored_type;
  d["num_sampled_edges"] = Ints(e.num_sampled_edges);
  return d;
}

// Everything about the batch but its node and edge types' tensors.
py::dict BatchInfo(const HostBatch& b) {
  py::dict d;
  d["epoch"] = b.epoch;
  d["batch_index"] = b.batch_index;
  d["server"] = b.server;
  d["shared_memory"] = b.shared_memory;
  d["first_node_type"] = b.first_node_type;
  d["first_edge_type"] = b.first_edge_type;
  d["input_id"] = Export(b.input_id);
  d["input_type"] = b.input_type;
  if (b.ablp.has_value()) {
    py::dict a;
    a["anchors"] = Export(b.ablp->anchors);
    a["positive"] = Export(b.ablp->positive);
    a["negative"] = Export(b.ablp->negative);
    d["ablp"] = a;
  } else {
    d["ablp"] = py::none();
  }
  py::list ppr;
  for (const auto& p : b.ppr) {
    py::dict v;
    v["seed_type"] = p.seed_type;
    v["node_type"] = p.node_type;
    v["seed_index"] = Export(p.seed_index);
    v["node_index"] = Export(p.node_index);
    v["weight"] = Export(p.weight);
    ppr.append(v);
  }
  d["ppr"] = ppr;
  return d;
}

// ----- Options ------------------------------------------------------------------------------

py::object FromValue(const Value& v) {
  switch (v.type) {
    case Value::Type::kNone: return py::none();
    case Value::Type::kBool: return py::bool_(v.b);
    case Value::Type::kInt: return py::int_(v.i);
    case Value::Type::kFloat: return py::float_(v.f);
    case Value::Type::kString: return py::str(v.s);
    case Value::Type::kInts: return py::cast(v.ints);
    default: return py::none();
  }
}

// (name, default, positional, doc) of every option, in signature order.
py::list OptionTable() {
  py::list out;
  for (const OptionSpec& o : LoaderOptionSpecs()) {
    out.append(py::make_tuple(o.name, FromValue(o.default_value), o.place == Place::kPositional, o.doc));
  }
  return out;
}

// ----- The loader ---------------------------------------------------------------------------

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// Calls into Python from the core's threads (the host-memory hook): with the GIL, never after
// the interpreter began to shut down.
class PythonHook {
 public:
  // The function may be dropped on any thread, with or without the GIL (the core goes away
  // while the GIL is released): its reference is dropped under the GIL.
  explicit PythonHook(py::object fn)
      : fn_(new py::object(std::move(fn)), [](py::object* f) {
          if (Py_IsInitialized() == 0 || Finalizing()) {
            f->release();  // the interpreter is gone or going: leak the reference
          } else {
            py::gil_scoped_acquire gil;
            f->dec_ref();
            f->release();
          }
          delete f;
        }) {}
  void operator()(void* data, size_t size, bool added) const {
    if (Py_IsInitialized() == 0 || Finalizing()) return;
    py::gil_scoped_acquire gil;
    try {
      (*fn_)(reinterpret_cast<uintptr_t>(data), size, added);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("graphstore host memory hook");
    }
  }

 private:
  std::shared_ptr<py::object> fn_;
};

// The core with the GIL released around every call that talks to a server.
class PyLoader {
 public:
  PyLoader(const py::dict& options, const py::object& host_memory_hook) {
    std::map<std::string, Value> values;
    for (const auto& [k, v] : options) values.emplace(k.cast<std::string>(), ToValue(v));
    auto built = BuildLoaderOptions(values);
    if (!built.ok()) {
      const std::string message(built.status().message());
      if (built.status().GetPayload(kTypeErrorPayload).has_value()) throw py::type_error(message);
      throw py::value_error(message);
    }
    if (!host_memory_hook.is_none()) built->host_memory_hook = PythonHook(host_memory_hook);
    py::gil_scoped_release release;
    core_ = std::make_unique<LoaderCore>(*std::move(built));
  }

  LoaderCore& get() {
    if (core_ == nullptr) throw client::Error(absl::FailedPreconditionError("the loader is closed"));
    return *core_;
  }

  void StartEpoch(int64_t epoch) {
    LoaderCore& l = get();
    py::gil_scoped_release release;
    l.StartEpoch(epoch);
  }

  py::object Next() {
    LoaderCore& l = get();
    std::optional<HostBatch> b;
    // Waits in slices, checking between them for signals, so that Ctrl-C interrupts a trainer
    // waiting for a batch (KeyboardInterrupt; the loader stays usable).
    while (true) {
      bool arrived;
      {
        py::gil_scoped_release release;
        arrived = l.NextFor(std::chrono::milliseconds(100), &b);
      }
      if (arrived) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    if (!b.has_value()) return py::none();
    return py::cast(std::make_shared<HostBatch>(std::move(*b)));
  }

  // The C++ trainer's loop on this loader: takes batches and drops them, without the GIL or a
  // Python object, until `seconds` have passed since the call or the epoch ends. Returns the
  // batches taken and the seconds from the call to the last of them (bench/python_bench.py
  // alternates this with the Python loop on the same loader).
  std::pair<int64_t, double> DrainFor(double seconds) {
    LoaderCore& l = get();
    py::gil_scoped_release release;
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    int64_t batches = 0;
    double last = 0;
    while (last < seconds) {
      if (!l.Next().has_value()) break;
      ++batches;
      last = std::chrono::duration<double>(Clock::now() - start).count();
    }
    return {batches, last};
  }

  bool WaitForWaiting(double seconds) {
    LoaderCore& l = get();
    py::gil_scoped_release release;
    return l.WaitForWaiting(std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1000)));
  }

  // Destroys the channels and the core: batches already handed out keep their memory.
  void Close() {
    if (core_ == nullptr) return;
    std::unique_ptr<LoaderCore> l = std::move(core_);
    py::gil_scoped_release release;
    l->Close();
    l.reset();
  }

  void ShutdownServers() {
    LoaderCore& l = get();
    {
      py::gil_scoped_release release;
      l.ShutdownServers();
    }
    Close();
  }

  bool closed() const { return core_ == nullptr; }

 private:
  std::unique_ptr<LoaderCore> core_;
};

void DefineBatch(py::module_& m) {
  // A batch as the core gave it: graphstore.Batch turns each field into a torch.Tensor when it
  // is first read (a trainer reads a few; wrapping every tensor of every batch costs more).
  py::class_<HostBatch, std::shared_ptr<HostBatch>>(m, "RawBatch")
      .def("info", &BatchInfo, "epoch, batch_index, server, shared_memory, first types, input_id, ablp, ppr.")
      .def("step_fields",
           [](const HostBatch& b) {
             const client::HostNodes* n = b.first_nodes();
             const client::HostEdges* e = b.first_edges();
             return py::make_tuple(n != nullptr ? Export(n->x) : py::none(),
                                   e != nullptr ? Export(e->edge_index) : py::none(),
                                   n != nullptr ? Export(n->y) : py::none(), n != nullptr ? n->batch_size : 0);
           },
           "(x, edge_index, y, batch_size) of the first types: what a training step reads, in one call.")
      .def("node_types",
           [](const HostBatch& b) {
             std::vector<std::string> names;
             for (const auto& [name, v] : b.nodes) names.push_back(name);
             return names;
           })
      .def("edge_types",
           [](const HostBatch& b) {
             std::vector<std::string> names;
             for (const auto& [name, v] : b.edges) names.push_back(name);
             return names;
           })
      .def("node",
           [](const HostBatch& b, const std::string& type) {
             auto it = b.nodes.find(type);
             if (it == b.nodes.end()) throw py::key_error("no node type '" + type + "' in the batch");
             return NodeDict(it->second);
           },
           py::arg("type"), "One node type's fields as a dict.")
      .def("edge",
           [](const HostBatch& b, const std::string& type) {
             auto it = b.edges.find(type);
             if (it == b.edges.end()) throw py::key_error("no edge type '" + type + "' in the batch");
             return EdgeDict(it->second);
           },
           py::arg("type"), "One edge type's fields as a dict.")
      .def("memory",
           [](const HostBatch& b) {
             py::list out;
             for (const auto& [data, size] : b.memory) out.append(py::make_tuple(reinterpret_cast<uintptr_t>(data), size));
             return out;
           },
           "(address, size) of every block of memory the batch's tensors view.");
}

void DefineLoader(py::module_& m) {
  py::class_<PyLoader>(m, "Loader")
      .def(py::init<const py::dict&, const py::object&>(), py::arg("options"), py::arg("host_memory_hook"),
           "Checks the options (graphstore.Loader's, as the package converted them), connects and registers.")
      .def("start_epoch", &PyLoader::StartEpoch, py::arg("epoch"), "Starts an epoch on every server.")
      .def("next", &PyLoader::Next, "The next batch (a RawBatch), or None at the end of the epoch.")
      .def("drain_for", &PyLoader::DrainFor, py::arg("seconds"),
           "The C++ loop: takes and drops batches for `seconds` or to the end of the epoch; returns "
           "(batches, seconds to the last of them).")
      .def("close", &PyLoader::Close, "Destroys this loader's channels; idempotent.")
      .def("shutdown_servers", &PyLoader::ShutdownServers, "Asks every server to exit, then closes.")
      .def_property_readonly("closed", &PyLoader::closed)
      .def("meta", [](PyLoader& l) { return py::bytes(l.get().meta().SerializeAsString()); },
           "The dataset's v1.DatasetMeta, serialised.")
      .def("num_seeds", [](PyLoader& l) { return l.get().num_seeds(); })
      .def("num_batches", [](PyLoader& l) { return l.get().num_batches(); })
      .def("num_shared_memory_servers", [](PyLoader& l) { return l.get().num_shared_memory_servers(); })
      .def("num_reconnects", [](PyLoader& l) { return l.get().num_reconnects(); })
      .def("num_waiting", [](PyLoader& l) { return l.get().num_waiting(); },
           "Callers blocked right now in next() waiting for a batch.")
      .def("wait_for_waiting", &PyLoader::WaitForWaiting, py::arg("seconds"),
           "Blocks until a caller waits in next() for a batch, at most `seconds`; whether one does.")
      .def("num_cached_rows", [](PyLoader& l) { return l.get().num_cached_rows(); })
      .def("bytes_received", [](PyLoader& l) { return l.get().bytes_received(); })
      .def("bytes_received_by_server", [](PyLoader& l) { return l.get().bytes_received_by_server(); })
      .def("channel_id", [](PyLoader& l, int server) { return l.get().channel_id(server); }, py::arg("server"));
}

}  // namespace

// A Python value as the schema reads it (the package has converted tensors and tuples).
Value ToValue(const py::handle& o) {
  if (o.is_none()) return Value::None();
  if (py::isinstance<py::bool_>(o)) return Value::Bool(o.cast<bool>());
  if (py::isinstance<py::int_>(o)) {
    try {
      return Value::Int(o.cast<int64_t>());
    } catch (const py::cast_error&) {
      throw py::value_error("an int option is out of the range of a 64-bit integer");
    }
  }
  if (py::isinstance<py::float_>(o)) return Value::Float(o.cast<double>());
  if (py::isinstance<py::str>(o)) return Value::Str(o.cast<std::string>());
  if (py::isinstance<py::dict>(o)) {
    Value v;
    v.type = Value::Type::kDict;
    for (const auto& [k, item] : o.cast<py::dict>()) {
      if (!py::isinstance<py::str>(k)) throw py::type_error("option dicts are keyed by str");
      v.dict.emplace_back(k.cast<std::string>(), ToValue(item));
    }
    return v;
  }
  if (py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o)) {
    const py::sequence seq = o.cast<py::sequence>();
    // A list of ints only (ids, times, fanouts) stays flat.
    bool ints = true;
    for (const auto& item : seq) {
      if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item)) {
        ints = false;
        break;
      }
    }
    if (ints) {
      try {
        return Value::Ints(seq.cast<std::vector<int64_t>>());
      } catch (const py::cast_error&) {
        throw py::value_error("an int in a list option is out of the range of a 64-bit integer");
      }
    }
    Value v;
    v.type = Value::Type::kList;
    for (const auto& item : seq) v.list.push_back(ToValue(item));
    return v;
  }
  const std::string type = py::str(py::type::of(o).attr("__name__")).cast<std::string>();
  throw py::type_error("an option is of type " + type + ", which the loader does not take");
}

}  // namespace graphstore::python

PYBIND11_MODULE(_graphstore, m) {
  namespace py = pybind11;
  m.doc() = "graphstore's torch-free client core; use the graphstore package, not this module.";

  // client::Error -> graphstore.errors.GraphstoreError(code_name, code_value, message).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const graphstore::client::Error& e) {
      py::object cls = py::module_::import("graphstore.errors").attr("GraphstoreError");
      py::object err = cls(absl::StatusCodeToString(e.code()), static_cast<int>(e.code()), e.message());
      PyErr_SetObject(cls.ptr(), err.ptr());
    }
  });
  m.def("ppr_defaults", [] {
    return py::dict(py::arg("alpha") = graphstore::kPprAlpha, py::arg("eps") = graphstore::kPprEps,
                    py::arg("max_nodes_per_seed") = graphstore::kPprMaxNodesPerSeed);
  }, "The defaults of PprOptions (proto/ppr_defaults.h).");
  m.def("options", &graphstore::python::OptionTable,
        "(name, default, positional, doc) of every graphstore.Loader option, in signature order.");
  graphstore::python::DefineBatch(m);
  graphstore::python::DefineLoader(m);
  graphstore::python::DefineDatasetWriter(m);
  graphstore::python::DefineStore(m);
}
