#include "server/sampling/gather.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/feature_codec.h"
#include "server/sampling/draw.h"
#include "server/sampling/owner_split.h"
#include "server/sampling/row_copy.h"
#include "server/util/prefetch.h"

namespace graphstore {
namespace {

// Batches vary in size, and a pooled subgraph that grows its feature buffer by exactly what the
// next batch needs reallocates again and again; fresh memory costs a page fault per page, more
// than the gather itself. Growing by a quarter more settles the capacity within a few batches.
void ResizeWithHeadroom(UninitializedBytes* v, size_t n) {
  if (n > v->capacity()) v->reserve(n + n / 4);
  v->resize(n);
}

// Where a gather writes one node type's rows: features in the output encoding (row_bytes each,
// at out_row[i] for node i, -1 for a row the trainer caches or, with rows_from_owners, one
// another partition owns) and labels. With rows_from_owners over a socket the labels, like the
// rows, are those of this partition's nodes alone, in node order; into shared memory
// (`in_place`), whose client writes the owners' rows and labels where they belong, every node
// keeps its place.
class GatherTarget {
 public:
  GatherTarget(const NodeTypeStore& t, int type, int self, bool to_owners, bool in_place, bool features, bool labels,
               const FeatureOutput* output, char* feature_dst, SampledNodes* nodes)
      : dim_(static_cast<size_t>(t.feature_dim)), stored_row_bytes_(dim_ * DtypeSize(t.feature_dtype)) {
    const size_t n = nodes->ids.size();
    if (features) {
      const FeatureOutput::Encoding enc = output != nullptr ? output->encoding : FeatureOutput::Encoding::kAsStored;
      encoding_ = enc == FeatureOutput::Encoding::kFloat32 && t.feature_dtype == NpyDtype::kFloat32
                      ? FeatureOutput::Encoding::kAsStored
                      : enc;
      const NpyDtype row_type = output != nullptr ? output->RowType(t.feature_dtype) : t.feature_dtype;
      row_bytes_ = output != nullptr ? output->RowBytes(t.feature_dtype, t.feature_dim) : dim_ * DtypeSize(row_type);
      bits_ = output != nullptr ? output->bits() : 0;
      if (bits_ > 0) {
        scale_ = output->scale[type].data();
        offset_ = output->offset[type].data();
        inverse_scale_.resize(dim_);
        for (size_t c = 0; c < dim_; ++c) inverse_scale_[c] = 1.0f / scale_[c];
        nodes->feature_scale = scale_;
        nodes->feature_offset = offset_;
      }
      // Rows the trainer caches, and with rows_from_owners those of other partitions' nodes
      // (`nodes->owners`, looked up by the caller), are left out; the others keep node order.
      // `cached` marks them when the trainer caches rows: owners alone say which rows are left
      // to others. In place, every node keeps its row's place instead, with no mask.
      const bool slots = to_owners && in_place;
      const bool mask = !slots && output != nullptr && output->Caches(type);
      if (mask) nodes->cached.assign(n, 0);
      out_row_.assign(n, 0);
      int64_t rows = 0;
      for (size_t i = 0; i < n; ++i) {
        const bool other = to_owners && nodes->owners[i] != self;
        const bool cached = mask && output->Cached(type, nodes->ids[i]);
        nodes->rows_left_to_owners += other && !cached;
        if (slots) {
          out_row_[i] = other ? -1 : rows;
          ++rows;
        } else if (cached || other) {
          if (mask) nodes->cached[i] = 1;
          out_row_[i] = -1;
        } else {
          out_row_[i] = rows++;
        }
      }
      nodes->matrix_rows = rows;
      nodes->feature_dim = t.feature_dim;
      nodes->feature_dtype = row_type;
      nodes->feature_bits = bits_ < 8 ? bits_ : 0;
      if (feature_dst != nullptr) {
        nodes->features.clear();
        nodes->placed_features = feature_dst;
        nodes->placed_feature_bytes = static_cast<size_t>(rows) * row_bytes_;
        features_ = feature_dst;
      } else {
        ResizeWithHeadroom(&nodes->features, static_cast<size_t>(rows) * row_bytes_);
        features_ = nodes->features.data();
      }
    }
    if (labels) {
      own_labels_only_ = to_owners && !in_place;
      size_t k = n;
      if (own_labels_only_) {
        k = 0;
        for (size_t i = 0; i < n; ++i) k += nodes->owners[i] == self;
      }
      nodes->labels.resize(k);
      labels_ = nodes->labels.data();
    }
  }

  bool features() const { return features_ != nullptr; }
  bool labels() const { return labels_ != nullptr; }
  /// Whether node i's row goes into the batch (features asked for, not cached by the trainer).
  bool WantsRow(size_t i) const { return features_ != nullptr && out_row_[i] >= 0; }
  size_t stored_row_bytes() const { return stored_row_bytes_; }

  /// Writes node i's row, given in the stored dtype, in the output encoding.
  void PutRow(size_t i, const char* stored) {
    char* dst = features_ + static_cast<size_t>(out_row_[i]) * row_bytes_;
    const auto* src = reinterpret_cast<const float*>(stored);
    switch (encoding_) {
      case FeatureOutput::Encoding::kAsStored:
      case FeatureOutput::Encoding::kFloat32:
        std::memcpy(dst, stored, row_bytes_);
        break;
      case FeatureOutput::Encoding::kFloat16:
        codec::FloatToHalf(src, dim_, reinterpret_cast<uint16_t*>(dst));
        break;
      case FeatureOutput::Encoding::kBfloat16:
        codec::FloatToBfloat16(src, dim_, reinterpret_cast<uint16_t*>(dst));
        break;
      case FeatureOutput::Encoding::kInt8:
      case FeatureOutput::Encoding::kInt4:
      case FeatureOutput::Encoding::kInt2:
      case FeatureOutput::Encoding::kInt1:
        codec::QuantizeRow(src, dim_, bits_, inverse_scale_.data(), offset_, reinterpret_cast<uint8_t*>(dst));
        break;
    }
  }
  /// Node i's label. Over a socket with rows_from_owners only this partition's nodes have one,
  /// put in node order.
  void PutLabel(size_t i, int64_t label) { labels_[own_labels_only_ ? next_label_++ : i] = label; }
  /// Node i is owned elsewhere and its owner sends its label: -1 in its place, where it has one.
  void PutUnknownLabel(size_t i) {
    if (!own_labels_only_) labels_[i] = -1;
  }

 private:
  const size_t dim_;
  const size_t stored_row_bytes_;
  FeatureOutput::Encoding encoding_ = FeatureOutput::Encoding::kAsStored;
  size_t row_bytes_ = 0;
  int bits_ = 0;  // of the quantized encodings' codes
  const float* scale_ = nullptr;
  const float* offset_ = nullptr;
  std::vector<float> inverse_scale_;
  std::vector<int64_t> out_row_;
  char* features_ = nullptr;
  int64_t* labels_ = nullptr;
  bool own_labels_only_ = false;
  size_t next_label_ = 0;
};

// The stored row each node's features come from (null: none to copy, or not known yet).
using RowSources = std::vector<const char*>;

// `n` empty sources, in storage the calling thread keeps: a batch's pointers take megabytes,
// and the sampling workers gather batch after batch, so the storage is allocated once per
// thread and reused. A gather does not nest on one thread.
RowSources& EmptySources(size_t n) {
  thread_local RowSources sources;
  sources.assign(n, nullptr);
  return sources;
}

// Notes where the rows of the nodes this partition owns are, and writes their labels (and, with
// `others_unknown`, leaves the others' to their owners: GatherTarget::PutUnknownLabel).
void FindOwned(const NodeTypeStore& t, int self, const std::vector<int64_t>& ids, GatherTarget* g, RowSources* rows,
               bool others_unknown = false) {
  const char* src = g->features() ? static_cast<const char*>(t.features.raw()) : nullptr;
  const int64_t* lab = g->labels() ? t.labels.data<int64_t>() : nullptr;
  const size_t row_bytes = g->stored_row_bytes();
  // Lookups in arrays the size of the graph, each a cache miss: a node's owner and row (the
  // book, on a partition of several; on one the row is the id) two strides ahead, its label,
  // whose place the row gives, one stride ahead.
  const size_t n = ids.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + 2 * kPrefetchAhead < n) t.owners.Prefetch(ids[i + 2 * kPrefetchAhead]);
    if (lab != nullptr && i + kPrefetchAhead < n) PrefetchRead(lab + t.OwnerRow(ids[i + kPrefetchAhead]));
    if (t.Owner(ids[i]) != self) {
      if (lab != nullptr && others_unknown) g->PutUnknownLabel(i);
      continue;
    }
    const int64_t row = t.OwnerRow(ids[i]);
    if (g->WantsRow(i)) (*rows)[i] = src + row * row_bytes;
    if (lab != nullptr) g->PutLabel(i, lab[row]);
  }
}

// Copies the rows found, in node order (row_copy.h). The peer cache's lookups load their
// entries as far ahead (kRowsAhead).
void CopyRows(const RowSources& rows, GatherTarget* g) {
  CopyRowsAhead(rows.data(), rows.size(), g->stored_row_bytes(), [g](size_t i, const char* row) { g->PutRow(i, row); });
}

// Places each peer call's rows, in list order, at their nodes (and keeps them in the cache).
void PlacePeerRows(const OwnerSplit<PeerSampling::NodeDataCall>& split, const std::vector<int64_t>& ids, int node_type,
                   bool features, bool labels, RemoteCache* cache, GatherTarget* g) {
  const size_t row_bytes = g->stored_row_bytes();
  std::vector<size_t> next(split.calls.size(), 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t c = split.call_of_item(i);
    if (c < 0) continue;
    const size_t k = next[c]++;
    const PeerSampling::NodeDataCall& call = split.calls[c];
    if (features) {
      const char* r = call.features.data() + k * row_bytes;
      if (g->WantsRow(i)) g->PutRow(i, r);
      if (cache != nullptr) cache->PutFeatures(node_type, ids[i], r);
    }
    if (labels) {
      g->PutLabel(i, call.labels[k]);
      if (cache != nullptr) cache->PutLabel(node_type, ids[i], call.labels[k]);
    }
  }
}

}  // namespace

absl::Status CheckGatherable(const Partition& partition, bool node_features, bool labels, bool edge_features) {
  bool any_features = false, any_labels = false, any_edge_features = false;
  for (const auto& n : partition.node_types()) {
    any_features |= n.feature_dim > 0;
    any_labels |= n.labels.is_open();
  }
  for (const auto& e : partition.edge_types()) any_edge_features |= e.feature_dim > 0;
  if (node_features && !any_features) {
    return absl::InvalidArgumentError("with_node_features: the dataset has no node features");
  }
  if (labels && !any_labels) return absl::InvalidArgumentError("with_labels: the dataset has no labels");
  if (edge_features && !any_edge_features) {
    return absl::InvalidArgumentError("with_edge_features: the dataset has no edge features");
  }
  return absl::OkStatus();
}

namespace {

// Each node's partition: lookups at random in an array the size of the graph, asked for ahead.
template <typename Owner>
void LookUpOwnersInto(const NodeTypeStore& t, const std::vector<int64_t>& ids, Owner* out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + kPrefetchAhead < ids.size()) t.owners.Prefetch(ids[i + kPrefetchAhead]);
    out[i] = static_cast<Owner>(t.Owner(ids[i]));
  }
}

void LookUpOwners(const NodeTypeStore& t, int num_partitions, const std::vector<int64_t>& ids, NodeOwners* owners) {
  owners->Resize(ids.size(), num_partitions);
  if (owners->wide.empty()) {
    LookUpOwnersInto(t, ids, owners->bytes.data());
  } else {
    LookUpOwnersInto(t, ids, owners->wide.data());
  }
}

// The data of nodes owned elsewhere that is needed and not in the cache of peers' rows: one call
// per owner, answered while the local rows are copied. A node whose row the trainer caches is
// fetched only for its label.
absl::Status GatherFromPeers(const NodeTypeStore& t, int node_type, int self, const Partition& partition, bool features,
                             bool labels, SampledNodes* nodes, PeerSampling* peers, RemoteCache* cache,
                             GatherTarget* g) {
  const std::vector<int64_t>& ids = nodes->ids;
  RowSources& rows = EmptySources(features ? ids.size() : 0);
  const size_t row_bytes = g->stored_row_bytes();
  OwnerSplit<PeerSampling::NodeDataCall> split;
  // Rows found in the cache are copied with the owned rows, while the owners answer for the
  // others.
  auto lookup = [&](size_t i) {
    if (cache == nullptr) return !g->WantsRow(i) && !labels;
    const char* row = nullptr;
    if (g->WantsRow(i) && (row = cache->FindFeatures(node_type, ids[i])) == nullptr) return false;
    int64_t label = 0;
    if (labels && !cache->GetLabel(node_type, ids[i], &label)) return false;
    // Both found: the split does not ask the owner.
    if (row != nullptr) rows[i] = row;
    if (labels) g->PutLabel(i, label);
    return true;
  };
  int64_t hits = 0;
  int64_t misses = 0;
  auto have = [&](size_t i) {
    if (cache != nullptr && i + kPrefetchAhead < ids.size()) cache->Prefetch(node_type, ids[i + kPrefetchAhead]);
    nodes->other_partitions_rows += g->WantsRow(i) || labels;
    const bool found = lookup(i);
    ++(found ? hits : misses);
    return found;
  };
  absl::Status split_status;
  {
    RemoteCache::LookupPass pass(cache);
    split_status = split.Split(partition, t, ids.data(), ids.size(), peers != nullptr, "its features and labels need", have);
  }
  if (cache != nullptr) cache->CountLookups(hits, misses);
  if (!split_status.ok()) return split_status;
  auto issue = [&](std::vector<PeerSampling::NodeDataCall>* calls) {
    return peers->FetchNodeData(t.name, features, labels, calls);
  };
  auto local = [&] {
    FindOwned(t, self, ids, g, &rows);
    CopyRows(rows, g);
    return absl::OkStatus();
  };
  auto check = [&](const PeerSampling::NodeDataCall& c) {
    if ((features && c.features.size() != c.ids.size() * row_bytes) || (labels && c.labels.size() != c.ids.size())) {
      return absl::InternalError(absl::StrCat("partition ", c.partition, " answered the data of ", c.ids.size(), " '",
                                              t.name, "' nodes with the wrong size"));
    }
    return absl::OkStatus();
  };
  if (auto st = split.Run(issue, local, check); !st.ok()) return st;
  PlacePeerRows(split, ids, node_type, features, labels, cache, g);
  return absl::OkStatus();
}

}  // namespace

absl::Status GatherNodeData(const Partition& partition, int node_type, bool features, bool labels,
                            const FeatureOutput* output, char* feature_dst, SampledNodes* nodes, PeerSampling* peers,
                            RemoteCache* cache, bool in_place) {
  const NodeTypeStore& t = partition.node_type(node_type);
  features = features && t.feature_dim > 0;
  labels = labels && t.labels.is_open();
  if (!features && !labels) return absl::OkStatus();
  const int self = partition.partition_id();
  // Rows left to their owners, as the channel's output decided at registration
  // (FeatureOutputs::ForChannel).
  const bool to_owners = output != nullptr && output->rows_from_owners;
  if (to_owners) LookUpOwners(t, partition.num_partitions(), nodes->ids, &nodes->owners);
  GatherTarget g(t, node_type, self, to_owners, in_place || feature_dst != nullptr, features, labels, output,
                 feature_dst, nodes);
  if (partition.num_partitions() > 1 && !to_owners) {
    return GatherFromPeers(t, node_type, self, partition, features, labels, nodes, peers, cache, &g);
  }
  // Every node owned here, or the others' rows and labels left to their owners.
  RowSources& rows = EmptySources(features ? nodes->ids.size() : 0);
  FindOwned(t, self, nodes->ids, &g, &rows, /*others_unknown=*/true);
  CopyRows(rows, &g);
  return absl::OkStatus();
}

absl::Status GatherSubgraphData(const Partition& partition, bool features, bool labels, const FeatureOutput* output,
                                PeerSampling* peers, RemoteCache* cache, SampledSubgraph* out) {
  const int num_types = static_cast<int>(partition.node_types().size());
  std::vector<char*> targets(num_types, nullptr);
  if (out->feature_target) {
    std::vector<size_t> bytes(num_types, 0);
    for (int t = 0; t < num_types; ++t) {
      const NodeTypeStore& nt = partition.node_type(t);
      if (!features || nt.feature_dim == 0) continue;
      int64_t rows = static_cast<int64_t>(out->nodes[t].ids.size());
      if (output != nullptr) {
        for (int64_t id : out->nodes[t].ids) rows -= output->Cached(t, id);
      }
      const size_t row_bytes = output != nullptr ? output->RowBytes(nt.feature_dtype, nt.feature_dim)
                                                 : static_cast<size_t>(nt.feature_dim) * DtypeSize(nt.feature_dtype);
      bytes[t] = static_cast<size_t>(rows) * row_bytes;
    }
    auto placed = out->feature_target(*out, bytes);
    if (!placed.ok()) return placed.status();
    if (placed->size() != targets.size()) return absl::InternalError("feature_target returned a wrong count");
    targets = *std::move(placed);
  }
  for (int t = 0; t < num_types; ++t) {
    if (auto st = GatherNodeData(partition, t, features, labels, output, targets[t], &out->nodes[t], peers, cache,
                                 /*in_place=*/static_cast<bool>(out->feature_target));
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace graphstore
