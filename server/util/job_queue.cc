#include "server/util/job_queue.h"

#include <utility>

namespace graphstore {

JobQueue::JobQueue(int threads, size_t max_waiting) : max_waiting_(max_waiting) {
  for (int i = 0; i < (threads < 1 ? 1 : threads); ++i) threads_.emplace_back([this] { Run(); });
}

JobQueue::~JobQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool JobQueue::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (waiting_.size() >= max_waiting_) return false;
    waiting_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

size_t JobQueue::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size() + running_;
}

void JobQueue::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
    if (waiting_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> job = std::move(waiting_.front());
    waiting_.pop_front();
    ++running_;
    lock.unlock();
    job();
    job = nullptr;  // whatever the job holds goes before the count says it is done
    lock.lock();
    --running_;
  }
}

}  // namespace graphstore
