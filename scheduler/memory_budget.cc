#include "scheduler/memory_budget.h"

#include <algorithm>
#include <vector>

namespace graphstore::scheduler {

MemoryBudget::MemoryBudget(int64_t limit_bytes) : limit_(std::max<int64_t>(1, limit_bytes)) {
  thread_ = std::thread([this] { Loop(); });
}

MemoryBudget::~MemoryBudget() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  thread_.join();
}

int64_t MemoryBudget::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

void MemoryBudget::Charge(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  used_ += bytes;
}

void MemoryBudget::Release(int64_t bytes) {
  if (bytes == 0) return;
  bool kick = false;
  {
    absl::MutexLock lock(&mu_);
    used_ -= bytes;
    if (held_back_ && used_ < limit_) {
      held_back_ = false;
      kick_pending_ = true;
      kick = true;
    }
  }
  if (kick) cv_.SignalAll();
}

void MemoryBudget::AddChannel() {
  absl::MutexLock lock(&mu_);
  ++channels_;
}

void MemoryBudget::RemoveChannel() {
  absl::MutexLock lock(&mu_);
  --channels_;
}

bool MemoryBudget::AllowsBatch(int64_t held, int in_flight) {
  absl::MutexLock lock(&mu_);
  // Past the limit a channel samples one batch at a time, while it holds less than its share.
  if (used_ < limit_ || (in_flight == 0 && (held == 0 || held < limit_ / std::max<int64_t>(1, channels_)))) {
    return true;
  }
  held_back_ = true;
  return false;
}

bool MemoryBudget::AllowsSpeculation() {
  absl::MutexLock lock(&mu_);
  if (used_ < limit_ / 2) return true;
  held_back_ = true;
  return false;
}

uint64_t MemoryBudget::Subscribe(std::function<void()> kick) {
  absl::MutexLock lock(&mu_);
  const uint64_t token = next_token_++;
  subscribers_.emplace(token, std::move(kick));
  return token;
}

void MemoryBudget::Unsubscribe(uint64_t token) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase(token);
  while (kicking_) idle_cv_.Wait(&mu_);
}

void MemoryBudget::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    while (!stopping_ && !kick_pending_) cv_.Wait(&mu_);
    if (stopping_) return;
    kick_pending_ = false;
    std::vector<uint64_t> tokens;
    for (const auto& [token, kick] : subscribers_) tokens.push_back(token);
    kicking_ = true;
    for (const uint64_t token : tokens) {
      auto it = subscribers_.find(token);
      if (it == subscribers_.end()) continue;  // unsubscribed meanwhile
      std::function<void()> kick = it->second;
      mu_.Unlock();
      kick();
      mu_.Lock();
    }
    kicking_ = false;
    idle_cv_.SignalAll();
  }
}

}  // namespace graphstore::scheduler
