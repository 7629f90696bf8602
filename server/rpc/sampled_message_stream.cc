#include "server/rpc/sampled_message_stream.h"

#include <optional>
#include <vector>

#include "server/rpc/status.h"

namespace graphstore {

grpc::ByteBuffer PartBuffer(const std::shared_ptr<const EncodedMessage>& message, size_t part) {
  // Small segments (field headers) are copied into their slice; large ones are referenced.
  constexpr size_t kCopyBelow = 1024;
  std::vector<grpc::Slice> slices;
  for (const EncodedMessage::Segment& s : message->parts[part]) {
    if (s.size < kCopyBelow) {
      slices.emplace_back(s.data, s.size);
      continue;
    }
    auto* ref = new std::shared_ptr<const EncodedMessage>(message);
    slices.emplace_back(const_cast<char*>(s.data), s.size,
                        [](void* p) { delete static_cast<std::shared_ptr<const EncodedMessage>*>(p); }, ref);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

namespace {

// The batch's encoding, keeping the batch (and its shared buffer) alive.
std::shared_ptr<const EncodedMessage> Encoded(const std::shared_ptr<const WireMessage>& m) {
  return std::shared_ptr<const EncodedMessage>(m, m->encoded.get());
}

}  // namespace

void SampledMessageStream::Begin() {
  if (share_ != nullptr) share_id_ = share_->Join([this] { MaybeWrite(); }, peer_);
  auto token = a_.backend->SetListener(a_.channel_id, [this] { MaybeWrite(); });
  if (!token.ok()) {
    FinishOnce(ToGrpcStatus(token.status()), /*cancelled=*/false);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    listener_token_ = *token;
  }
  MaybeWrite();
}

void SampledMessageStream::OnWriteDone(bool ok) {
  size_t written = 0;
  bool batch_done = false;
  BatchCounts counts;
  std::optional<grpc::Status> deferred;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    written = buffer_.Length();
    batch_done = current_ != nullptr && next_part_ >= current_->encoded->parts.size();
    if (batch_done) counts = current_->counts;
    buffer_.Clear();
    deferred.swap(deferred_finish_);
  }
  if (share_ != nullptr) share_->WriteDone(share_id_);
  if (ok) host_->Sent(a_, static_cast<int64_t>(written), batch_done ? &counts : nullptr);
  if (deferred.has_value()) {
    // The stream ended while this write was on its way: its status goes out now.
    Finish(*deferred);
    return;
  }
  if (ok) {
    host_->Touch(a_.channel_id);
    MaybeWrite();
  } else {
    FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"), /*cancelled=*/true);
  }
}

void SampledMessageStream::OnCancel() { FinishOnce(grpc::Status::CANCELLED, /*cancelled=*/true); }

void SampledMessageStream::OnDone() {
  uint64_t token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    token = listener_token_;
  }
  // No call of this stream's listener runs after ClearListener returns, so `this` can go.
  if (token != 0) a_.backend->ClearListener(a_.channel_id, token);
  // Nor of its wake by the share after Leave.
  if (share_ != nullptr) share_->Leave(share_id_);
  delete this;
}

void SampledMessageStream::MaybeWrite() {
  grpc::Status end;
  bool write = false;
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (writing_ || finished_) return;
    if (!ready_ && current_ != nullptr && next_part_ < current_->encoded->parts.size()) {
      // The rest of the batch being sent.
      buffer_ = PartBuffer(Encoded(current_), next_part_++);
      ready_ = true;
    } else if (!ready_) {
      current_.reset();
      // A shared-memory reader that has not handed back enough buffers waits; its release
      // wakes the stream through the listener.
      absl::StatusOr<bool> hold = a_.shared_memory ? host_->SharedHoldBack(a_.channel_id) : false;
      if (hold.ok() && *hold) return;
      scheduler::Delivery d;
      if (hold.ok()) {
        d = a_.backend->TryPop(a_.channel_id, a_.epoch, a_.stripe);
      } else {
        d.kind = scheduler::Delivery::Kind::kFailed;
        d.status = hold.status();
      }
      switch (d.kind) {
        case scheduler::Delivery::Kind::kMessage:
          current_ = std::static_pointer_cast<const WireMessage>(d.batch.payload);
          // Recorded before the client can know the id, so its release always finds it.
          if (current_->shared) host_->HandOff(a_.channel_id, current_->shared);
          buffer_ = PartBuffer(Encoded(current_), 0);
          next_part_ = 1;
          ready_ = true;
          break;
        case scheduler::Delivery::Kind::kPending:
          idle = true;
          break;
        case scheduler::Delivery::Kind::kEndOfEpoch:
          end = grpc::Status::OK;
          break;
        case scheduler::Delivery::Kind::kFailed:
        case scheduler::Delivery::Kind::kClosed:
          end = ToGrpcStatus(d.kind == scheduler::Delivery::Kind::kClosed && absl::IsCancelled(d.status)
                                 ? absl::AbortedError(d.status.message())
                                 : d.status);
          break;
      }
    }
    if (ready_) {
      // Held: the share wakes this stream once the others have caught up.
      if (share_ != nullptr && !share_->MayWrite(share_id_, static_cast<int64_t>(buffer_.Length()))) return;
      ready_ = false;
      writing_ = write = true;
    }
  }
  // The write starts outside the lock because gRPC may run reactions inline; buffer_ stays
  // untouched until OnWriteDone.
  if (write) {
    StartWrite(&buffer_);
    return;
  }
  if (idle) {
    if (share_ != nullptr) share_->Idle(share_id_);
    return;
  }
  FinishOnce(end, /*cancelled=*/false);
}

void SampledMessageStream::FinishOnce(const grpc::Status& status, bool cancelled) {
  bool now = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    // A write decided on another thread may not have started yet: gRPC takes no write after
    // Finish (it would end the call twice), so the status waits for that write's OnWriteDone.
    now = !writing_;
    if (!now) deferred_finish_ = status;
  }
  host_->DetachStream(a_, cancelled);
  if (share_ != nullptr) share_->Idle(share_id_);  // an ended stream holds no one back
  if (now) Finish(status);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* SampledMessageStream::Failed(const grpc::Status& status) {
  class FailedStream : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
   public:
    explicit FailedStream(const grpc::Status& s) { Finish(s); }
    void OnDone() override { delete this; }
  };
  return new FailedStream(status);
}

}  // namespace graphstore
