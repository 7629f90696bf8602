// The Loader across failures: bringing a failed server's channel back (registering again
// where the server lost it, starting the epoch again where needed), retrying with growing
// waits, and renewing leases in the background.

#include "absl/strings/str_cat.h"
#include "client/loader_core.h"
#include "client/loader_server.h"

namespace graphstore::client {

absl::Status LoaderCore::Resync(Server* s, int64_t epoch, int64_t from, std::optional<int> open) {
  // The readers of a server's stripes fail together when it restarts: one registers again,
  // the others find the new channel.
  std::unique_lock<std::mutex> resync(s->resync_mu);
  v1::DescribeChannelRequest describe;
  describe.set_channel_id(s->channel);
  auto described = s->client->DescribeChannel(describe);
  if (!described.ok() && described.status().code() != absl::StatusCode::kNotFound) return described.status();
  if (!described.ok()) {
    // The server restarted and lost the channel: the same registration samples the same batches.
    const uint64_t lost = s->channel;
    auto r = RegisterOn(s, /*again=*/true);
    if (!r.ok()) return r.status();
    LoaderLog()->warn("{}: channel {} is gone (the server restarted); registered again as channel {}",
                s->client->address(), lost, r->channel_id());
    if (auto st = StartOn(s, epoch, from, /*retry=*/false); !st.ok()) return st;
  } else if (!open.has_value()) {
    if (auto st = StartOn(s, epoch, from, /*retry=*/true); !st.ok()) return st;
  }
  resync.unlock();
  return open.has_value() ? OpenStream(s, from, *open) : absl::OkStatus();
}

absl::Status LoaderCore::Retry(Server* s, absl::Status last, SteadyClock::time_point give_up,
                           std::chrono::milliseconds* backoff, const std::function<absl::Status()>& attempt) {
  while (true) {
    if (SteadyClock::now() + *backoff > give_up) {
      return absl::Status(last.code(), absl::StrCat(last.message(), " (gave up reconnecting after ",
                                                    options_.reconnect_deadline.count(), " ms)"));
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, *backoff, [&] { return stopping_.load(); })) {
        return absl::CancelledError("the loader stopped reading");
      }
    }
    *backoff = std::min(*backoff * 2, options_.reconnect_backoff_max);
    absl::Status st = attempt();
    if (st.ok()) {
      ++reconnects_;
      return st;
    }
    if (!Retryable(st)) return st;
    last = std::move(st);
  }
}

void LoaderCore::KeepLeases() {
  std::unique_lock<std::mutex> lock(keeper_mu_);
  while (!keeper_stop_) {
    int64_t lease = 0;
    for (const auto& s : servers_) {
      const int64_t granted = s->lease_ms.load();
      if (granted > 0) lease = lease == 0 ? granted : std::min(lease, granted);
    }
    const auto every = std::chrono::milliseconds(std::max<int64_t>(10, lease > 0 ? lease / 3 : 1000));
    if (keeper_cv_.wait_for(lock, every, [&] { return keeper_stop_; })) break;
    lock.unlock();
    for (const auto& s : servers_) {
      v1::RenewLeaseRequest req;
      req.set_channel_id(s->channel);
      if (req.channel_id() == 0) continue;
      // A server that is down is the readers' business; its next channel gets renewed.
      if (s->client->RenewLease(req).ok()) ++renewals_;
    }
    lock.lock();
  }
}

}  // namespace graphstore::client
