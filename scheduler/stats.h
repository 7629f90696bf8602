#ifndef GRAPHSTORE_SCHEDULER_STATS_H_
#define GRAPHSTORE_SCHEDULER_STATS_H_

// What the scheduler reports of its channels and itself (Backend::Describe, Backend::Stats).

#include <cstdint>
#include <string>
#include <vector>

namespace graphstore::scheduler {

/// Where a channel's current epoch stands.
enum class ChannelState {
  /// No epoch started yet.
  kIdle,
  /// The epoch has batches not yet delivered.
  kRunning,
  /// Every batch of the epoch was delivered.
  kEpochDone,
  /// A batch failed; the error is reported on the stream.
  kFailed,
  /// The epoch was abandoned (its reader went away).
  kCancelled,
};

/// "idle", "running", "epoch_done", "failed" or "cancelled".
const char* ChannelStateName(ChannelState state);

/// A snapshot of one channel.
struct ChannelStats {
  uint64_t channel_id = 0;
  std::string worker_key;
  ChannelState state = ChannelState::kIdle;
  int64_t epoch = -1;
  int64_t num_seeds = 0;
  int64_t num_batches = 0;
  int64_t batches_sampled = 0;
  int64_t batches_delivered = 0;
  int in_flight = 0;
  int buffered_messages = 0;
  int64_t buffered_bytes = 0;
  int64_t total_batches_sampled = 0;
  bool runnable = false;
  /// Batches of the next epoch sampled ahead (buffered) and that epoch, or -1.
  int speculative_buffered = 0;
  int64_t speculative_epoch = -1;
  std::string error;
};

/// A snapshot of the backend.
struct BackendStats {
  int num_workers = 0;
  int num_channels = 0;
  int num_active_channels = 0;
  int num_runnable_channels = 0;
  int64_t total_batches_sampled = 0;
  int64_t buffered_bytes = 0;
  std::vector<ChannelStats> channels;
};

}  // namespace graphstore::scheduler

#endif  // GRAPHSTORE_SCHEDULER_STATS_H_
