#include "server/service/shared_ledger.h"

namespace graphstore {

void SharedLedger::Sent(std::shared_ptr<SharedUse> use) {
  ++unreceived_;
  unreceived_bytes_ += static_cast<int64_t>(use->file->size());
  AddUnfreed(static_cast<int64_t>(use->file->size()));
  const uint64_t id = use->id;
  sent_[id] = Entry{std::move(use), false};
}

bool SharedLedger::BacklogFull() const {
  return unreceived_ > 0 && (unreceived_ >= max_messages_ || unreceived_bytes_ >= max_bytes_);
}

void SharedLedger::AddUnfreed(int64_t bytes) {
  unfreed_bytes_ += bytes;
  if (server_ != nullptr) server_->Add(bytes);
}

SharedLedger::Hold SharedLedger::HoldBack() const {
  if (BacklogFull()) return Hold::kUnreceived;
  // At the server's limit a channel keeps no more than its share.
  const bool past_share = server_ != nullptr && server_->full() && unfreed_bytes_ >= server_->share();
  // One use always goes, however large, so that a trainer holding nothing is never stuck.
  if (unfreed_bytes_ > 0 && (unfreed_bytes_ >= max_unfreed_bytes_ || past_share)) {
    return Hold::kUnfreed;
  }
  return Hold::kNone;
}

void SharedLedger::Receive(Entry& e) {
  if (e.received) return;
  e.received = true;
  --unreceived_;
  unreceived_bytes_ -= static_cast<int64_t>(e.use->file->size());
}

SharedLedger::Release SharedLedger::Apply(const google::protobuf::RepeatedField<uint64_t>& received,
                                          const google::protobuf::RepeatedField<uint64_t>& freed) {
  Release r;
  const bool was_full = BacklogFull();
  for (uint64_t id : received) {
    auto s = sent_.find(id);
    if (s != sent_.end()) Receive(s->second);
  }
  for (uint64_t id : freed) {
    auto s = sent_.find(id);
    if (s == sent_.end()) continue;
    Receive(s->second);
    const auto bytes = static_cast<int64_t>(s->second.use->file->size());
    AddUnfreed(-bytes);
    r.freed_bytes += bytes;
    r.freed.push_back(std::move(s->second.use));
    sent_.erase(s);
  }
  r.unblocked = was_full && !BacklogFull();
  return r;
}

std::vector<std::shared_ptr<SharedUse>> SharedLedger::NewStream(bool reclaim) {
  std::vector<std::shared_ptr<SharedUse>> lost;
  for (auto s = sent_.begin(); s != sent_.end();) {
    if (s->second.received) {
      ++s;
      continue;
    }
    Receive(s->second);
    if (!reclaim) {
      ++s;
      continue;
    }
    AddUnfreed(-static_cast<int64_t>(s->second.use->file->size()));
    lost.push_back(std::move(s->second.use));
    s = sent_.erase(s);
  }
  return lost;
}

std::vector<std::shared_ptr<SharedUse>> SharedLedger::TakeAll() {
  std::vector<std::shared_ptr<SharedUse>> all;
  for (auto& [id, s] : sent_) all.push_back(std::move(s.use));
  sent_.clear();
  unreceived_ = 0;
  unreceived_bytes_ = 0;
  AddUnfreed(-unfreed_bytes_);
  return all;
}

}  // namespace graphstore
