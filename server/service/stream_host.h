#ifndef GRAPHSTORE_SERVER_SERVICE_STREAM_HOST_H_
#define GRAPHSTORE_SERVER_SERVICE_STREAM_HOST_H_

// What a stream of sampled batches needs from the service: the channel's backend to pop from,
// and the few calls a stream makes while it writes. The gRPC stream writer
// (server/rpc/sampled_message_stream.h) depends on this interface only; Core implements it.

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

#include "scheduler/backend.h"
#include "server/shm/shared_buffer.h"

namespace graphstore {

/// What one sampled batch carries of the channel's counters (ChannelStats), counted once the
/// batch's last part is written to the client.
struct BatchCounts {
  /// Feature rows in the message, and rows left out because the trainer caches them.
  int64_t feature_rows = 0;
  int64_t cached_feature_rows = 0;
  /// Feature rows and labels of nodes another partition owns in the message.
  int64_t other_partitions_rows = 0;
};

/// What one open stream has sent (ChannelStats.streams): written by its writer, read by
/// DescribeChannel and the metrics.
struct StreamCounters {
  std::atomic<int64_t> batches_sent{0};
  std::atomic<int64_t> bytes_sent{0};
};

/// What a stream needs to read a channel's epoch.
struct StreamAttachment {
  std::shared_ptr<scheduler::Backend> backend;
  uint64_t channel_id = 0;
  int64_t epoch = 0;
  /// The channel's messages carry shared buffers (see StreamHost::HandOff).
  bool shared_memory = false;
  /// The stream's share of the channel's batches.
  scheduler::Stripe stripe;
  /// What this stream has sent; the channel lists it while the stream is open.
  std::shared_ptr<StreamCounters> counters;
};

/// The service as a stream sees it. Thread-safe.
class StreamHost {
 public:
  virtual ~StreamHost() = default;
  /// Called once when a stream of `epoch` ends; `cancelled` abandons that epoch's remaining work
  /// (none once the channel has started another).
  virtual void DetachStream(const StreamAttachment& attachment, bool cancelled) = 0;
  /// Counts a delivered message as activity on the channel (renews its lease).
  virtual void Touch(uint64_t channel_id) = 0;
  /// Whether a shared-memory channel's stream must hold back before its next batch (a release
  /// wakes it); an error ends the stream with it (a client that kept its buffers too long).
  virtual absl::StatusOr<bool> SharedHoldBack(uint64_t channel_id) = 0;
  /// Records a use of a shared buffer as sent on the channel; it lives until the client frees
  /// it or the channel is destroyed.
  virtual void HandOff(uint64_t channel_id, std::shared_ptr<SharedUse> use) = 0;
  /// Counts `bytes` written on stream `a` (its own counters and the server's); `batch_done`,
  /// when the write finished a batch, is what that batch counts for.
  virtual void Sent(const StreamAttachment& a, int64_t bytes, const BatchCounts* batch_done) = 0;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_STREAM_HOST_H_
