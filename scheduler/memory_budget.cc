#include "scheduler/memory_budget.h"

#include <algorithm>
#include <vector>

namespace graphstore::scheduler {

MemoryBudget::MemoryBudget(int64_t limit_bytes) : limit_(std::max<int64_t>(1, limit_bytes)) {
  thread_ = std::thread([this] { Loop(); });
}

MemoryBudget::~MemoryBudget() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

int64_t MemoryBudget::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

void MemoryBudget::Charge(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ += bytes;
}

void MemoryBudget::Release(int64_t bytes) {
  if (bytes == 0) return;
  bool kick = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    used_ -= bytes;
    if (held_back_ && used_ < limit_) {
      held_back_ = false;
      kick_pending_ = true;
      kick = true;
    }
  }
  if (kick) cv_.notify_all();
}

void MemoryBudget::AddChannel() {
  std::lock_guard<std::mutex> lock(mu_);
  ++channels_;
}

void MemoryBudget::RemoveChannel() {
  std::lock_guard<std::mutex> lock(mu_);
  --channels_;
}

bool MemoryBudget::AllowsBatch(int64_t held, int in_flight) {
  std::lock_guard<std::mutex> lock(mu_);
  // Past the limit a channel samples one batch at a time, while it holds less than its share.
  if (used_ < limit_ || (in_flight == 0 && (held == 0 || held < limit_ / std::max<int64_t>(1, channels_)))) {
    return true;
  }
  held_back_ = true;
  return false;
}

bool MemoryBudget::AllowsSpeculation() {
  std::lock_guard<std::mutex> lock(mu_);
  if (used_ < limit_ / 2) return true;
  held_back_ = true;
  return false;
}

uint64_t MemoryBudget::Subscribe(std::function<void()> kick) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t token = next_token_++;
  subscribers_.emplace(token, std::move(kick));
  return token;
}

void MemoryBudget::Unsubscribe(uint64_t token) {
  std::unique_lock<std::mutex> lock(mu_);
  subscribers_.erase(token);
  idle_cv_.wait(lock, [&] { return !kicking_; });
}

void MemoryBudget::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || kick_pending_; });
    if (stopping_) return;
    kick_pending_ = false;
    std::vector<uint64_t> tokens;
    for (const auto& [token, kick] : subscribers_) tokens.push_back(token);
    kicking_ = true;
    for (const uint64_t token : tokens) {
      auto it = subscribers_.find(token);
      if (it == subscribers_.end()) continue;  // unsubscribed meanwhile
      std::function<void()> kick = it->second;
      lock.unlock();
      kick();
      lock.lock();
    }
    kicking_ = false;
    idle_cv_.notify_all();
  }
}

}  // namespace graphstore::scheduler
