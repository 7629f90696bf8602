// RetainFreedHeap: freed memory stays in the process (and is reused) unless the environment
// chose glibc's thresholds itself. Each case runs in a child process: the setting is once per
// process.

#include "common/heap_retention.h"

#include <catch2/catch.hpp>
#include <malloc.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>

namespace graphstore {
namespace {

// Runs `child` in a forked process; its exit code.
int InChild(const std::function<int()>& child) {
  const pid_t pid = fork();
  if (pid == 0) _exit(child());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Bytes of free memory the heaps hold after an 8 MiB block is written and freed.
size_t FreeHeapAfterBlock() {
  char* block = static_cast<char*>(malloc(size_t{8} << 20));
  std::memset(block, 1, size_t{8} << 20);
  asm volatile("" : : "r"(block) : "memory");  // the block is used: not optimised away
  free(block);
  return mallinfo2().fordblks;
}

TEST_CASE("freed blocks stay in the heap for the next allocations", "[heap]") {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer replaces malloc: glibc's heap and its thresholds are not in play.
  WARN("built with AddressSanitizer: glibc's heap is not measured");
  return;
#endif
  // With glibc's defaults an 8 MiB block is a mapping of its own, given back when freed.
  CHECK(InChild([] { return FreeHeapAfterBlock() < (size_t{8} << 20) ? 0 : 1; }) == 0);
  CHECK(InChild([] {
          unsetenv("GLIBC_TUNABLES");
          if (RetainFreedHeap() != HeapRetention::kRetained) return 2;
          if (RetainFreedHeap(1, 1) != HeapRetention::kRetained) return 3;  // once per process
          return FreeHeapAfterBlock() >= (size_t{8} << 20) ? 0 : 1;
        }) == 0);
}

TEST_CASE("thresholds the environment sets are left alone", "[heap]") {
  for (const char* name : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"}) {
    INFO(name);
    CHECK(InChild([name] {
            setenv(name, "131072", 1);
            return RetainFreedHeap() == HeapRetention::kLeftToUser ? 0 : 1;
          }) == 0);
  }
  CHECK(InChild([] {
          setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072", 1);
          return RetainFreedHeap() == HeapRetention::kLeftToUser ? 0 : 1;
        }) == 0);
}

}  // namespace
}  // namespace graphstore
