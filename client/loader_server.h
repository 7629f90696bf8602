#ifndef GRAPHSTORE_CLIENT_LOADER_SERVER_H_
#define GRAPHSTORE_CLIENT_LOADER_SERVER_H_

// The LoaderCore's state per server, shared by its files: loader_core.cc (registration, epochs),
// loader_core_reading.cc (opening and reading the streams, the reorder window),
// loader_core_recovery.cc (reconnecting, resuming, leases), loader_core_cache.cc (the feature
// cache) and loader_core_batches.cc (batches built from what arrived). Not part of the client's interface.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/loader_core.h"
#include "client/owner_rows.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace graphstore::client {

using SteadyClock = std::chrono::steady_clock;

/// Failures that a server coming back, or a connection being made again, can mend: the server
/// or the link is down, the server lost the channel (restarted), or dropped the stream.
inline bool Retryable(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:  // the server has not yet seen the old stream go
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kAborted: return true;
    default: return false;
  }
}

/// The Loader's logger ("loader", on stderr unless the program set one up).
inline std::shared_ptr<spdlog::logger> LoaderLog() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("loader");
    return l != nullptr ? l : spdlog::stderr_color_mt("loader");
  }();
  return logger;
}

// Ids of shared-buffer uses freed by batches' tensors (on any thread), waiting to be reported.
struct FreedUses {
  std::mutex mu;
  std::vector<uint64_t> ids;
  void Push(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    ids.push_back(id);
  }
  std::vector<uint64_t> Take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::exchange(ids, {});
  }
};

struct LoaderCore::Server {
  std::unique_ptr<Client> client;
  std::atomic<uint64_t> channel{0};
  // The channel's batches in an epoch; its j-th is the epoch's batch offset + stride * j (what
  // its messages, StartEpoch and the stream's start_batch say). 1 and 0 without global batches.
  int64_t num_batches = 0;
  int64_t stride = 1;
  int64_t offset = 0;
  // Explicit seeds batched per server: each of this server's seeds' position in
  // LoaderOptions::seeds (its input_ids index this).
  std::vector<int64_t> input_index;
  std::atomic<int64_t> lease_ms{0};  // granted
  // What registers this trainer here, kept to register again after a restart, and what the
  // first registration's feature cache listed (a restarted server must list the same).
  v1::InitSamplingBackendRequest init;
  v1::RegisterSamplingInputRequest registration;
  std::string cache_listing;
  // Connections 2.. to the server (connections_per_server): each carries one stripe's stream.
  std::vector<std::unique_ptr<Client>> extra_clients;
  Client* StripeClient(int k) const { return k == 0 ? client.get() : extra_clients[static_cast<size_t>(k - 1)].get(); }
  // The epoch's streams, one per stripe of the channel's batches (shared memory: one stream),
  // each read by a thread of its own. A reader replaces its stream's objects when it
  // reconnects, StopReaders cancels them (both under stream_mu).
  struct Stripe {
    std::unique_ptr<MessageStream> stream;  // shared-memory channels
    std::unique_ptr<BatchStream> batches;   // the others
    std::thread reader;
    // Rows of the batch being read asked of their owners as it arrives (its reader's only).
    std::vector<std::unique_ptr<OwnerRowsInFlight>> owner_rows;
  };
  std::mutex stream_mu;
  std::vector<Stripe> stripes;
  // Serialises the readers' recovery (one registers again after a restart, the others see it).
  std::mutex resync_mu;
  // Which of the channel's batches (j) of the current epoch reached the trainer's queue, and
  // the first that has not: a resumed stream starts there and drops what arrived before
  // (guarded by progress_mu: every stripe's reader updates them).
  std::mutex progress_mu;
  std::vector<char> delivered;
  int64_t first_missing = 0;
  // The first batch of stripe k of n not yet delivered, or -1 (with progress_mu held).
  int64_t StripeMissingLocked(int k, int n) const {
    for (int64_t j = first_missing; j < num_batches; ++j) {
      if (j % n == k && !delivered[static_cast<size_t>(j)]) return j;
    }
    return -1;
  }
  // The epoch's number of the channel's batch j.
  int64_t EpochBatch(int64_t j) const { return offset + stride * j; }
  bool shared_memory_allowed = false;  // the loader's options permit shared memory
  bool shared_memory = false;          // messages come through shared memory
  std::unique_ptr<SharedMappings> mappings;
  // Uses of shared buffers whose batches are gone, to hand back with the next release.
  std::shared_ptr<FreedUses> freed = std::make_shared<FreedUses>();
  int in_queue = 0;  // batches of this server waiting in queue_ (guarded by LoaderCore::mu_)
  std::atomic<int64_t> bytes_received{0};

  // Reports the use `received` (0: none) and every use freed since the last report.
  absl::Status Release(uint64_t received) {
    v1::ReleaseSharedBuffersRequest release;
    release.set_channel_id(channel);
    if (received != 0) release.add_received_ids(received);
    for (uint64_t id : freed->Take()) release.add_freed_ids(id);
    if (release.received_ids().empty() && release.freed_ids().empty()) return absl::OkStatus();
    return client->ReleaseSharedBuffers(release).status();
  }

  // Maps a message's shared buffer (usually a file mapped before) and reports it received at
  // once, so that the stream never waits for the trainer.
  absl::StatusOr<std::shared_ptr<const MappedBuffer>> Receive(const v1::SampledMessage& m) {
    absl::StatusOr<std::shared_ptr<const MappedBuffer>> mapped =
        absl::FailedPreconditionError("the server sent a shared buffer to a channel without shared memory");
    if (mappings != nullptr) {
      mappings->Forget(m.retired_shared_paths());
      mapped = mappings->Map(m.shared_buffer());
    }
    const absl::Status released = Release(m.shared_buffer().id());
    if (mapped.ok() && !released.ok()) return released;
    return mapped;
  }
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LOADER_SERVER_H_
