#include "client/stripe_reader.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/loader_log.h"
#include "client/loader_options.h"

namespace graphstore::client {

using SteadyClock = std::chrono::steady_clock;

StripeReader::~StripeReader() {
  Cancel();
  Join();
}

void StripeReader::Start(int64_t from) {
  (void)Open(from);  // before the readers stop it opens; else the thread reports the stop
  thread_ = std::thread([this] { Run(); });
}

void StripeReader::Cancel() {
  absl::MutexLock lock(&mu_);
  if (messages_ != nullptr) messages_->Cancel();
  if (batches_ != nullptr) batches_->Cancel();
}

void StripeReader::Join() {
  if (thread_.joinable()) thread_.join();
}

absl::Status StripeReader::Open(int64_t from) {
  ServerLink& link = *c_.link;
  v1::StreamSampledMessagesRequest req;
  req.set_channel_id(link.channel);
  opened_channel_ = req.channel_id();
  req.set_epoch(c_.epoch);
  req.set_start_batch(from);
  if (link.streams > 1) {
    req.set_stripe(static_cast<uint32_t>(c_.stripe));
    req.set_num_stripes(static_cast<uint32_t>(link.streams));
  }
  // A reader reports each shared buffer received as it maps it, before the batch is made, and
  // the last stream's reader is gone by now: whatever that stream sent unreported never arrived.
  req.set_reclaim_unreceived(true);
  // Asked while a batch that stream was sending arrived: never finished.
  owner_rows_.reset();
  absl::MutexLock lock(&mu_);
  // The loader tells the delivery to stop before it cancels the readers' streams: a stream
  // opened after that would never be cancelled.
  if (c_.delivery->stopping()) return absl::CancelledError("the loader stopped reading");
  if (link.shared_memory && link.streams == 1) {
    batches_.reset();
    messages_ = link.client->Stream(req);
    return absl::OkStatus();
  }
  messages_.reset();
  DecodeOptions decode = c_.decode;
  // Rows left to their owners are asked for as soon as the batch names its nodes (on this
  // thread: the decoder runs inside BatchStream::Next).
  decode.owners_known = [this](const DecodedNodes& nodes) {
    if (owner_rows_ == nullptr) owner_rows_ = std::make_unique<OwnerRows>(*c_.owner_rows, c_.server);
    owner_rows_->Start(nodes);
  };
  batches_ = link.StripeClient(c_.stripe)->StreamBatches(req, std::move(decode));
  return absl::OkStatus();
}

std::optional<HostBatch> StripeReader::ReadOne(absl::Status* status) {
  MessageStream* messages = nullptr;
  BatchStream* batches = nullptr;
  {
    // Only this thread replaces the streams (Open); Cancel only calls them.
    absl::MutexLock lock(&mu_);
    messages = messages_.get();
    batches = batches_.get();
  }
  try {
    if (messages != nullptr) return ReadShared(messages, status);
    if (batches != nullptr) return ReadDecoded(batches, status);
    *status = absl::CancelledError("the loader stopped reading");
  } catch (const Error& e) {
    *status = absl::Status(e.code(), e.message());
  }
  return std::nullopt;
}

std::optional<HostBatch> StripeReader::ReadShared(MessageStream* stream, absl::Status* status) {
  ServerLink& link = *c_.link;
  auto m = stream->Next();
  if (!m.ok()) {
    *status = m.status();
    return std::nullopt;
  }
  if (*m == nullptr) return std::nullopt;
  // 2. decode: the message's buffer mapped (and reported received at once).
  auto mapped = (*m)->has_shared_buffer() ? link.Receive(**m)
                                          : absl::StatusOr<std::shared_ptr<const MappedBuffer>>(nullptr);
  if (!mapped.ok()) {
    *status = mapped.status();
    return std::nullopt;
  }
  std::shared_ptr<const v1::SampledMessage> msg = *std::move(m);
  std::shared_ptr<const MappedBuffer> buffer = *std::move(mapped);
  // 4. assemble; its last tensor frees the buffer's use.
  const uint64_t use = msg->shared_buffer().id();
  auto batch = AssembleShared(c_.assembly, msg, buffer, [freed = link.freed, use] { freed->Push(use); });
  if (batch.ok()) {
    // 3. rows from their owners, written into the places the server kept for them.
    auto places = SharedRowsForOwners(*msg, buffer.get(), *batch);
    if (!places.ok()) {
      batch = places.status();
    } else if (!places->nodes.empty()) {
      if (absl::Status s = RowsFromOwners(nullptr, &*places); !s.ok()) batch = s;
    }
  }
  if (!batch.ok()) {
    *status = batch.status();
    return std::nullopt;
  }
  return *std::move(batch);
}

std::optional<HostBatch> StripeReader::ReadDecoded(BatchStream* stream, absl::Status* status) {
  // 1. and 2.: the stream's bytes decoded as they arrive; 3. started meanwhile (owners_known).
  auto d = stream->Next();
  std::unique_ptr<OwnerRows> started = std::move(owner_rows_);
  if (!d.ok()) {
    *status = d.status();
    return std::nullopt;
  }
  if (*d == nullptr) return std::nullopt;
  c_.link->bytes_received.fetch_add(static_cast<int64_t>((*d)->wire_bytes), std::memory_order_relaxed);
  // 3. finished.
  if (absl::Status s = RowsFromOwners(std::move(started), d->get()); !s.ok()) {
    *status = s;
    return std::nullopt;
  }
  // 4. assemble.
  return AssembleDecoded(c_.assembly, *std::move(d));
}

absl::Status StripeReader::RowsFromOwners(std::unique_ptr<OwnerRows> started, DecodedBatch* batch) {
  if (started == nullptr) {
    // A batch that names no owners (one server, or a server assembling whole batches) has
    // nothing to ask: no OwnerRows for it.
    const bool owners = std::any_of(batch->nodes.begin(), batch->nodes.end(),
                                    [](const DecodedNodes& n) { return n.owners.defined(); });
    if (!owners) return absl::OkStatus();
    started = std::make_unique<OwnerRows>(*c_.owner_rows, c_.server);
  }
  absl::Status fetched = started->Finish(batch);
  started.reset();
  if (fetched.ok()) return fetched;
  // An owner that fails is asked again with growing waits, up to the reconnect deadline, while
  // this stream waits: the batch is not delivered before it is whole, and the assembling server
  // is not disturbed.
  if (Retryable(fetched) && c_.recovery->options().reconnect_deadline.count() > 0) {
    LoaderLog()->warn("{}: batch {}: {}; asking again for up to {} ms", c_.link->client->address(),
                      batch->batch_index, fetched.ToString(), c_.recovery->options().reconnect_deadline.count());
  }
  return c_.recovery->RetryFor(fetched, [&] {
    OwnerRows again(*c_.owner_rows, c_.server);
    return again.Finish(batch);
  });
}

void StripeReader::Run() {
  ServerLink& link = *c_.link;
  const int k = c_.stripe;
  const auto reconnect_deadline = c_.recovery->options().reconnect_deadline;
  // While a failure is being retried: when to give up, and the next wait.
  std::optional<SteadyClock::time_point> give_up;
  auto backoff = kFirstBackoff;
  // While the server still holds this loader's previous stream: until when to open again, and
  // the next wait.
  std::optional<SteadyClock::time_point> reopen_until;
  std::chrono::milliseconds reopen_wait{5};
  // Another stripe found the server restarted and registered the channel again: what this
  // stream still holds of the lost channel comes again on the new one, and reading it first
  // would leave the new channel's buffer holding this stripe's batches, which no stream takes,
  // while the trainer waits for a batch the server cannot sample until they go.
  const std::function<bool()> stale = [&] { return opened_channel_.load() != link.channel.load(); };
  while (true) {
    absl::Status status;
    std::optional<HostBatch> batch;
    if (stale()) {
      status = absl::UnavailableError(absl::StrCat("channel ", opened_channel_.load(), " was lost with the server"));
    } else {
      batch = ReadOne(&status);
    }
    if (batch.has_value()) {
      give_up.reset();
      backoff = kFirstBackoff;
      reopen_until.reset();
      reopen_wait = std::chrono::milliseconds(5);
      // 5. deliver: each batch once.
      bool resent = false;
      status = c_.progress->Mark(link.ChannelBatch(batch->batch_index), k, batch->batch_index, &resent);
      if (resent) continue;  // sent again by a resumed stream: the trainer has it
      if (!status.ok()) batch.reset();
    } else if (status.ok()) {
      if (const int64_t missing = c_.progress->StripeMissing(k); missing >= 0) {
        status = absl::InternalError(absl::StrCat("the stream ended without batch ", missing, " of ", link.num_batches,
                                                  link.streams > 1 ? absl::StrCat(" (stripe ", k, " of ", link.streams, ")")
                                                                   : ""));
      }
    }
    const int64_t first_missing = c_.progress->first_missing();
    const bool stopping = c_.delivery->stopping();
    if (!batch.has_value() && status.code() == absl::StatusCode::kAlreadyExists && !stopping) {
      // The server has not yet seen this loader's previous stream of the channel go: it was
      // cancelled an instant ago, when the trainer left the last epoch early. Not a failure:
      // open the stream again in a moment, for up to one call deadline.
      if (!reopen_until.has_value()) reopen_until = SteadyClock::now() + c_.deadline;
      if (SteadyClock::now() + reopen_wait < *reopen_until) {
        if (c_.delivery->WaitStopped(reopen_wait)) return;
        reopen_wait = std::min(reopen_wait * 2, std::chrono::milliseconds(200));
        if (Open(link.EpochBatch(first_missing)).ok()) continue;
      }
    }
    if (!batch.has_value() && !status.ok() && !stopping && Retryable(status) && reconnect_deadline.count() > 0) {
      if (!give_up.has_value()) {
        give_up = SteadyClock::now() + reconnect_deadline;
        LoaderLog()->warn("{}: epoch {} stream failed ({}) after {} of {} batches; reconnecting for up to {} ms",
                          link.client->address(), c_.epoch, status.ToString(), first_missing, link.num_batches,
                          reconnect_deadline.count());
      }
      const int64_t from = link.EpochBatch(first_missing);
      status = c_.recovery->Retry(status, *give_up, &backoff, [&] {
        absl::Status s = c_.recovery->Resync(&link, c_.epoch, from, /*reading=*/true);
        return s.ok() ? Open(from) : s;
      });
      if (status.ok()) {
        LoaderLog()->info("{}: epoch {} resumed from batch {} on channel {}", link.client->address(), c_.epoch, from,
                          link.channel.load());
        continue;
      }
    }
    // 5. deliver in order (waits while a prefetch window ahead).
    if (!c_.delivery->Hand(c_.server, std::move(batch), status, stale)) return;
  }
}

}  // namespace graphstore::client
