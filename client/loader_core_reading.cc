// The LoaderCore's readers and its trainer's side of them: each stream is opened here, and its
// reader thread (one per stripe of each server's batches) reads, keeps each batch once,
// reconnects on a failure, and hands batches over — in arrival order, or held in the reorder
// window until their turn — to Next / NextFor.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "client/loader_core.h"
#include "client/loader_server.h"

namespace graphstore::client {

absl::Status LoaderCore::OpenStream(Server* s, int64_t from, int k) {
  v1::StreamSampledMessagesRequest req;
  req.set_channel_id(s->channel);
  req.set_epoch(epoch_);
  req.set_start_batch(from);
  const size_t n = s->stripes.size();
  if (n > 1) {
    req.set_stripe(static_cast<uint32_t>(k));
    req.set_num_stripes(static_cast<uint32_t>(n));
  }
  // A reader reports each shared buffer received as it maps it, before the batch is made, and
  // the last stream's reader is gone by now: whatever that stream sent unreported never arrived.
  req.set_reclaim_unreceived(true);
  std::lock_guard<std::mutex> lock(s->stream_mu);
  // StopReaders sets stopping_ before it cancels under stream_mu: a stream opened after that
  // would never be cancelled.
  if (stopping_) return absl::CancelledError("the loader stopped reading");
  Server::Stripe& stripe = s->stripes[static_cast<size_t>(k)];
  if (s->shared_memory && n == 1) {
    stripe.batches.reset();
    stripe.stream = s->client->Stream(req);
  } else {
    stripe.stream.reset();
    DecodeOptions decode = decode_;
    if (servers_.size() > 1) {
      // Rows left to their owners are asked for as soon as the batch names its nodes.
      const int index = static_cast<int>(
          std::find_if(servers_.begin(), servers_.end(), [s](const auto& p) { return p.get() == s; }) - servers_.begin());
      decode.owners_known = [this, s, k, index](const DecodedNodes& nodes) {
        s->stripes[static_cast<size_t>(k)].owner_rows.push_back(
            std::make_unique<OwnerRowsInFlight>(owner_rows_, index, nodes));
      };
    }
    stripe.batches = s->StripeClient(k)->StreamBatches(req, std::move(decode));
  }
  return absl::OkStatus();
}

std::optional<HostBatch> LoaderCore::ReadOne(Server* s, int index, int k, absl::Status* status) {
  Server::Stripe& stripe = s->stripes[static_cast<size_t>(k)];
  try {
    if (stripe.stream != nullptr) {
      auto m = stripe.stream->Next();
      if (!m.ok()) {
        *status = m.status();
        return std::nullopt;
      }
      if (*m == nullptr) return std::nullopt;
      auto mapped = (*m)->has_shared_buffer() ? s->Receive(**m)
                                              : absl::StatusOr<std::shared_ptr<const MappedBuffer>>(nullptr);
      if (!mapped.ok()) {
        *status = mapped.status();
        return std::nullopt;
      }
      std::shared_ptr<const v1::SampledMessage> msg = *std::move(m);
      std::shared_ptr<const MappedBuffer> buffer = *std::move(mapped);
      auto batch = FromMessage(index, msg, buffer);
      if (batch.ok()) {
        // Rows left to their owners are written into the places the server kept for them.
        auto ask = [&] { return SharedOwnerRows(index, *msg, buffer.get(), *batch); };
        if (absl::Status fetched = AskOwners(s, batch->batch_index, ask, ask); !fetched.ok()) batch = fetched;
      }
      if (!batch.ok()) {
        *status = batch.status();
        return std::nullopt;
      }
      return *std::move(batch);
    }
    auto d = stripe.batches->Next();
    // What was asked of the owners while the batch arrived (waited for when they go).
    std::vector<std::unique_ptr<OwnerRowsInFlight>> in_flight = std::move(stripe.owner_rows);
    stripe.owner_rows.clear();
    if (!d.ok()) {
      *status = d.status();
      return std::nullopt;
    }
    if (*d == nullptr) return std::nullopt;
    s->bytes_received.fetch_add(static_cast<int64_t>((*d)->wire_bytes), std::memory_order_relaxed);
    absl::Status fetched =
        AskOwners(s, (*d)->batch_index, [&] { return OwnerRowsOf(index, std::move(in_flight), d->get()); },
                  [&] { return FetchOwnerRows(owner_rows_, index, d->get()); });
    if (!fetched.ok()) {
      *status = fetched;
      return std::nullopt;
    }
    return FromDecoded(index, *std::move(d));
  } catch (const Error& e) {
    *status = absl::Status(e.code(), e.message());
    return std::nullopt;
  }
}

absl::Status LoaderCore::AskOwners(Server* s, int64_t batch_index, const std::function<absl::Status()>& first,
                                    const std::function<absl::Status()>& again) {
  // An owner that fails is asked again with growing waits, up to the reconnect deadline, while
  // this stream waits: the batch is not delivered before it is whole, and the assembling server
  // is not disturbed.
  absl::Status fetched = first();
  if (!fetched.ok() && Retryable(fetched) && options_.reconnect_deadline.count() > 0) {
    LoaderLog()->warn("{}: batch {}: {}; asking again for up to {} ms", s->client->address(), batch_index,
                      fetched.ToString(), options_.reconnect_deadline.count());
    auto backoff = kFirstBackoff;
    fetched = Retry(s, fetched, SteadyClock::now() + options_.reconnect_deadline, &backoff, again);
  }
  return fetched;
}

absl::Status LoaderCore::OwnerRowsOf(int index, std::vector<std::unique_ptr<OwnerRowsInFlight>> in_flight,
                                      DecodedBatch* batch) {
  for (DecodedNodes& n : batch->nodes) {
    auto asked = std::find_if(in_flight.begin(), in_flight.end(),
                              [&n](const auto& f) { return f != nullptr && f->node_type() == n.node_type; });
    // Asked while the batch arrived and answered; else (a failure, or a batch whose tensors were
    // not all named first) asked now.
    if (asked != in_flight.end() && (*asked)->Finish(index, &n).ok()) continue;
    if (auto s = FetchOwnerRows(owner_rows_, index, &n); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void LoaderCore::ReadStream(Server* s, int index, int k) {
  const int n = static_cast<int>(s->stripes.size());
  // While a failure is being retried: when to give up, and the next wait.
  std::optional<SteadyClock::time_point> give_up;
  auto backoff = kFirstBackoff;
  // While the server still holds this loader's previous stream: until when to open again, and
  // the next wait.
  std::optional<SteadyClock::time_point> reopen_until;
  std::chrono::milliseconds reopen_wait{5};
  while (true) {
    absl::Status status;
    std::optional<HostBatch> batch = ReadOne(s, index, k, &status);
    int64_t first_missing = 0;  // of the server's batches, once this one counts
    if (batch.has_value()) {
      give_up.reset();
      backoff = kFirstBackoff;
      reopen_until.reset();
      reopen_wait = std::chrono::milliseconds(5);
      bool resent = false;
      status = MarkDelivered(s, k, *batch, &resent);
      if (resent) continue;  // sent again by a resumed stream: the trainer has it
      if (!status.ok()) batch.reset();
    } else if (status.ok()) {
      std::lock_guard<std::mutex> lock(s->progress_mu);
      if (const int64_t missing = s->StripeMissingLocked(k, n); missing >= 0) {
        status = absl::InternalError(absl::StrCat("the stream ended without batch ", missing, " of ", s->num_batches,
                                                  n > 1 ? absl::StrCat(" (stripe ", k, " of ", n, ")") : ""));
      }
    }
    {
      std::lock_guard<std::mutex> lock(s->progress_mu);
      first_missing = s->first_missing;
    }
    if (!batch.has_value() && status.code() == absl::StatusCode::kAlreadyExists && !stopping_) {
      // The server has not yet seen this loader's previous stream of the channel go: it was
      // cancelled an instant ago, when the trainer left the last epoch early. Not a failure:
      // open the stream again in a moment, for up to one call deadline.
      if (!reopen_until.has_value()) reopen_until = SteadyClock::now() + options_.deadline;
      if (SteadyClock::now() + reopen_wait < *reopen_until) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          if (cv_.wait_for(lock, reopen_wait, [&] { return stopping_.load(); })) return;
        }
        reopen_wait = std::min(reopen_wait * 2, std::chrono::milliseconds(200));
        if (OpenStream(s, s->EpochBatch(first_missing), k).ok()) continue;
      }
    }
    if (!batch.has_value() && !status.ok() && !stopping_ && Retryable(status) &&
        options_.reconnect_deadline.count() > 0) {
      if (!give_up.has_value()) {
        give_up = SteadyClock::now() + options_.reconnect_deadline;
        LoaderLog()->warn("{}: epoch {} stream failed ({}) after {} of {} batches; reconnecting for up to {} ms",
                          s->client->address(), epoch_, status.ToString(), first_missing, s->num_batches,
                          options_.reconnect_deadline.count());
      }
      const int64_t from = s->EpochBatch(first_missing);
      status = Retry(s, status, *give_up, &backoff, [&] { return Resync(s, epoch_, from, k); });
      if (status.ok()) {
        LoaderLog()->info("{}: epoch {} resumed from batch {} on channel {}", s->client->address(), epoch_, from,
                          s->channel.load());
        continue;
      }
    }
    if (!Hand(s, index, std::move(batch), status)) return;
  }
}

absl::Status LoaderCore::MarkDelivered(Server* s, int k, const HostBatch& batch, bool* resent) {
  const int n = static_cast<int>(s->stripes.size());
  // The channel's j-th batch is the epoch's offset + stride * j.
  const int64_t b = batch.batch_index;
  const int64_t j = (b - s->offset) / s->stride;
  std::lock_guard<std::mutex> lock(s->progress_mu);
  if (b < s->offset || (b - s->offset) % s->stride != 0 || j >= s->num_batches || j % n != k) {
    return absl::DataLossError(absl::StrCat("batch_index ", b, " is not one of this stream's batches (", s->offset,
                                            " + ", s->stride, " j, j < ", s->num_batches, ", j mod ", n, " = ", k,
                                            ")"));
  }
  *resent = s->delivered[static_cast<size_t>(j)] != 0;
  s->delivered[static_cast<size_t>(j)] = 1;
  while (s->first_missing < s->num_batches && s->delivered[static_cast<size_t>(s->first_missing)]) {
    ++s->first_missing;
  }
  return absl::OkStatus();
}

bool LoaderCore::Hand(Server* s, int index, std::optional<HostBatch> batch, const absl::Status& status) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!batch.has_value()) {
    queue_.push_back(Item{index, std::nullopt, status});
    cv_.notify_all();
    return false;
  }
  ++s->in_queue;
  if (ordered_) {
    // A batch waits for those before it; the reader goes on while its batches are within
    // `prefetch` of the trainer's per server, so a server that is ahead runs only so far.
    const int64_t position = Position(batch->batch_index);
    const int64_t window = options_.prefetch * static_cast<int64_t>(servers_.size());
    reorder_.emplace(position, Item{index, std::move(batch), absl::OkStatus()});
    cv_.notify_all();
    cv_.wait(lock, [&] { return position < next_position_ + window || stopping_; });
  } else {
    queue_.push_back(Item{index, std::move(batch), absl::OkStatus()});
    cv_.notify_all();
    cv_.wait(lock, [&] { return s->in_queue < options_.prefetch || stopping_; });
  }
  return !stopping_;
}

bool LoaderCore::HasNextLocked() const {
  if (!queue_.empty()) return true;
  return ordered_ && !reorder_.empty() && reorder_.begin()->first == next_position_;
}

LoaderCore::Item LoaderCore::TakeNextLocked() {
  // In order, a batch before the streams' ends and failures: a failure is reported as soon as
  // it arrives, an end only once the batches before it are out.
  if (ordered_ && !reorder_.empty() && reorder_.begin()->first == next_position_) {
    Item item = std::move(reorder_.begin()->second);
    reorder_.erase(reorder_.begin());
    ++next_position_;
    return item;
  }
  Item item = std::move(queue_.front());
  queue_.pop_front();
  return item;
}

std::optional<HostBatch> LoaderCore::Next() {
  std::optional<HostBatch> b;
  while (!NextFor(std::chrono::hours(1), &b)) {
  }
  return b;
}

bool LoaderCore::NextFor(std::chrono::milliseconds timeout, std::optional<HostBatch>* out) {
  if (epoch_ < 0) throw Error(absl::FailedPreconditionError("call StartEpoch before Next"));
  const auto give_up = SteadyClock::now() + timeout;
  while (true) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (open_streams_ == 0 && !HasNextLocked()) {
        if (!reorder_.empty()) {
          const absl::Status lost = absl::DataLossError(absl::StrCat(
              "every stream ended but batch ", next_position_, " of this trainer's epoch never arrived"));
          lock.unlock();
          StopReaders();
          throw Error(lost);
        }
        out->reset();
        return true;
      }
      ++waiting_;
      waiting_cv_.notify_all();
      const bool arrived = cv_.wait_until(lock, give_up, [&] { return HasNextLocked(); });
      --waiting_;
      if (!arrived) return false;
      item = TakeNextLocked();
      if (item.batch.has_value()) --servers_[item.server]->in_queue;
    }
    cv_.notify_all();
    if (item.batch.has_value()) {
      *out = std::move(item.batch);
      return true;
    }
    if (!item.status.ok()) {
      const absl::Status s(item.status.code(),
                           absl::StrCat(servers_[item.server]->client->address(), ": ", item.status.message()));
      StopReaders();
      throw Error(s);
    }
    std::lock_guard<std::mutex> lock(mu_);
    --open_streams_;
  }
}

int LoaderCore::num_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  int held = 0;
  for (const auto& [position, item] : reorder_) held += position != next_position_;
  return held;
}

bool LoaderCore::WaitUntilHeld(int n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    int held = 0;
    for (const auto& [position, item] : reorder_) held += position != next_position_;
    return held >= n;
  });
}

bool LoaderCore::WaitForWaiting(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return waiting_cv_.wait_for(lock, timeout, [&] { return waiting_.load() > 0; });
}

}  // namespace graphstore::client
