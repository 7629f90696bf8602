#ifndef GRAPHSTORE_SERVER_UTIL_JOB_QUEUE_H_
#define GRAPHSTORE_SERVER_UTIL_JOB_QUEUE_H_

// A few threads of their own for work that may block for long (building a backend's sampling
// indexes takes seconds on a large partition), so that it does not hold the threads that
// answer RPCs.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace graphstore {

class JobQueue {
 public:
  /// `threads` (>= 1) run the jobs in the order posted; at most `max_waiting` wait for one.
  JobQueue(int threads, size_t max_waiting);
  /// Runs every job already posted, then joins the threads.
  ~JobQueue();
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  /// Queues `job`; false (and `job` dropped) when max_waiting jobs already wait.
  bool Post(std::function<void()> job);

  /// Jobs posted and not finished (waiting or running).
  size_t pending() const;

 private:
  void Run();

  const size_t max_waiting_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> waiting_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_JOB_QUEUE_H_
