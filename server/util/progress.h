#ifndef GRAPHSTORE_SERVER_UTIL_PROGRESS_H_
#define GRAPHSTORE_SERVER_UTIL_PROGRESS_H_

// What a long step is doing, for the person waiting on it: its phase, how far it got and how
// fast, about once a second on stderr — rewritten in place on a terminal, one log line each
// otherwise — and its total when it ends ("writing partitions: 27.1M edges in 8.4 s, 3.2M/s").
// Used by the tools that read, partition and write datasets and by a daemon verifying a
// partition or building sampling indexes.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace graphstore {

/// Where a Progress reports and when (a test's fake clock and sink).
struct ProgressOptions {
  using Clock = std::chrono::steady_clock;
  /// Seconds between reports.
  double interval_s = 1.0;
  /// Whether stderr is a terminal (reports rewrite one line) or not (log lines); default:
  /// isatty(2).
  int terminal = -1;
  /// Receives each report (`final`: the total); default: stderr or the "progress" logger.
  std::function<void(const std::string& line, bool final)> sink;
  /// The time (default: steady_clock).
  std::function<Clock::time_point()> now;
};

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  using Options = ProgressOptions;

  /// A step `phase` of `total` units named `unit` ("edges"; total 0: unknown).
  Progress(std::string phase, int64_t total, std::string unit, Options options = {});
  /// Finish()es.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Counts `n` more units done, and reports when the interval has passed since the last
  /// report. Thread-safe; reads the clock each call, so call it per chunk, not per unit.
  void Add(int64_t n);
  /// Reports the total (units, seconds, rate) once. Idempotent.
  void Finish();
  /// Reports a line of its own under the phase's name ("METIS over ...: expect about 12 s"),
  /// e.g. an estimate before a step that reports nothing until it ends.
  void Note(const std::string& text);

  int64_t done() const { return done_.load(std::memory_order_relaxed); }
  int64_t total() const { return total_; }

 private:
  std::string Line(bool final, Clock::time_point now) const;
  void Emit(const std::string& line, bool final);

  const std::string phase_;
  const int64_t total_;
  const std::string unit_;
  Options options_;
  const Clock::time_point start_;
  std::atomic<int64_t> done_{0};
  absl::Mutex mu_;
  Clock::time_point last_report_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

/// "27.1M", "3.2k", "812": a count in a few digits.
std::string ShortCount(double n);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_PROGRESS_H_
