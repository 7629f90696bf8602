#ifndef GRAPHSTORE_CLIENT_CHANNEL_PROGRESS_H_
#define GRAPHSTORE_CLIENT_CHANNEL_PROGRESS_H_

// Which of a channel's batches of the current epoch have reached the trainer's side: what makes
// delivery exactly once across a failed stream. Every stripe's reader marks what it read; a
// resumed stream starts at the first batch missing, and a batch that a resumed stream sends
// again is recognised and dropped. No gRPC, no LibTorch.

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace graphstore::client {

/// One server's channel in one epoch. Thread-safe.
class ChannelProgress {
 public:
  /// A new epoch of `num_batches` of the channel's batches, read over `stripes` streams
  /// (stripe k carries the channel's batches j with j mod stripes = k).
  void Begin(int64_t num_batches, int stripes);
  /// Marks the channel's batch `j` (-1: not one of the channel's) read by stripe `k`: DataLoss
  /// naming `batch_index` when it is not one of that stripe's; *resent when it was read before.
  absl::Status Mark(int64_t j, int k, int64_t batch_index, bool* resent);
  /// The first of the channel's batches not read yet (num_batches when all were).
  int64_t first_missing() const;
  /// The first batch of stripe `k` not read yet, or -1.
  int64_t StripeMissing(int k) const;

 private:
  mutable absl::Mutex mu_;
  std::vector<char> delivered_ ABSL_GUARDED_BY(mu_);
  int64_t first_missing_ ABSL_GUARDED_BY(mu_) = 0;
  int stripes_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_CHANNEL_PROGRESS_H_
