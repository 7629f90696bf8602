#ifndef GRAPHSTORE_CLIENT_LOADER_CORE_H_
#define GRAPHSTORE_CLIENT_LOADER_CORE_H_

// The trainer's side of the protocol, in bytes and buffers: register seeds on every server, run
// epochs, and hand out batches as HostBatch views of host memory. It composes the trainer's
// units: each server's link (client/server_link.h), one reader per stream that walks a batch
// through the stages -- read the stream, decode, rows from their owners, assemble, deliver in
// order (client/stripe_reader.h) -- the recovery from failures (client/recovery.h), the lease
// keeper (client/lease_keeper.h) and the trainer's feature cache (client/feature_cache_fill.h).
// Errors are thrown as client::Error carrying the server's code and message.
//
// No LibTorch: client::Loader (client/loader.h) wraps this in LibTorch tensors, and the Python
// extension hands the same views to whatever torch the trainer runs.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/buffer_pool.h"
#include "client/channel_progress.h"
#include "client/client.h"
#include "client/delivery.h"
#include "client/host_batch.h"
#include "client/lease_keeper.h"
#include "client/loader_options.h"
#include "client/owner_rows.h"
#include "client/raw_ids.h"
#include "client/recovery.h"
#include "client/server_link.h"
#include "client/stripe_reader.h"
#include "client/wire_decoder.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// Registers seeds on every server and iterates epochs. Not thread-safe: one trainer thread
/// (num_waiting and WaitForWaiting may be called from any).
class LoaderCore {
 public:
  /// Connects, creates or joins the backend, registers the seeds on every server and, with a
  /// feature cache, fetches the cached rows. Throws Error. Every connection, the striped ones
  /// included, is opened through `connect`.
  explicit LoaderCore(LoaderOptions options, ClientFactory connect = Client::Connect);
  /// Close()s.
  ~LoaderCore();
  LoaderCore(const LoaderCore&) = delete;
  LoaderCore& operator=(const LoaderCore&) = delete;

  const LoaderOptions& options() const { return options_; }
  const v1::DatasetMeta& meta() const { return meta_; }
  /// How many servers send batches through shared memory.
  int num_shared_memory_servers() const;
  /// Seeds and batches per epoch over all servers.
  int64_t num_seeds() const { return num_seeds_; }
  int64_t num_batches() const { return num_batches_; }
  /// Rows in the trainer's feature cache, over all node types.
  int64_t num_cached_rows() const;
  /// Connections to each server, and streams per server in an epoch (shared memory: one).
  int connections_per_server() const { return plan_.connections; }
  /// Whether batches leave the rows of other partitions' nodes to their owners (resolved once
  /// from the options: rows_from_owners, several servers).
  bool rows_from_owners() const { return plan_.rows_from_owners; }
  /// Bytes received for the batches of this loader so far (socket servers): the streams' and
  /// the owners' answers (rows_from_owners).
  int64_t bytes_received() const;
  /// The same per server, in the servers' order: (over the streams, as the owner of rows).
  std::vector<std::pair<int64_t, int64_t>> bytes_received_by_server() const;
  /// This loader's channel on server `server` (for DescribeChannel); a new one after the
  /// server restarted.
  uint64_t channel_id(int server) const;
  /// Times a failed server was reconnected (and its epoch resumed) so far.
  int64_t num_reconnects() const { return recovery_->num_reconnects(); }
  /// Leases renewed in the background so far.
  int64_t num_lease_renewals() const { return keeper_ != nullptr ? keeper_->renewals() : 0; }
  /// Callers of Next / NextFor blocked right now waiting for a batch.
  int num_waiting() const { return delivery_->num_waiting(); }
  /// Blocks until a caller of Next / NextFor waits for a batch, at most `timeout`; whether one
  /// does (a test's way to act once a trainer is stuck in a wait).
  bool WaitForWaiting(std::chrono::milliseconds timeout) { return delivery_->WaitForWaiting(timeout); }

  /// Batches that arrived ahead of their turn and wait for the ones before them (ordered
  /// global batches), and a test's way to wait until at least `n` do (at most `timeout`).
  int num_held() const { return delivery_->num_held(); }
  bool WaitUntilHeld(int n, std::chrono::milliseconds timeout) { return delivery_->WaitUntilHeld(n, timeout); }

  /// Starts `epoch` on every server and opens their streams.
  void StartEpoch(int64_t epoch);
  /// The next batch of the current epoch from any server, in arrival order; nullopt when
  /// every server's stream has ended. Throws Error when a server fails.
  std::optional<HostBatch> Next();
  /// Next, waiting at most `timeout`: false when nothing arrived in that time (`*out` is left
  /// alone; call again), else true with the batch, or nullopt at the epoch's end, in `*out`.
  /// For callers that must do something else while they wait (Python checks for Ctrl-C).
  bool NextFor(std::chrono::milliseconds timeout, std::optional<HostBatch>* out);
  /// Ends open streams and destroys this loader's channels. Idempotent; errors are ignored
  /// (a server that is gone has nothing left to free).
  void Close();
  bool closed() const { return closed_; }
  /// Asks every server to shut down (the teardown protocol's last step).
  void ShutdownServers();

 private:
  // What the options resolve to, decided once in the constructor and only read after.
  struct Plan {
    int connections = 1;          // per server (connections_per_server, resolved)
    bool shared_memory = false;   // shared memory may be used (features as stored, no cache)
    bool global = false;          // batches formed over the cluster's input
    bool ordered = false;         // handed out in this trainer's order (global batches only)
    int world_size = 1;           // ranks sharing them
    bool rows_from_owners = false;  // other partitions' rows come from their owners
  };
  static Plan Resolve(const LoaderOptions& options);
  // How a server's channel forms its batches (global batches: its share of the epoch's).
  void SetInput(ServerLink* s, size_t index, const std::vector<int64_t>& seeds, const std::vector<int64_t>& times);
  void Register();
  // Maps LoaderOptions::raw_ids and turns the seeds into global ids (or warns when the dataset
  // has ids of its own and the options name none).
  void OpenRawIds();
  // Starts `epoch` on server `s`, retrying what a reconnect can mend.
  void StartOn(ServerLink* s, int64_t epoch);
  void StopReaders();
  std::vector<ServerLink*> Links() const;

  LoaderOptions options_;
  const Plan plan_;
  v1::DatasetMeta meta_;
  std::vector<std::unique_ptr<ServerLink>> servers_;
  std::vector<std::unique_ptr<ChannelProgress>> progress_;  // per server, of the current epoch
  int64_t num_seeds_ = 0;
  int64_t num_batches_ = 0;
  int64_t epoch_ = -1;
  bool closed_ = false;
  std::shared_ptr<BufferPool> pool_;
  FeatureCache cache_;
  std::unique_ptr<RawIds> raw_ids_;  // LoaderOptions::raw_ids, when given
  DecodeOptions decode_;          // of the socket streams
  OwnerRowsOptions owner_rows_;   // where the rows left to owners come from
  std::unique_ptr<Delivery> delivery_;
  std::unique_ptr<Recovery> recovery_;
  std::vector<std::unique_ptr<StripeReader>> readers_;  // the current epoch's
  std::unique_ptr<LeaseKeeper> keeper_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LOADER_CORE_H_
