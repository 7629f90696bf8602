// graphstore.pyg's connections and reads (store_binding.h).

#include "python/store_binding.h"

#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/loader_options.h"
#include "python/dataset_binding.h"
#include "python/loader_schema.h"
#include "python/option_values.h"

namespace graphstore::python {
namespace {

namespace py = pybind11;
using client::Client;
using client::ClientOptions;

template <typename T>
T Check(absl::StatusOr<T> r) {
  if (!r.ok()) throw client::Error(r.status());
  return *std::move(r);
}

template <typename Message>
Message Parse(const py::bytes& bytes, const char* what) {
  Message m;
  const std::string_view view = bytes;
  if (!m.ParseFromArray(view.data(), static_cast<int>(view.size()))) {
    throw py::value_error(absl::StrCat(what, ": not a valid ", Message::descriptor()->full_name()));
  }
  return m;
}

// A bytearray of `size` bytes to be filled in place (Python's own buffer: no second copy; writable,
// so torch.frombuffer views it without a warning).
py::bytearray Uninitialized(size_t size) {
  PyObject* b = PyByteArray_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
  if (b == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::bytearray>(b);
}
char* Data(py::bytearray& b) { return PyByteArray_AsString(b.ptr()); }

class PyStore {
 public:
  explicit PyStore(const py::dict& options) {
    std::map<std::string, Value> values;
    for (const auto& [k, v] : options) values.emplace(k.cast<std::string>(), ToValue(v));
    auto built = BuildLoaderOptions(values);
    if (!built.ok()) throw py::value_error(std::string(built.status().message()));
    encoding_ = built->feature_encoding;
    py::gil_scoped_release release;
    for (const std::string& address : built->servers) {
      ClientOptions co;
      co.address = address;
      co.deadline = built->deadline;
      co.security = built->security;
      co.connect_timeout = built->connect_timeout;
      co.reconnect_backoff_max = built->reconnect_backoff_max;
      co.keepalive_time = built->keepalive_time;
      co.keepalive_timeout = built->keepalive_timeout;
      clients_.push_back(Check(Client::Connect(co)));
    }
  }

  int num_servers() const { return static_cast<int>(clients_.size()); }
  int encoding() const { return encoding_; }

  /// One unary call of `method` on server `server`, as serialized messages.
  py::bytes Call(int server, const std::string& method, const py::bytes& request) {
    Client& c = At(server);
    std::string out;
    auto run = [&](auto parse, auto call) {
      auto req = parse();
      py::gil_scoped_release release;
      out = Check(call(req)).SerializeAsString();
    };
    if (method == "GetDatasetMeta") {
      run([&] { return Parse<v1::GetDatasetMetaRequest>(request, method.c_str()); },
          [&](const auto& r) { return c.GetDatasetMeta(r); });
    } else if (method == "LookupPartitions") {
      run([&] { return Parse<v1::LookupPartitionsRequest>(request, method.c_str()); },
          [&](const auto& r) { return c.LookupPartitions(r); });
    } else if (method == "GetNodeIds") {
      run([&] { return Parse<v1::GetNodeIdsRequest>(request, method.c_str()); },
          [&](const auto& r) { return c.GetNodeIds(r); });
    } else if (method == "GetNodeLabels") {
      run([&] { return Parse<v1::GetNodeLabelsRequest>(request, method.c_str()); },
          [&](const auto& r) { return c.GetNodeLabels(r); });
    } else if (method == "GetEdgeFeatures") {
      run([&] { return Parse<v1::GetEdgeFeaturesRequest>(request, method.c_str()); },
          [&](const auto& r) { return c.GetEdgeFeatures(r); });
    } else {
      throw py::value_error("method: " + method + " is not one a store calls");
    }
    return py::bytes(out);
  }

  /// The rows (and labels) of `ids` of `node_type`, each asked of its owner, all owners at
  /// once: (features, labels, scale, offset, dtype, dim) with the rows in the order of `ids`,
  /// as bytes; labels empty unless asked for, scale and offset empty unless quantized.
  py::tuple NodeRows(const std::string& node_type, const py::handle& ids_capsule, bool with_labels) {
    const std::vector<int64_t> ids = TakeInt64s(ids_capsule, "ids");
    const size_t n = ids.size();
    std::vector<v1::GetNodeFeaturesResponse> answers;
    std::vector<std::vector<int64_t>> positions;
    {
      py::gil_scoped_release release;
      Gather(node_type, ids, with_labels, &answers, &positions);
    }
    // Every answer has the same dtype and row width; the first non-empty one says which.
    int dtype = 0;
    int64_t dim = 0;
    size_t row_bytes = 0;
    std::string scale, offset;
    for (size_t k = 0; k < answers.size(); ++k) {
      if (positions[k].empty()) continue;
      const v1::Tensor& f = answers[k].features();
      dtype = f.dtype();
      dim = f.shape_size() > 1 ? f.shape(1) : 0;
      row_bytes = f.data().size() / positions[k].size();
      scale = answers[k].feature_scale().data();
      offset = answers[k].feature_offset().data();
      break;
    }
    py::bytearray features = Uninitialized(row_bytes * n);
    py::bytearray labels = Uninitialized(with_labels ? 8 * n : 0);
    char* fd = Data(features);
    char* ld = Data(labels);
    for (size_t k = 0; k < answers.size(); ++k) {
      const std::string& rows = answers[k].features().data();
      const std::string& labs = answers[k].labels().data();
      if (rows.size() != row_bytes * positions[k].size() || (with_labels && labs.size() != 8 * positions[k].size())) {
        throw client::Error(absl::DataLossError(absl::StrCat("server ", k, " answered ", rows.size(), " bytes of rows for ",
                                                             positions[k].size(), " ids")));
      }
      for (size_t i = 0; i < positions[k].size(); ++i) {
        const int64_t p = positions[k][i];
        std::memcpy(fd + p * row_bytes, rows.data() + i * row_bytes, row_bytes);
        if (with_labels) std::memcpy(ld + p * 8, labs.data() + i * 8, 8);
      }
    }
    return py::make_tuple(features, labels, py::bytes(scale), py::bytes(offset), dtype, dim);
  }

 private:
  Client& At(int server) {
    if (server < 0 || server >= num_servers()) {
      throw py::index_error(absl::StrCat("server ", server, " is not one of the ", num_servers(), " servers"));
    }
    return *clients_[server];
  }

  void Gather(const std::string& node_type, const std::vector<int64_t>& ids, bool with_labels,
              std::vector<v1::GetNodeFeaturesResponse>* answers, std::vector<std::vector<int64_t>>* positions) {
    const int servers = num_servers();
    std::vector<v1::GetNodeFeaturesRequest> asks(servers);
    positions->assign(servers, {});
    if (servers == 1) {
      asks[0].mutable_ids()->Assign(ids.begin(), ids.end());
      (*positions)[0].resize(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) (*positions)[0][i] = static_cast<int64_t>(i);
    } else {
      v1::LookupPartitionsRequest lp;
      lp.set_node_type(node_type);
      lp.mutable_ids()->Assign(ids.begin(), ids.end());
      const v1::LookupPartitionsResponse where = Check(clients_[0]->LookupPartitions(lp));
      const std::string& owners = where.partitions().data();
      if (owners.size() != 4 * ids.size()) throw client::Error(absl::DataLossError("LookupPartitions: short answer"));
      const auto* owner = reinterpret_cast<const int32_t*>(owners.data());
      for (size_t i = 0; i < ids.size(); ++i) {
        if (owner[i] < 0 || owner[i] >= servers) {
          throw client::Error(absl::FailedPreconditionError(absl::StrCat(
              "node ", ids[i], " is owned by partition ", owner[i], ", and the store was given ", servers, " servers")));
        }
        asks[owner[i]].add_ids(ids[i]);
        (*positions)[owner[i]].push_back(static_cast<int64_t>(i));
      }
    }
    answers->assign(servers, {});
    std::vector<std::future<absl::Status>> calls;
    for (int k = 0; k < servers; ++k) {
      if ((*positions)[k].empty()) {
        calls.emplace_back();
        continue;
      }
      asks[k].set_node_type(node_type);
      asks[k].set_with_labels(with_labels);
      asks[k].set_encoding(static_cast<v1::FeatureEncoding>(encoding_));
      calls.push_back(std::async(std::launch::async, [this, k, &asks, answers] {
        auto r = clients_[k]->GetNodeFeatures(asks[k]);
        if (!r.ok()) return r.status();
        (*answers)[k] = *std::move(r);
        return absl::OkStatus();
      }));
    }
    absl::Status first;
    for (int k = 0; k < servers; ++k) {
      if (!calls[k].valid()) continue;
      const absl::Status s = calls[k].get();
      if (!s.ok() && first.ok()) first = absl::Status(s.code(), absl::StrCat("server ", k, ": ", s.message()));
    }
    if (!first.ok()) throw client::Error(first);
  }

  std::vector<std::unique_ptr<Client>> clients_;
  int encoding_ = 0;
};

}  // namespace

void DefineStore(py::module_& m) {
  py::class_<PyStore>(m, "Store", "Connections to every server with a Loader's connection options (graphstore.pyg).")
      .def(py::init<const py::dict&>(), py::arg("options"))
      .def("num_servers", &PyStore::num_servers)
      .def("encoding", &PyStore::encoding, "The FeatureEncoding rows travel in.")
      .def("call", &PyStore::Call, py::arg("server"), py::arg("method"), py::arg("request"),
           "One unary call as serialized graphstore.v1 messages.")
      .def("node_rows", &PyStore::NodeRows, py::arg("node_type"), py::arg("ids"), py::arg("with_labels"),
           "(features, labels, scale, offset, dtype, dim) of `ids` (a DLPack int64 capsule), from their owners.");
}

}  // namespace graphstore::python
