#ifndef GRAPHSTORE_SERVER_SAMPLING_SAMPLER_H_
#define GRAPHSTORE_SERVER_SAMPLING_SAMPLER_H_

// The sampling interface between the scheduler's workers and the sampling algorithms, and the
// sampled subgraph they produce (GLT's tensors, per node type and per edge type). Plain C++:
// the gRPC layer turns a SampledSubgraph into a graphstore.v1.SampledMessage.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/graph/npy.h"
#include "server/sampling/local_ids.h"
#include "server/util/uninitialized.h"

namespace graphstore {

/// The partition owning each of a batch's nodes, held as the message carries it: a byte a node
/// up to 256 partitions, an int32 beyond. Only one of the two is ever filled.
struct NodeOwners {
  std::vector<uint8_t> bytes;
  std::vector<int32_t> wide;

  /// Sized for `n` nodes of a graph in `num_partitions`, the other form emptied.
  void Resize(size_t n, int num_partitions) {
    if (num_partitions <= 256) {
      wide.clear();
      bytes.resize(n);
    } else {
      bytes.clear();
      wide.resize(n);
    }
  }
  void Set(size_t i, int32_t owner) {
    if (wide.empty()) {
      bytes[i] = static_cast<uint8_t>(owner);
    } else {
      wide[i] = owner;
    }
  }
  int32_t operator[](size_t i) const { return wide.empty() ? bytes[i] : wide[i]; }
  bool empty() const { return bytes.empty() && wide.empty(); }
  size_t ByteSize() const { return bytes.size() + 4 * wide.size(); }
  void clear() {
    bytes.clear();
    wide.clear();
  }
};

/// The sampled nodes of one node type. Local id i of this type refers to ids[i].
struct SampledNodes {
  /// Global ids; the batch's seeds of this type come first, then each hop's new nodes.
  std::vector<int64_t> ids;
  /// Nodes added per hop; entry 0 counts the (unique) seeds. Length hops + 1.
  std::vector<int64_t> num_sampled_nodes;
  /// The batch's seeds of this type, as given (GLT's `batch`).
  std::vector<int64_t> batch;
  /// Row-major [ids.size(), feature_dim] feature bytes of `feature_dtype`, when gathered ...
  UninitializedBytes features;
  /// ... unless they were gathered into memory the caller supplied (see
  /// SampledSubgraph::feature_target): then they are here and `features` is empty.
  const char* placed_features = nullptr;
  size_t placed_feature_bytes = 0;
  int64_t feature_dim = 0;
  NpyDtype feature_dtype = NpyDtype::kFloat32;
  /// Codes of 4, 2 or 1 bits (FeatureOutput's packed encodings): each row is feature_dim codes
  /// packed into whole bytes (feature_dtype is then kUint8). 0: one element of feature_dtype per
  /// value.
  int feature_bits = 0;
  /// Labels of ids, when gathered; with rows_from_owners over a socket, of the ids this partition
  /// owns alone, in order (GatherNodeData).
  std::vector<int64_t> labels;
  /// Temporal batches only (empty otherwise): the time of each entry of `batch` (its explicit
  /// time, else its node time), and the time each node's draws were bounded by (a seed's time,
  /// a label node's anchor's, else the earliest time of the nodes that reached it in the hop
  /// that added it).
  std::vector<int64_t> seed_times, sampled_times;
  /// Each node's stored time, when asked for (types that store node times).
  std::vector<int64_t> times;
  /// Set by the service for the seed type: each entry of `batch`'s position in the channel's
  /// input (v1::NodeTensors.input_ids). The samplers leave it empty.
  std::vector<int64_t> input_ids;
  /// With a trainer-side cache (FeatureOutput::cached): per node, 1 when its row was left out
  /// because the trainer holds it; the feature matrix then has one row per 0 entry, in node
  /// order. Empty otherwise.
  std::vector<uint8_t> cached;
  /// FeatureOutput::rows_from_owners (empty otherwise): the partition owning each node, and how
  /// many rows were left out of the feature matrix for their owners to send.
  NodeOwners owners;
  int64_t rows_left_to_owners = 0;
  /// Nodes another partition owns whose feature row or label this server gathered (from a
  /// peer or its cache) into the batch.
  int64_t other_partitions_rows = 0;
  /// Quantized rows (FeatureOutput's kInt8 to kInt1): each column's scale and offset,
  /// feature_dim values each, owned by the batch's FeatureOutput.
  const float* feature_scale = nullptr;
  const float* feature_offset = nullptr;

  /// Rows the feature matrix holds, as gathered (-1: not gathered by GatherNodeData).
  int64_t matrix_rows = -1;

  /// Rows in the feature matrix (the nodes not cached by the trainer).
  int64_t num_feature_rows() const {
    int64_t n = static_cast<int64_t>(ids.size());
    for (uint8_t c : cached) n -= c;
    return n;
  }
  /// The feature matrix's leading dimension: the rows it holds. With rows_from_owners over a
  /// socket and no mask, other partitions' nodes have no row in it (num_feature_rows counts them).
  int64_t feature_matrix_rows() const { return matrix_rows >= 0 ? matrix_rows : num_feature_rows(); }
  /// The gathered feature bytes, wherever they are.
  const char* feature_data() const { return placed_features != nullptr ? placed_features : features.data(); }
  size_t feature_bytes() const { return placed_features != nullptr ? placed_feature_bytes : features.size(); }
};

/// The sampled edges of one edge type, oriented as stored (source type -> destination type).
struct SampledEdges {
  /// Local index (into the source type's ids) of each edge's source. Local ids are int32: a
  /// batch has fewer than 2^31 nodes of a type.
  std::vector<int32_t> rows;
  /// Local index (into the destination type's ids) of each edge's destination.
  std::vector<int32_t> cols;
  /// Global edge ids, when asked for (`with_eids`; empty when no edge was sampled).
  std::vector<int64_t> eids;
  bool with_eids = false;
  /// Edges added per hop. Length hops (1 for an induced subgraph: all its edges at once).
  std::vector<int64_t> num_sampled_edges;
  /// Row-major [rows.size(), feature_dim] edge feature bytes of `feature_dtype`, when gathered.
  UninitializedBytes features;
  int64_t feature_dim = 0;
  NpyDtype feature_dtype = NpyDtype::kFloat32;
};

/// The link-prediction labels of a batch, as local indices: anchors into the anchor type's ids,
/// label nodes into the label type's ids. Matrices are row-major and padded with -1.
struct SampledAblp {
  bool present = false;
  int supervision_edge_type = 0;
  std::vector<int64_t> anchors;
  std::vector<int64_t> positive;
  int64_t max_positive = 0;
  std::vector<int64_t> negative;
  int64_t max_negative = 0;
};

/// PPR weights of one (seed type, node type) pair: entry i says that node node_index[i] (local,
/// of node_type) was selected for seed seed_index[i] (local, of seed_type) with weight[i].
struct SampledPpr {
  int seed_type = 0;
  int node_type = 0;
  std::vector<int64_t> seed_index;
  std::vector<int64_t> node_index;
  std::vector<float> weight;
};

/// One sampled subgraph, indexed by the partition's node and edge type order.
struct SampledSubgraph {
  std::vector<SampledNodes> nodes;
  std::vector<SampledEdges> edges;
  /// Set for link-prediction batches.
  SampledAblp ablp;
  /// Set by the PPR sampler, one entry per (seed type, node type) pair with entries.
  std::vector<SampledPpr> ppr;
  /// Sampled temporally: every node type carries SampledNodes::seed_times and sampled_times.
  bool temporal = false;
  /// Every node type that stores node times carries SampledNodes::times.
  bool node_times = false;

  /// Optional, set by the caller before Sample: supplies the memory that feature matrices are
  /// gathered into, so that they land in their final place (a shared buffer) without a copy.
  /// Called once per Sample, after the nodes are final and before gathering, with the bytes
  /// each node type's features need (0: none); returns a destination per type (null for 0).
  std::function<absl::StatusOr<std::vector<char*>>(const SampledSubgraph&, const std::vector<size_t>&)>
      feature_target;

  /// Bytes held by the tensors (what a buffer limit counts).
  size_t ByteSize() const;
  /// Total sampled edges over all types.
  int64_t NumEdges() const;
  /// Empties every tensor but keeps the memory, shaped for the given numbers of types, so a
  /// subgraph reused across batches does not reallocate.
  void Reset(size_t num_node_types, size_t num_edge_types);
};

struct AblpBatch;  // server/sampling/ablp.h

/// The nodes of a type whose rows a trainer's cache holds: their ids ascending, and an index
/// that tells whether a node is one of them (LocalIdMap: an array up to 2^24 nodes of the type,
/// a table of the hot nodes alone beyond), so nothing is kept per node of a larger graph.
struct HotSet {
  std::vector<int64_t> ids;
  LocalIdMap index;
  /// The set of `ids` (ascending) of a type of `num_nodes` nodes.
  static std::shared_ptr<const HotSet> Of(std::vector<int64_t> ids, int64_t num_nodes);
  bool Contains(int64_t id) const { return index.Find(id, ids) >= 0; }
};

/// How a batch's feature rows are written: the channel's encoding (graphstore.v1's
/// FeatureEncoding, implemented by proto/feature_codec.h) and the rows its trainer caches.
struct FeatureOutput {
  enum class Encoding { kAsStored, kFloat32, kFloat16, kBfloat16, kInt8, kInt4, kInt2, kInt1 };
  Encoding encoding = Encoding::kAsStored;
  /// The quantized encodings (kInt8 to kInt1): per node type (partition order), each column's
  /// scale and offset.
  std::vector<std::vector<float>> scale, offset;
  /// Per node type: for every global id, 1 when the trainer caches the node's row (left out of
  /// the batch). Null or missing for a type without a cache.
  std::vector<std::shared_ptr<const HotSet>> cached;
  /// The rows and labels of nodes another partition owns are left out (their owners send them
  /// to the trainer): RegisterSamplingInputRequest.rows_from_owners, as the server resolved it
  /// (service/feature_outputs.h); the gather only reads it.
  bool rows_from_owners = false;

  /// The element type rows of a type stored as `stored` are written in (kUint8 for the codes of
  /// every quantized encoding).
  NpyDtype RowType(NpyDtype stored) const;
  /// Bits of each code of a quantized encoding (8, 4, 2, 1); 0 for the others.
  int bits() const;
  /// Bytes of one row of `dim` values stored as `stored`, as written (codes of fewer than 8
  /// bits are packed, see proto/feature_codec.h).
  size_t RowBytes(NpyDtype stored, int64_t dim) const;
  /// The trainer caches rows of `type`.
  bool Caches(int type) const { return type < static_cast<int>(cached.size()) && cached[type] != nullptr; }
  /// The trainer caches node `id` of `type`.
  bool Cached(int type, int64_t id) const { return Caches(type) && cached[type]->Contains(id); }
};

/// The seeds of one batch and the coordinates its randomness derives from.
struct SeedBatch {
  /// Node type of the seeds (index in the partition).
  int node_type = 0;
  const int64_t* ids = nullptr;
  size_t size = 0;
  /// Channel seed, epoch and batch index: the result depends only on these and the seeds.
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t batch_index = 0;
  /// Link prediction: the seeds are anchors, and this adds their label nodes as seeds (after
  /// the anchors) and the label edges to leave out of every draw. Null otherwise.
  const AblpBatch* ablp = nullptr;
  /// How feature rows are written; null: as stored, none left out.
  const FeatureOutput* features = nullptr;
  /// Temporal sampling: each seed's time, [size]; null: the seeds' stored node times.
  const int64_t* times = nullptr;
};

/// Per-worker reusable memory of a sampler; one per worker thread, never shared.
class SamplerScratch {
 public:
  virtual ~SamplerScratch() = default;
};

/// A sampling algorithm over one partition. Implementations hold the partition by const
/// pointer and keep no per-call state, so one instance serves every worker concurrently.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// Scratch memory for one worker.
  virtual std::unique_ptr<SamplerScratch> NewScratch() const = 0;
  /// Samples the subgraph of `batch` into `out` (overwritten; reuse it across calls to keep its
  /// memory). InvalidArgument for bad seeds.
  virtual absl::Status Sample(const SeedBatch& batch, SamplerScratch* scratch,
                              SampledSubgraph* out) const = 0;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_SAMPLER_H_
