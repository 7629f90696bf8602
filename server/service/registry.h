#ifndef GRAPHSTORE_SERVER_SERVICE_REGISTRY_H_
#define GRAPHSTORE_SERVER_SERVICE_REGISTRY_H_

// The backends and channels of one server, and what an id that is no longer live once named.
// Ids are given out in increasing order and never reused, so a channel id below the next one
// to be given out that is not live was destroyed: the tombstones are a high-water mark, not a
// set that grows with every channel ever made.
//
// With authentication a channel belongs to the identity that registered it, and other
// identities must not learn that it exists: FindChannelFor answers for them as for an id never
// given out. The owners of the most recently destroyed channels are remembered (a bounded
// number) so that a destroyed channel reads as destroyed only to its owner. The registry also
// keeps what each identity holds, for the quotas.
//
// Not thread-safe: the core holds its lock around every call.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graphstore/v1/graphstore.pb.h"
#include "scheduler/backend.h"
#include "server/service/caller.h"
#include "server/service/shared_ledger.h"
#include "server/service/stream_host.h"
#include "server/service/worker.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// One backend: a worker pool running one sampler for every channel registered on it.
struct BackendEntry {
  enum class State {
    /// Its sampler and workers are being built; callers with the same key wait.
    kCreating,
    /// Channels may register.
    kReady,
    /// Taken out of the registry (destroyed, idle too long, failed to build): whoever still
    /// holds it registers nothing on it.
    kRemoved,
  };
  using Clock = std::chrono::steady_clock;

  uint64_t id = 0;
  std::string key;
  v1::SamplingConfig config;
  State state = State::kCreating;
  /// The identity that created it (charged for it in the quotas).
  std::string creator;
  /// While it has no channel, it is stopped once no call touched it for lease_ms.
  int64_t lease_ms = 0;
  Clock::time_point last_activity;
  /// Callers waiting for the creation to finish.
  std::vector<std::function<void(absl::Status)>> waiters;
  /// Set once ready.
  std::shared_ptr<SamplingWorkers> workers;
  /// Its scheduler: the worker pool, the fair queue and the channels' bounded buffers.
  std::shared_ptr<scheduler::Backend> scheduler;
  /// Live channels registered on it (kept by the Registry).
  int num_channels = 0;
  /// InitSamplingBackend answers with this backend not yet followed by a registration: while
  /// one is pending, its last channel leaving does not stop it (a trainer that joined it is
  /// about to register); the lease stops it if nobody does.
  int pending_joins = 0;
  /// Worker threads it runs while it has channels, against max_worker_threads.
  int worker_threads = 0;
};

/// One channel: a trainer's seeds registered on a backend.
struct ChannelEntry {
  using Clock = std::chrono::steady_clock;

  /// `server`: the server's account of unfreed shared bytes (see SharedLedger).
  ChannelEntry(int buffer_messages, int64_t buffer_bytes, int64_t max_unfreed_shared_bytes,
               SharedMemoryAccount* server = nullptr)
      : buffer_messages(buffer_messages),
        buffer_bytes(buffer_bytes),
        shared(buffer_messages, buffer_bytes, max_unfreed_shared_bytes, server) {}

  uint64_t id = 0;
  std::shared_ptr<BackendEntry> backend;
  /// The identity that registered it; only it may drive, read or end the channel.
  std::string owner;
  std::string worker_key;
  int node_type = 0;
  int64_t num_seeds = 0;
  /// Global batches (v1::BatchSelection): the epoch's batches b with b mod batch_stride ==
  /// batch_offset are the channel's, its batch j being b = batch_offset + batch_stride * j.
  /// Clients number batches by b; the scheduler by j. 1 and 0 for a channel of this server's seeds.
  int64_t batch_stride = 1;
  int64_t batch_offset = 0;
  /// The channel's first batch (j) at or after the epoch's batch `b`.
  int64_t ChannelBatch(int64_t b) const {
    return b <= batch_offset ? 0 : (b - batch_offset + batch_stride - 1) / batch_stride;
  }
  /// The lease: the channel is destroyed when no call touches it for lease_ms while it has no
  /// open stream.
  int64_t lease_ms = 0;
  Clock::time_point last_activity;
  /// The open streams by stripe (index, count), with what each has sent: one entry {0, 1}
  /// without striping.
  std::map<std::pair<int, int>, std::shared_ptr<const StreamCounters>> open_stripes;
  bool streaming() const { return !open_stripes.empty(); }
  /// The channel's output buffer limits. buffer_bytes holds per stream: a channel read by
  /// N stripes has room for N times it (room_streams, raised as stripes open; see
  /// scheduler::Backend::SetStreamRoom), and its owner's quota counts all of that room.
  const int buffer_messages;
  const int64_t buffer_bytes;
  int room_streams = 1;
  int64_t held_buffer_bytes() const { return buffer_bytes * room_streams; }
  /// Shared-memory channels: the channel's files, and the uses sent and not yet freed.
  std::shared_ptr<SharedBufferPool> pool;
  SharedLedger shared;
  /// Since when the stream has waited for the client to free shared buffers (unset when it
  /// does not), and the error that ended it when it waited too long (cleared by a free).
  std::optional<Clock::time_point> unfreed_wait_since;
  absl::Status unfreed_error;
  /// What the workers know of the channel (its attachment in the scheduler).
  std::shared_ptr<const ChannelSampling> sampling;
  v1::FeatureEncoding feature_encoding = v1::FEATURE_ENCODING_UNSPECIFIED;
  int64_t feature_cache_rows = 0;
};

/// What one identity holds, against its quotas.
struct Holdings {
  int channels = 0;
  int backends = 0;
  /// The buffer room (ChannelEntry::held_buffer_bytes) of its live channels, summed.
  int64_t buffer_bytes = 0;
};

/// Backends and channels by id. Ids never repeat across restarts of a server: each registry
/// draws a random instance number that fills an id's high bits (kIdCounterBits below them
/// count), so a trainer that comes back with an id from before a restart gets NOT_FOUND
/// instead of another trainer's channel. Ids stay below 2^63 (they fit an int64 and JSON).
class Registry {
 public:
  static constexpr int kIdCounterBits = 39;
  static constexpr int kIdInstanceBits = 24;

  /// A registry whose ids carry `instance` (taken modulo 2^kIdInstanceBits; 0 draws one at
  /// random, never 0 itself).
  explicit Registry(uint64_t instance = 0);
  uint64_t instance() const { return first_id_ >> kIdCounterBits; }

  /// Owners of destroyed channels remembered for FindChannelFor.
  static constexpr size_t kDestroyedOwnersKept = 1 << 16;

  /// What a channel id names.
  enum class Found {
    kLive,
    /// Given out once and destroyed since.
    kDestroyed,
    /// Never given out.
    kUnknown,
  };

  /// The live channel `id`, or null with `found` saying whether it was destroyed or never was.
  std::shared_ptr<ChannelEntry> FindChannel(uint64_t id, Found* found) const;
  /// FindChannel as `caller` sees it: another identity's channel, live or destroyed, is
  /// kUnknown, unless `describe` and the caller sees everything.
  std::shared_ptr<ChannelEntry> FindChannelFor(uint64_t id, const Caller& caller, bool describe, Found* found) const;
  /// The status every RPC answers for a channel id that is not live and must be: NOT_FOUND for
  /// an id never given out, FAILED_PRECONDITION ("... was destroyed") for a destroyed one.
  static absl::Status NotLive(uint64_t id, Found found);
  /// The id the next channel gets. Reserving it makes it count as given out: if the channel is
  /// never added, the id reads as destroyed.
  uint64_t ReserveChannelId() { return next_channel_id_++; }
  /// Whether `id` was given out by this registry (live or not).
  bool GaveOut(uint64_t id) const { return id >= first_id_ && id < next_channel_id_; }
  /// Adds a channel (with its reserved id) to its backend.
  void AddChannel(std::shared_ptr<ChannelEntry> channel);
  /// Removes a live channel; its id reads as destroyed from now on. Null when not live.
  std::shared_ptr<ChannelEntry> RemoveChannel(uint64_t id);
  /// Raises a live channel's buffer room to `streams` streams, counted in its owner's holdings.
  void GrowStreamRoom(ChannelEntry* channel, int streams);
  const std::map<uint64_t, std::shared_ptr<ChannelEntry>>& channels() const { return channels_; }

  /// The backend `id` (ready or being created), or null.
  std::shared_ptr<BackendEntry> FindBackend(uint64_t id) const;
  /// The backend named `key`, or null.
  std::shared_ptr<BackendEntry> FindBackendByKey(const std::string& key) const;
  /// Adds a new backend (state kCreating) under a fresh id, charged to `creator`.
  std::shared_ptr<BackendEntry> AddBackend(const std::string& key, const v1::SamplingConfig& config,
                                           const std::string& creator = "");
  /// Removes a backend (its state becomes kRemoved); its key may name a new one.
  void RemoveBackend(uint64_t id);
  const std::map<uint64_t, std::shared_ptr<BackendEntry>>& backends() const { return backends_; }

  /// What `identity` holds now.
  Holdings HoldingsOf(const std::string& identity) const;

 private:
  uint64_t first_id_;
  uint64_t next_backend_id_;
  uint64_t next_channel_id_;
  std::map<uint64_t, std::shared_ptr<BackendEntry>> backends_;
  std::map<uint64_t, std::shared_ptr<ChannelEntry>> channels_;
  std::map<std::string, Holdings> holdings_;
  // Owners (non-empty) of recently destroyed channels, and their ids oldest first.
  std::map<uint64_t, std::string> destroyed_owners_;
  std::deque<uint64_t> destroyed_order_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_REGISTRY_H_
