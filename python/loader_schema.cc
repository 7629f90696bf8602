#include "python/loader_schema.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "python/loader_draft.h"

namespace graphstore::python {

namespace {

using client::LoaderOptions;

struct Entry {
  OptionSpec spec;
  Apply apply;
};

absl::Status ApplyServers(const std::string& n, const Value& v, Draft* d) {
  if (v.type == Value::Type::kInts && v.ints.empty()) return ValueError(absl::StrCat(n, " must name at least one server"));
  if (v.type != Value::Type::kList) return TypeError(absl::StrCat(n, " must be a list of 'host:port' str"));
  for (const Value& s : v.list) {
    if (s.type != Value::Type::kString) return TypeError(absl::StrCat(n, " must be a list of 'host:port' str"));
    if (!s.s.empty()) d->options.servers.push_back(s.s);
  }
  if (d->options.servers.empty()) return ValueError(absl::StrCat(n, " must name at least one server"));
  return absl::OkStatus();
}

absl::Status ApplyNumNeighbors(const std::string& n, const Value& v, Draft* d) {
  if (v.type == Value::Type::kNone) return absl::OkStatus();
  d->has_num_neighbors = true;
  if (v.type == Value::Type::kDict) {
    if (v.dict.empty()) return ValueError(absl::StrCat(n, " must name at least one edge type"));
    for (const auto& [type, list] : v.dict) {
      auto f = ReadFanouts(absl::StrCat(n, "['", type, "']"), list);
      if (!f.ok()) return f.status();
      d->config.mutable_num_neighbors_by_type()->operator[](type).mutable_per_hop()->Add(f->begin(), f->end());
    }
    return absl::OkStatus();
  }
  if (v.type != Value::Type::kInts) {
    return TypeError(absl::StrCat(n, " must be a list of ints or a dict of them by edge type, not ", v.TypeName()));
  }
  auto f = ReadFanouts(n, v);
  if (!f.ok()) return f.status();
  d->config.mutable_num_neighbors()->Add(f->begin(), f->end());
  return absl::OkStatus();
}

absl::Status ApplyInputNodes(const std::string& n, const Value& v, Draft* d) {
  if (v.type == Value::Type::kNone) return absl::OkStatus();
  if (v.type == Value::Type::kString) {
    d->options.node_type = v.s;
    return absl::OkStatus();
  }
  if (v.type == Value::Type::kInts) {
    if (v.ints.empty()) return ValueError(absl::StrCat(n, " holds no node id"));
    d->options.seeds = v.ints;
    d->has_ids = true;
    return absl::OkStatus();
  }
  const Value* type = v.Find("node_type");
  const Value* ids = v.Find("ids");
  if (v.type != Value::Type::kDict || type == nullptr || ids == nullptr) {
    return TypeError(absl::StrCat(n, " must be None, a node type, node ids or a (node_type, ids) tuple, not ",
                                  v.TypeName()));
  }
  auto t = ReadStr(absl::StrCat(n, "[0]"), *type);
  if (!t.ok()) return t.status();
  d->options.node_type = *t;
  if (ids->type == Value::Type::kNone) return absl::OkStatus();
  auto list = ReadInts(absl::StrCat(n, "[1]"), *ids, "node ids");
  if (!list.ok()) return list.status();
  if (list->empty()) return ValueError(absl::StrCat(n, " holds no node id"));
  d->options.seeds = *std::move(list);
  d->has_ids = true;
  return absl::OkStatus();
}

absl::Status ApplyWeighted(const std::string& n, const Value& v, Draft* d) {
  if (v.type == Value::Type::kBool) {
    if (v.b) d->config.add_weighted_edge_types("*");
    d->weighted_given = v.b;
    return absl::OkStatus();
  }
  if (v.type != Value::Type::kList || v.list.empty()) {
    return TypeError(absl::StrCat(n, " must be True, False or a non-empty list of edge types"));
  }
  for (const Value& t : v.list) {
    if (t.type != Value::Type::kString) return TypeError(absl::StrCat(n, " must list edge types, not ", t.TypeName()));
    d->config.add_weighted_edge_types(t.s);
  }
  d->weighted_given = true;
  return absl::OkStatus();
}

absl::Status ApplyPpr(const std::string& n, const Value& v, Draft* d) {
  if (v.type == Value::Type::kNone) return absl::OkStatus();
  if (v.type != Value::Type::kDict) return TypeError(absl::StrCat(n, " must be graphstore.PprOptions"));
  d->ppr = v;
  return absl::OkStatus();
}

absl::Status ApplyAblp(const std::string& n, const Value& v, Draft* d) {
  if (v.type == Value::Type::kNone) return absl::OkStatus();
  const Value* sup = v.Find("supervision_edge_type");
  const Value* split = v.Find("split");
  const Value* neg = v.Find("negative_edge_type");
  if (v.type != Value::Type::kDict || sup == nullptr || split == nullptr || neg == nullptr) {
    return TypeError(absl::StrCat(n, " must be graphstore.AblpInput, not ", v.TypeName()));
  }
  v1::GetAblpInputRequest req;
  auto s = ReadStr(absl::StrCat(n, ".supervision_edge_type"), *sup);
  if (!s.ok()) return s.status();
  req.set_supervision_edge_type(*s);
  auto sp = ReadStr(absl::StrCat(n, ".split"), *split);
  if (!sp.ok()) return sp.status();
  req.set_split(*sp);
  auto ng = ReadOptionalStr(absl::StrCat(n, ".negative_edge_type"), *neg);
  if (!ng.ok()) return ng.status();
  req.set_negative_edge_type(*ng);
  d->options.ablp = std::move(req);
  return absl::OkStatus();
}

absl::Status ApplyFeatureEncoding(const std::string& n, const Value& v, Draft* d) {
  auto s = ReadStr(n, v);
  if (!s.ok()) return s.status();
  auto e = client::ParseFeatureEncoding(*s);
  if (!e.ok()) return ValueError(absl::StrCat(n, ": ", e.status().message()));
  d->options.feature_encoding = *e;
  return absl::OkStatus();
}

absl::Status ApplyDevice(const std::string& n, const Value& v, Draft* d) {
  if (v.type == Value::Type::kNone) return absl::OkStatus();
  auto s = ReadStr(n, v);
  if (!s.ok()) return s.status();
  // "cpu", "cuda" or "cuda:K": where the Python package puts each batch's tensors.
  const std::vector<std::string> parts = absl::StrSplit(*s, ':');
  bool ok = (parts.size() == 1 && (parts[0] == "cpu" || parts[0] == "cuda")) ||
            (parts.size() == 2 && parts[0] == "cuda" && !parts[1].empty() &&
             parts[1].find_first_not_of("0123456789") == std::string::npos);
  if (!ok) return ValueError(absl::StrCat(n, " must be None, 'cpu', 'cuda' or 'cuda:K', got '", *s, "'"));
  return absl::OkStatus();
}

absl::Status ApplyTlsFile(const std::string& n, const Value& v, std::string* into) {
  auto s = ReadOptionalStr(n, v);
  if (!s.ok()) return s.status();
  if (!s->empty() && !std::filesystem::is_regular_file(*s)) return ValueError(absl::StrCat(n, ": no file '", *s, "'"));
  *into = *s;
  return absl::OkStatus();
}

// Adds one option to the table: name, default, place in the signature, doc, how it applies.
using Add = std::function<void(std::string, Value, Place, std::string, Apply)>;

// PyG's NeighborLoader arguments, in its order (positional).
void PygOptions(const Add& add) {
  const Place P = Place::kPositional;
  add("servers", Value::None(), P,
      "``\"host:port\"`` of every server, in partition order (a list, or one comma-separated str).",
      ApplyServers);
  add("num_neighbors", Value::None(), P,
      "neighbours to sample per hop (``-1``: all), for a graph with one edge type; or a dict from edge "
      "type (``(src, rel, dst)`` or ``\"src__rel__dst\"``, as the dataset stores it) to per-hop lists.",
      ApplyNumNeighbors);
  add("input_nodes", Value::None(), P,
      "the seeds, as PyG takes them: None (every node of the split), a node type (str), ids (a list or int "
      "tensor) or a bool mask over the nodes, or a ``(node_type, ids)`` tuple. Each id at most once.",
      ApplyInputNodes);
  add("batch_size", Value::Int(1), P, "seeds per batch.",
      IntInto(1, [](Draft* d, int64_t v) { d->config.set_batch_size(v); }));
  add("shuffle", Value::Bool(false), P,
      "permute the seeds each epoch (deterministically, from ``seed`` and the epoch).",
      BoolInto([](Draft* d, bool v) { d->config.set_shuffle(v); }));
  add("drop_last", Value::Bool(false), P,
      "drop the epoch's last batch when it has fewer than ``batch_size`` seeds (without global batches, "
      "each server's).",
      BoolInto([](Draft* d, bool v) { d->config.set_drop_last(v); }));
  add("replace", Value::Bool(false), P, "sample neighbours with replacement.",
      BoolInto([](Draft* d, bool v) { d->config.set_replace(v); }));
}

// What is sampled from which seeds: weights, times, the split, ranks, global batches and their order, the seed.
void SamplingOptions(const Add& add) {
  const Place K = Place::kKeyword;
  add("weighted", Value::Bool(false), K,
      "draw neighbours in proportion to the stored edge weights: ``True`` for every edge type, or a list of "
      "edge types (``\"src__rel__dst\"`` or ``(src, rel, dst)``); each must store weights "
      "(``graphstore-partition --edge_weights``). Zero-weight edges are never drawn. With ``replace``, draws "
      "are independent.",
      ApplyWeighted);
  add("weight_attr", Value::None(), K,
      "PyG's name for the same choice: ``\"edge_weight\"`` (or ``\"weight\"``) draws every edge type by the "
      "weights the dataset stores, as ``weighted=True``; ``None``: uniform (unless ``weighted`` says "
      "otherwise).",
      StrInto([](Draft* d, std::string v) { d->weight_attr = std::move(v); }, /*optional=*/true));
  add("time_attr", Value::None(), K,
      "``\"time\"`` samples temporally with the times the dataset stores (node times "
      "``book/<type>.time.npy``, edge times ``edges/<type>/time.npy``; ``graphstore-partition --node_times / "
      "--edge_times``): every seed has a time (``input_time``, else its node time) and a node only reaches "
      "neighbours whose edge time is at or before the time of the node that reached it, so a seed never sees "
      "the future. ``None``: not temporal.",
      StrInto([](Draft* d, std::string v) { d->time_attr = std::move(v); }, /*optional=*/true));
  add("input_time", Value::None(), K,
      "with ``time_attr`` and ids in ``input_nodes``: each seed's time (a list or int tensor, in the order of "
      "the ids). Default: the seeds' node times.",
      [](const std::string& n, const Value& v, Draft* d) -> absl::Status {
        if (v.type == Value::Type::kNone) return absl::OkStatus();
        auto times = ReadInts(n, v, "a tensor or a list of int times");
        if (!times.ok()) return times.status();
        d->input_time = *std::move(times);
        return absl::OkStatus();
      });
  add("temporal_strategy", Value::Str("uniform"), K,
      "with ``time_attr``: ``\"uniform\"`` draws among the neighbours at or before a node's time, "
      "``\"last\"`` takes the most recent of them. Temporal batches carry ``seed_time`` and "
      "``sampled_time`` (see ``NodeStore``).",
      StrInto([](Draft* d, std::string v) { d->temporal_strategy = std::move(v); }));
  add("split", Value::Str("train"), K,
      "the stored split the seeds come from when ``input_nodes`` gives no ids: ``\"train\"``, ``\"val\"``, "
      "``\"test\"``, or ``\"\"`` for every node.",
      StrInto([](Draft* d, std::string v) { d->options.split = std::move(v); }));
  add("raw_ids", Value::None(), K,
      "a directory of the dataset on this host (a partition directory, its ``book/``, or the directory of its "
      "``part-*``), for a dataset written from ids of its own (sparse edge-list ids): ``input_nodes`` are then "
      "those ids, and every batch's ``n_id`` comes back in them, read from ``book/<type>.raw_ids.npy``. "
      "``None``: the dataset's global ids (PyG's indices, for data ``write_dataset`` wrote).",
      StrInto([](Draft* d, std::string v) { d->options.raw_ids = std::move(v); }, /*optional=*/true));
  add("rank", Value::Int(0), K,
      "this trainer's share (GiGL's rank, ``0 <= rank < world_size``): with global batches the epoch's "
      "batches ``rank``, ``rank + world_size``, ... (every seed once over all ranks); without, a slice of "
      "each server's seeds.",
      IntInto(0, [](Draft* d, int64_t v) { d->options.rank = static_cast<int>(std::min<int64_t>(v, 1 << 30)); }));
  add("world_size", Value::Int(1), K, "how many trainers share the epoch (GiGL's world size).",
      IntInto(1, [](Draft* d, int64_t v) { d->options.world_size = static_cast<int>(std::min<int64_t>(v, 1 << 30)); }));
  add("global_batches", Value::Bool(true), K,
      "form batches over the whole cluster's input, as one server holding the whole graph would: the seeds "
      "(every server's share of the split, ascending id, or ``input_nodes`` in order) are shuffled once per "
      "epoch over all partitions, and batch b holds positions ``b * batch_size`` .. ``(b + 1) * batch_size - 1`` "
      "wherever those seeds live; the same batches on 1, 2 or 4 partitions. ``False``: each server batches "
      "only the seeds it owns (with METIS partitions, a batch then holds a few classes). Link-prediction "
      "inputs are always batched by the anchors' owners.",
      BoolInto([](Draft* d, bool v) { d->options.global_batches = v; }));
  add("ordered", Value::Bool(true), K,
      "hand out batches in batch order (as PyG's loaders do), holding those that arrive early within a "
      "bounded window (``prefetch`` per server): a slow server delays batches, never reorders them. "
      "``False``: in arrival order.",
      BoolInto([](Draft* d, bool v) { d->options.ordered = v; }));
  add("seed", Value::Int(0), K, "sampling seed: batches depend only on (seed, epoch, batch index).",
      IntInto(0, [](Draft* d, int64_t v) { d->options.seed = static_cast<uint64_t>(v); }));
}

// What each batch carries, the sampler and link prediction's labels and negatives.
void FieldOptions(const Add& add) {
  const Place K = Place::kKeyword;
  add("node_features", Value::Bool(true), K, "each batch carries ``x``.",
      BoolInto([](Draft* d, bool v) { d->config.set_with_node_features(v); }));
  add("labels", Value::Bool(true), K, "each batch carries ``y``.",
      BoolInto([](Draft* d, bool v) { d->config.set_with_labels(v); }));
  add("edge_ids", Value::Bool(false), K, "each batch carries ``e_id``.",
      BoolInto([](Draft* d, bool v) { d->config.set_with_edge_ids(v); }));
  add("edge_features", Value::Bool(false), K, "each batch carries ``edge_attr``.",
      BoolInto([](Draft* d, bool v) { d->config.set_with_edge_features(v); }));
  add("node_times", Value::Bool(false), K,
      "each batch carries ``time``: every sampled node's stored time, for the node types that store times "
      "(at least one must), temporal or not (PyG's ``time``; one random read per node on the server, as "
      "labels are).",
      BoolInto([](Draft* d, bool v) { d->config.set_with_node_times(v); }));
  add("sampler", Value::Str("neighbor"), K,
      "``\"neighbor\"`` (k-hop), ``\"subgraph\"`` (k-hop, then the induced subgraph) or ``\"ppr\"`` "
      "(personalized PageRank neighbourhoods; see ``ppr``).",
      StrInto([](Draft* d, std::string v) { d->sampler = std::move(v); }));
  add("ppr", Value::None(), K, "``PprOptions`` for ``sampler=\"ppr\"``.", ApplyPpr);
  add("ablp", Value::None(), K, "``AblpInput`` for link-prediction batches (seeds are its anchors).", ApplyAblp);
  add("num_negatives", Value::Int(0), K, "generated negatives per anchor of an ABLP batch.",
      IntInto(0, [](Draft* d, int64_t v) { d->config.set_num_negatives(static_cast<int>(v)); }));
  add("negative_sampling", Value::Str("uniform"), K,
      "how ``num_negatives`` are drawn: ``\"none\"``, ``\"uniform\"``, ``\"degree\"``.",
      StrInto([](Draft* d, std::string v) { d->negative_sampling = std::move(v); }));
}

// How batches reach the trainer: encodings, cache, shared memory, device, prefetch and connections.
void DeliveryOptions(const Add& add) {
  const Place K = Place::kKeyword;
  add("feature_encoding", Value::Str(""), K,
      "how feature rows travel from remote servers: ``\"float32\"``, ``\"float16\"``, ``\"bfloat16\"``, "
      "``\"\"`` (as stored), or quantized per column over its range in 255, 15, 3 or 1 steps: ``\"int8\"``, "
      "``\"int4\"``, ``\"int2\"``, ``\"int1\"`` (1, 1/2, 1/4 and 1/8 byte a value, within half a step; "
      "``\"int1\"`` keeps 0/1 features exact).",
      ApplyFeatureEncoding);
  add("feature_cache_rows", Value::Int(0), K,
      "feature rows of the hottest nodes this trainer keeps (fetched once); batches then carry only the other "
      "rows. 0: no cache.",
      IntInto(0, [](Draft* d, int64_t v) { d->options.feature_cache_rows = v; }));
  add("decode_features", Value::Bool(true), K,
      "hand ``x`` as float32 (True) or in the wire encoding for decoding on the trainer's device (quantized "
      "codes with ``x_scale``, ``x_offset`` and ``x_bits``; see ``graphstore.dequantize``).",
      BoolInto([](Draft* d, bool v) { d->options.decode_features = v; }));
  add("rows_from_owners", Value::Bool(true), K,
      "on a cluster, ask the owner of each node another partition owns for its row and label as a batch "
      "arrives, so that a row crosses the network once and servers exchange only ids (False: the server that "
      "assembles a batch fetches and sends them). Through shared memory their rows are written into the "
      "places the server kept for them.",
      BoolInto([](Draft* d, bool v) { d->options.rows_from_owners = v; }));
  add("shared_memory", Value::Bool(true), K, "take batches through shared memory from servers on this host.",
      BoolInto([](Draft* d, bool v) { d->options.shared_memory = v; }));
  add("pin_memory", Value::Bool(false), K,
      "batches' tensors lie in page-locked memory, so that copies to a CUDA device are fast and can run "
      "asynchronously: the loader's receive buffers and mapped shared-memory files are registered with CUDA "
      "once each, through torch, instead of each batch being copied. Needs CUDA.",
      BoolInto([](Draft*, bool) {}));
  add("device", Value::None(), K,
      "``\"cuda\"`` (or ``\"cuda:K\"``, or a ``torch.device``): batches arrive with every tensor already on "
      "that device, copied from page-locked memory on a side CUDA stream while the trainer computes on the "
      "batch before (implies ``pin_memory``). ``None`` or ``\"cpu\"``: host memory.",
      ApplyDevice);
  add("prefetch", Value::Int(4), K, "batches read ahead per server.",
      IntInto(1, [](Draft* d, int64_t v) { d->options.prefetch = static_cast<int>(std::min<int64_t>(v, 1 << 20)); }));
  add("connections_per_server", Value::Int(0), K,
      "connections to each server, each carrying a stripe of the batches, merged back in order: one "
      "connection is carried by one thread on each side (about 1.5 GB/s in plaintext, 1 GB/s with TLS), so a "
      "fast link or TLS needs several. 0: chosen by the host's cores (1 below 8, 2 from 8, 4 from 16). Shared "
      "memory takes one. The channel's server-side buffer (``buffer_bytes``) holds per connection: N connections give "
      "it N times the room.",
      IntInto(0, [](Draft* d, int64_t v) {
        d->options.connections_per_server = static_cast<int>(std::min<int64_t>(v, 1 << 20));
      }));
}

// The backend and channel on the servers: keys, workers, buffers, windows, deadlines and leases.
void ServerSideOptions(const Add& add) {
  const Place K = Place::kKeyword;
  add("backend_key", Value::None(), K,
      "the server-side sampling backend to create or join; loaders with the same key share its workers and "
      "must ask for the same batch shape. Default: one backend per batch shape (loaders asking for the same "
      "shape share it).",
      StrInto([](Draft* d, std::string v) { d->backend_key = std::move(v); }, /*optional=*/true));
  add("server_workers", Value::Int(0), K, "the backend's worker threads on each server (0: the server's default).",
      IntInto(0, [](Draft* d, int64_t v) {
        d->options.sampler_options.set_num_workers(static_cast<int>(std::min<int64_t>(v, 1 << 20)));
      }));
  add("max_in_flight_per_channel", Value::Int(0), K,
      "batches of one channel sampled at once (0: the server's default).", IntInto(0, [](Draft* d, int64_t v) {
        d->options.sampler_options.set_max_in_flight_per_channel(static_cast<int>(std::min<int64_t>(v, 1 << 20)));
      }));
  add("buffer_messages", Value::Int(0), K, "server-side buffer of each channel, in batches (0: the server's default).",
      IntInto(0, [](Draft* d, int64_t v) { d->options.buffer_messages = static_cast<int>(std::min<int64_t>(v, 1 << 30)); }));
  add("buffer_bytes", Value::Int(0), K, "server-side buffer of each channel, in bytes (0: the server's default).",
      IntInto(0, [](Draft* d, int64_t v) { d->options.buffer_bytes = v; }));
  add("stream_window_bytes", Value::Int(8 << 20), K,
      "flow-control window of each stream, bytes (0: gRPC's self-tuning one).",
      IntInto(0, [](Draft* d, int64_t v) { d->options.stream_window_bytes = static_cast<int>(std::min<int64_t>(v, 1 << 30)); }));
  add("deadline", Value::Float(30.0), K, "seconds every unary call may take.",
      SecondsInto(0, true, [](Draft* d, std::chrono::milliseconds v) { d->options.deadline = v; }));
  add("lease_ms", Value::Int(0), K, "channel lease on the servers, ms (0: their default).",
      IntInto(0, [](Draft* d, int64_t v) { d->options.lease_ms = v; }));
  add("reconnect_deadline", Value::Float(60.0), K,
      "seconds a server that restarts or drops the connection is retried (the epoch resumes from the first "
      "batch not yet delivered, every batch once and identical to an uninterrupted epoch); past it the "
      "server's last error is raised. 0: raise at once.",
      SecondsInto(0, false, [](Draft* d, std::chrono::milliseconds v) { d->options.reconnect_deadline = v; }));
  add("renew_leases", Value::Bool(true), K,
      "renew the channels' leases in the background, so a trainer busy for longer than the lease (validation, "
      "a checkpoint) keeps them.",
      BoolInto([](Draft* d, bool v) { d->options.renew_leases = v; }));
  add("keepalive", Value::Float(20.0), K,
      "seconds without hearing from a server after which the loader pings it, and fails its stream (like a "
      "server that went away) when no answer comes within ``keepalive_timeout`` seconds: a hung server or a "
      "dead link raises instead of leaving the trainer waiting for ever. 0: no pings.",
      SecondsInto(0, false, [](Draft* d, std::chrono::milliseconds v) { d->options.keepalive_time = v; }));
  add("keepalive_timeout", Value::Float(10.0), K, "see ``keepalive``; seconds >= 0.001.",
      SecondsInto(0.001, false, [](Draft* d, std::chrono::milliseconds v) { d->options.keepalive_timeout = v; }));
  add("worker_key", Value::Str("python-trainer"), K, "this trainer's name in server logs and stats.",
      StrInto([](Draft* d, std::string v) { d->options.worker_key = std::move(v); }));
}

// TLS and the bearer token.
void SecurityOptions(const Add& add) {
  const Place K = Place::kKeyword;
  add("tls", Value::Bool(false), K,
      "connect with TLS (implied by ``tls_ca``, ``tls_cert`` and ``tls_key``); without ``tls_ca`` the system's "
      "CA certificates verify the servers.",
      BoolInto([](Draft* d, bool v) { d->options.security.tls = v; }));
  add("tls_ca", Value::None(), K, "PEM file of the CA that signed the servers' certificates.",
      [](const std::string& n, const Value& v, Draft* d) { return ApplyTlsFile(n, v, &d->options.security.ca_file); });
  add("tls_cert", Value::None(), K,
      "PEM file of this trainer's client certificate, for servers that require mutual TLS (with ``tls_key``).",
      [](const std::string& n, const Value& v, Draft* d) { return ApplyTlsFile(n, v, &d->options.security.cert_file); });
  add("tls_key", Value::None(), K, "PEM file of the key of ``tls_cert``.",
      [](const std::string& n, const Value& v, Draft* d) { return ApplyTlsFile(n, v, &d->options.security.key_file); });
  add("tls_server_name", Value::None(), K,
      "the name the servers' certificates carry, when not the host of their address.",
      StrInto([](Draft* d, std::string v) { d->options.security.server_name = std::move(v); }, /*optional=*/true));
  add("token", Value::None(), K,
      "bearer token sent with every call (servers run with ``--auth_tokens``); default: the "
      "``GRAPHSTORE_TOKEN`` environment variable, if set.",
      [](const std::string& n, const Value& v, Draft* d) -> absl::Status {
        auto s = ReadOptionalStr(n, v);
        if (!s.ok()) return s.status();
        d->token_given = v.type != Value::Type::kNone;
        d->token = *s;
        return absl::OkStatus();
      });
}

// Every option, in signature order: the groups below, in turn.
const std::vector<Entry>& Table() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> t;
    const Add add = [&t](std::string name, Value def, Place place, std::string doc, Apply apply) {
      t.push_back(Entry{OptionSpec{std::move(name), std::move(def), place, std::move(doc)}, std::move(apply)});
    };
    for (auto group : {PygOptions, SamplingOptions, FieldOptions, DeliveryOptions, ServerSideOptions, SecurityOptions}) group(add);
    return t;
  }();
  return table;
}

}  // namespace

const std::vector<OptionSpec>& LoaderOptionSpecs() {
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> out;
    for (const Entry& e : Table()) out.push_back(e.spec);
    return out;
  }();
  return specs;
}

absl::StatusOr<LoaderOptions> BuildLoaderOptions(const std::map<std::string, Value>& values) {
  std::set<std::string> known;
  for (const Entry& e : Table()) known.insert(e.spec.name);
  for (const auto& [name, v] : values) {
    if (known.count(name) == 0) return TypeError(absl::StrCat("Loader got an unexpected option '", name, "'"));
  }
  Draft d;
  for (const Entry& e : Table()) {
    auto it = values.find(e.spec.name);
    const Value& v = it != values.end() ? it->second : e.spec.default_value;
    if (auto s = e.apply(e.spec.name, v, &d); !s.ok()) return s;
  }
  if (auto s = FinishSampler(&d); !s.ok()) return s;
  if (auto s = FinishInputs(&d); !s.ok()) return s;
  if (d.options.rank >= d.options.world_size) {
    return ValueError(absl::StrCat("rank must be < world_size (", d.options.world_size, "), got ", d.options.rank));
  }
  d.options.security.token = d.token_given ? d.token : [] {
    const char* env = std::getenv("GRAPHSTORE_TOKEN");
    return std::string(env != nullptr ? env : "");
  }();
  d.options.backend_key = d.backend_key;  // empty: the client core's default (one backend per shape)
  if (auto s = client::ValidateLoaderOptions(d.options); !s.ok()) return ValueError(std::string(s.message()));
  return std::move(d.options);
}

}  // namespace graphstore::python
