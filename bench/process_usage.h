#ifndef GRAPHSTORE_BENCH_PROCESS_USAGE_H_
#define GRAPHSTORE_BENCH_PROCESS_USAGE_H_

// What the benchmark's whole process has used so far (its servers, peers and Loader run in it):
// read before and after a measured stretch and divided by the batches it delivered.

#include <sys/resource.h>

#include <cstdint>
#include <ctime>

namespace graphstore {

/// CPU time of every thread of the process, user and system, in seconds.
inline double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Minor page faults of the process: memory it touched for the first time.
inline int64_t MinorPageFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

}  // namespace graphstore

#endif  // GRAPHSTORE_BENCH_PROCESS_USAGE_H_
