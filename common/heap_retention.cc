#include "common/heap_retention.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace graphstore {
namespace {

// Whether the environment already tells glibc's malloc when to trim or map.
bool EnvironmentSetsThresholds() {
  for (const char* name : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr &&
         (std::strstr(tunables, "malloc.trim_threshold") != nullptr ||
          std::strstr(tunables, "malloc.mmap_threshold") != nullptr ||
          std::strstr(tunables, "malloc.top_pad") != nullptr);
}

HeapRetention Apply(size_t trim_bytes, size_t mmap_bytes) {
#ifdef __GLIBC__
  if (EnvironmentSetsThresholds()) return HeapRetention::kLeftToUser;
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_bytes));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(trim_bytes));
  return HeapRetention::kRetained;
#else
  (void)trim_bytes;
  (void)mmap_bytes;
  return HeapRetention::kUnsupported;
#endif
}

}  // namespace

HeapRetention RetainFreedHeap(size_t trim_bytes, size_t mmap_bytes) {
  static const HeapRetention done = Apply(trim_bytes, mmap_bytes);
  return done;
}

}  // namespace graphstore
