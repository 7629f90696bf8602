#ifndef GRAPHSTORE_CLIENT_LOADER_H_
#define GRAPHSTORE_CLIENT_LOADER_H_

// The trainer's view of graphstore: register seeds on every server, run epochs, and iterate
// sampled subgraphs as at::Tensor batches named as PyG names them (n_id, x, y, edge_index in
// message-passing direction, e_id, edge_attr, batch_size, num_sampled_nodes / _edges).
// Batches from a server on another host are decoded from the received bytes with one copy into
// pooled memory (client/wire_decoder.h); from a server on this host they view its shared-memory
// buffers without a copy. Errors are thrown as graphstore::client::Error carrying the server's
// code and message. Callers never see gRPC types.

// LibTorch first: Debian builds it with glog, whose CHECK macro must not leak into others.
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "client/buffer_pool.h"
#include "client/client.h"
#include "client/shared_memory.h"
#include "client/wire_decoder.h"
#include "graphstore/v1/graphstore.pb.h"
#include "proto/type_names.h"

namespace graphstore::client {

struct FreedUses;

/// A failed graphstore call: the canonical code and the server's message.
class Error : public std::runtime_error {
 public:
  explicit Error(const absl::Status& status)
      : std::runtime_error(status.ToString()), code_(status.code()), message_(status.message()) {}
  absl::StatusCode code() const { return code_; }
  /// The message alone, without the code.
  const std::string& message() const { return message_; }

 private:
  absl::StatusCode code_;
  std::string message_;
};

/// Views a wire tensor as an at::Tensor without copying; `owner` keeps the bytes alive. A
/// tensor of a shared-memory message views its slice of `shared`, which `owner` must also keep.
at::Tensor ToTensor(const v1::Tensor& tensor, std::shared_ptr<const void> owner, const MappedBuffer* shared = nullptr);

/// Views a decoded tensor as an at::Tensor without copying (it keeps the buffer alive).
at::Tensor ToTensor(const DecodedTensor& tensor);

/// The tensors of one node type in a batch.
struct NodeView {
  /// int64 [n]: global ids of the sampled nodes of this type; the batch's seeds of the type
  /// first (for a link-prediction batch, the anchors, then their label nodes).
  at::Tensor n_id;
  /// [n, dim] features (float32 unless the loader keeps the wire encoding) and int64 [n]
  /// labels, when asked for.
  at::Tensor x;
  at::Tensor y;
  /// With a quantized encoding kept (LoaderOptions::decode_features false): float32 [dim] each,
  /// x ~= x_offset + x_scale * q for the codes q of x, and the bits of each code: 8 (x is uint8
  /// [n, dim]), or 4, 2, 1 (x is uint8 [n, ceil(dim * x_bits / 8)], the codes packed as
  /// proto/feature_codec.h lays them out). 0 otherwise.
  at::Tensor x_scale;
  at::Tensor x_offset;
  int x_bits = 0;
  /// int64 [batch_size]: the batch's seeds of this type, as registered.
  at::Tensor seeds;
  /// The batch's seeds of this type: the first batch_size rows of n_id, x and y.
  int64_t batch_size = 0;
  /// Nodes added at each hop; entry 0 counts the seeds (and a link-prediction batch's label
  /// nodes).
  std::vector<int64_t> num_sampled_nodes;
  /// Temporal backends only (undefined otherwise), int64: [batch_size] the time of each seed
  /// (its explicit time, else its node time: PyG's seed_time), and [n] the time each node was
  /// sampled at, which no edge drawn from it is newer than (a seed's time; a label node's
  /// anchor's; else the earliest time of the nodes that reached it in the hop that added it).
  at::Tensor seed_time;
  at::Tensor sampled_time;
  /// With config.with_node_times, for types that store node times (undefined otherwise): int64
  /// [n], each node's stored time (PyG's time).
  at::Tensor time;
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
  at::Tensor e_id;
  at::Tensor edge_attr;
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
struct Batch {
  int64_t epoch = 0;
  int64_t batch_index = 0;
  /// Which server (index into LoaderOptions::servers) produced it.
  int server = 0;
  /// As NodeView / EdgeView of the first node and edge type.
  at::Tensor n_id, x, y, x_scale, x_offset, seeds, seed_time, time, sampled_time;
  at::Tensor edge_index, e_id, edge_attr;
  int x_bits = 0;
  int64_t batch_size = 0;
  std::vector<int64_t> num_sampled_nodes;
  std::vector<int64_t> num_sampled_edges;
  /// int64 [batch_size], for a loader given explicit seeds: each seed's position in
  /// LoaderOptions::seeds (PyG's input_id).
  at::Tensor input_id;
  /// Every node type by name, and every edge type by its message-passing name (the stored name
  /// with edge_dir "in", the reverse name with "out"; see EdgeView).
  std::map<std::string, NodeView> nodes;
  std::map<std::string, EdgeView> edges;
  /// Link-prediction batches only.
  std::optional<AblpView> ablp;
  /// PPR batches only.
  std::vector<PprView> ppr;
  /// What the tensors view: the decoded batch (from a socket), or the message and its mapped
  /// shared buffer (shared memory; then the message's tensors hold slices of it, not bytes).
  std::shared_ptr<const DecodedBatch> decoded;
  std::shared_ptr<const v1::SampledMessage> message;
  std::shared_ptr<const MappedBuffer> shared;
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
  /// ... or explicit global ids (used when non-empty; no id twice); each server gets the ones
  /// it owns ...
  std::vector<int64_t> seeds;
  /// With explicit seeds on a temporal backend (config.temporal_strategy): each seed's time, in
  /// the order of `seeds` (empty: every seed takes its stored node time).
  std::vector<int64_t> seed_times;
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
  /// Batches read ahead per server on the client.
  int prefetch = 4;
  /// Flow-control window of each stream, bytes (0: gRPC's self-tuning window).
  int stream_window_bytes = 8 << 20;
  /// Deadline of every unary call.
  std::chrono::milliseconds deadline{30000};
  /// TLS and credentials of every connection (default: plaintext, none).
  ChannelSecurity security;
  /// How long the connection to each server may take at construction.
  std::chrono::milliseconds connect_timeout{10000};
  /// Channel lease on the servers, ms (0: server default).
  int64_t lease_ms = 0;
  /// Name of this trainer in server logs and stats.
  std::string worker_key = "trainer";
  /// Take batches through shared memory from servers that offer it and share this host
  /// (checked with the server's probe file); other servers send bytes over the connection.
  /// Shared memory carries features as stored: a loader with a feature encoding or a feature
  /// cache reads every server over its connection.
  bool shared_memory = true;
  /// How feature rows travel (FEATURE_ENCODING_UNSPECIFIED: as stored). Ids, edges and labels
  /// are always exact.
  v1::FeatureEncoding feature_encoding = v1::FEATURE_ENCODING_UNSPECIFIED;
  /// Rows of each node type with features this trainer keeps: the hottest nodes, fetched once
  /// at construction; batches then carry only the other rows. 0: no cache.
  int64_t feature_cache_rows = 0;
  /// Hand `x` as float32 (the default), or in the wire encoding (float16, bfloat16, or uint8
  /// with x_scale / x_offset) for the trainer to decode on its device.
  bool decode_features = true;
  /// A server that restarts or drops the connection is retried for up to this long, with waits
  /// doubling from 50 ms to reconnect_backoff_max: the channel is registered again with the
  /// same seed and inputs when the server lost it, and the epoch resumes from the first batch
  /// not yet delivered, so the trainer sees every batch once, exactly as without the failure.
  /// Past the deadline, Next (or StartEpoch) throws the server's last error. 0: fail at once.
  std::chrono::milliseconds reconnect_deadline{60000};
  std::chrono::milliseconds reconnect_backoff_max{2000};
  /// A server that stops answering (hung, or behind a link that drops everything) is noticed
  /// within keepalive_time + keepalive_timeout and handled as one that went away (see
  /// ClientOptions). 0: never.
  std::chrono::milliseconds keepalive_time{20000};
  std::chrono::milliseconds keepalive_timeout{10000};
  /// Renew every channel's lease in the background (every third of the granted lease), so a
  /// trainer busy for longer than the lease between batches or epochs keeps its channels. A
  /// trainer that dies stops renewing, and the servers reap its channels after the lease.
  bool renew_leases = true;
};

/// The encoding a name gives ("float32", "float16", "bfloat16", "int8"; "" or "unspecified":
/// as stored), case-insensitive. InvalidArgument naming the choices otherwise.
absl::StatusOr<v1::FeatureEncoding> ParseFeatureEncoding(const std::string& name);

/// Registers seeds on every server and iterates epochs. Not thread-safe: one trainer thread.
class Loader {
 public:
  /// Connects, creates or joins the backend, registers the seeds on every server and, with a
  /// feature cache, fetches the cached rows.
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
  /// Rows in the trainer's feature cache, over all node types.
  int64_t num_cached_rows() const;
  /// Bytes received for the batches of this loader so far (socket servers).
  int64_t bytes_received() const;
  /// This loader's channel on server `server` (for DescribeChannel); a new one after the
  /// server restarted.
  uint64_t channel_id(int server) const;
  /// Times a failed server was reconnected (and its epoch resumed) so far.
  int64_t num_reconnects() const { return reconnects_.load(); }
  /// Leases renewed in the background so far.
  int64_t num_lease_renewals() const { return renewals_.load(); }
  /// Callers of Next / NextFor blocked right now waiting for a batch.
  int num_waiting() const { return waiting_.load(); }
  /// Blocks until a caller of Next / NextFor waits for a batch, at most `timeout`; whether one
  /// does (a test's way to act once a trainer is stuck in a wait).
  bool WaitForWaiting(std::chrono::milliseconds timeout);

  /// Starts `epoch` on every server and opens their streams.
  void StartEpoch(int64_t epoch);
  /// The next batch of the current epoch from any server, in arrival order; nullopt when
  /// every server's stream has ended. Throws Error when a server fails.
  std::optional<Batch> Next();
  /// Next, waiting at most `timeout`: false when nothing arrived in that time (`*out` is left
  /// alone; call again), else true with the batch, or nullopt at the epoch's end, in `*out`.
  /// For callers that must do something else while they wait (Python checks for Ctrl-C).
  bool NextFor(std::chrono::milliseconds timeout, std::optional<Batch>* out);
  /// Ends open streams and destroys this loader's channels. Idempotent; errors are ignored
  /// (a server that is gone has nothing left to free).
  void Close();
  /// Asks every server to shut down (the teardown protocol's last step).
  void ShutdownServers();

 private:
  struct Server;
  struct Item {
    int server = 0;
    std::optional<Batch> batch;  // nullopt: that server's stream ended
    absl::Status status;
  };

  void Register();
  // Creates or joins the backend and registers this trainer's inputs on one server; `again`
  // after the server lost the channel (the answer must match the first registration's).
  absl::StatusOr<v1::RegisterSamplingInputResponse> RegisterOn(Server* s, bool again);
  void FillFeatureCache(const std::vector<v1::RegisterSamplingInputResponse>& registered);
  // StartEpoch on one server from batch `from`; ALREADY_STARTED counts as done when `retry`.
  absl::Status StartOn(Server* s, int64_t epoch, int64_t from, bool retry);
  // Opens the stream of the current epoch from batch `from` (CANCELLED once readers stop).
  absl::Status OpenStream(Server* s, int64_t from);
  // After a failure: registers again if the server lost the channel, starts `epoch` from
  // `from` where needed and, with `open`, opens the stream from `from`.
  absl::Status Resync(Server* s, int64_t epoch, int64_t from, bool open);
  // Calls `attempt` with growing waits until it succeeds, fails with a code that retrying
  // cannot change, or `give_up` comes; returns the last error then.
  absl::Status Retry(Server* s, absl::Status last, std::chrono::steady_clock::time_point give_up,
                     std::chrono::milliseconds* backoff, const std::function<absl::Status()>& attempt);
  void StopReaders();
  void ReadStream(Server* s, int index);
  void KeepLeases();
  // Batches from a shared-memory message or a decoded one.
  Batch FromMessage(int server, std::shared_ptr<const v1::SampledMessage> msg,
                    std::shared_ptr<const MappedBuffer> shared) const;
  Batch FromDecoded(int server, std::shared_ptr<const DecodedBatch> decoded) const;
  // The homogeneous fields and input_id, once `nodes` and `edges` are filled.
  void Finish(Batch* b, const std::string& first_node_type, const std::string& first_edge_key) const;

  LoaderOptions options_;
  v1::DatasetMeta meta_;
  std::vector<std::unique_ptr<Server>> servers_;
  int64_t num_seeds_ = 0;
  int64_t num_batches_ = 0;
  int64_t epoch_ = -1;
  int open_streams_ = 0;
  bool closed_ = false;
  std::atomic<bool> stopping_{false};  // readers must exit (set under mu_)
  DecodeOptions decode_;               // of the current epoch's socket streams
  std::atomic<int64_t> reconnects_{0};
  std::atomic<int64_t> renewals_{0};
  // The lease keeper.
  std::thread keeper_;
  std::mutex keeper_mu_;
  std::condition_variable keeper_cv_;
  bool keeper_stop_ = false;  // guarded by keeper_mu_
  std::shared_ptr<BufferPool> pool_ = BufferPool::Create();
  FeatureCache cache_;
  // Explicit seeds: each one's position in options_.seeds.
  std::unordered_map<int64_t, int64_t> input_position_;

  std::mutex mu_;
  std::atomic<int> waiting_{0};  // callers blocked in NextFor
  std::condition_variable cv_;
  std::condition_variable waiting_cv_;  // a caller began to wait in NextFor
  std::deque<Item> queue_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LOADER_H_
