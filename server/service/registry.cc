#include "server/service/registry.h"

#include "absl/strings/str_cat.h"

#include <random>

namespace graphstore {

Registry::Registry(uint64_t instance) {
  const uint64_t mask = (uint64_t{1} << kIdInstanceBits) - 1;
  instance &= mask;
  if (instance == 0) {
    std::random_device random;
    while (instance == 0) instance = ((uint64_t{random()} << 32) ^ random()) & mask;
  }
  first_id_ = (instance << kIdCounterBits) + 1;
  next_backend_id_ = first_id_;
  next_channel_id_ = first_id_;
}

std::shared_ptr<ChannelEntry> Registry::FindChannel(uint64_t id, Found* found) const {
  auto it = channels_.find(id);
  if (it != channels_.end()) {
    *found = Found::kLive;
    return it->second;
  }
  *found = GaveOut(id) ? Found::kDestroyed : Found::kUnknown;
  return nullptr;
}

std::shared_ptr<ChannelEntry> Registry::FindChannelFor(uint64_t id, const Caller& caller, bool describe,
                                                      Found* found) const {
  std::shared_ptr<ChannelEntry> c = FindChannel(id, found);
  if (describe && caller.sees_everything) return c;
  if (c != nullptr) {
    if (c->owner == caller.identity) return c;
    *found = Found::kUnknown;
    return nullptr;
  }
  if (*found == Found::kDestroyed) {
    auto it = destroyed_owners_.find(id);
    // An owner no longer remembered reads as unknown to every named identity.
    const std::string owner = it == destroyed_owners_.end() ? std::string() : it->second;
    if (owner != caller.identity) *found = Found::kUnknown;
  }
  return nullptr;
}

absl::Status Registry::NotLive(uint64_t id, Found found) {
  if (found == Found::kDestroyed) {
    return absl::FailedPreconditionError(absl::StrCat("channel_id ", id, " was destroyed"));
  }
  return absl::NotFoundError(absl::StrCat("channel_id ", id, " does not exist"));
}

void Registry::AddChannel(std::shared_ptr<ChannelEntry> channel) {
  ++channel->backend->num_channels;
  if (channel->backend->pending_joins > 0) --channel->backend->pending_joins;
  Holdings& h = holdings_[channel->owner];
  ++h.channels;
  h.buffer_bytes += channel->held_buffer_bytes();
  const uint64_t id = channel->id;
  channels_[id] = std::move(channel);
}

std::shared_ptr<ChannelEntry> Registry::RemoveChannel(uint64_t id) {
  auto it = channels_.find(id);
  if (it == channels_.end()) return nullptr;
  std::shared_ptr<ChannelEntry> c = std::move(it->second);
  channels_.erase(it);
  --c->backend->num_channels;
  Holdings& h = holdings_[c->owner];
  --h.channels;
  h.buffer_bytes -= c->held_buffer_bytes();
  if (h.channels == 0 && h.backends == 0) holdings_.erase(c->owner);
  if (!c->owner.empty()) {
    destroyed_owners_[id] = c->owner;
    destroyed_order_.push_back(id);
    if (destroyed_order_.size() > kDestroyedOwnersKept) {
      destroyed_owners_.erase(destroyed_order_.front());
      destroyed_order_.pop_front();
    }
  }
  return c;
}

std::shared_ptr<BackendEntry> Registry::FindBackend(uint64_t id) const {
  auto it = backends_.find(id);
  return it == backends_.end() ? nullptr : it->second;
}

std::shared_ptr<BackendEntry> Registry::FindBackendByKey(const std::string& key) const {
  // Backends are few (a bounded number, usually one per model), so a scan beats an index that
  // would have to be kept in step with backends_.
  for (const auto& [id, b] : backends_) {
    if (b->key == key) return b;
  }
  return nullptr;
}

std::shared_ptr<BackendEntry> Registry::AddBackend(const std::string& key, const v1::SamplingConfig& config,
                                                   const std::string& creator) {
  auto b = std::make_shared<BackendEntry>();
  b->id = next_backend_id_++;
  b->key = key;
  b->config = config;
  b->creator = creator;
  b->last_activity = BackendEntry::Clock::now();
  backends_[b->id] = b;
  ++holdings_[creator].backends;
  return b;
}

void Registry::RemoveBackend(uint64_t id) {
  auto it = backends_.find(id);
  if (it == backends_.end()) return;
  const std::string creator = it->second->creator;
  it->second->state = BackendEntry::State::kRemoved;
  backends_.erase(it);
  Holdings& h = holdings_[creator];
  --h.backends;
  if (h.channels == 0 && h.backends == 0) holdings_.erase(creator);
}

void Registry::GrowStreamRoom(ChannelEntry* channel, int streams) {
  if (streams <= channel->room_streams) return;
  holdings_[channel->owner].buffer_bytes += channel->buffer_bytes * (streams - channel->room_streams);
  channel->room_streams = streams;
}

Holdings Registry::HoldingsOf(const std::string& identity) const {
  auto it = holdings_.find(identity);
  return it == holdings_.end() ? Holdings() : it->second;
}

}  // namespace graphstore
