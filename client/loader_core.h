#ifndef GRAPHSTORE_CLIENT_LOADER_CORE_H_
#define GRAPHSTORE_CLIENT_LOADER_CORE_H_

// The trainer's side of the protocol, in bytes and buffers: register seeds on every server,
// run epochs, read every server's stream on a thread of its own, ride out server restarts
// (register again, resume from the first batch not delivered), renew leases, keep the feature
// cache, and hand out batches as HostBatch views of host memory. Batches from a server on
// another host are decoded from the received bytes with one copy into pooled memory
// (client/wire_decoder.h); from a server on this host they view its shared-memory buffers
// without a copy. Errors are thrown as client::Error carrying the server's code and message.
//
// No LibTorch: client::Loader (client/loader.h) wraps this in LibTorch tensors, and the Python
// extension hands the same views to whatever torch the trainer runs.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "client/buffer_pool.h"
#include "client/client.h"
#include "client/host_batch.h"
#include "client/loader_options.h"
#include "client/owner_rows.h"
#include "client/shared_memory.h"
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
  int connections_per_server() const { return connections_; }
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

  /// Batches that arrived ahead of their turn and wait for the ones before them (ordered
  /// global batches), and a test's way to wait until at least `n` do (at most `timeout`).
  int num_held() const;
  bool WaitUntilHeld(int n, std::chrono::milliseconds timeout);

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
  struct Server;
  struct Item {
    int server = 0;
    std::optional<HostBatch> batch;  // nullopt: that server's stream ended
    absl::Status status;
  };
  // How a server's channel forms its batches (global batches: its share of the epoch's).
  void SetInput(Server* s, size_t index, const std::vector<int64_t>& seeds, const std::vector<int64_t>& times);

  void Register();
  // Creates or joins the backend and registers this trainer's inputs on one server; `again`
  // after the server lost the channel (the answer must match the first registration's).
  absl::StatusOr<v1::RegisterSamplingInputResponse> RegisterOn(Server* s, bool again);
  void FillFeatureCache(const std::vector<v1::RegisterSamplingInputResponse>& registered);
  // StartEpoch on one server from batch `from`; ALREADY_STARTED counts as done when `retry`.
  absl::Status StartOn(Server* s, int64_t epoch, int64_t from, bool retry);
  // Opens the stream of stripe `k` of the current epoch from batch `from` (CANCELLED once
  // readers stop).
  absl::Status OpenStream(Server* s, int64_t from, int k);
  // Calls `first` to fill in a batch's rows left to their owners, then `again` while a failure
  // is worth retrying, up to the reconnect deadline.
  absl::Status AskOwners(Server* s, int64_t batch_index, const std::function<absl::Status()>& first,
                         const std::function<absl::Status()>& again);
  // The same for a shared-memory batch `b` of `msg`: the owners' rows go into their places.
  absl::Status SharedOwnerRows(int index, const v1::SampledMessage& msg, const MappedBuffer* shared,
                               const HostBatch& b);
  // Fills in the rows of `batch` (from server `index`) left to their owners: those asked while
  // it arrived are waited for, the rest asked now.
  absl::Status OwnerRowsOf(int index, std::vector<std::unique_ptr<OwnerRowsInFlight>> in_flight, DecodedBatch* batch);
  // After a failure: registers again if the server lost the channel, starts `epoch` from
  // `from` where needed and, given a stripe to `open`, opens its stream from `from`.
  absl::Status Resync(Server* s, int64_t epoch, int64_t from, std::optional<int> open);
  // Calls `attempt` with growing waits until it succeeds, fails with a code that retrying
  // cannot change, or `give_up` comes; returns the last error then.
  absl::Status Retry(Server* s, absl::Status last, std::chrono::steady_clock::time_point give_up,
                     std::chrono::milliseconds* backoff, const std::function<absl::Status()>& attempt);
  void StopReaders();
  // Reads stripe `k` of server `index`'s batches until its stream ends.
  void ReadStream(Server* s, int index, int k);
  // One read of that stream: a batch, nullopt with OK at its end, or the failure.
  std::optional<HostBatch> ReadOne(Server* s, int index, int k, absl::Status* status);
  // Marks `batch`, read by stripe k of server `s`, delivered: DATA_LOSS when it is not one of
  // that stripe's batches; *resent when a resumed stream sent it again (the trainer has it).
  absl::Status MarkDelivered(Server* s, int k, const HostBatch& batch, bool* resent);
  // Hands server `index`'s batch, or its stream's final status, to the trainer's side, waiting
  // while the reader is a prefetch window ahead; false when the reader is done.
  bool Hand(Server* s, int index, std::optional<HostBatch> batch, const absl::Status& status);
  void KeepLeases();
  // Batches from a shared-memory message or a decoded one.
  absl::StatusOr<HostBatch> FromMessage(int server, std::shared_ptr<const v1::SampledMessage> msg,
                                        std::shared_ptr<const MappedBuffer> shared) const;
  HostBatch FromDecoded(int server, std::shared_ptr<const DecodedBatch> decoded) const;
  // input_id from the seed type's input_ids, once `nodes` is filled.
  void SetInputId(HostBatch* b) const;
  // A batch's place in this trainer's order: the epoch's batch b is the (b - rank) / world_size
  // -th of its share with global batches.
  int64_t Position(int64_t batch_index) const;
  // With mu_ held: whether NextFor has something to hand out, and taking it.
  bool HasNextLocked() const;
  Item TakeNextLocked();

  LoaderOptions options_;
  v1::DatasetMeta meta_;
  std::vector<std::unique_ptr<Server>> servers_;
  int connections_ = 1;  // per server (connections_per_server, resolved)
  int64_t num_seeds_ = 0;
  int64_t num_batches_ = 0;
  bool global_ = false;   // batches formed over the cluster's input
  bool ordered_ = false;  // handed out in this trainer's order (global batches only)
  int world_size_ = 1;    // ranks sharing them
  std::string seed_type_; // the node type of the seeds (input_id goes there)
  int64_t epoch_ = -1;
  int open_streams_ = 0;
  bool closed_ = false;
  std::atomic<bool> stopping_{false};  // readers must exit (set under mu_)
  DecodeOptions decode_;               // of the current epoch's socket streams
  OwnerRowsOptions owner_rows_;        // where their rows left to owners come from
  std::atomic<int64_t> reconnects_{0};
  std::atomic<int64_t> renewals_{0};
  // The lease keeper.
  std::thread keeper_;
  std::mutex keeper_mu_;
  std::condition_variable keeper_cv_;
  bool keeper_stop_ = false;  // guarded by keeper_mu_
  std::shared_ptr<BufferPool> pool_;
  FeatureCache cache_;

  mutable std::mutex mu_;
  std::atomic<int> waiting_{0};  // callers blocked in NextFor
  std::condition_variable cv_;
  std::condition_variable waiting_cv_;  // a caller began to wait in NextFor
  // What the readers handed over: in arrival order; or, ordered, batches by their position and
  // the streams' ends and failures apart.
  std::deque<Item> queue_;
  std::map<int64_t, Item> reorder_;
  int64_t next_position_ = 0;  // ordered: the position NextFor hands out next
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LOADER_CORE_H_
