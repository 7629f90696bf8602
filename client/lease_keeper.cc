#include "client/lease_keeper.h"

#include <algorithm>
#include <utility>

#include "absl/time/time.h"

namespace graphstore::client {

LeaseKeeper::LeaseKeeper(std::vector<ServerLink*> links) : links_(std::move(links)) {
  thread_ = std::thread([this] { Run(); });
}

LeaseKeeper::~LeaseKeeper() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    stop_cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void LeaseKeeper::Run() {
  while (true) {
    int64_t lease = 0;
    for (const ServerLink* s : links_) {
      const int64_t granted = s->lease_ms.load();
      if (granted > 0) lease = lease == 0 ? granted : std::min(lease, granted);
    }
    const absl::Time next = absl::Now() + absl::Milliseconds(std::max<int64_t>(10, lease > 0 ? lease / 3 : 1000));
    {
      absl::MutexLock lock(&mu_);
      while (!stop_ && !stop_cv_.WaitWithDeadline(&mu_, next)) {
      }
      if (stop_) return;
    }
    for (ServerLink* s : links_) {
      v1::RenewLeaseRequest req;
      req.set_channel_id(s->channel);
      if (req.channel_id() == 0) continue;
      if (s->client->RenewLease(req).ok()) ++renewals_;
    }
  }
}

}  // namespace graphstore::client
