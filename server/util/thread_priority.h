#ifndef GRAPHSTORE_SERVER_UTIL_THREAD_PRIORITY_H_
#define GRAPHSTORE_SERVER_UTIL_THREAD_PRIORITY_H_

// The scheduling priority of the calling thread alone.

#include "absl/status/status.h"

namespace graphstore {

/// Raises the calling thread's nice value by `by` (clamped to 19), leaving the process's other
/// threads as they are. Lowering one's own priority needs no privilege; the error otherwise.
absl::Status LowerThreadPriority(int by);

/// The calling thread's nice value.
int ThreadNice();

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_THREAD_PRIORITY_H_
