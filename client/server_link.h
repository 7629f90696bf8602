#ifndef GRAPHSTORE_CLIENT_SERVER_LINK_H_
#define GRAPHSTORE_CLIENT_SERVER_LINK_H_

// What a LoaderCore knows of one server: its connections, the channel registered there and how
// to register it again after a restart, the channel's share of an epoch's batches, and its
// shared-memory mappings. The readers, the recovery and the lease keeper of the loader all act
// on a server through its link. No LibTorch.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "client/shared_memory.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// Failures that a server coming back, or a connection being made again, can mend: the server
/// or the link is down, the server lost the channel (restarted), or dropped the stream.
bool Retryable(const absl::Status& s);

/// Ids of shared-buffer uses freed by batches' tensors (on any thread), waiting to be reported.
class FreedUses {
 public:
  void Push(uint64_t id) {
    absl::MutexLock lock(&mu_);
    ids_.push_back(id);
  }
  std::vector<uint64_t> Take() {
    absl::MutexLock lock(&mu_);
    return std::exchange(ids_, {});
  }

 private:
  absl::Mutex mu_;
  std::vector<uint64_t> ids_ ABSL_GUARDED_BY(mu_);
};

/// One server of a loader. The fields set at registration are written by the loader's thread
/// before its readers start, and by a reader's recovery under `resync_mu` while the other
/// readers of the server wait there.
struct ServerLink {
  std::unique_ptr<Client> client;
  /// Connections 2.. to the server (connections_per_server): each carries one stripe's stream.
  std::vector<std::unique_ptr<Client>> extra_clients;
  Client* StripeClient(int k) const { return k == 0 ? client.get() : extra_clients[static_cast<size_t>(k - 1)].get(); }

  std::atomic<uint64_t> channel{0};
  /// The channel's batches in an epoch; its j-th is the epoch's batch offset + stride * j (what
  /// its messages, StartEpoch and the stream's start_batch say). 1 and 0 without global batches.
  int64_t num_batches = 0;
  int64_t stride = 1;
  int64_t offset = 0;
  /// The epoch's number of the channel's batch j, and the j of an epoch's batch b (-1 when b is
  /// not one of the channel's).
  int64_t EpochBatch(int64_t j) const { return offset + stride * j; }
  int64_t ChannelBatch(int64_t b) const;
  /// Explicit seeds batched per server: each of this server's seeds' position in
  /// LoaderOptions::seeds (its input_ids index this).
  std::vector<int64_t> input_index;
  std::atomic<int64_t> lease_ms{0};  // granted
  /// What registers this trainer here, kept to register again after a restart, and what the
  /// first registration's feature cache listed (a restarted server must list the same).
  v1::InitSamplingBackendRequest init;
  v1::RegisterSamplingInputRequest registration;
  std::string cache_listing;
  /// Streams the current epoch is read over (one per stripe; shared memory: one).
  int streams = 1;
  /// Serialises the readers' recovery (one registers again after a restart, the others see it).
  absl::Mutex resync_mu;

  bool shared_memory_allowed = false;  // the loader's options permit shared memory
  bool shared_memory = false;          // messages come through shared memory
  std::unique_ptr<SharedMappings> mappings;
  MemoryHook host_memory_hook;  // for mappings made again after a restart
  /// Uses of shared buffers whose batches are gone, to hand back with the next release.
  std::shared_ptr<FreedUses> freed = std::make_shared<FreedUses>();
  std::atomic<int64_t> bytes_received{0};         // over this loader's streams from this server
  std::atomic<int64_t> owner_bytes_received{0};   // answers of this server as the owner of rows

  /// Creates or joins the backend and registers the channel (`rows_from_owners` as the
  /// loader resolved it); `again` after the server lost the channel: the answer must match the
  /// first registration's (FailedPrecondition otherwise, the new channel destroyed).
  absl::StatusOr<v1::RegisterSamplingInputResponse> Register(bool rows_from_owners, bool again);
  /// StartEpoch from batch `from`; ALREADY_STARTED counts as done when `retry` (a retried call
  /// whose first attempt reached the server).
  absl::Status Start(int64_t epoch, int64_t from, bool retry);
  /// Reports the use `received` (0: none) and every use freed since the last report.
  absl::Status Release(uint64_t received);
  /// Maps a message's shared buffer (usually a file mapped before) and reports it received at
  /// once, so that the stream never waits for the trainer.
  absl::StatusOr<std::shared_ptr<const MappedBuffer>> Receive(const v1::SampledMessage& m);
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_SERVER_LINK_H_
