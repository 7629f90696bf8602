#ifndef GRAPHSTORE_CLIENT_LEASE_KEEPER_H_
#define GRAPHSTORE_CLIENT_LEASE_KEEPER_H_

// Keeps a loader's channels alive while its trainer is: renews every server's lease on a thread
// of its own, a third of the shortest lease granted apart. A server that is down is its
// readers' business; its next channel is renewed once they register it again. No LibTorch.

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/server_link.h"

namespace graphstore::client {

class LeaseKeeper {
 public:
  /// Starts renewing the leases of `links`' channels; they outlive the keeper.
  explicit LeaseKeeper(std::vector<ServerLink*> links);
  /// Stops.
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  /// Leases renewed so far.
  int64_t renewals() const { return renewals_.load(); }

 private:
  void Run();

  const std::vector<ServerLink*> links_;
  std::atomic<int64_t> renewals_{0};
  absl::Mutex mu_;
  absl::CondVar stop_cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_LEASE_KEEPER_H_
