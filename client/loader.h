#ifndef GRAPHSTORE_CLIENT_LOADER_H_
#define GRAPHSTORE_CLIENT_LOADER_H_

// The trainer's view of graphstore: register seeds on every server, run epochs, and iterate
// sampled subgraphs as at::Tensor batches. Tensors view the received message bytes without
// copying. Errors are thrown as graphstore::client::Error carrying the server's code and
// message. Callers never see gRPC types.

// LibTorch first: Debian builds it with glog, whose CHECK macro must not leak into others.
#include <torch/torch.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "client/shared_memory.h"
#include "graphstore/v1/graphstore.pb.h"
#include "proto/type_names.h"

namespace graphstore::client {

struct FreedUses;

/// A failed graphstore call: the canonical code and the server's message.
class Error : public std::runtime_error {
 public:
  explicit Error(const absl::Status& status)
      : std::runtime_error(status.ToString()), code_(status.code()) {}
  absl::StatusCode code() const { return code_; }

 private:
  absl::StatusCode code_;
};

/// Views a wire tensor as an at::Tensor without copying; `owner` keeps the bytes alive. A
/// tensor of a shared-memory message views its slice of `shared`, which `owner` must also keep.
at::Tensor ToTensor(const v1::Tensor& tensor, std::shared_ptr<const void> owner,
                    const MappedBuffer* shared = nullptr);

/// The tensors of one node type in a batch.
struct NodeView {
  /// int64 [n]: global ids; seeds (and a link-prediction batch's label nodes) first.
  at::Tensor node;
  /// int64 [b]: the batch's seeds of this type as registered.
  at::Tensor batch;
  /// [n, d] features and int64 [n] labels, when asked for.
  at::Tensor x;
  at::Tensor y;
  /// int64 [hops + 1].
  at::Tensor num_sampled_nodes;
};

/// The edges of one edge type in a batch, in message-passing direction: every edge points from
/// a sampled neighbour to the node that sampled it, as PyG's MessagePassing consumes them.
struct EdgeView {
  /// The type as stored; with edge_dir "out" the view's key is its reverse.
  std::string stored_type;
  /// int64 [2, m]: local indices (row 0 into the source type of the view's key, row 1 into its
  /// destination type).
  at::Tensor edge_index;
  /// int64 [m] global edge ids and [m, d] edge features, when asked for.
  at::Tensor eids;
  at::Tensor edge_attr;
  /// int64 [hops].
  at::Tensor num_sampled_edges;
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

/// The reverse of an edge type's name (server/type_names.h), as Batch::edges keys it.
using graphstore::ReverseEdgeTypeName;

/// One sampled subgraph of a homogeneous graph (the first node and edge type of a
/// heterogeneous one; `message` has every type, and `nodes` / `edges` view them all).
struct Batch {
  int64_t epoch = 0;
  int64_t batch_index = 0;
  /// Which server (index into LoaderOptions::servers) produced it.
  int server = 0;
  /// int64 [n]: global ids of the sampled nodes; the unique seeds come first.
  at::Tensor node;
  /// int64 [b]: the batch's seeds as registered.
  at::Tensor batch;
  /// int64 [m]: local indices of each edge's source and destination (as stored).
  at::Tensor rows;
  at::Tensor cols;
  /// int64 [m]: global edge ids, when the config asks for them.
  at::Tensor eids;
  /// [n, d] node features, when asked for.
  at::Tensor x;
  /// int64 [n] labels, when asked for.
  at::Tensor y;
  /// int64 [hops + 1] and [hops].
  at::Tensor num_sampled_nodes;
  at::Tensor num_sampled_edges;
  /// Every node type by name, and every edge type by its message-passing name (the stored name
  /// with edge_dir "in", the reverse name with "out"; see EdgeView).
  std::map<std::string, NodeView> nodes;
  std::map<std::string, EdgeView> edges;
  /// Link-prediction batches only.
  std::optional<AblpView> ablp;
  /// PPR batches only.
  std::vector<PprView> ppr;
  /// The message the tensors view, and its mapped shared buffer when it came through shared
  /// memory (then the message's tensors hold slices of it, not bytes). The slices stay valid
  /// while any of this batch's tensors lives; read them only through the tensors.
  std::shared_ptr<const v1::SampledMessage> message;
  std::shared_ptr<const MappedBuffer> shared;

  /// Number of unique seeds (the first rows of `node`, `x` and `y`).
  int64_t num_seeds() const { return num_sampled_nodes.defined() ? num_sampled_nodes[0].item<int64_t>() : 0; }
};

/// What a Loader samples and from where.
struct LoaderOptions {
  /// host:port of every server, in partition order.
  std::vector<std::string> servers;
  /// Backend to create or join on every server.
  std::string backend_key = "default";
  /// Batch shape (batch_size, num_neighbors, shuffle, features, labels, ...).
  v1::SamplingConfig config;
  v1::SamplerOptions sampler_options;
  /// Node type of the seeds ("" for a homogeneous graph).
  std::string node_type;
  /// Seeds: a split name ("train", "val", "test", or "" for all nodes) ...
  std::string split = "train";
  /// ... or explicit global ids (used when non-empty); each server gets the ones it owns ...
  std::vector<int64_t> seeds;
  /// ... or, when set, link-prediction anchors (split, anchor type, supervision and negative
  /// edge types); rank / world_size slice them on every server.
  std::optional<v1::GetAblpInputRequest> ablp;
  /// This trainer's slice of the split on every server (GiGL's rank / world size).
  int rank = 0;
  int world_size = 0;
  /// Channel seed: shuffles and draws depend only on it, the epoch and the batch.
  uint64_t seed = 0;
  /// Server-side buffer per channel (0: server default).
  int buffer_messages = 0;
  int64_t buffer_bytes = 0;
  /// Messages read ahead per server on the client.
  int prefetch = 4;
  /// Flow-control window of each stream, bytes (0: gRPC's self-tuning window).
  int stream_window_bytes = 8 << 20;
  /// Deadline of every unary call.
  std::chrono::milliseconds deadline{30000};
  /// Channel lease on the servers, ms (0: server default).
  int64_t lease_ms = 0;
  /// Name of this trainer in server logs and stats.
  std::string worker_key = "trainer";
  /// Take batches through shared memory from servers that offer it and share this host
  /// (checked with the server's probe file); other servers send bytes over the connection.
  bool shared_memory = true;
};

/// Registers seeds on every server and iterates epochs. Not thread-safe: one trainer thread.
class Loader {
 public:
  /// Connects, creates or joins the backend and registers the seeds on every server.
  explicit Loader(LoaderOptions options);
  /// Close()s.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const v1::DatasetMeta& meta() const { return meta_; }
  /// How many servers send batches through shared memory.
  int num_shared_memory_servers() const;
  /// Seeds and batches per epoch over all servers.
  int64_t num_seeds() const { return num_seeds_; }
  int64_t num_batches() const { return num_batches_; }

  /// Starts `epoch` on every server and opens their streams.
  void StartEpoch(int64_t epoch);
  /// The next batch of the current epoch from any server, in arrival order; nullopt when
  /// every server's stream has ended. Throws Error when a server fails.
  std::optional<Batch> Next();
  /// Ends open streams and destroys this loader's channels. Idempotent; errors are ignored
  /// (a server that is gone has nothing left to free).
  void Close();
  /// Asks every server to shut down (the teardown protocol's last step).
  void ShutdownServers();

 private:
  struct Server;
  struct Item {
    int server = 0;
    std::shared_ptr<v1::SampledMessage> message;  // nullptr: that server's stream ended
    std::shared_ptr<const MappedBuffer> shared;
    absl::Status status;
  };

  void StopReaders();
  Batch ToBatch(int server, std::shared_ptr<const v1::SampledMessage> msg,
                std::shared_ptr<const MappedBuffer> shared) const;

  LoaderOptions options_;
  v1::DatasetMeta meta_;
  std::vector<std::unique_ptr<Server>> servers_;
  int64_t num_seeds_ = 0;
  int64_t num_batches_ = 0;
  int64_t epoch_ = -1;
  int open_streams_ = 0;
  bool closed_ = false;
  bool stopping_ = false;  // readers must exit (guarded by mu_)

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LOADER_H_
