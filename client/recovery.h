#ifndef GRAPHSTORE_CLIENT_RECOVERY_H_
#define GRAPHSTORE_CLIENT_RECOVERY_H_

// What a failure adds to the trainer's path: bringing a failed server's channel back --
// registering again where the server lost it (a restart), starting the epoch again from the
// first batch the trainer lacks -- and retrying with growing waits until that works, a failure
// that retrying cannot mend comes, or the reconnect deadline passes. The readers call it when
// a stream fails or a batch's owners do not answer. No LibTorch.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "client/delivery.h"
#include "client/server_link.h"

namespace graphstore::client {

/// How long and how often to retry.
struct RecoveryOptions {
  /// How long a failure is retried for (0: not at all), and the longest wait between tries.
  std::chrono::milliseconds reconnect_deadline{0};
  std::chrono::milliseconds backoff_max{1000};
  /// Whether the channel leaves rows to their owners, as the loader resolved it.
  bool rows_from_owners = false;
};

/// Thread-safe: every reader recovers its own server through it.
class Recovery {
 public:
  /// `delivery`'s stop ends every wait between retries.
  Recovery(RecoveryOptions options, Delivery* delivery) : options_(options), delivery_(delivery) {}

  const RecoveryOptions& options() const { return options_; }

  /// After a failure of server `link`'s epoch `epoch`: registers again if the server lost the
  /// channel and starts the epoch there from batch `from`; with a live channel, starts it from
  /// `from` unless `reading` (a reader that opens its stream at `from` next needs no start).
  /// The readers of one server recover one at a time.
  absl::Status Resync(ServerLink* link, int64_t epoch, int64_t from, bool reading);
  /// Calls `attempt` after growing waits (from `*backoff`, doubling up to backoff_max) until it
  /// succeeds, fails with a code that retrying cannot change (Retryable), `give_up` comes (the
  /// last error, saying so), or the readers stop (CANCELLED).
  absl::Status Retry(absl::Status last, std::chrono::steady_clock::time_point give_up,
                     std::chrono::milliseconds* backoff, const std::function<absl::Status()>& attempt);
  /// Retry from the first wait for up to the reconnect deadline, when `failed` is worth it;
  /// else `failed` itself.
  absl::Status RetryFor(const absl::Status& failed, const std::function<absl::Status()>& attempt);

  /// Failures mended so far.
  int64_t num_reconnects() const { return reconnects_.load(); }

 private:
  const RecoveryOptions options_;
  Delivery* const delivery_;
  std::atomic<int64_t> reconnects_{0};
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_RECOVERY_H_
