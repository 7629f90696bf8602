#ifndef GRAPHSTORE_CLIENT_LOADER_H_
#define GRAPHSTORE_CLIENT_LOADER_H_

// The trainer's view of graphstore in LibTorch: the torch-free core (client/loader_core.h)
// registers seeds on every server, runs epochs and receives batches into host memory; this
// layer views each of its tensors as an at::Tensor without a copy, named as PyG names them
// (n_id, x, y, edge_index in message-passing direction, e_id, edge_attr, batch_size,
// num_sampled_nodes / _edges). Errors are thrown as graphstore::client::Error carrying the
// server's code and message. Callers never see gRPC types.

// LibTorch first: Debian builds it with glog, whose CHECK macro must not leak into others.
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/host_batch.h"
#include "client/loader_core.h"
#include "client/loader_options.h"
#include "proto/type_names.h"

namespace graphstore::client {

/// Views a batch's host tensor as an at::Tensor without copying (it keeps the bytes alive);
/// an undefined one as an undefined at::Tensor.
at::Tensor ToTensor(const HostTensor& tensor);

/// The tensors of one node type in a batch (client/batch_tensors.h lists them):
///  - n_id: int64 [n], global ids of the sampled nodes of this type; the batch's seeds of the
///    type first (for a link-prediction batch, the anchors, then their label nodes);
///  - x, y: [n, dim] features (float32 unless the loader keeps the wire encoding) and int64 [n]
///    labels, when asked for;
///  - x_scale, x_offset: with a quantized encoding kept (LoaderOptions::decode_features false),
///    float32 [dim] each: x ~= x_offset + x_scale * q for the codes q of x (see x_bits);
///  - seeds: int64 [batch_size], the batch's seeds of this type, as registered;
///  - seed_time, sampled_time: temporal backends only (undefined otherwise), int64 [batch_size]
///    the time of each seed (its explicit time, else its node time: PyG's seed_time), and [n]
///    the time each node was sampled at, which no edge drawn from it is newer than (a seed's
///    time; a label node's anchor's; else the earliest time of the nodes that reached it in the
///    hop that added it);
///  - time: with config.with_node_times, for types that store node times: int64 [n], each
///    node's stored time (PyG's time);
///  - input_id: the seed type only (undefined for others), int64 [batch_size], each seed's
///    position in the loader's input -- LoaderOptions::seeds, or the split's nodes in ascending
///    id order (PyG's input_id).
struct NodeView : NodeTensorsOf<at::Tensor> {
  /// The bits of each code of a quantized x kept encoded: 8 (x is uint8 [n, dim]), or 4, 2, 1
  /// (x is uint8 [n, ceil(dim * x_bits / 8)], the codes packed as proto/feature_codec.h lays
  /// them out). 0 otherwise.
  int x_bits = 0;
  /// The batch's seeds of this type: the first batch_size rows of n_id, x and y.
  int64_t batch_size = 0;
  /// Nodes added at each hop; entry 0 counts the seeds (and a link-prediction batch's label
  /// nodes).
  std::vector<int64_t> num_sampled_nodes;
};

/// The edges of one edge type in a batch, in message-passing direction: every edge points from
/// a sampled neighbour to the node that sampled it, as PyG's MessagePassing consumes them.
///  - edge_index: int64 [2, m], local indices (row 0 into the source type of the view's key,
///    row 1 into its destination type);
///  - e_id, edge_attr: int64 [m] global edge ids and [m, d] edge features, when asked for.
struct EdgeView : EdgeTensorsOf<at::Tensor> {
  /// The type as stored; with edge_dir "out" the view's key is its reverse.
  std::string stored_type;
  /// Edges added at each hop.
  std::vector<int64_t> num_sampled_edges;
};

/// Link-prediction labels of a batch, as local indices (see v1::AblpLabels).
struct AblpView {
  /// int64 [a]: anchors (into the anchor type's nodes).
  at::Tensor anchors;
  /// int64 [a, p] and [a, q]: positive and negative label nodes (into the label type's
  /// nodes), padded with -1.
  at::Tensor positive;
  at::Tensor negative;
};

/// PPR weights of one (seed type, node type) pair (see v1::PprWeights).
struct PprView {
  std::string seed_type;
  std::string node_type;
  at::Tensor seed_index;
  at::Tensor node_index;
  at::Tensor weight;
};

/// The reverse of an edge type's name (proto/type_names.h), as Batch::edges keys it.
using graphstore::ReverseEdgeTypeName;

/// One sampled subgraph. The fields at the top view a homogeneous graph (the first node and
/// edge type of a heterogeneous one); `nodes` and `edges` view every type.
/// The node and edge tensors at the top are NodeView's and EdgeView's of the first node and
/// edge type, except input_id: the seed type's (see NodeView), whichever type that is;
/// undefined for a link-prediction batch, or split seeds batched per server.
struct Batch : NodeTensorsOf<at::Tensor>, EdgeTensorsOf<at::Tensor> {
  int64_t epoch = 0;
  int64_t batch_index = 0;
  /// Which server (index into LoaderOptions::servers) produced it.
  int server = 0;
  int x_bits = 0;
  int64_t batch_size = 0;
  std::vector<int64_t> num_sampled_nodes;
  std::vector<int64_t> num_sampled_edges;
  /// The seed type's name (input_id's); empty when input_id is undefined.
  std::string input_type;
  /// Every node type by name, and every edge type by its message-passing name (the stored name
  /// with edge_dir "in", the reverse name with "out"; see EdgeView).
  std::map<std::string, NodeView> nodes;
  std::map<std::string, EdgeView> edges;
  /// Link-prediction batches only.
  std::optional<AblpView> ablp;
  /// PPR batches only.
  std::vector<PprView> ppr;
  /// Its tensors view a mapped shared-memory file (else decoded socket bytes).
  bool shared_memory = false;
  /// (address, size) of every block of memory the tensors view (see HostBatch::memory).
  std::vector<std::pair<const void*, size_t>> memory;
};

/// Registers seeds on every server and iterates epochs (see LoaderCore, which does the work).
/// Not thread-safe: one trainer thread.
class Loader {
 public:
  /// Connects, creates or joins the backend, registers the seeds on every server and, with a
  /// feature cache, fetches the cached rows.
  explicit Loader(LoaderOptions options) : core_(std::move(options)) {}

  const v1::DatasetMeta& meta() const { return core_.meta(); }
  /// How many servers send batches through shared memory.
  int num_shared_memory_servers() const { return core_.num_shared_memory_servers(); }
  /// Seeds and batches per epoch over all servers.
  int64_t num_seeds() const { return core_.num_seeds(); }
  int64_t num_batches() const { return core_.num_batches(); }
  /// Rows in the trainer's feature cache, over all node types.
  int64_t num_cached_rows() const { return core_.num_cached_rows(); }
  /// Bytes received for the batches of this loader so far (socket servers): the streams' and
  /// the owners' answers.
  int64_t bytes_received() const { return core_.bytes_received(); }
  /// The same per server: (over the streams, as the owner of rows).
  std::vector<std::pair<int64_t, int64_t>> bytes_received_by_server() const {
    return core_.bytes_received_by_server();
  }
  /// This loader's channel on server `server` (for DescribeChannel); a new one after the
  /// server restarted.
  uint64_t channel_id(int server) const { return core_.channel_id(server); }
  /// Times a failed server was reconnected (and its epoch resumed) so far.
  int64_t num_reconnects() const { return core_.num_reconnects(); }
  /// Leases renewed in the background so far.
  int64_t num_lease_renewals() const { return core_.num_lease_renewals(); }
  /// Callers of Next / NextFor blocked right now waiting for a batch.
  int num_waiting() const { return core_.num_waiting(); }
  /// Blocks until a caller of Next / NextFor waits for a batch, at most `timeout`; whether one
  /// does (a test's way to act once a trainer is stuck in a wait).
  bool WaitForWaiting(std::chrono::milliseconds timeout) { return core_.WaitForWaiting(timeout); }

  /// See LoaderCore::num_held.
  int num_held() const { return core_.num_held(); }
  bool WaitUntilHeld(int n, std::chrono::milliseconds timeout) { return core_.WaitUntilHeld(n, timeout); }

  /// Starts `epoch` on every server and opens their streams.
  void StartEpoch(int64_t epoch) { core_.StartEpoch(epoch); }
  /// The next batch of the current epoch from any server, in arrival order; nullopt when
  /// every server's stream has ended. Throws Error when a server fails.
  std::optional<Batch> Next();
  /// Next, waiting at most `timeout`: false when nothing arrived in that time (`*out` is left
  /// alone; call again), else true with the batch, or nullopt at the epoch's end, in `*out`.
  bool NextFor(std::chrono::milliseconds timeout, std::optional<Batch>* out);
  /// Ends open streams and destroys this loader's channels. Idempotent; errors are ignored
  /// (a server that is gone has nothing left to free).
  void Close() { core_.Close(); }
  /// Asks every server to shut down (the teardown protocol's last step).
  void ShutdownServers() { core_.ShutdownServers(); }

  /// A host batch as LibTorch tensors viewing the same memory.
  static Batch ToBatch(const HostBatch& host);

 private:
  LoaderCore core_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LOADER_H_
