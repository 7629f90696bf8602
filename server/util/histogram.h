#ifndef GRAPHSTORE_SERVER_UTIL_HISTOGRAM_H_
#define GRAPHSTORE_SERVER_UTIL_HISTOGRAM_H_

// A latency histogram with fixed buckets that threads add to without a lock, read whole by the
// metrics endpoint. It knows nothing of Prometheus; server/metrics exports it.

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace graphstore {

class LatencyHistogram {
 public:
  /// Upper bounds of the buckets, in seconds (the last bucket, +Inf, is implicit).
  /// From 50 µs: most calls answer in well under a millisecond, and a p99 must not read as
  /// the lowest bucket's edge.
  static constexpr std::array<double, 17> kBounds = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                     0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                                     0.5,     1.0,    2.5,     5.0,    10.0};

  void Observe(double seconds) {
    size_t i = 0;
    while (i < kBounds.size() && seconds > kBounds[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<int64_t>(seconds * 1e9), std::memory_order_relaxed);
  }

  struct Snapshot {
    /// Per bucket (kBounds, then +Inf), not cumulative.
    std::vector<uint64_t> counts;
    uint64_t count = 0;
    double sum_seconds = 0;
  };
  Snapshot Read() const {
    Snapshot s;
    for (const auto& c : counts_) {
      s.counts.push_back(c.load(std::memory_order_relaxed));
      s.count += s.counts.back();
    }
    s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
    return s;
  }

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<int64_t> sum_ns_{0};
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_HISTOGRAM_H_
