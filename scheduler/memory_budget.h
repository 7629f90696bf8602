#ifndef GRAPHSTORE_SCHEDULER_MEMORY_BUDGET_H_
#define GRAPHSTORE_SCHEDULER_MEMORY_BUDGET_H_

// One server-wide budget for sampled-but-unread bytes, shared by every Backend. Each channel's
// buffer is bounded on its own; this bounds their sum, so that many channels nobody reads
// cannot exhaust the host's memory. Past the limit a channel only samples while it holds less
// than its fair share (limit / channels; a channel holding nothing may always sample one
// batch, so no running channel starves), and sampling ahead stops at half the limit. When
// bytes are freed and some backend held work back, a thread of the budget (never a backend
// lock holder) tells every backend to look at its channels again.

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace graphstore::scheduler {

class MemoryBudget {
 public:
  /// `limit_bytes` >= 1.
  explicit MemoryBudget(int64_t limit_bytes);
  ~MemoryBudget();
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  int64_t limit() const { return limit_; }
  int64_t used() const;
  /// Whether new channels may be added (used below the limit).
  bool HasRoom() const { return used() < limit_; }

  /// Bytes entering / leaving channels' buffers.
  void Charge(int64_t bytes);
  void Release(int64_t bytes);
  /// Channels counted for the fair share.
  void AddChannel();
  void RemoveChannel();

  /// Whether a channel holding `held` bytes with `in_flight` batches being sampled may sample
  /// another batch of its epoch: always below the limit; past it, one batch at a time for a
  /// channel holding nothing or less than its fair share. False records that work waits for room.
  bool AllowsBatch(int64_t held, int in_flight);
  /// Whether a channel may sample ahead of its next epoch; false records the same.
  bool AllowsSpeculation();

  /// Calls `kick` (from the budget's thread, with no budget lock held) whenever room appears
  /// after work was held back. Returns a token for Unsubscribe.
  uint64_t Subscribe(std::function<void()> kick);
  /// When it returns, `token`'s kick is not running and will not run.
  void Unsubscribe(uint64_t token);

 private:
  void Loop();

  const int64_t limit_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  absl::CondVar idle_cv_;
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t channels_ ABSL_GUARDED_BY(mu_) = 0;
  bool held_back_ ABSL_GUARDED_BY(mu_) = false;  // some AllowsX answered false since the last kick
  bool kick_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool kicking_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::function<void()>> subscribers_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace graphstore::scheduler

#endif  // GRAPHSTORE_SCHEDULER_MEMORY_BUDGET_H_
