#include "server/util/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace graphstore {
namespace {

// On Linux a nice value belongs to a thread: PRIO_PROCESS with a thread id reads or changes that
// thread alone.
id_t ThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }

}  // namespace

int ThreadNice() {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, ThreadId());
  return errno == 0 ? nice : 0;
}

absl::Status LowerThreadPriority(int by) {
  if (by <= 0) return absl::OkStatus();
  const int target = std::min(19, ThreadNice() + by);
  if (setpriority(PRIO_PROCESS, ThreadId(), target) != 0) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error), absl::StrCat("setpriority to nice ", target, ": ",
                                                                      std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace graphstore
