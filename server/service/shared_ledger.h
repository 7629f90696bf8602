#ifndef GRAPHSTORE_SERVER_SERVICE_SHARED_LEDGER_H_
#define GRAPHSTORE_SERVER_SERVICE_SHARED_LEDGER_H_

// The bookkeeping of a shared-memory channel's buffers once they are sent. A message names a
// use of a pooled file (SampledMessage.shared_buffer); the client reports it received as soon
// as it has mapped it, and freed once the trainer dropped its tensors (ReleaseSharedBuffers).
// A use stays alive, and its file out of the pool, until it is freed or the channel goes.
// Uses sent and not yet received count against the channel's buffer limits: at them, the
// stream holds back, so a client that stops reading stops the channel. Uses received and not
// freed (batches the trainer keeps) count against a larger limit of their own, per channel and
// (through the core) server-wide: at it the stream pauses until the trainer frees some, so a
// client that never frees cannot fill the shared-memory filesystem.

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "google/protobuf/repeated_field.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// The server's side of every ledger: the bytes of shared buffers sent to clients and not yet
/// freed, over every channel, against the server's limit, and the channels that use shared
/// memory (at the limit, each may keep its fair share). Not thread-safe: the lock that guards
/// the ledgers guards it.
class SharedMemoryAccount {
 public:
  /// `limit`: bytes of unfreed buffers the server allows in all.
  explicit SharedMemoryAccount(int64_t limit) : limit_(limit) {}

  /// Unfreed bytes over every ledger (kept by the ledgers: SharedLedger::Sent, Apply, ...).
  int64_t unfreed() const { return unfreed_; }
  int64_t limit() const { return limit_; }
  /// The unfreed bytes reach the limit.
  bool full() const { return unfreed_ >= limit_; }
  /// A channel with shared memory registered or went.
  void AddChannel() { ++channels_; }
  void RemoveChannel() { --channels_; }
  /// What one channel may keep unfreed while the server is full.
  int64_t share() const { return limit_ / (channels_ > 1 ? channels_ : 1); }

 private:
  friend class SharedLedger;
  void Add(int64_t bytes) { unfreed_ += bytes; }

  const int64_t limit_;
  int64_t unfreed_ = 0;
  int channels_ = 0;
};

/// One channel's sent uses. Not thread-safe: the core guards it.
class SharedLedger {
 public:
  /// Holds back at `max_messages` unreceived uses or `max_bytes` of their files, and at
  /// `max_unfreed_bytes` of the files of uses not yet freed. `server`, when given, is the
  /// server's account, to which this ledger adds its unfreed bytes (guarded by the same lock as
  /// this ledger).
  SharedLedger(int max_messages, int64_t max_bytes, int64_t max_unfreed_bytes, SharedMemoryAccount* server = nullptr)
      : max_messages_(max_messages), max_bytes_(max_bytes), max_unfreed_bytes_(max_unfreed_bytes), server_(server) {}

  /// Records a use as sent (unreceived).
  void Sent(std::shared_ptr<SharedUse> use);
  /// Why the stream must hold back, if it must.
  enum class Hold {
    kNone,
    /// The unreceived uses reach the buffer limits: the client is not reading.
    kUnreceived,
    /// The uses not freed reach `max_unfreed_bytes`, or the server's fair share when its
    /// shared memory is at its limit: the client keeps too much.
    kUnfreed,
  };
  Hold HoldBack() const;
  /// Whether the unreceived uses reach the buffer limits.
  bool BacklogFull() const;

  /// What a release did.
  struct Release {
    /// Uses the client freed: drop them outside the core's lock (their files go back to the
    /// pool, or are deleted).
    std::vector<std::shared_ptr<SharedUse>> freed;
    /// The backlog was full before and is not now: a held-back stream may go on.
    bool unblocked = false;
    /// Bytes of the files of the freed uses.
    int64_t freed_bytes = 0;
  };
  /// Marks `received` uses received and `freed` ones freed (freeing implies receiving). Ids
  /// that name no use sent (already freed, or never sent) are ignored.
  Release Apply(const google::protobuf::RepeatedField<uint64_t>& received,
                const google::protobuf::RepeatedField<uint64_t>& freed);
  /// A new stream begins: the uses still unreceived went out on streams that have ended, so they
  /// stop counting against the buffer limits. With `reclaim`, the client has reported every use
  /// it received, so those uses never reached it: they are taken from the ledger (drop them
  /// outside the core's lock) and their bytes stop counting as unfreed. Without it they stay
  /// until the client frees them or the channel goes.
  std::vector<std::shared_ptr<SharedUse>> NewStream(bool reclaim);
  /// Takes every use (the channel is being destroyed); the ledger is empty after.
  std::vector<std::shared_ptr<SharedUse>> TakeAll();

  /// Uses sent and not yet freed.
  int unreleased() const { return static_cast<int>(sent_.size()); }
  /// Bytes of the files of uses sent and not yet received.
  int64_t unreceived_bytes() const { return unreceived_bytes_; }
  /// Bytes of the files of uses sent and not yet freed.
  int64_t unfreed_bytes() const { return unfreed_bytes_; }

 private:
  struct Entry {
    std::shared_ptr<SharedUse> use;
    bool received = false;
  };
  void Receive(Entry& e);
  // Adds `bytes` to this ledger's unfreed bytes and the server's account.
  void AddUnfreed(int64_t bytes);

  const int max_messages_;
  const int64_t max_bytes_;
  const int64_t max_unfreed_bytes_;
  SharedMemoryAccount* const server_;
  std::map<uint64_t, Entry> sent_;
  int unreceived_ = 0;
  int64_t unreceived_bytes_ = 0;
  int64_t unfreed_bytes_ = 0;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_SHARED_LEDGER_H_
