#ifndef GRAPHSTORE_CLIENT_BATCH_TENSORS_H_
#define GRAPHSTORE_CLIENT_BATCH_TENSORS_H_

// Each tensor of a batch, described once. A node type's tensors and an edge type's are one
// struct template over what holds a tensor -- DecodedTensor in a batch decoded from a socket
// (client/decoded_batch.h), HostTensor in the core's batches (client/host_batch.h), at::Tensor
// in the LibTorch Loader's (client/loader.h) -- and one table per template lists every tensor:
// the v1::NodeTensors / v1::EdgeTensors field that carries it, the name a batch gives it (PyG's)
// and its member. The wire decoder, the socket and shared-memory builders, the memory a batch
// views, the LibTorch views and the Python dicts all walk these tables, so a new tensor is one
// member and one line here.
//
// Counts (num_sampled_nodes / _edges) and a node type's owners are not in the tables: each
// holder keeps its counts in its own form, and only a decoded batch has owners.

#include <cstddef>
#include <iterator>
#include <type_traits>

#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// How a tensor travels: as it is (copied once), or in a form its reader has a rule for (the
/// feature matrix and its per-column scale and offset; an edge type's rows and cols, which
/// become edge_index).
enum class WireForm { kPlain, kFeatures, kColumnFloats, kEdgeIndex };

/// The tensors of one node type. Absent fields are undefined.
template <typename T>
struct NodeTensorsOf {
  /// int64 [n]: global ids of the sampled nodes, the batch's seeds of the type first (a
  /// link-prediction batch: the anchors, then their label nodes).
  T n_id;
  /// int64 [batch_size]: the seeds of this type, as registered.
  T seeds;
  /// [n, dim] feature rows (float32 unless the loader keeps the wire encoding) and int64 [n]
  /// labels.
  T x;
  T y;
  /// A quantized encoding kept as it travelled: float32 [dim] each column's scale and offset.
  T x_scale;
  T x_offset;
  /// Temporal batches: int64 [batch_size] each seed's time, and int64 [n] the time each node
  /// was sampled at; with node times: int64 [n] each node's stored time.
  T seed_time;
  T time;
  T sampled_time;
  /// The seed type only: int64 [batch_size], each seed's position in the input (PyG's input_id).
  T input_id;
};

/// The tensors of one edge type, in message-passing direction.
template <typename T>
struct EdgeTensorsOf {
  /// int64 [2, m]: local indices, row 0 the sampled neighbours (messages' sources), row 1 the
  /// nodes that drew them.
  T edge_index;
  /// int64 [m] global edge ids, and [m, d] edge features.
  T e_id;
  T edge_attr;
};

/// One line of a table: where the tensor travels, what a batch calls it, where it is kept.
template <typename Holder, typename T>
struct BatchField {
  int wire;          // its field number in v1::NodeTensors or v1::EdgeTensors
  const char* name;  // its name in a batch
  T Holder::*member;
  WireForm form;
  bool always;  // every message carries it (absent only from a malformed one)
};

template <typename T>
using NodeField = BatchField<NodeTensorsOf<T>, T>;
template <typename T>
using EdgeField = BatchField<EdgeTensorsOf<T>, T>;

/// Every node tensor.
template <typename T>
inline constexpr NodeField<T> kNodeFields[] = {
    {v1::NodeTensors::kIdsFieldNumber, "n_id", &NodeTensorsOf<T>::n_id, WireForm::kPlain, true},
    {v1::NodeTensors::kBatchFieldNumber, "seeds", &NodeTensorsOf<T>::seeds, WireForm::kPlain, true},
    {v1::NodeTensors::kFeaturesFieldNumber, "x", &NodeTensorsOf<T>::x, WireForm::kFeatures, false},
    {v1::NodeTensors::kLabelsFieldNumber, "y", &NodeTensorsOf<T>::y, WireForm::kPlain, false},
    {v1::NodeTensors::kFeatureScaleFieldNumber, "x_scale", &NodeTensorsOf<T>::x_scale, WireForm::kColumnFloats, false},
    {v1::NodeTensors::kFeatureOffsetFieldNumber, "x_offset", &NodeTensorsOf<T>::x_offset, WireForm::kColumnFloats,
     false},
    {v1::NodeTensors::kSeedTimesFieldNumber, "seed_time", &NodeTensorsOf<T>::seed_time, WireForm::kPlain, false},
    {v1::NodeTensors::kTimesFieldNumber, "time", &NodeTensorsOf<T>::time, WireForm::kPlain, false},
    {v1::NodeTensors::kSampledTimesFieldNumber, "sampled_time", &NodeTensorsOf<T>::sampled_time, WireForm::kPlain,
     false},
    {v1::NodeTensors::kInputIdsFieldNumber, "input_id", &NodeTensorsOf<T>::input_id, WireForm::kPlain, false},
};

/// Every edge tensor (edge_index comes from rows and cols; `wire` names rows).
template <typename T>
inline constexpr EdgeField<T> kEdgeFields[] = {
    {v1::EdgeTensors::kRowsFieldNumber, "edge_index", &EdgeTensorsOf<T>::edge_index, WireForm::kEdgeIndex, true},
    {v1::EdgeTensors::kEidsFieldNumber, "e_id", &EdgeTensorsOf<T>::e_id, WireForm::kPlain, false},
    {v1::EdgeTensors::kFeaturesFieldNumber, "edge_attr", &EdgeTensorsOf<T>::edge_attr, WireForm::kPlain, false},
};

inline constexpr size_t kNumNodeFields = std::size(kNodeFields<int>);
inline constexpr size_t kNumEdgeFields = std::size(kEdgeFields<int>);

/// Calls f(field, a.*member, b.*member) for every line of two instances of one table: the same
/// tensors held two ways (a decoded batch and its host view, a host view and its LibTorch one).
template <typename FieldsA, typename FieldsB, typename A, typename B, typename F>
void ZipTensors(const FieldsA& fields_a, const FieldsB& fields_b, A& a, B& b, F&& f) {
  static_assert(std::extent_v<FieldsA> == std::extent_v<FieldsB>, "two instances of one table");
  for (size_t i = 0; i < std::size(fields_a); ++i) f(fields_a[i], a.*(fields_a[i].member), b.*(fields_b[i].member));
}
template <typename A, typename B, typename F>
void ZipNodeTensors(A& a, B& b, F&& f) {
  ZipTensors(kNodeFields<std::remove_reference_t<decltype(a.n_id)>>, kNodeFields<std::remove_reference_t<decltype(b.n_id)>>,
             a, b, f);
}
template <typename A, typename B, typename F>
void ZipEdgeTensors(A& a, B& b, F&& f) {
  ZipTensors(kEdgeFields<std::remove_reference_t<decltype(a.edge_index)>>,
             kEdgeFields<std::remove_reference_t<decltype(b.edge_index)>>, a, b, f);
}

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_BATCH_TENSORS_H_
