#include "server/service/queries.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/sampling/draw.h"
#include "server/sampling/gather.h"
#include "server/sampling/row_copy.h"
#include "server/sampling/hop_codec.h"
#include "server/sampling/neighbor_draw.h"
#include "server/service/config.h"
#include "server/service/message.h"
#include "server/util/field.h"
#include "server/util/prefetch.h"

namespace graphstore {
namespace {

// Refuses a response of `bytes` above the limit, before it is built; `what` says which request
// fields make it that large.
absl::Status CheckResponseBytes(double bytes, int64_t limit, const std::string& what) {
  if (bytes <= static_cast<double>(limit)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("the response would hold ", static_cast<int64_t>(bytes / (1 << 20)), " MiB (", what,
                             "), above the largest message of ", limit >> 20,
                             " MiB (--max_message_mb); ask for fewer ids per request"));
}

}  // namespace

void PartitionQueries::FillDatasetMeta(v1::DatasetMeta* resp) const {
  const auto& m = partition_->manifest();
  resp->set_dataset_name(m.dataset_name());
  resp->set_num_partitions(m.num_partitions());
  resp->set_partition_id(m.partition_id());
  resp->set_edge_dir(partition_->rows_are_sources() ? v1::EDGE_DIRECTION_OUT : v1::EDGE_DIRECTION_IN);
  resp->set_partition_method(m.partition_method());
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
    t->set_has_times(n.has_times);
    t->set_has_raw_ids(n.raw_ids.is_open());
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
    t->set_has_weights(e.weights_data() != nullptr);
    t->set_has_times(e.times_data() != nullptr);
    t->mutable_features()->set_dim(e.feature_dim);
    if (e.feature_dim > 0) t->mutable_features()->set_dtype(ToProtoDtype(e.feature_dtype));
  }
  resp->set_is_heterogeneous(partition_->node_types().size() > 1 || partition_->edge_types().size() > 1);
}

absl::Status PartitionQueries::LookupPartitions(const v1::LookupPartitionsRequest& req,
                                    v1::LookupPartitionsResponse* resp) const {
  auto t = partition_->FindNodeType(req.node_type());
  if (!t.ok()) return t.status();
  if (req.ids_size() > options_->max_ids_per_request) {
    return absl::ResourceExhaustedError(absl::StrCat("ids has ", req.ids_size(), " entries; the limit is ", options_->max_ids_per_request));
  }
  if (auto s = CheckResponseBytes(4.0 * req.ids_size(), options_->max_response_bytes,
                                  absl::StrCat(req.ids_size(), " ids x 4 bytes"));
      !s.ok()) {
    return s;
  }
  const NodeTypeStore& n = partition_->node_type(*t);
  std::vector<int32_t> out(req.ids_size());
  for (int i = 0; i < req.ids_size(); ++i) {
    const int64_t id = req.ids(i);
    if (id < 0 || id >= n.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat("ids[", i, "]=", id, " is not a '", n.name, "' node id (0 <= id < ",
                                  n.num_nodes, ")"));
    }
    out[i] = n.Owner(id);
  }
  SetTensor(v1::DTYPE_INT32, {static_cast<int64_t>(out.size())}, out.data(), out.size() * 4,
            resp->mutable_partitions());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> PartitionQueries::SplitIds(const std::string& node_type, const std::string& split,
                                                                const v1::ServerSlice& slice) const {
  auto t = partition_->FindNodeType(node_type);
  if (!t.ok()) return InField(t.status(), "node_type");
  if (auto bad = CheckSlice(slice.rank(), slice.world_size()); !bad.ok()) return bad;
  const NodeTypeStore& n = partition_->node_type(*t);
  const int64_t* ids = n.global_ids();
  int64_t count = n.num_local;
  if (!split.empty()) {
    auto it = n.splits.find(split);
    if (it == n.splits.end()) {
      std::string known;
      for (const auto& [name, f] : n.splits) absl::StrAppend(&known, known.empty() ? "" : ", ", name);
      return InvalidField("split", absl::StrCat(" '", split, "' does not exist for node type '", n.name,
                                  "' (splits: ", known.empty() ? "none" : known, ")"));
    }
    ids = it->second.data<int64_t>();
    count = it->second.num_elements();
  }
  const auto [begin, end] = SliceRange(count, slice.rank(), slice.world_size());
  return std::vector<int64_t>(ids + begin, ids + end);
}

absl::Status PartitionQueries::GetNodeIds(const v1::GetNodeIdsRequest& req, v1::GetNodeIdsResponse* resp) const {
  auto ids = SplitIds(req.node_type(), req.split(), req.slice());
  if (!ids.ok()) return ids.status();
  if (auto s = CheckResponseBytes(8.0 * ids->size(), options_->max_response_bytes,
                                  absl::StrCat(ids->size(), " ids x 8 bytes; split the read with slice"));
      !s.ok()) {
    return s;
  }
  SetInt64Tensor(*ids, resp->mutable_ids());
  return absl::OkStatus();
}

absl::Status PartitionQueries::CheckOwnedIds(int node_type, const google::protobuf::RepeatedField<int64_t>& ids,
                                 const std::string& field) const {
  return CheckIds(node_type, ids, field, /*owned=*/true);
}

absl::Status PartitionQueries::CheckIds(int node_type, const google::protobuf::RepeatedField<int64_t>& ids,
                                        const std::string& field, bool owned) const {
  if (ids.size() > options_->max_ids_per_request) {
    return FieldError(absl::StatusCode::kResourceExhausted, field,
                      absl::StrCat(" has ", ids.size(), " entries; the limit is ", options_->max_ids_per_request));
  }
  const NodeTypeStore& n = partition_->node_type(node_type);
  const int ahead = static_cast<int>(kPrefetchAhead);
  for (int i = 0; i < ids.size(); ++i) {
    if (owned && i + ahead < ids.size() && ids[i + ahead] >= 0 && ids[i + ahead] < n.num_nodes) {
      n.owners.Prefetch(ids[i + ahead]);
    }
    const int64_t id = ids[i];
    if (id < 0 || id >= n.num_nodes) {
      return InvalidField(absl::StrCat(field, "[", i, "]"),
                          absl::StrCat("=", id, " is not a '", n.name, "' node id (0 <= id < ", n.num_nodes, ")"));
    }
    if (owned && n.Owner(id) != partition_->partition_id()) {
      return InvalidField(absl::StrCat(field, "[", i, "]"), absl::StrCat("=", id, " is owned by partition ", n.Owner(id),
                                                                         ", not by this server's partition ",
                                                                         partition_->partition_id()));
    }
  }
  return absl::OkStatus();
}

absl::Status PartitionQueries::GetNodeFeatures(const v1::GetNodeFeaturesRequest& req, v1::GetNodeFeaturesResponse* resp) const {
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
  {
    const double row = static_cast<double>(n.feature_dim) * DtypeSize(n.feature_dtype) + (req.with_labels() ? 8 : 0);
    if (auto s = CheckResponseBytes(row * req.ids_size(), options_->max_response_bytes,
                                    absl::StrCat(req.ids_size(), " ids x ", row, " bytes per row"));
        !s.ok()) {
      return s;
    }
  }
  // Each node's row within the partition: lookups at random in the book (NodeBook), asked
  // for well ahead so that many load at once.
  const int ids = req.ids_size();
  std::vector<int64_t> at(static_cast<size_t>(ids));
  for (int i = 0; i < ids; ++i) {
    if (i + static_cast<int>(kPrefetchAhead) < ids) n.owners.Prefetch(req.ids(i + static_cast<int>(kPrefetchAhead)));
    at[static_cast<size_t>(i)] = n.OwnerRow(req.ids(i));
  }
  if (req.with_labels()) {
    std::vector<int64_t> labels(at.size());
    const int64_t* stored = n.labels.data<int64_t>();
    for (size_t i = 0; i < at.size(); ++i) {
      if (i + kPrefetchAhead < at.size()) PrefetchRead(stored + at[i + kPrefetchAhead]);
      labels[i] = stored[at[i]];
    }
    SetInt64Tensor(labels, resp->mutable_labels());
  }
  if (counters_ != nullptr) counters_->node_rows_answered.fetch_add(ids, std::memory_order_relaxed);
  if (req.encoding() != v1::FEATURE_ENCODING_UNSPECIFIED) return EncodedFeatures(*t, req, resp);
  const size_t row = static_cast<size_t>(n.feature_dim) * DtypeSize(n.feature_dtype);
  std::string* data = resp->mutable_features()->mutable_data();
  data->reserve(row * at.size());  // appended to, not written over zeros
  const char* src = static_cast<const char*>(n.features.raw());
  std::vector<const char*> rows(at.size());
  for (size_t i = 0; i < at.size(); ++i) rows[i] = src + at[i] * row;
  // Rows lie at random too, as a batch's do (server/sampling/row_copy.h).
  CopyRowsAhead(rows.data(), rows.size(), row, [data, row](size_t, const char* r) { data->append(r, row); });
  resp->mutable_features()->set_dtype(ToProtoDtype(n.feature_dtype));
  resp->mutable_features()->add_shape(req.ids_size());
  resp->mutable_features()->add_shape(n.feature_dim);
  return absl::OkStatus();
}

absl::Status PartitionQueries::EncodedFeatures(int type, const v1::GetNodeFeaturesRequest& req,
                                               v1::GetNodeFeaturesResponse* resp) const {
  auto output = outputs_->ForChannel(req.encoding(), 0);
  if (!output.ok()) return InField(output.status(), "encoding");
  SampledNodes nodes;
  nodes.ids.assign(req.ids().begin(), req.ids().end());
  if (auto s = GatherNodeData(*partition_, type, true, false, output->get(), nullptr, &nodes); !s.ok()) return s;
  SetTensor(FeatureDtype(nodes), {static_cast<int64_t>(nodes.ids.size()), nodes.feature_dim},
            nodes.feature_data(), nodes.feature_bytes(), resp->mutable_features());
  if (nodes.feature_scale != nullptr) {
    const int64_t dim = nodes.feature_dim;
    SetTensor(v1::DTYPE_FLOAT32, {dim}, nodes.feature_scale, 4 * dim, resp->mutable_feature_scale());
    SetTensor(v1::DTYPE_FLOAT32, {dim}, nodes.feature_offset, 4 * dim, resp->mutable_feature_offset());
  }
  return absl::OkStatus();
}

template <typename Value>
absl::Status PartitionQueries::AnswerOwnedInt64s(int node_type, const google::protobuf::RepeatedField<int64_t>& ids,
                                                 Value value, v1::Tensor* out) const {
  if (auto s = CheckOwnedIds(node_type, ids, "ids"); !s.ok()) return s;
  if (auto s = CheckResponseBytes(8.0 * ids.size(), options_->max_response_bytes,
                                  absl::StrCat(ids.size(), " ids x 8 bytes"));
      !s.ok()) {
    return s;
  }
  const NodeTypeStore& n = partition_->node_type(node_type);
  std::vector<int64_t> values(ids.size());
  for (int i = 0; i < ids.size(); ++i) values[i] = value(n.OwnerRow(ids[i]));
  SetInt64Tensor(values, out);
  return absl::OkStatus();
}

absl::Status PartitionQueries::GetNodeLabels(const v1::GetNodeLabelsRequest& req, v1::GetNodeLabelsResponse* resp) const {
  auto t = partition_->FindNodeType(req.node_type());
  if (!t.ok()) return t.status();
  const NodeTypeStore& n = partition_->node_type(*t);
  if (!n.labels.is_open()) {
    return absl::FailedPreconditionError(absl::StrCat("node type '", n.name, "' has no labels"));
  }
  const int64_t* labels = n.labels.data<int64_t>();
  auto s = AnswerOwnedInt64s(*t, req.ids(), [labels](int64_t row) { return labels[row]; }, resp->mutable_labels());
  if (!s.ok()) return s;
  if (counters_ != nullptr) counters_->node_labels_answered.fetch_add(req.ids_size(), std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status PartitionQueries::GetNodeTimes(const v1::GetNodeTimesRequest& req, v1::GetNodeTimesResponse* resp) const {
  auto t = partition_->FindNodeType(req.node_type());
  if (!t.ok()) return t.status();
  const NodeTypeStore& n = partition_->node_type(*t);
  if (!n.has_times) {
    return absl::FailedPreconditionError(absl::StrCat("node_type: node type '", n.name, "' stores no node times (book/",
                                                      n.name, ".time.npy)"));
  }
  const int64_t* times = n.own_times.data();
  return AnswerOwnedInt64s(*t, req.ids(), [times](int64_t row) { return times[row]; }, resp->mutable_times());
}

absl::Status PartitionQueries::FindDegreeNodes(const v1::FindDegreeNodesRequest& req,
                                               v1::FindDegreeNodesResponse* resp) const {
  auto t = partition_->FindEdgeType(req.edge_type());
  if (!t.ok()) return t.status();
  const EdgeTypeStore& e = partition_->edge_type(*t);
  if (!e.dst_degree.is_open()) {
    return absl::FailedPreconditionError(absl::StrCat("edge_type: edge type '", e.name,
                                                      "' stores no destination degrees (dst_degree.npy)"));
  }
  if (req.positions_size() > options_->max_ids_per_request) {
    return absl::ResourceExhaustedError(absl::StrCat("positions has ", req.positions_size(),
                                                     " entries; the limit is ", options_->max_ids_per_request));
  }
  const DegreeIndex& index = partition_->DegreeSums(e, options_->whole_degree_index_bytes);
  resp->set_positions_begin(index.first_position());
  resp->set_positions_end(index.end_position());
  resp->set_total(index.total());
  resp->mutable_nodes()->Reserve(req.positions_size());
  for (int i = 0; i < req.positions_size(); ++i) {
    const int64_t u = req.positions(i);
    if (u < index.first_position() || u >= index.end_position()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "positions[", i, "]=", u, " is outside this server's range [", index.first_position(), ", ",
          index.end_position(), ") of edge type '", e.name, "''s running degree sum (of ", index.total(), ")"));
    }
    resp->add_nodes(index.NodeAt(u));
  }
  return absl::OkStatus();
}

absl::Status PartitionQueries::GetEdgeFeatures(const v1::GetEdgeFeaturesRequest& req, v1::GetEdgeFeaturesResponse* resp) const {
  auto t = partition_->FindEdgeType(req.edge_type());
  if (!t.ok()) return t.status();
  const EdgeTypeStore& e = partition_->edge_type(*t);
  if (e.feature_dim == 0) {
    return absl::FailedPreconditionError(absl::StrCat("edge type '", e.name, "' has no features"));
  }
  if (req.ids_size() > options_->max_ids_per_request) {
    return absl::ResourceExhaustedError(absl::StrCat("ids has ", req.ids_size(), " entries; the limit is ", options_->max_ids_per_request));
  }
  // Edge id -> CSR position: the id itself without edge_ids.npy, else a binary search of the
  // positions sorted by edge id.
  const std::vector<int64_t>* by_id = e.edge_ids.is_open() ? &EdgePositionsById(*t) : nullptr;
  const int64_t* stored = e.edge_ids.is_open() ? e.edge_ids.data<int64_t>() : nullptr;
  std::vector<int64_t> pos;
  pos.reserve(req.ids_size());
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
    if (p < 0 && req.only_stored()) continue;
    if (p < 0) return absl::InvalidArgumentError(absl::StrCat("ids[", i, "]=", id, " is not an edge stored in this partition"));
    pos.push_back(p);
    if (req.only_stored()) resp->add_positions(i);
  }
  const size_t row = static_cast<size_t>(e.feature_dim) * DtypeSize(e.feature_dtype);
  if (auto s = CheckResponseBytes(static_cast<double>(row) * pos.size(), options_->max_response_bytes,
                                  absl::StrCat(pos.size(), " ids x ", row, " bytes per row"));
      !s.ok()) {
    return s;
  }
  std::string* data = resp->mutable_features()->mutable_data();
  data->resize(row * pos.size());
  const char* src = static_cast<const char*>(e.features.raw());
  for (size_t i = 0; i < pos.size(); ++i) std::memcpy(&(*data)[i * row], src + pos[i] * row, row);
  resp->mutable_features()->set_dtype(ToProtoDtype(e.feature_dtype));
  resp->mutable_features()->add_shape(static_cast<int64_t>(pos.size()));
  resp->mutable_features()->add_shape(e.feature_dim);
  return absl::OkStatus();
}

const std::vector<int64_t>& PartitionQueries::EdgePositionsById(int edge_type) const {
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

namespace {

// RESOURCE_EXHAUSTED when the most neighbours `req` can draw along `e` (each node's degree, or
// its fanout) would make a response above `limit` bytes. The fanout alone usually bounds it
// well enough, and then no row is read twice.
absl::Status CheckDrawBytes(const Partition& partition, const EdgeTypeStore& e, const v1::SampleNeighborsRequest& req,
                            int64_t limit) {
  const double per_neighbor = 8.0 + (req.with_edge_ids() ? 8 : 0) +
                              (req.with_edge_features() ? static_cast<double>(e.feature_dim) * DtypeSize(e.feature_dtype) : 0);
  double most = static_cast<double>(req.fanout()) * req.ids_size();
  if (req.fanout() < 0 || 8.0 * req.ids_size() + most * per_neighbor > static_cast<double>(limit)) {
    const NodeTypeStore& rows = partition.node_type(e.row_type);
    const int64_t* indptr = e.indptr_data();
    most = 0;
    for (const int64_t id : req.ids()) {
      const int64_t row = rows.OwnerRow(id);
      const int64_t degree = indptr[row + 1] - indptr[row];
      most += req.fanout() < 0 ? degree : (req.replace() ? (degree > 0 ? req.fanout() : 0) : std::min<int64_t>(degree, req.fanout()));
    }
  }
  return CheckResponseBytes(8.0 * req.ids_size() + most * per_neighbor, limit,
                            absl::StrCat("up to ", static_cast<int64_t>(most), " neighbours of ", req.ids_size(),
                                         " ids at fanout ", req.fanout()));
}

}  // namespace

absl::Status PartitionQueries::SampleNeighbors(const v1::SampleNeighborsRequest& req, v1::SampleNeighborsResponse* resp) const {
  auto t = partition_->FindEdgeType(req.edge_type());
  if (!t.ok()) return t.status();
  const EdgeTypeStore& e = partition_->edge_type(*t);
  if (req.fanout() < -1) return absl::InvalidArgumentError(absl::StrCat("fanout ", req.fanout(), " is below -1"));
  if (req.fanout() > options_->sampling.max_fanout) {
    return absl::ResourceExhaustedError(absl::StrCat("fanout ", req.fanout(), " exceeds the limit ", options_->sampling.max_fanout));
  }
  if (auto s = CheckOwnedIds(e.row_type, req.ids(), "ids"); !s.ok()) return s;
  if (req.with_edge_features() && e.feature_dim == 0) {
    return absl::FailedPreconditionError(absl::StrCat("with_edge_features: edge type '", e.name, "' has no features"));
  }
  if (req.weighted() && e.weights_data() == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("weighted: edge type '", e.name, "' stores no edge weights"));
  }
  if (!v1::TemporalStrategy_IsValid(req.temporal_strategy())) {
    return absl::InvalidArgumentError(absl::StrCat("temporal_strategy ", req.temporal_strategy(), " is unknown"));
  }
  const bool temporal = req.temporal_strategy() != v1::TEMPORAL_STRATEGY_NONE;
  if (temporal ? req.times_size() != req.ids_size() : req.times_size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("times has ", req.times_size(), " entries; give ",
                                temporal ? "one per id with a temporal_strategy" : "none without a temporal_strategy"));
  }
  if (req.temporal_strategy() == v1::TEMPORAL_STRATEGY_LAST && (req.replace() || req.weighted())) {
    return absl::InvalidArgumentError("temporal_strategy LAST takes the most recent neighbours; it takes neither replace nor weighted");
  }
  if (auto s = CheckDrawBytes(*partition_, e, req, options_->max_response_bytes); !s.ok()) return s;
  if (req.excluded_size() % 2 != 0) return absl::InvalidArgumentError("excluded must hold (node, neighbour) pairs");
  if (req.excluded_size() > options_->max_ids_per_request) {
    return absl::ResourceExhaustedError(absl::StrCat("excluded has ", req.excluded_size(), " entries; the limit is ",
                               options_->max_ids_per_request));
  }
  std::vector<std::pair<int64_t, int64_t>> excluded;
  const DrawSpec spec = DecodeHop(req, e.name, &excluded);
  NeighborDraw draw;
  DrawOwnedNeighbors(*partition_, *t, req.ids().data(), static_cast<size_t>(req.ids_size()), spec, &draw);
  SetCountTensor(draw.counts, req.narrow_counts(), req.compact(), resp->mutable_counts());
  SetIdTensor(draw.neighbors, req.compact(), resp->mutable_neighbors());
  if (req.with_edge_ids()) SetIdTensor(draw.edge_ids, req.compact(), resp->mutable_edge_ids());
  if (req.with_edge_features()) {
    SetTensor(ToProtoDtype(e.feature_dtype), {static_cast<int64_t>(draw.neighbors.size()), e.feature_dim},
              draw.edge_features.data(), draw.edge_features.size(), resp->mutable_edge_features());
  }
  return absl::OkStatus();
}

namespace {

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

absl::Status PartitionQueries::GetAblpInput(const v1::GetAblpInputRequest& req, v1::GetAblpInputResponse* resp) const {
  auto in = LoadAblpInput(*partition_, ToAblpRequest(req));
  if (!in.ok()) return in.status();
  {
    // The label matrices are padded to their widest row.
    auto padded = [](const std::vector<int64_t>& offsets) {
      int64_t width = 0;
      for (size_t i = 0; i + 1 < offsets.size(); ++i) width = std::max(width, offsets[i + 1] - offsets[i]);
      return static_cast<double>(width) * (offsets.empty() ? 0 : offsets.size() - 1) * 8;
    };
    const double bytes = 8.0 * in->anchors.size() + padded(in->pos_offsets) +
                         (in->negative_edge_type >= 0 ? padded(in->neg_offsets) : 0);
    if (auto s = CheckResponseBytes(bytes, options_->max_response_bytes,
                                    absl::StrCat(in->anchors.size(), " anchors with their padded label rows; use slice"));
        !s.ok()) {
      return s;
    }
  }
  SetInt64Tensor(in->anchors, resp->mutable_anchors());
  SetPaddedMatrix(in->pos_offsets, in->positives, resp->mutable_positive_labels());
  if (in->negative_edge_type >= 0) SetPaddedMatrix(in->neg_offsets, in->negatives, resp->mutable_negative_labels());
  return absl::OkStatus();
}

}  // namespace graphstore
