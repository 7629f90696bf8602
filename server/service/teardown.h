#ifndef GRAPHSTORE_SERVER_SERVICE_TEARDOWN_H_
#define GRAPHSTORE_SERVER_SERVICE_TEARDOWN_H_

// Channels and backends going away on their own: the watchdog thread that reaps channels whose
// client vanished (their lease ran out) and backends nobody registers on, ends the streams of
// clients that hold shared buffers too long, joins the workers of backends whose last channel
// went, and logs the state now and then; and shutdown. No gRPC.

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/service/channels.h"
#include "server/service/introspection.h"
#include "server/service/service_state.h"

namespace graphstore {

class Teardown {
 public:
  /// Starts the watchdog. `introspection` outlives it.
  Teardown(ServiceState* state, const Introspection* introspection);
  /// Shutdown()s.
  ~Teardown();
  Teardown(const Teardown&) = delete;
  Teardown& operator=(const Teardown&) = delete;

  /// Destroys every live channel and stops every backend; streams end. Returns the number of
  /// channels destroyed. Idempotent; later sampling calls fail with UNAVAILABLE.
  int Shutdown() ABSL_LOCKS_EXCLUDED(state_.mu);

 private:
  void WatchdogLoop() ABSL_LOCKS_EXCLUDED(state_.mu);
  // One round of the watchdog at `now`: leases, overdue shared buffers, idle backends.
  void ReapLocked(ServiceState::Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Stops the backends left to retire (releasing the lock while stopping).
  void StopRetiredLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  ServiceState& state_;
  const Introspection& introspection_;
  // Serialises Shutdown() so the watchdog is joined once.
  absl::Mutex shutdown_mu_;
  std::thread watchdog_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_TEARDOWN_H_
