#include "server/service/registry.h"

#include "absl/strings/str_cat.h"

namespace graphstore {

std::shared_ptr<ChannelEntry> Registry::FindChannel(uint64_t id, Found* found) const {
  auto it = channels_.find(id);
  if (it != channels_.end()) {
    *found = Found::kLive;
    return it->second;
  }
  *found = id > 0 && id < next_channel_id_ ? Found::kDestroyed : Found::kUnknown;
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
  const uint64_t id = channel->id;
  channels_[id] = std::move(channel);
}

std::shared_ptr<ChannelEntry> Registry::RemoveChannel(uint64_t id) {
  auto it = channels_.find(id);
  if (it == channels_.end()) return nullptr;
  std::shared_ptr<ChannelEntry> c = std::move(it->second);
  channels_.erase(it);
  --c->backend->num_channels;
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

std::shared_ptr<BackendEntry> Registry::AddBackend(const std::string& key, const v1::SamplingConfig& config) {
  auto b = std::make_shared<BackendEntry>();
  b->id = next_backend_id_++;
  b->key = key;
  b->config = config;
  backends_[b->id] = b;
  return b;
}

void Registry::RemoveBackend(uint64_t id) { backends_.erase(id); }

}  // namespace graphstore
