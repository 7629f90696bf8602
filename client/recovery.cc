#include "client/recovery.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "client/loader_log.h"
#include "client/loader_options.h"

namespace graphstore::client {

using SteadyClock = std::chrono::steady_clock;

absl::Status Recovery::Resync(ServerLink* link, int64_t epoch, int64_t from, bool reading) {
  // The readers of a server's stripes fail together when it restarts: one registers again,
  // the others find the new channel.
  absl::MutexLock resync(&link->resync_mu);
  v1::DescribeChannelRequest describe;
  describe.set_channel_id(link->channel);
  auto described = link->client->DescribeChannel(describe);
  if (!described.ok() && described.status().code() != absl::StatusCode::kNotFound) return described.status();
  if (!described.ok()) {
    // The server restarted and lost the channel: the same registration samples the same batches.
    const uint64_t lost = link->channel;
    auto r = link->Register(options_.rows_from_owners, /*again=*/true);
    if (!r.ok()) return r.status();
    LoaderLog()->warn("{}: channel {} is gone (the server restarted); registered again as channel {}",
                      link->client->address(), lost, r->channel_id());
    absl::Status started = link->Start(epoch, from, /*retry=*/false);
    // The link's other stripes may be waiting in the delivery with batches of the lost channel's
    // streams, whose buffered rest they would read first: they leave it and open on this one.
    delivery_->Wake();
    return started;
  }
  if (!reading) return link->Start(epoch, from, /*retry=*/true);
  return absl::OkStatus();
}

absl::Status Recovery::Retry(absl::Status last, SteadyClock::time_point give_up, std::chrono::milliseconds* backoff,
                             const std::function<absl::Status()>& attempt) {
  while (true) {
    if (SteadyClock::now() + *backoff > give_up) {
      return absl::Status(last.code(), absl::StrCat(last.message(), " (gave up reconnecting after ",
                                                    options_.reconnect_deadline.count(), " ms)"));
    }
    if (delivery_->WaitStopped(*backoff)) return absl::CancelledError("the loader stopped reading");
    *backoff = std::min(*backoff * 2, options_.backoff_max);
    absl::Status st = attempt();
    if (st.ok()) {
      ++reconnects_;
      return st;
    }
    if (!Retryable(st)) return st;
    last = std::move(st);
  }
}

absl::Status Recovery::RetryFor(const absl::Status& failed, const std::function<absl::Status()>& attempt) {
  if (failed.ok() || !Retryable(failed) || options_.reconnect_deadline.count() <= 0) return failed;
  auto backoff = kFirstBackoff;
  return Retry(failed, SteadyClock::now() + options_.reconnect_deadline, &backoff, attempt);
}

}  // namespace graphstore::client
