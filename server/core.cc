#include "server/core.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/sampling/draw.h"
#include "server/util/log.h"
#include "server/message.h"
#include "server/sampling/neighbor_draw.h"
#include "server/sampling/ppr_sampler.h"
#include "server/sampling/subgraph_sampler.h"

namespace graphstore {

using Clock = std::chrono::steady_clock;

struct Core::BackendEntry {
  enum class State { kCreating, kReady };
  uint64_t id = 0;
  std::string key;
  v1::SamplingConfig config;
  int num_workers = 0;
  State state = State::kCreating;
  // Callers waiting for the creation to finish.
  std::vector<std::function<void(absl::Status)>> waiters;
  std::unique_ptr<Sampler> sampler;
  // One per worker; worker i only touches scratch[i], subgraph[i] and ablp[i].
  std::vector<std::unique_ptr<SamplerScratch>> scratch;
  std::vector<SampledSubgraph> subgraph;
  std::vector<AblpBatch> ablp;
  std::shared_ptr<scheduler::Backend> backend;
  std::set<uint64_t> channels;
};

struct Core::ChannelEntry {
  uint64_t id = 0;
  uint64_t backend_id = 0;
  std::string worker_key;
  int node_type = 0;
  int64_t num_seeds = 0;
  int64_t lease_ms = 0;
  Clock::time_point last_activity;
  bool streaming = false;
  // The channel's buffer limits; on a shared-memory channel they also bound the uses sent and
  // not yet received.
  int buffer_messages = 0;
  int64_t buffer_bytes = 0;
  // Shared-memory channels: the channel's files, and the uses sent and not yet freed.
  std::shared_ptr<SharedBufferPool> pool;
  struct Sent {
    std::shared_ptr<SharedUse> use;
    bool received = false;
  };
  std::map<uint64_t, Sent> sent;
  int unreceived = 0;
  int64_t unreceived_bytes = 0;

  // The stream holds back while unreceived uses reach the buffer limits.
  bool SharedBacklogFull() const {
    return unreceived > 0 && (unreceived >= buffer_messages || unreceived_bytes >= buffer_bytes);
  }
};

// What the sample function needs to know of a channel.
struct ChannelSampling {
  // Set on shared-memory channels.
  std::shared_ptr<SharedBufferPool> pool;
  // Set on link-prediction channels.
  std::shared_ptr<const AblpLabeler> ablp;
};

namespace {

absl::Status Invalid(const std::string& m) { return absl::InvalidArgumentError(m); }
absl::Status TooBig(const std::string& m) { return absl::ResourceExhaustedError(m); }

// Prefixes a status message with the request field it concerns.
absl::Status InField(const absl::Status& s, const std::string& field) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(field, ": ", s.message()));
}

}  // namespace

Core::Core(std::unique_ptr<Partition> partition, CoreOptions options,
           std::unique_ptr<SharedMemoryArea> shared_memory)
    : partition_(std::move(partition)), options_(std::move(options)), shared_memory_(std::move(shared_memory)) {
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

Core::~Core() { Shutdown(); }

// ----- Metadata and lookups ---------------------------------------------------------------

absl::Status Core::GetDatasetMeta(const v1::GetDatasetMetaRequest&, v1::DatasetMeta* resp) const {
  const auto& m = partition_->manifest();
  resp->set_dataset_name(m.dataset_name());
  resp->set_num_partitions(m.num_partitions());
  resp->set_partition_id(m.partition_id());
  resp->set_edge_dir(partition_->rows_are_sources() ? v1::EDGE_DIRECTION_OUT : v1::EDGE_DIRECTION_IN);
  resp->set_partition_method(m.partition_method());
  if (shared_memory_ != nullptr) {
    resp->mutable_shared_memory()->set_dir(shared_memory_->dir());
    resp->mutable_shared_memory()->set_probe_path(shared_memory_->probe_path());
    resp->mutable_shared_memory()->set_probe_token(shared_memory_->probe_token());
  }
  for (const auto& n : partition_->node_types()) {
    auto* t = resp->add_node_types();
    t->set_name(n.name);
    t->set_num_nodes(n.num_nodes);
    t->set_num_local_nodes(n.num_local);
    t->mutable_features()->set_dim(n.feature_dim);
    if (n.feature_dim > 0) t->mutable_features()->set_dtype(ToProtoDtype(n.feature_dtype));
    t->set_has_labels(n.labels.is_open());
    t->set_num_classes(n.num_classes);
    for (const auto& [split, f] : n.splits) t->add_splits(split);
  }
  for (int i = 0; i < m.edge_types_size(); ++i) {
    const EdgeTypeStore& e = partition_->edge_type(i);
    auto* t = resp->add_edge_types();
    t->set_name(e.name);
    t->set_src_type(m.edge_types(i).src_type());
    t->set_relation(m.edge_types(i).relation());
    t->set_dst_type(m.edge_types(i).dst_type());
    t->set_num_edges(e.num_edges);
    t->set_num_local_edges(e.num_local);
    t->set_has_edge_ids(e.edge_ids.is_open());
    t->mutable_features()->set_dim(e.feature_dim);
    if (e.feature_dim > 0) t->mutable_features()->set_dtype(ToProtoDtype(e.feature_dtype));
  }
  resp->set_is_heterogeneous(partition_->node_types().size() > 1 || partition_->edge_types().size() > 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& a : cluster_addresses_) resp->add_cluster(a);
  }
  return absl::OkStatus();
}

absl::Status Core::LookupPartitions(const v1::LookupPartitionsRequest& req,
                                    v1::LookupPartitionsResponse* resp) const {
  auto t = partition_->FindNodeType(req.node_type());
  if (!t.ok()) return t.status();
  if (req.ids_size() > options_.max_ids_per_request) {
    return TooBig(absl::StrCat("ids has ", req.ids_size(), " entries; the limit is ", options_.max_ids_per_request));
  }
  const NodeTypeStore& n = partition_->node_type(*t);
  std::vector<int32_t> out(req.ids_size());
  for (int i = 0; i < req.ids_size(); ++i) {
    const int64_t id = req.ids(i);
    if (id < 0 || id >= n.num_nodes) {
      return Invalid(absl::StrCat("ids[", i, "]=", id, " is not a '", n.name, "' node id (0 <= id < ",
                                  n.num_nodes, ")"));
    }
    out[i] = n.Owner(id);
  }
  SetTensor(v1::DTYPE_INT32, {static_cast<int64_t>(out.size())}, out.data(), out.size() * 4,
            resp->mutable_partitions());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> Core::SplitIds(const std::string& node_type, const std::string& split,
                                                    const v1::ServerSlice& slice, const std::string& field) const {
  auto t = partition_->FindNodeType(node_type);
  if (!t.ok()) return InField(t.status(), field + "node_type");
  if (slice.world_size() < 0) return Invalid(absl::StrCat(field, "slice.world_size must be >= 0"));
  if (slice.world_size() > 1 && (slice.rank() < 0 || slice.rank() >= slice.world_size())) {
    return Invalid(absl::StrCat(field, "slice.rank ", slice.rank(), " is outside [0, ", slice.world_size(), ")"));
  }
  if (slice.world_size() <= 1 && slice.rank() != 0) {
    return Invalid(absl::StrCat(field, "slice.rank ", slice.rank(), " needs slice.world_size > 1"));
  }
  const NodeTypeStore& n = partition_->node_type(*t);
  const int64_t* ids = n.global_ids();
  int64_t count = n.num_local;
  if (!split.empty()) {
    auto it = n.splits.find(split);
    if (it == n.splits.end()) {
      std::string known;
      for (const auto& [name, f] : n.splits) absl::StrAppend(&known, known.empty() ? "" : ", ", name);
      return Invalid(absl::StrCat(field, "split '", split, "' does not exist for node type '", n.name,
                                  "' (splits: ", known.empty() ? "none" : known, ")"));
    }
    ids = it->second.data<int64_t>();
    count = it->second.num_elements();
  }
  const auto [begin, end] = SliceRange(count, slice.rank(), slice.world_size());
  return std::vector<int64_t>(ids + begin, ids + end);
}

absl::Status Core::GetNodeIds(const v1::GetNodeIdsRequest& req, v1::GetNodeIdsResponse* resp) const {
  auto ids = SplitIds(req.node_type(), req.split(), req.slice(), "");
  if (!ids.ok()) return ids.status();
  SetInt64Tensor(*ids, resp->mutable_ids());
  return absl::OkStatus();
}

absl::Status Core::CheckOwnedIds(int node_type, const google::protobuf::RepeatedField<int64_t>& ids,
                                 const std::string& field) const {
  if (ids.size() > options_.max_ids_per_request) {
    return TooBig(absl::StrCat(field, " has ", ids.size(), " entries; the limit is ", options_.max_ids_per_request));
  }
  const NodeTypeStore& n = partition_->node_type(node_type);
  for (int i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= n.num_nodes) {
      return Invalid(absl::StrCat(field, "[", i, "]=", id, " is not a '", n.name, "' node id (0 <= id < ",
                                  n.num_nodes, ")"));
    }
    if (n.Owner(id) != partition_->partition_id()) {
      return Invalid(absl::StrCat(field, "[", i, "]=", id, " is owned by partition ", n.Owner(id),
                                  ", not by this server's partition ", partition_->partition_id()));
    }
  }
  return absl::OkStatus();
}

absl::Status Core::GetNodeFeatures(const v1::GetNodeFeaturesRequest& req, v1::GetNodeFeaturesResponse* resp) const {
  auto t = partition_->FindNodeType(req.node_type());
  if (!t.ok()) return t.status();
  const NodeTypeStore& n = partition_->node_type(*t);
  if (n.feature_dim == 0) {
    return absl::FailedPreconditionError(absl::StrCat("node type '", n.name, "' has no features"));
  }
  if (req.with_labels() && !n.labels.is_open()) {
    return absl::FailedPreconditionError(absl::StrCat("with_labels: node type '", n.name, "' has no labels"));
  }
  if (auto s = CheckOwnedIds(*t, req.ids(), "ids"); !s.ok()) return s;
  if (req.with_labels()) {
    std::vector<int64_t> labels(req.ids_size());
    for (int i = 0; i < req.ids_size(); ++i) labels[i] = n.labels.data<int64_t>()[n.OwnerRow(req.ids(i))];
    SetInt64Tensor(labels, resp->mutable_labels());
  }
  const size_t row = static_cast<size_t>(n.feature_dim) * DtypeSize(n.feature_dtype);
  std::string* data = resp->mutable_features()->mutable_data();
  data->resize(row * req.ids_size());
  const char* src = static_cast<const char*>(n.features.raw());
  for (int i = 0; i < req.ids_size(); ++i) std::memcpy(&(*data)[i * row], src + n.OwnerRow(req.ids(i)) * row, row);
  resp->mutable_features()->set_dtype(ToProtoDtype(n.feature_dtype));
  resp->mutable_features()->add_shape(req.ids_size());
  resp->mutable_features()->add_shape(n.feature_dim);
  return absl::OkStatus();
}

absl::Status Core::GetNodeLabels(const v1::GetNodeLabelsRequest& req, v1::GetNodeLabelsResponse* resp) const {
  auto t = partition_->FindNodeType(req.node_type());
  if (!t.ok()) return t.status();
  const NodeTypeStore& n = partition_->node_type(*t);
  if (!n.labels.is_open()) {
    return absl::FailedPreconditionError(absl::StrCat("node type '", n.name, "' has no labels"));
  }
  if (auto s = CheckOwnedIds(*t, req.ids(), "ids"); !s.ok()) return s;
  std::vector<int64_t> out(req.ids_size());
  for (int i = 0; i < req.ids_size(); ++i) out[i] = n.labels.data<int64_t>()[n.OwnerRow(req.ids(i))];
  SetInt64Tensor(out, resp->mutable_labels());
  return absl::OkStatus();
}

absl::Status Core::GetEdgeFeatures(const v1::GetEdgeFeaturesRequest& req, v1::GetEdgeFeaturesResponse* resp) const {
  auto t = partition_->FindEdgeType(req.edge_type());
  if (!t.ok()) return t.status();
  const EdgeTypeStore& e = partition_->edge_type(*t);
  if (e.feature_dim == 0) {
    return absl::FailedPreconditionError(absl::StrCat("edge type '", e.name, "' has no features"));
  }
  if (req.ids_size() > options_.max_ids_per_request) {
    return TooBig(absl::StrCat("ids has ", req.ids_size(), " entries; the limit is ", options_.max_ids_per_request));
  }
  // Edge id -> CSR position: the id itself without edge_ids.npy, else a binary search of the
  // positions sorted by edge id.
  const std::vector<int64_t>* by_id = e.edge_ids.is_open() ? &EdgePositionsById(*t) : nullptr;
  const int64_t* stored = e.edge_ids.is_open() ? e.edge_ids.data<int64_t>() : nullptr;
  std::vector<int64_t> pos(req.ids_size());
  for (int i = 0; i < req.ids_size(); ++i) {
    const int64_t id = req.ids(i);
    int64_t p = -1;
    if (by_id == nullptr) {
      p = (id >= 0 && id < e.num_local) ? id : -1;
    } else {
      auto it = std::lower_bound(by_id->begin(), by_id->end(), id,
                                 [stored](int64_t position, int64_t want) { return stored[position] < want; });
      if (it != by_id->end() && stored[*it] == id) p = *it;
    }
    if (p < 0) return Invalid(absl::StrCat("ids[", i, "]=", id, " is not an edge stored in this partition"));
    pos[i] = p;
  }
  const size_t row = static_cast<size_t>(e.feature_dim) * DtypeSize(e.feature_dtype);
  std::string* data = resp->mutable_features()->mutable_data();
  data->resize(row * pos.size());
  const char* src = static_cast<const char*>(e.features.raw());
  for (size_t i = 0; i < pos.size(); ++i) std::memcpy(&(*data)[i * row], src + pos[i] * row, row);
  resp->mutable_features()->set_dtype(ToProtoDtype(e.feature_dtype));
  resp->mutable_features()->add_shape(static_cast<int64_t>(pos.size()));
  resp->mutable_features()->add_shape(e.feature_dim);
  return absl::OkStatus();
}

const std::vector<int64_t>& Core::EdgePositionsById(int edge_type) const {
  std::lock_guard<std::mutex> lock(edge_index_mu_);
  auto it = edge_index_.find(edge_type);
  if (it != edge_index_.end()) return it->second;
  const EdgeTypeStore& e = partition_->edge_type(edge_type);
  const int64_t* ids = e.edge_ids.data<int64_t>();
  std::vector<int64_t> order(e.num_local);
  for (int64_t k = 0; k < e.num_local; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [ids](int64_t a, int64_t b) { return ids[a] < ids[b]; });
  return edge_index_.emplace(edge_type, std::move(order)).first->second;
}

absl::Status Core::SampleNeighbors(const v1::SampleNeighborsRequest& req, v1::SampleNeighborsResponse* resp) const {
  auto t = partition_->FindEdgeType(req.edge_type());
  if (!t.ok()) return t.status();
  const EdgeTypeStore& e = partition_->edge_type(*t);
  if (req.fanout() < -1) return Invalid(absl::StrCat("fanout ", req.fanout(), " is below -1"));
  if (req.fanout() > options_.max_fanout) {
    return TooBig(absl::StrCat("fanout ", req.fanout(), " exceeds the limit ", options_.max_fanout));
  }
  if (auto s = CheckOwnedIds(e.row_type, req.ids(), "ids"); !s.ok()) return s;
  if (req.with_edge_features() && e.feature_dim == 0) {
    return absl::FailedPreconditionError(absl::StrCat("with_edge_features: edge type '", e.name, "' has no features"));
  }
  if (req.excluded_size() % 2 != 0) return Invalid("excluded must hold (node, neighbour) pairs");
  if (req.excluded_size() > options_.max_ids_per_request) {
    return TooBig(absl::StrCat("excluded has ", req.excluded_size(), " entries; the limit is ",
                               options_.max_ids_per_request));
  }
  std::vector<std::pair<int64_t, int64_t>> excluded;
  for (int i = 0; i + 1 < req.excluded_size(); i += 2) excluded.emplace_back(req.excluded(i), req.excluded(i + 1));
  std::sort(excluded.begin(), excluded.end());
  const auto& c = req.context();
  DrawSpec spec;
  spec.fanout = req.fanout();
  spec.replace = req.replace();
  spec.with_edge_ids = req.with_edge_ids();
  spec.with_edge_features = req.with_edge_features();
  spec.hop_key = HopKey(c.seed(), c.epoch(), c.batch(), c.hop(), HashString(e.name));
  spec.excluded = &excluded;
  NeighborDraw draw;
  DrawOwnedNeighbors(*partition_, *t, req.ids().data(), static_cast<size_t>(req.ids_size()), spec, &draw);
  SetInt64Tensor(draw.counts, resp->mutable_counts());
  SetInt64Tensor(draw.neighbors, resp->mutable_neighbors());
  if (req.with_edge_ids()) SetInt64Tensor(draw.edge_ids, resp->mutable_edge_ids());
  if (req.with_edge_features()) {
    SetTensor(ToProtoDtype(e.feature_dtype), {static_cast<int64_t>(draw.neighbors.size()), e.feature_dim},
              draw.edge_features.data(), draw.edge_features.size(), resp->mutable_edge_features());
  }
  return absl::OkStatus();
}

namespace {

AblpRequest ToAblpRequest(const v1::GetAblpInputRequest& req) {
  AblpRequest r;
  r.split = req.split();
  r.node_type = req.node_type();
  r.supervision_edge_type = req.supervision_edge_type();
  r.negative_edge_type = req.negative_edge_type();
  r.rank = req.slice().rank();
  r.world_size = req.slice().world_size();
  return r;
}

// An int64 [n, width] matrix of each row's values padded with -1.
void SetPaddedMatrix(const std::vector<int64_t>& offsets, const std::vector<int64_t>& values, v1::Tensor* out) {
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  int64_t width = 0;
  for (int64_t i = 0; i < n; ++i) width = std::max(width, offsets[i + 1] - offsets[i]);
  std::vector<int64_t> m(static_cast<size_t>(n * width), -1);
  for (int64_t i = 0; i < n; ++i) {
    std::copy(values.begin() + offsets[i], values.begin() + offsets[i + 1], m.begin() + i * width);
  }
  SetTensor(v1::DTYPE_INT64, {n, width}, m.data(), m.size() * 8, out);
}

}  // namespace

absl::Status Core::GetAblpInput(const v1::GetAblpInputRequest& req, v1::GetAblpInputResponse* resp) const {
  auto in = LoadAblpInput(*partition_, ToAblpRequest(req));
  if (!in.ok()) return in.status();
  SetInt64Tensor(in->anchors, resp->mutable_anchors());
  SetPaddedMatrix(in->pos_offsets, in->positives, resp->mutable_positive_labels());
  if (in->negative_edge_type >= 0) SetPaddedMatrix(in->neg_offsets, in->negatives, resp->mutable_negative_labels());
  return absl::OkStatus();
}

// ----- Sampling lifecycle -----------------------------------------------------------------

void Core::SetCluster(Cluster* cluster, std::vector<std::string> addresses) {
  std::lock_guard<std::mutex> lock(mu_);
  cluster_addresses_ = std::move(addresses);
  if (options_.peer_cache_bytes > 0 && remote_cache_ == nullptr) {
    remote_cache_ = std::make_unique<RemoteCache>(partition_.get(), options_.peer_cache_bytes);
  }
  cluster_.store(cluster);
}

absl::Status Core::SamplingOpen() const {
  const Cluster* cluster = cluster_.load();
  return cluster == nullptr ? absl::OkStatus() : cluster->Ready();
}

absl::Status Core::ValidateConfig(const v1::SamplingConfig& c, const v1::SamplerOptions& o) const {
  if (!v1::SamplerKind_IsValid(c.kind())) return Invalid(absl::StrCat("config.kind ", c.kind(), " is unknown"));
  if (c.kind() == v1::SAMPLER_KIND_PPR) {
    if (c.num_neighbors_size() > 0 || c.num_neighbors_by_type_size() > 0) {
      return Invalid("config.num_neighbors: the PPR sampler takes config.ppr, not fanouts");
    }
    if (c.with_edge_ids() || c.with_edge_features()) {
      return Invalid("config.with_edge_ids / with_edge_features: the PPR sampler returns no edges (see ppr weights)");
    }
  } else if (c.has_ppr()) {
    return Invalid("config.ppr is only for config.kind SAMPLER_KIND_PPR");
  }
  if (c.batch_size() <= 0) return Invalid(absl::StrCat("config.batch_size must be >= 1, got ", c.batch_size()));
  if (c.batch_size() > options_.max_batch_size) {
    return TooBig(absl::StrCat("config.batch_size ", c.batch_size(), " exceeds the limit ", options_.max_batch_size));
  }
  auto check_fanouts = [&](const google::protobuf::RepeatedField<int32_t>& f, const std::string& field) -> absl::Status {
    if (f.size() > options_.max_hops) {
      return TooBig(absl::StrCat(field, " has ", f.size(), " hops; the limit is ", options_.max_hops));
    }
    for (int i = 0; i < f.size(); ++i) {
      if (f[i] < -1) return Invalid(absl::StrCat(field, "[", i, "]=", f[i], " is below -1 (-1 takes all)"));
      if (f[i] > options_.max_fanout) {
        return TooBig(absl::StrCat(field, "[", i, "]=", f[i], " exceeds the limit ", options_.max_fanout));
      }
    }
    return absl::OkStatus();
  };
  if (auto s = check_fanouts(c.num_neighbors(), "config.num_neighbors"); !s.ok()) return s;
  for (const auto& [name, f] : c.num_neighbors_by_type()) {
    if (auto s = check_fanouts(f.per_hop(), absl::StrCat("config.num_neighbors_by_type['", name, "']")); !s.ok()) {
      return s;
    }
  }
  if (c.num_negatives() < 0) return Invalid("config.num_negatives must be >= 0");
  if (c.num_negatives() > options_.max_negatives) {
    return TooBig(absl::StrCat("config.num_negatives ", c.num_negatives(), " exceeds the limit ", options_.max_negatives));
  }
  if (!v1::NegativeSampling_IsValid(c.negative_sampling())) {
    return Invalid(absl::StrCat("config.negative_sampling ", c.negative_sampling(), " is unknown"));
  }
  if (c.num_negatives() > 0 && c.negative_sampling() == v1::NEGATIVE_SAMPLING_NONE) {
    return Invalid("config.num_negatives needs config.negative_sampling UNIFORM or DEGREE");
  }
  if (o.num_workers() < 0) return Invalid("options.num_workers must be >= 0 (0 = server default)");
  if (o.num_workers() > options_.max_num_workers) {
    return TooBig(absl::StrCat("options.num_workers ", o.num_workers(), " exceeds the limit ", options_.max_num_workers));
  }
  if (o.max_in_flight_per_channel() < 0) return Invalid("options.max_in_flight_per_channel must be >= 0");
  if (o.max_in_flight_per_channel() > 64) return TooBig("options.max_in_flight_per_channel exceeds the limit 64");
  return absl::OkStatus();
}

void Core::InitSamplingBackend(const v1::InitSamplingBackendRequest& req, v1::InitSamplingBackendResponse* resp,
                               std::function<void(absl::Status)> done) {
  if (req.backend_key().empty()) return done(Invalid("backend_key is required"));
  if (req.backend_key().size() > options_.max_key_length) {
    return done(TooBig(absl::StrCat("backend_key is longer than ", options_.max_key_length, " bytes")));
  }
  if (auto s = ValidateConfig(req.config(), req.options()); !s.ok()) return done(s);
  if (auto s = SamplingOpen(); !s.ok()) return done(s);

  std::shared_ptr<BackendEntry> entry;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (shutting_down_) return done(absl::UnavailableError("the server is shutting down"));
    auto it = backends_by_key_.find(req.backend_key());
    if (it != backends_by_key_.end()) {
      std::shared_ptr<BackendEntry> e = it->second;
      if (!google::protobuf::util::MessageDifferencer::Equals(e->config, req.config())) {
        return done(absl::FailedPreconditionError(absl::StrCat(
            "backend_key '", req.backend_key(), "' already names backend ", e->id, " with a different config")));
      }
      auto reply = [resp, done, id = e->id](absl::Status s) {
        if (s.ok()) {
          resp->set_backend_id(id);
          resp->set_created(false);
        }
        done(s);
      };
      if (e->state == BackendEntry::State::kCreating) {
        e->waiters.push_back(std::move(reply));
        return;
      }
      lock.unlock();
      return reply(absl::OkStatus());
    }
    if (static_cast<int>(backends_.size()) >= options_.max_backends) {
      return done(TooBig(absl::StrCat("too many backends (limit ", options_.max_backends, ")")));
    }
    entry = std::make_shared<BackendEntry>();
    entry->id = next_backend_id_++;
    entry->key = req.backend_key();
    entry->config = req.config();
    backends_by_key_[entry->key] = entry;
    backends_[entry->id] = entry;
  }

  // Build outside the lock; callers with the same key wait in entry->waiters.
  const v1::SamplingConfig& config = req.config();
  RemoteCache* cache;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cache = remote_cache_.get();
  }
  absl::StatusOr<std::unique_ptr<Sampler>> sampler;
  if (config.kind() == v1::SAMPLER_KIND_PPR) {
    PprSamplerOptions po;
    po.alpha = config.ppr().alpha();
    po.eps = config.ppr().eps();
    po.max_nodes_per_seed = config.ppr().max_nodes_per_seed();
    po.with_node_features = config.with_node_features();
    po.with_labels = config.with_labels();
    po.peers = cluster_.load();
    po.remote_cache = cache;
    sampler = PprSampler::Create(partition_.get(), po);
  } else {
    NeighborSamplerOptions so;
    so.fanouts.assign(config.num_neighbors().begin(), config.num_neighbors().end());
    for (const auto& [name, f] : config.num_neighbors_by_type()) {
      so.fanouts_by_type[name].assign(f.per_hop().begin(), f.per_hop().end());
    }
    so.replace = config.replace();
    so.with_edge_ids = config.with_edge_ids();
    so.with_node_features = config.with_node_features();
    so.with_labels = config.with_labels();
    so.with_edge_features = config.with_edge_features();
    so.limits.max_hops = options_.max_hops;
    so.limits.max_fanout = options_.max_fanout;
    so.peers = cluster_.load();
    so.remote_cache = cache;
    if (config.kind() == v1::SAMPLER_KIND_SUBGRAPH) {
      sampler = SubgraphSampler::Create(partition_.get(), so);
    } else {
      sampler = NeighborSampler::Create(partition_.get(), so);
    }
  }
  absl::Status status;
  if (!sampler.ok()) {
    status = InField(sampler.status(), "config");
  } else {
    entry->sampler = *std::move(sampler);
    entry->num_workers = req.options().num_workers() > 0 ? req.options().num_workers() : options_.default_num_workers;
    for (int i = 0; i < entry->num_workers; ++i) entry->scratch.push_back(entry->sampler->NewScratch());
    entry->subgraph.resize(entry->num_workers);
    entry->ablp.resize(entry->num_workers);
    scheduler::BackendOptions bo;
    bo.num_workers = entry->num_workers;
    bo.max_in_flight_per_channel = req.options().max_in_flight_per_channel() > 0
                                       ? req.options().max_in_flight_per_channel()
                                       : options_.default_max_in_flight;
    bo.max_buffered_messages = options_.default_buffer_messages;
    bo.max_buffered_bytes = options_.default_buffer_bytes;
    bo.speculative_batches = options_.sample_ahead_batches;
    bo.name = entry->key;
    BackendEntry* e = entry.get();
    const Partition* partition = partition_.get();
    // Runs on a worker thread: sample, then build the wire message there, off the gRPC threads.
    entry->backend = std::make_shared<scheduler::Backend>(
        bo, [e, partition](const scheduler::BatchTask& t) -> absl::StatusOr<scheduler::Batch> {
          SeedBatch b;
          b.node_type = static_cast<int>(t.context);
          b.ids = t.seeds;
          b.size = t.num_seeds;
          b.seed = t.seed;
          b.epoch = t.epoch;
          b.batch_index = t.batch_index;
          // The subgraph is copied into the message below, so each worker reuses its own.
          SampledSubgraph& g = e->subgraph[t.worker];
          const auto* sampling = static_cast<const ChannelSampling*>(t.attachment);
          if (sampling != nullptr && sampling->ablp != nullptr) {
            AblpBatch& labels = e->ablp[t.worker];
            if (auto s = sampling->ablp->MakeBatch(t.seeds, t.num_seeds, t.seed, t.epoch, t.batch_index, &labels);
                !s.ok()) {
              return s;
            }
            b.ablp = &labels;
          }
          SharedBufferPool* pool = sampling != nullptr ? sampling->pool.get() : nullptr;
          // Shared memory: features are gathered straight into the message's buffer.
          SharedLayout layout;
          if (pool != nullptr) GatherIntoSharedBuffer(pool, &g, &layout);
          absl::Status sampled = e->sampler->Sample(b, e->scratch[t.worker].get(), &g);
          g.feature_target = nullptr;
          if (!sampled.ok()) return sampled;
          auto wire = std::make_shared<WireMessage>();
          v1::SampledMessage* msg = &wire->msg;
          msg->set_channel_id(t.channel_id);
          msg->set_epoch(t.epoch);
          msg->set_batch_index(t.batch_index);
          msg->set_num_batches(t.num_batches);
          size_t bytes;
          if (pool != nullptr) {
            if (auto s = ToSharedSampledMessage(*partition, g, pool, &layout, msg); !s.ok()) return s;
            wire->shared = std::move(layout.use);
            bytes = msg->ByteSizeLong() + wire->shared->file->size();
          } else {
            ToSampledMessage(*partition, g, msg);
            bytes = msg->ByteSizeLong();
          }
          return scheduler::Batch{std::move(wire), bytes};
        });
  }

  std::vector<std::function<void(absl::Status)>> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters.swap(entry->waiters);
    if (status.ok()) {
      entry->state = BackendEntry::State::kReady;
    } else {
      // A failed creation leaves nothing behind; a later call may try again.
      backends_by_key_.erase(entry->key);
      backends_.erase(entry->id);
    }
  }
  if (status.ok()) {
    Logger("core")->info("backend {} '{}' up: {} workers, batch size {}", entry->id, entry->key,
                         entry->num_workers, req.config().batch_size());
    resp->set_backend_id(entry->id);
    resp->set_created(true);
  } else {
    Logger("core")->debug("backend '{}' failed: {}", entry->key, status.ToString());
  }
  done(status);
  for (auto& w : waiters) w(status);
}

absl::StatusOr<std::vector<int64_t>> Core::ResolveSeeds(const v1::RegisterSamplingInputRequest& req,
                                                        int* node_type, AblpInput* ablp) const {
  switch (req.input_case()) {
    case v1::RegisterSamplingInputRequest::kNodes: {
      auto t = partition_->FindNodeType(req.nodes().node_type());
      if (!t.ok()) return InField(t.status(), "nodes.node_type");
      *node_type = *t;
      if (auto s = CheckOwnedIds(*t, req.nodes().ids(), "nodes.ids"); !s.ok()) return s;
      return std::vector<int64_t>(req.nodes().ids().begin(), req.nodes().ids().end());
    }
    case v1::RegisterSamplingInputRequest::kSplit: {
      auto t = partition_->FindNodeType(req.split().node_type());
      if (!t.ok()) return InField(t.status(), "split.node_type");
      *node_type = *t;
      return SplitIds(req.split().node_type(), req.split().split(), req.split().slice(), "split.");
    }
    case v1::RegisterSamplingInputRequest::kAblp: {
      auto in = LoadAblpInput(*partition_, ToAblpRequest(req.ablp().input()));
      if (!in.ok()) return InField(in.status(), "ablp.input");
      *node_type = in->anchor_type;
      *ablp = *std::move(in);
      return ablp->anchors;
    }
    case v1::RegisterSamplingInputRequest::INPUT_NOT_SET:
      break;
  }
  return Invalid("input: set one of nodes, split or ablp");
}

absl::Status Core::RegisterSamplingInput(const v1::RegisterSamplingInputRequest& req,
                                         v1::RegisterSamplingInputResponse* resp) {
  if (req.backend_id() == 0) return Invalid("backend_id is required");
  if (req.worker_key().size() > options_.max_key_length) {
    return TooBig(absl::StrCat("worker_key is longer than ", options_.max_key_length, " bytes"));
  }
  const auto& buf = req.buffer();
  if (buf.max_messages() < 0 || buf.max_bytes() < 0) {
    return Invalid("buffer.max_messages and buffer.max_bytes must be >= 0 (0 = server default)");
  }
  if (buf.max_messages() > options_.max_buffer_messages) {
    return TooBig(absl::StrCat("buffer.max_messages ", buf.max_messages(), " exceeds the limit ",
                               options_.max_buffer_messages));
  }
  if (buf.max_bytes() > options_.max_buffer_bytes) {
    return TooBig(absl::StrCat("buffer.max_bytes ", buf.max_bytes(), " exceeds the limit ", options_.max_buffer_bytes));
  }
  if (req.lease_ms() < 0) return Invalid("lease_ms must be >= 0 (0 = server default)");
  if (req.lease_ms() > options_.max_lease_ms) {
    return TooBig(absl::StrCat("lease_ms ", req.lease_ms(), " exceeds the limit ", options_.max_lease_ms));
  }
  if (req.shared_memory() && shared_memory_ == nullptr) {
    return absl::FailedPreconditionError(
        "shared_memory: this server does not offer shared memory (it runs with an empty --shared_memory_dir)");
  }
  int node_type = 0;
  AblpInput ablp;
  auto seeds = ResolveSeeds(req, &node_type, &ablp);
  if (!seeds.ok()) return seeds.status();

  // A link-prediction channel's labeler follows its backend's negative sampling; it is built
  // outside the lock (degree negatives sum a degree array). An unknown backend is refused below.
  std::shared_ptr<const AblpLabeler> labeler;
  if (req.has_ablp()) {
    v1::SamplingConfig config;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = backends_.find(req.backend_id());
      if (it != backends_.end() && it->second->state == BackendEntry::State::kReady) config = it->second->config;
    }
    NegativeOptions negatives;
    negatives.num = config.num_negatives();
    switch (config.negative_sampling()) {
      case v1::NEGATIVE_SAMPLING_UNIFORM: negatives.kind = NegativeOptions::Kind::kUniform; break;
      case v1::NEGATIVE_SAMPLING_DEGREE: negatives.kind = NegativeOptions::Kind::kDegree; break;
      default: negatives.kind = NegativeOptions::Kind::kNone; break;
    }
    auto created = AblpLabeler::Create(partition_.get(), std::move(ablp), negatives);
    if (!created.ok()) return InField(created.status(), "ablp");
    labeler = *std::move(created);
  }

  std::shared_ptr<BackendEntry> backend;
  auto channel = std::make_shared<ChannelEntry>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return absl::UnavailableError("the server is shutting down");
    auto it = backends_.find(req.backend_id());
    if (it == backends_.end() || it->second->state != BackendEntry::State::kReady) {
      return absl::NotFoundError(absl::StrCat("backend_id ", req.backend_id(), " does not exist"));
    }
    if (static_cast<int>(channels_.size()) >= options_.max_channels) {
      return TooBig(absl::StrCat("too many live channels (limit ", options_.max_channels, ")"));
    }
    backend = it->second;
    channel->id = next_channel_id_++;
    channel->backend_id = backend->id;
    channel->worker_key = req.worker_key();
    channel->node_type = node_type;
    channel->num_seeds = static_cast<int64_t>(seeds->size());
    channel->lease_ms = req.lease_ms() > 0 ? req.lease_ms() : options_.default_lease_ms;
    channel->last_activity = Clock::now();
    if (req.shared_memory()) {
      // Idle files are kept for as many batches as the channel can have alive (buffered or in
      // flight, sampled ahead, being written, sent and not yet received, with the trainer),
      // so that a steady stream reuses its files instead of making new ones.
      const int messages = buf.max_messages() > 0 ? buf.max_messages() : options_.default_buffer_messages;
      const int live = 2 * messages + options_.sample_ahead_batches + 3;
      channel->pool = std::make_shared<SharedBufferPool>(shared_memory_.get(), live);
    }
    channel->buffer_bytes = buf.max_bytes() > 0 ? buf.max_bytes() : options_.default_buffer_bytes;
    channel->buffer_messages = buf.max_messages() > 0 ? buf.max_messages() : options_.default_buffer_messages;
    scheduler::ChannelOptions co;
    co.seeds = *std::move(seeds);
    co.batch_size = backend->config.batch_size();
    if (backend->config.shuffle()) {
      co.order = [seed = req.seed()](int64_t epoch, std::vector<int64_t>* ids) { ShuffleForEpoch(seed, epoch, ids); };
    }
    co.drop_last = backend->config.drop_last();
    co.seed = req.seed();
    co.ordered = req.ordered();
    co.max_buffered_messages = buf.max_messages();
    co.max_buffered_bytes = buf.max_bytes();
    co.context = node_type;
    auto sampling = std::make_shared<ChannelSampling>();
    sampling->pool = channel->pool;
    sampling->ablp = std::move(labeler);
    co.attachment = std::move(sampling);
    co.worker_key = req.worker_key();
    if (auto s = backend->backend->AddChannel(channel->id, std::move(co)); !s.ok()) return s;
    backend->channels.insert(channel->id);
    channels_[channel->id] = channel;
  }
  resp->set_channel_id(channel->id);
  resp->set_num_seeds(channel->num_seeds);
  resp->set_num_batches_per_epoch(*backend->backend->NumBatches(channel->id));
  resp->set_lease_ms(channel->lease_ms);
  Logger("core")->info("channel {} registered on backend {} by '{}': {} seeds", channel->id, backend->id,
                       channel->worker_key, channel->num_seeds);
  return absl::OkStatus();
}

absl::Status Core::StartEpoch(const v1::StartEpochRequest& req, v1::StartEpochResponse* resp) {
  if (req.channel_id() == 0) return Invalid("channel_id is required");
  if (req.epoch() < 0) return Invalid(absl::StrCat("epoch must be >= 0, got ", req.epoch()));
  if (auto s = SamplingOpen(); !s.ok()) return s;
  std::shared_ptr<scheduler::Backend> backend;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (destroyed_.count(req.channel_id())) {
      resp->set_outcome(v1::StartEpochResponse::DESTROYED);
      return absl::OkStatus();
    }
    auto it = channels_.find(req.channel_id());
    if (it == channels_.end()) return absl::NotFoundError(absl::StrCat("channel_id ", req.channel_id(), " does not exist"));
    it->second->last_activity = Clock::now();
    backend = backends_.at(it->second->backend_id)->backend;
  }
  auto outcome = backend->StartEpoch(req.channel_id(), req.epoch());
  if (!outcome.ok()) {
    // Destroyed between the lookup and the call.
    if (absl::IsNotFound(outcome.status())) {
      resp->set_outcome(v1::StartEpochResponse::DESTROYED);
      return absl::OkStatus();
    }
    return outcome.status();
  }
  switch (*outcome) {
    case scheduler::StartOutcome::kStarted:
      resp->set_outcome(v1::StartEpochResponse::STARTED);
      break;
    case scheduler::StartOutcome::kAlreadyStarted:
      resp->set_outcome(v1::StartEpochResponse::ALREADY_STARTED);
      break;
    case scheduler::StartOutcome::kStale:
      resp->set_outcome(v1::StartEpochResponse::STALE);
      break;
  }
  auto n = backend->NumBatches(req.channel_id());
  resp->set_num_batches(n.ok() ? *n : 0);
  if (*outcome == scheduler::StartOutcome::kStarted) {
    Logger("core")->info("channel {} epoch {} started: {} batches", req.channel_id(), req.epoch(), resp->num_batches());
  }
  return absl::OkStatus();
}

absl::Status Core::RenewLease(const v1::RenewLeaseRequest& req, v1::RenewLeaseResponse* resp) {
  if (req.channel_id() == 0) return Invalid("channel_id is required");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(req.channel_id());
  if (it == channels_.end()) {
    if (destroyed_.count(req.channel_id())) {
      return absl::FailedPreconditionError(absl::StrCat("channel_id ", req.channel_id(), " was destroyed"));
    }
    return absl::NotFoundError(absl::StrCat("channel_id ", req.channel_id(), " does not exist"));
  }
  it->second->last_activity = Clock::now();
  resp->set_lease_ms(it->second->lease_ms);
  return absl::OkStatus();
}

bool Core::DestroyLocked(std::unique_lock<std::mutex>& lock, uint64_t channel_id) {
  auto it = channels_.find(channel_id);
  if (it == channels_.end()) return false;
  std::shared_ptr<ChannelEntry> c = it->second;
  channels_.erase(it);
  destroyed_.insert(channel_id);
  std::shared_ptr<BackendEntry> b = backends_.at(c->backend_id);
  b->channels.erase(channel_id);
  const bool last = b->channels.empty();
  if (last) {
    backends_.erase(b->id);
    backends_by_key_.erase(b->key);
  }
  if (last) {
    // Joining the workers may wait for a batch being sampled: the watchdog thread does it, so
    // that a gRPC reaction never blocks on it.
    retiring_.push_back(b);
    watchdog_cv_.notify_all();
  }
  // Backend calls notify listeners (streams), which may call back into the core.
  auto sent = std::move(c->sent);
  c->unreceived = 0;
  c->unreceived_bytes = 0;
  lock.unlock();
  b->backend->RemoveChannel(channel_id);
  sent.clear();  // with the pool gone, the channel's files are deleted with their last use
  lock.lock();
  return last;
}

absl::Status Core::DestroySamplingInput(const v1::DestroySamplingInputRequest& req,
                                        v1::DestroySamplingInputResponse* resp) {
  if (req.channel_id() == 0) return Invalid("channel_id is required");
  std::unique_lock<std::mutex> lock(mu_);
  if (destroyed_.count(req.channel_id())) {
    resp->set_destroyed(false);
    return absl::OkStatus();
  }
  if (!channels_.count(req.channel_id())) {
    return absl::NotFoundError(absl::StrCat("channel_id ", req.channel_id(), " does not exist"));
  }
  resp->set_backend_stopped(DestroyLocked(lock, req.channel_id()));
  resp->set_destroyed(true);
  Logger("core")->info("channel {} destroyed", req.channel_id());
  return absl::OkStatus();
}

absl::StatusOr<StreamAttachment> Core::AttachStream(const v1::StreamSampledMessagesRequest& req) {
  if (req.channel_id() == 0) return Invalid("channel_id is required");
  if (req.epoch() < 0) return Invalid(absl::StrCat("epoch must be >= 0, got ", req.epoch()));
  if (req.start_batch() < 0) return Invalid("start_batch must be >= 0");
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return absl::UnavailableError("the server is shutting down");
  auto it = channels_.find(req.channel_id());
  if (it == channels_.end()) {
    if (destroyed_.count(req.channel_id())) {
      return absl::FailedPreconditionError(absl::StrCat("channel_id ", req.channel_id(), " was destroyed"));
    }
    return absl::NotFoundError(absl::StrCat("channel_id ", req.channel_id(), " does not exist"));
  }
  ChannelEntry& c = *it->second;
  if (c.streaming) {
    return absl::AlreadyExistsError(absl::StrCat("channel_id ", c.id, " already has an open stream"));
  }
  StreamAttachment a;
  a.backend = backends_.at(c.backend_id)->backend;
  a.channel_id = c.id;
  a.epoch = req.epoch();
  a.shared_memory = c.pool != nullptr;
  auto stats = a.backend->Describe(c.id);
  if (!stats.ok()) return stats.status();
  if (stats->epoch != req.epoch()) {
    return absl::FailedPreconditionError(
        stats->epoch < 0 ? absl::StrCat("epoch ", req.epoch(), " has not been started; call StartEpoch first")
                         : absl::StrCat("epoch ", req.epoch(), " is not the channel's current epoch ", stats->epoch));
  }
  // A reconnecting reader resumes: from start_batch, or from the start of an epoch whose
  // earlier stream was cancelled. Sampling is deterministic, so it gets exactly those batches.
  if (req.start_batch() > 0 || stats->state == "cancelled") {
    if (req.start_batch() > stats->num_batches) {
      return Invalid(absl::StrCat("start_batch ", req.start_batch(), " is past the epoch's ", stats->num_batches,
                                  " batches"));
    }
    if (auto s = a.backend->ResumeEpoch(c.id, req.epoch(), req.start_batch()); !s.ok()) return s;
    Logger("core")->info("channel {}: epoch {} resumed from batch {}", c.id, req.epoch(), req.start_batch());
  }
  c.streaming = true;
  c.last_activity = Clock::now();
  ++open_streams_;
  return a;
}

void Core::DetachStream(uint64_t channel_id, bool cancelled) {
  std::shared_ptr<scheduler::Backend> backend;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --open_streams_;
    auto it = channels_.find(channel_id);
    if (it == channels_.end()) return;
    it->second->streaming = false;
    it->second->last_activity = Clock::now();
    if (cancelled) backend = backends_.at(it->second->backend_id)->backend;
  }
  if (backend) {
    backend->CancelEpoch(channel_id);
    Logger("core")->info("channel {}: stream cancelled by the client; its epoch's remaining work is dropped",
                         channel_id);
  }
}

bool Core::SharedBacklogFull(uint64_t channel_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(channel_id);
  if (it == channels_.end()) return false;
  const ChannelEntry& c = *it->second;
  return c.SharedBacklogFull();
}

void Core::HandOff(uint64_t channel_id, std::shared_ptr<SharedUse> use) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(channel_id);
  if (it == channels_.end()) return;  // destroyed: the file goes with the last reference
  ChannelEntry& c = *it->second;
  ++c.unreceived;
  c.unreceived_bytes += static_cast<int64_t>(use->file->size());
  const uint64_t id = use->id;
  c.sent[id] = ChannelEntry::Sent{std::move(use), false};
}

absl::Status Core::ReleaseSharedBuffers(const v1::ReleaseSharedBuffersRequest& req,
                                        v1::ReleaseSharedBuffersResponse* resp) {
  if (req.channel_id() == 0) return Invalid("channel_id is required");
  for (const auto* ids : {&req.received_ids(), &req.freed_ids()}) {
    if (ids->size() > options_.max_ids_per_request) {
      return TooBig(absl::StrCat(ids == &req.freed_ids() ? "freed_ids" : "received_ids", " has ", ids->size(),
                                 " ids; the limit is ", options_.max_ids_per_request));
    }
  }
  std::vector<std::shared_ptr<SharedUse>> freed;
  std::shared_ptr<scheduler::Backend> backend;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = channels_.find(req.channel_id());
    if (it == channels_.end()) {
      if (destroyed_.count(req.channel_id())) return absl::OkStatus();  // its buffers are gone already
      return absl::NotFoundError(absl::StrCat("channel_id ", req.channel_id(), " does not exist"));
    }
    ChannelEntry& c = *it->second;
    const bool was_full = c.SharedBacklogFull();
    auto receive = [&c](ChannelEntry::Sent& s) {
      if (s.received) return;
      s.received = true;
      --c.unreceived;
      c.unreceived_bytes -= static_cast<int64_t>(s.use->file->size());
    };
    for (uint64_t id : req.received_ids()) {
      auto s = c.sent.find(id);
      if (s != c.sent.end()) receive(s->second);
    }
    for (uint64_t id : req.freed_ids()) {
      auto s = c.sent.find(id);
      if (s == c.sent.end()) continue;
      receive(s->second);
      freed.push_back(std::move(s->second.use));
      c.sent.erase(s);
    }
    c.last_activity = Clock::now();
    if (was_full) backend = backends_.at(c.backend_id)->backend;
  }
  resp->set_freed(static_cast<int32_t>(freed.size()));
  freed.clear();  // files go back to the pool, outside the lock
  if (backend) backend->Wake(req.channel_id());  // a held-back stream may go on
  return absl::OkStatus();
}

void Core::Touch(uint64_t channel_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(channel_id);
  if (it != channels_.end()) it->second->last_activity = Clock::now();
}

// ----- Introspection ----------------------------------------------------------------------

void Core::FillChannelStats(const ChannelEntry& c, v1::ChannelStats* out) const {
  out->set_channel_id(c.id);
  out->set_backend_id(c.backend_id);
  out->set_worker_key(c.worker_key);
  out->set_num_seeds(c.num_seeds);
  out->set_streaming(c.streaming);
  out->set_shared_memory(c.pool != nullptr);
  out->set_unreleased_buffers(static_cast<int32_t>(c.sent.size()));
  out->set_unreceived_bytes(c.unreceived_bytes);
  if (c.pool != nullptr) {
    out->set_pooled_buffers(c.pool->num_files());
    out->set_pooled_bytes(c.pool->bytes());
  }
  const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - c.last_activity).count();
  out->set_lease_remaining_ms(c.streaming ? c.lease_ms : std::max<int64_t>(0, c.lease_ms - idle));
  auto s = backends_.at(c.backend_id)->backend->Describe(c.id);
  if (!s.ok()) return;
  out->set_state(s->state);
  out->set_epoch(s->epoch);
  out->set_num_batches(s->num_batches);
  out->set_batches_sampled(s->batches_sampled);
  out->set_batches_delivered(s->batches_delivered);
  out->set_in_flight(s->in_flight);
  out->set_buffered_messages(s->buffered_messages);
  out->set_buffered_bytes(s->buffered_bytes);
  out->set_total_batches_sampled(s->total_batches_sampled);
  out->set_sampled_ahead(s->speculative_buffered);
  out->set_error(s->error);
}

void Core::FillBackendStats(const BackendEntry& b, v1::BackendStats* out) const {
  out->set_backend_id(b.id);
  out->set_backend_key(b.key);
  *out->mutable_config() = b.config;
  out->set_num_workers(b.num_workers);
  if (!b.backend) return;
  const scheduler::BackendStats s = b.backend->Stats();
  out->set_num_channels(s.num_channels);
  out->set_num_active_channels(s.num_active_channels);
  out->set_num_runnable_channels(s.num_runnable_channels);
  out->set_total_batches_sampled(s.total_batches_sampled);
  for (uint64_t id : b.channels) {
    auto it = channels_.find(id);
    if (it != channels_.end()) FillChannelStats(*it->second, out->add_channels());
  }
}

absl::Status Core::DescribeChannel(const v1::DescribeChannelRequest& req, v1::ChannelStats* resp) const {
  if (req.channel_id() == 0) return Invalid("channel_id is required");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(req.channel_id());
  if (it == channels_.end()) {
    if (destroyed_.count(req.channel_id())) {
      resp->set_channel_id(req.channel_id());
      resp->set_state("destroyed");
      return absl::OkStatus();
    }
    return absl::NotFoundError(absl::StrCat("channel_id ", req.channel_id(), " does not exist"));
  }
  FillChannelStats(*it->second, resp);
  return absl::OkStatus();
}

absl::Status Core::DescribeBackend(const v1::DescribeBackendRequest& req, v1::BackendStats* resp) const {
  if (req.backend_id() == 0) return Invalid("backend_id is required");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = backends_.find(req.backend_id());
  if (it == backends_.end()) return absl::NotFoundError(absl::StrCat("backend_id ", req.backend_id(), " does not exist"));
  FillBackendStats(*it->second, resp);
  return absl::OkStatus();
}

absl::Status Core::GetServerStats(const v1::GetServerStatsRequest&, v1::ServerStats* resp) const {
  std::lock_guard<std::mutex> lock(mu_);
  resp->set_uptime_seconds(std::chrono::duration<double>(Clock::now() - started_).count());
  int64_t bytes = 0;
  for (const auto& [id, b] : backends_) {
    auto* out = resp->add_backends();
    FillBackendStats(*b, out);
    for (const auto& c : out->channels()) bytes += c.buffered_bytes();
  }
  resp->set_buffered_bytes(bytes);
  resp->set_open_streams(open_streams_.load());
  resp->set_leases_expired(leases_expired_);
  if (const Cluster* cluster = cluster_.load(); cluster != nullptr) cluster->FillStats(resp);
  if (remote_cache_ != nullptr) resp->set_peer_cache_bytes(remote_cache_->bytes());
  return absl::OkStatus();
}

int Core::num_channels() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(channels_.size());
}

std::string Core::StateSummary() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = absl::StrCat(backends_.size(), " backends, ", channels_.size(), " channels, ",
                                 open_streams_.load(), " streams");
  for (const auto& [id, b] : backends_) {
    if (!b->backend) continue;
    const scheduler::BackendStats s = b->backend->Stats();
    absl::StrAppend(&out, "; backend ", id, " '", b->key, "': registered ", s.num_channels, ", active ",
                    s.num_active_channels, ", runnable ", s.num_runnable_channels, ", buffered ",
                    s.buffered_bytes, " B");
    for (const auto& c : s.channels) {
      absl::StrAppend(&out, " [ch ", c.channel_id, " ", c.state, " epoch ", c.epoch, " ", c.batches_delivered, "/",
                      c.num_batches, "]");
    }
  }
  return out;
}

void Core::StopRetired(std::unique_lock<std::mutex>& lock) {
  while (!retiring_.empty()) {
    std::vector<std::shared_ptr<BackendEntry>> batch;
    batch.swap(retiring_);
    lock.unlock();
    for (const auto& b : batch) {
      b->backend->Stop();
      Logger("core")->info("backend {} '{}' stopped: its last channel was destroyed", b->id, b->key);
    }
    lock.lock();
  }
}

void Core::WatchdogLoop() {
  auto last_log = Clock::now();
  std::string last_summary;
  std::unique_lock<std::mutex> lock(mu_);
  while (!shutting_down_) {
    watchdog_cv_.wait_for(lock, std::chrono::milliseconds(options_.lease_check_interval_ms));
    StopRetired(lock);
    if (shutting_down_) break;
    const auto now = Clock::now();
    std::vector<uint64_t> expired;
    for (const auto& [id, c] : channels_) {
      if (!c->streaming && now - c->last_activity > std::chrono::milliseconds(c->lease_ms)) expired.push_back(id);
    }
    for (uint64_t id : expired) {
      if (!channels_.count(id)) continue;
      Logger("core")->warn("channel {}: lease expired, destroying it", id);
      DestroyLocked(lock, id);
      ++leases_expired_;
    }
    if (options_.state_log_interval_s > 0 &&
        now - last_log >= std::chrono::seconds(options_.state_log_interval_s)) {
      last_log = now;
      lock.unlock();
      std::string summary = StateSummary();
      if (summary != last_summary) Logger("core")->info("state: {}", summary);
      last_summary = std::move(summary);
      lock.lock();
    }
  }
}

int Core::Shutdown() {
  std::lock_guard<std::mutex> once(shutdown_mu_);
  std::vector<std::shared_ptr<BackendEntry>> idle_backends;
  int destroyed = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (shutting_down_ && !watchdog_.joinable()) return 0;
    shutting_down_ = true;
    while (!channels_.empty()) {
      const uint64_t id = channels_.begin()->first;
      Logger("core")->info("shutdown: destroying live channel {} ('{}')", id, channels_.begin()->second->worker_key);
      DestroyLocked(lock, id);
      ++destroyed;
    }
    for (auto& [id, b] : backends_) idle_backends.push_back(b);
    backends_.clear();
    backends_by_key_.clear();
  }
  watchdog_cv_.notify_all();
  for (auto& b : idle_backends) {
    if (b->backend) b->backend->Stop();
  }
  if (watchdog_.joinable()) watchdog_.join();
  {
    // Backends retired after the watchdog's last round.
    std::unique_lock<std::mutex> lock(mu_);
    StopRetired(lock);
  }
  if (destroyed > 0 || !idle_backends.empty()) {
    Logger("core")->info("shutdown: destroyed {} live channels and stopped {} idle backends", destroyed,
                         idle_backends.size());
  }
  return destroyed;
}

}  // namespace graphstore
