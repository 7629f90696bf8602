// graphstore._graphstore: the C++ client::Loader for Python. The protocol lives in the Loader
// alone; this file only converts. Options arrive as plain values and serialised v1 messages
// (built by the Python package with its generated stubs); batches leave as RawBatch, whose
// fields become torch.Tensors that view the Loader's memory (no copy) when first read, and
// which python/graphstore/batch.py shapes into PyG-named objects. Errors become graphstore.GraphstoreError with the gRPC code
// and the server's message. Blocking calls release the GIL.

// LibTorch first (see client/loader.h).
#include <torch/extension.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "client/loader.h"

namespace graphstore::python {
namespace {

namespace py = pybind11;
using client::Batch;
using client::Loader;
using client::LoaderOptions;

py::object TensorOrNone(const at::Tensor& t) {
  if (!t.defined()) return py::none();
  return py::cast(t);
}

py::list Ints(const std::vector<int64_t>& v) {
  py::list out;
  for (int64_t x : v) out.append(x);
  return out;
}

// Address and size of every block of memory the batch's tensors view, for checking that
// nothing was copied on the way to Python.
py::list MemoryOf(const Batch& b) {
  py::list out;
  auto add = [&](const client::DecodedTensor& t) {
    if (t.buffer != nullptr) out.append(py::make_tuple(reinterpret_cast<uintptr_t>(t.buffer->data()), t.buffer->size()));
  };
  if (b.shared != nullptr) out.append(py::make_tuple(reinterpret_cast<uintptr_t>(b.shared->data()), b.shared->size()));
  if (b.decoded != nullptr) {
    for (const auto& n : b.decoded->nodes) {
      for (const auto* t : {&n.ids, &n.num_sampled_nodes, &n.batch, &n.labels, &n.features, &n.feature_scale,
                            &n.feature_offset, &n.seed_times, &n.times, &n.sampled_times}) {
        add(*t);
      }
    }
    for (const auto& e : b.decoded->edges) {
      for (const auto* t : {&e.edge_index, &e.eids, &e.num_sampled_edges, &e.features}) add(*t);
    }
    if (b.decoded->ablp.has_value()) {
      for (const auto* t : {&b.decoded->ablp->anchors, &b.decoded->ablp->positive, &b.decoded->ablp->negative}) add(*t);
    }
  }
  return out;
}

// The node fields a Batch (its first node type) and a NodeView share.
template <typename Nodes>
void PutNodeFields(const Nodes& n, py::dict* d) {
  (*d)["n_id"] = TensorOrNone(n.n_id);
  (*d)["x"] = TensorOrNone(n.x);
  (*d)["y"] = TensorOrNone(n.y);
  (*d)["x_scale"] = TensorOrNone(n.x_scale);
  (*d)["x_offset"] = TensorOrNone(n.x_offset);
  (*d)["x_bits"] = n.x_bits;
  (*d)["seeds"] = TensorOrNone(n.seeds);
  (*d)["batch_size"] = n.batch_size;
  (*d)["num_sampled_nodes"] = Ints(n.num_sampled_nodes);
  (*d)["seed_time"] = TensorOrNone(n.seed_time);
  (*d)["time"] = TensorOrNone(n.time);
  (*d)["sampled_time"] = TensorOrNone(n.sampled_time);
}

// The edge fields a Batch (its first edge type) and an EdgeView share.
template <typename Edges>
void PutEdgeFields(const Edges& e, py::dict* d) {
  (*d)["edge_index"] = TensorOrNone(e.edge_index);
  (*d)["e_id"] = TensorOrNone(e.e_id);
  (*d)["edge_attr"] = TensorOrNone(e.edge_attr);
  (*d)["num_sampled_edges"] = Ints(e.num_sampled_edges);
}

// One field of the batch's first node and edge type (Batch's top level), or of the batch, by
// its Python name; AttributeError for another name.
py::object Field(const Batch& b, const std::string& name) {
  if (name == "x") return TensorOrNone(b.x);
  if (name == "edge_index") return TensorOrNone(b.edge_index);
  if (name == "y") return TensorOrNone(b.y);
  if (name == "n_id") return TensorOrNone(b.n_id);
  if (name == "batch_size") return py::int_(b.batch_size);
  if (name == "e_id") return TensorOrNone(b.e_id);
  if (name == "edge_attr") return TensorOrNone(b.edge_attr);
  if (name == "input_id") return TensorOrNone(b.input_id);
  if (name == "num_sampled_nodes") return Ints(b.num_sampled_nodes);
  if (name == "num_sampled_edges") return Ints(b.num_sampled_edges);
  if (name == "x_scale") return TensorOrNone(b.x_scale);
  if (name == "x_offset") return TensorOrNone(b.x_offset);
  if (name == "x_bits") return py::int_(b.x_bits);
  if (name == "seeds") return TensorOrNone(b.seeds);
  if (name == "seed_time") return TensorOrNone(b.seed_time);
  if (name == "time") return TensorOrNone(b.time);
  if (name == "sampled_time") return TensorOrNone(b.sampled_time);
  if (name == "epoch") return py::int_(b.epoch);
  if (name == "batch_index") return py::int_(b.batch_index);
  if (name == "server") return py::int_(b.server);
  if (name == "shared_memory") return py::bool_(b.shared != nullptr);
  throw py::attribute_error("a batch has no field '" + name + "'");
}

py::dict NodeDict(const Batch& b, const std::string& type) {
  auto it = b.nodes.find(type);
  if (it == b.nodes.end()) throw py::key_error("no node type '" + type + "' in the batch");
  py::dict v;
  PutNodeFields(it->second, &v);
  return v;
}

py::dict EdgeDict(const Batch& b, const std::string& type) {
  auto it = b.edges.find(type);
  if (it == b.edges.end()) throw py::key_error("no edge type '" + type + "' in the batch");
  py::dict v;
  v["stored_type"] = it->second.stored_type;
  PutEdgeFields(it->second, &v);
  return v;
}

py::object AblpDict(const Batch& b) {
  if (!b.ablp.has_value()) return py::none();
  py::dict a;
  a["anchors"] = TensorOrNone(b.ablp->anchors);
  a["positive"] = TensorOrNone(b.ablp->positive);
  a["negative"] = TensorOrNone(b.ablp->negative);
  return std::move(a);
}

py::list PprList(const Batch& b) {
  py::list ppr;
  for (const auto& p : b.ppr) {
    py::dict v;
    v["seed_type"] = p.seed_type;
    v["node_type"] = p.node_type;
    v["seed_index"] = TensorOrNone(p.seed_index);
    v["node_index"] = TensorOrNone(p.node_index);
    v["weight"] = TensorOrNone(p.weight);
    ppr.append(v);
  }
  return ppr;
}

template <typename M>
M ParseOrThrow(const py::bytes& bytes, const char* what) {
  M m;
  if (!m.ParseFromString(std::string(bytes))) throw py::value_error(std::string(what) + ": not a serialised message");
  return m;
}

// The Loader with the GIL released around every call that talks to a server.
class PyLoader {
 public:
  explicit PyLoader(LoaderOptions options) {
    py::gil_scoped_release release;
    loader_ = std::make_unique<Loader>(std::move(options));
  }

  Loader& get() {
    if (loader_ == nullptr) throw client::Error(absl::FailedPreconditionError("the loader is closed"));
    return *loader_;
  }

  void StartEpoch(int64_t epoch) {
    Loader& l = get();
    py::gil_scoped_release release;
    l.StartEpoch(epoch);
  }

  py::object Next() {
    Loader& l = get();
    std::optional<Batch> b;
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
    return py::cast(std::make_shared<Batch>(std::move(*b)));
  }

  // The C++ trainer's loop on this Loader: takes batches and drops them, without the GIL or a
  // Python object, until `seconds` have passed since the call or the epoch ends. Returns the
  // batches taken and the seconds from the call to the last of them (bench/python_bench.py
  // alternates this with the Python loop on the same Loader).
  std::pair<int64_t, double> DrainFor(double seconds) {
    Loader& l = get();
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
    Loader& l = get();
    py::gil_scoped_release release;
    return l.WaitForWaiting(std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1000)));
  }

  // Destroys the channels and the Loader: batches already handed out keep their memory.
  void Close() {
    if (loader_ == nullptr) return;
    std::unique_ptr<Loader> l = std::move(loader_);
    py::gil_scoped_release release;
    l->Close();
    l.reset();
  }

  void ShutdownServers() {
    Loader& l = get();
    {
      py::gil_scoped_release release;
      l.ShutdownServers();
    }
    Close();
  }

  bool closed() const { return loader_ == nullptr; }

 private:
  std::unique_ptr<Loader> loader_;
};

LoaderOptions MakeOptions(const std::vector<std::string>& servers, const py::bytes& config,
                          const py::bytes& sampler_options, const std::optional<py::bytes>& ablp,
                          const std::string& backend_key, const std::string& node_type, const std::string& split,
                          std::vector<int64_t> seeds, std::vector<int64_t> seed_times, int rank, int world_size,
                          uint64_t seed, int buffer_messages, int64_t buffer_bytes, int prefetch,
                          int stream_window_bytes, int64_t deadline_ms,
                          int64_t lease_ms, const std::string& worker_key, bool shared_memory,
                          const std::string& feature_encoding, int64_t feature_cache_rows, bool decode_features,
                          int64_t reconnect_deadline_ms, bool renew_leases, int64_t keepalive_time_ms,
                          int64_t keepalive_timeout_ms, const client::ChannelSecurity& security) {
  LoaderOptions o;
  if (auto s = security.Check(); !s.ok()) throw py::value_error(std::string(s.message()));
  o.security = security;
  o.servers = servers;
  o.config = ParseOrThrow<v1::SamplingConfig>(config, "config");
  o.sampler_options = ParseOrThrow<v1::SamplerOptions>(sampler_options, "sampler_options");
  if (ablp.has_value()) o.ablp = ParseOrThrow<v1::GetAblpInputRequest>(*ablp, "ablp");
  o.backend_key = backend_key;
  o.node_type = node_type;
  o.split = split;
  o.seeds = std::move(seeds);
  o.seed_times = std::move(seed_times);
  o.rank = rank;
  o.world_size = world_size;
  o.seed = seed;
  o.buffer_messages = buffer_messages;
  o.buffer_bytes = buffer_bytes;
  o.prefetch = prefetch;
  o.stream_window_bytes = stream_window_bytes;
  o.deadline = std::chrono::milliseconds(deadline_ms);
  o.lease_ms = lease_ms;
  o.worker_key = worker_key;
  o.shared_memory = shared_memory;
  auto encoding = client::ParseFeatureEncoding(feature_encoding);
  if (!encoding.ok()) throw py::value_error("feature_encoding: " + std::string(encoding.status().message()));
  o.feature_encoding = *encoding;
  o.feature_cache_rows = feature_cache_rows;
  o.decode_features = decode_features;
  o.reconnect_deadline = std::chrono::milliseconds(reconnect_deadline_ms);
  o.renew_leases = renew_leases;
  o.keepalive_time = std::chrono::milliseconds(keepalive_time_ms);
  o.keepalive_timeout = std::chrono::milliseconds(keepalive_timeout_ms);
  return o;
}

}  // namespace
}  // namespace graphstore::python

PYBIND11_MODULE(_graphstore, m) {
  namespace py = pybind11;
  using graphstore::python::PyLoader;
  m.doc() = "graphstore's C++ Loader; use the graphstore package, not this module.";

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

  m.def("torch_version", [] { return std::string(TORCH_VERSION); }, "The LibTorch version this module was built with.");
  m.def("cxx11_abi", [] { return static_cast<bool>(_GLIBCXX_USE_CXX11_ABI); },
        "Whether this module was built with the C++11 std::string ABI.");

  // A batch as the Loader gave it: graphstore.Batch turns each field into a Python object when
  // it is first read (a trainer reads a few; wrapping every tensor of every batch cost more than
  // the C++ loop's whole batch).
  py::class_<graphstore::client::Batch, std::shared_ptr<graphstore::client::Batch>>(m, "RawBatch")
      .def("field", &graphstore::python::Field, py::arg("name"),
           "A field of the first node and edge type, or of the batch (epoch, batch_index, server, shared_memory).")
      .def("step_fields", [](const graphstore::client::Batch& b) {
        using graphstore::python::TensorOrNone;
        return py::make_tuple(TensorOrNone(b.x), TensorOrNone(b.edge_index), TensorOrNone(b.y), b.batch_size);
      }, "(x, edge_index, y, batch_size): what a training step reads, in one call.")
      .def("node_types", [](const graphstore::client::Batch& b) {
        std::vector<std::string> names;
        for (const auto& [name, v] : b.nodes) names.push_back(name);
        return names;
      })
      .def("edge_types", [](const graphstore::client::Batch& b) {
        std::vector<std::string> names;
        for (const auto& [name, v] : b.edges) names.push_back(name);
        return names;
      })
      .def("node", &graphstore::python::NodeDict, py::arg("type"), "One node type's fields as a dict.")
      .def("edge", &graphstore::python::EdgeDict, py::arg("type"), "One edge type's fields as a dict.")
      .def("ablp", &graphstore::python::AblpDict, "anchors, positive, negative; None outside link prediction.")
      .def("ppr", &graphstore::python::PprList, "The PPR weights, one dict per (seed type, node type).")
      .def("memory", &graphstore::python::MemoryOf,
           "(address, size) of every block of memory the batch's tensors view.");

  py::class_<PyLoader>(m, "Loader")
      .def(py::init([](const std::vector<std::string>& servers, const py::bytes& config,
                       const py::bytes& sampler_options, const std::optional<py::bytes>& ablp,
                       const std::string& backend_key, const std::string& node_type, const std::string& split,
                       std::vector<int64_t> seeds, std::vector<int64_t> seed_times, int rank, int world_size,
                       uint64_t seed, int buffer_messages, int64_t buffer_bytes, int prefetch,
                       int stream_window_bytes, int64_t deadline_ms,
                       int64_t lease_ms, const std::string& worker_key, bool shared_memory,
                       const std::string& feature_encoding, int64_t feature_cache_rows, bool decode_features,
                       int64_t reconnect_deadline_ms, bool renew_leases, int64_t keepalive_time_ms,
                       int64_t keepalive_timeout_ms, bool tls, const std::string& tls_ca, const std::string& tls_cert,
                       const std::string& tls_key,
                       const std::string& tls_server_name, const std::string& token) {
             graphstore::client::ChannelSecurity security;
             security.tls = tls;
             security.ca_file = tls_ca;
             security.cert_file = tls_cert;
             security.key_file = tls_key;
             security.server_name = tls_server_name;
             security.token = token;
             return std::make_unique<PyLoader>(graphstore::python::MakeOptions(
                 servers, config, sampler_options, ablp, backend_key, node_type, split, std::move(seeds),
                 std::move(seed_times), rank, world_size, seed, buffer_messages, buffer_bytes, prefetch, stream_window_bytes, deadline_ms,
                 lease_ms, worker_key, shared_memory, feature_encoding, feature_cache_rows, decode_features,
                 reconnect_deadline_ms, renew_leases, keepalive_time_ms, keepalive_timeout_ms, security));
           }),
           py::arg("servers"), py::arg("config"), py::arg("sampler_options"), py::arg("ablp"),
           py::arg("backend_key"), py::arg("node_type"), py::arg("split"), py::arg("seeds"), py::arg("seed_times"),
           py::arg("rank"), py::arg("world_size"), py::arg("seed"), py::arg("buffer_messages"), py::arg("buffer_bytes"),
           py::arg("prefetch"), py::arg("stream_window_bytes"), py::arg("deadline_ms"), py::arg("lease_ms"),
           py::arg("worker_key"), py::arg("shared_memory"), py::arg("feature_encoding"),
           py::arg("feature_cache_rows"), py::arg("decode_features"), py::arg("reconnect_deadline_ms"),
           py::arg("renew_leases"), py::arg("keepalive_time_ms"), py::arg("keepalive_timeout_ms"), py::arg("tls"),
           py::arg("tls_ca"),
           py::arg("tls_cert"), py::arg("tls_key"), py::arg("tls_server_name"), py::arg("token"))
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
      .def("channel_id", [](PyLoader& l, int server) { return l.get().channel_id(server); }, py::arg("server"));
}
