#ifndef GRAPHSTORE_CLIENT_LOADER_OPTIONS_H_
#define GRAPHSTORE_CLIENT_LOADER_OPTIONS_H_

// What a trainer's loader samples and from where, and the error it throws: shared by the
// torch-free core (client/loader_core.h), the LibTorch Loader (client/loader.h) and the Python
// extension (python/binding.cc). No LibTorch, no gRPC types.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/security.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

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

/// First wait before reconnecting; waits double up to LoaderOptions::reconnect_backoff_max.
inline constexpr std::chrono::milliseconds kFirstBackoff{50};

/// Called once for every block of host memory batches' tensors will view (a pooled receive
/// buffer, a mapped shared-memory file) when it comes into use, and once more when it goes
/// (`added` false), with its address and size. A trainer that copies batches to a GPU
/// registers the blocks as page-locked there. May run on any of the loader's threads.
using HostMemoryHook = std::function<void(void* data, size_t size, bool added)>;

/// What a Loader samples and from where.
struct LoaderOptions {
  /// host:port of every server, in partition order.
  std::vector<std::string> servers;
  /// Backend to create or join on every server; loaders with the same key share its workers and
  /// must ask for the same batch shape. Empty: DefaultBackendKey of the config and sampler
  /// options, one backend per batch shape (loaders asking for the same shape share it).
  std::string backend_key;
  /// Batch shape (batch_size, num_neighbors, shuffle, features, labels, ...).
  v1::SamplingConfig config;
  v1::SamplerOptions sampler_options;
  /// Node type of the seeds ("" for a homogeneous graph).
  std::string node_type;
  /// Seeds: a split name ("train", "val", "test", or "" for all nodes) ...
  std::string split = "train";
  /// ... or explicit global ids (used when non-empty; no id twice; with global batches batched
  /// in this order, else each server batches the ones it owns) ...
  std::vector<int64_t> seeds;
  /// The dataset's own ids: a directory of the dataset on this host (a partition directory, its
  /// book/, or the directory of its part-* directories). For the node types written from ids of
  /// their own (NodeTypeInfo.has_raw_ids), `seeds` are then those ids, and every batch's n_id
  /// and seeds come back in them (client/raw_ids.h). Empty: global ids.
  std::string raw_ids;
  /// With explicit seeds on a temporal backend (config.temporal_strategy): each seed's time, in
  /// the order of `seeds` (empty: every seed takes its stored node time).
  std::vector<int64_t> seed_times;
  /// ... or, when set, link-prediction anchors (split, anchor type, supervision and negative
  /// edge types); rank / world_size slice them on every server.
  std::optional<v1::GetAblpInputRequest> ablp;
  /// This trainer's share (GiGL's rank / world size): with global batches, the epoch's batches
  /// b with b mod world_size == rank; without, a slice of the seeds on every server.
  int rank = 0;
  int world_size = 0;
  /// Batches formed over the whole cluster's input, as one server holding the whole graph would
  /// form them (v1::BatchSelection): one order of all seeds per epoch, batch b its positions
  /// [b * batch_size, (b + 1) * batch_size), sampled by server b / world_size mod servers with
  /// the other partitions' nodes through its peers. False: each server batches only the seeds
  /// it owns (a server's batches then hold its partition's seeds; with METIS, a few classes).
  /// Link-prediction inputs are always batched by the anchors' owners.
  bool global_batches = true;
  /// With global batches, hand batches to the trainer in batch order (0, 1, 2, ... of this
  /// trainer's share), holding those that arrive early: a slow server delays batches, never
  /// reorders them. Without, each server's batches come in its order, interleaved as they
  /// arrive. False: in arrival order.
  bool ordered = true;
  /// Channel seed: shuffles and draws depend only on it, the epoch and the batch.
  uint64_t seed = 0;
  /// Server-side buffer per channel (0: server default).
  int buffer_messages = 0;
  int64_t buffer_bytes = 0;
  /// Batches read ahead per server on the client.
  int prefetch = 4;
  /// Connections to each server, each carrying one stream of every channel's batches (stripe
  /// k of N: the channel's batches j with j mod N = k), merged back in order. One connection is
  /// carried by one thread on each side, which caps what it delivers (about 1.5 GB/s in
  /// plaintext, 1 GB/s with TLS); a fast link or TLS needs several. 0: chosen by the host's
  /// cores (DefaultConnectionsPerServer). Shared memory takes one stream. The channel's
  /// server-side buffer (buffer_bytes) holds per connection: N connections give it N times
  /// the room, counted against the identity's buffer quota.
  int connections_per_server = 0;
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
  /// On a cluster, each server's batches leave out the rows and labels of nodes other
  /// partitions own, and this loader asks their owners for them as each batch arrives
  /// (RegisterSamplingInputRequest.rows_from_owners): a row crosses the network once, from
  /// its owner, instead of twice, and servers exchange only ids. Through shared memory the
  /// owners' rows are written into the places the server kept for them in the buffer (with a
  /// feature cache such servers assemble whole batches). false: every server assembles whole
  /// batches.
  bool rows_from_owners = true;
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
  /// See HostMemoryHook (null: none).
  HostMemoryHook host_memory_hook;
};

/// The encoding a name gives ("float32", "float16", "bfloat16", "int8", "int4", "int2", "int1";
/// "" or "unspecified": as stored), case-insensitive. InvalidArgument naming the choices
/// otherwise.
absl::StatusOr<v1::FeatureEncoding> ParseFeatureEncoding(const std::string& name);

/// A stable name for the backend of a batch shape ("auto/" and 16 hex digits), the same in any
/// language for the same `config` and `options`: FNV-1a over their deterministic encoding.
std::string DefaultBackendKey(const v1::SamplingConfig& config, const v1::SamplerOptions& options);

/// The checks of the options that need no server: InvalidArgument naming the field.
absl::Status ValidateLoaderOptions(const LoaderOptions& options);

/// Most connections per server (LoaderOptions::connections_per_server).
inline constexpr int kMaxConnectionsPerServer = 64;

/// connections_per_server when it is 0: 1 on hosts of fewer than 8 cores (a second
/// connection gains nothing where both sides' threads share two cores), 2 from 8 cores and 4
/// from 16 (measured: docs/benchmarks.md, "Striped streams").
int DefaultConnectionsPerServer();

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LOADER_OPTIONS_H_
