// HugePageAllocator: a large array gets a mapping of its own at a 2 MiB boundary, marked for
// huge pages before it is touched, and gives it back whole when freed; a small one comes from
// malloc.

#include <catch2/catch.hpp>
#include <malloc.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "server/util/huge_pages.h"

namespace graphstore {
namespace {

constexpr size_t kHuge = HugePageAllocator<char>::kHugePage;

// The flags of the mapping holding `p` ("" when nothing is mapped there).
std::string MappingFlags(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST_CASE("a large array is a mapping of its own at a 2 MiB boundary, unmapped when freed", "[util]") {
  // As in a process whose heap keeps freed memory (the client library's heap retention): malloc
  // would serve this array from its heap, in pages it may have used before.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  HugePageAllocator<int64_t> alloc;
  const size_t n = (3 * kHuge + 100) / sizeof(int64_t);  // not a whole number of huge pages
  int64_t* p = alloc.allocate(n);
  REQUIRE(reinterpret_cast<uintptr_t>(p) % kHuge == 0);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(i);
  CHECK(p[n - 1] == static_cast<int64_t>(n - 1));
  const std::string flags = MappingFlags(p);
  REQUIRE(!flags.empty());
  // The advice is recorded on the mapping where the kernel has transparent huge pages.
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good()) {
    CHECK(flags.find(" hg") != std::string::npos);
  }
  alloc.deallocate(p, n);
  // Freed memory goes back to the kernel at once: malloc's heap would keep it mapped.
  CHECK(MappingFlags(p).empty());
  CHECK(MappingFlags(reinterpret_cast<char*>(p) + 3 * kHuge).empty());
}

TEST_CASE("a small array comes from malloc, aligned for vector loads", "[util]") {
  HugePageVector<float> v(1000, 1.5f);
  CHECK(reinterpret_cast<uintptr_t>(v.data()) % 64 == 0);
  CHECK(v[999] == 1.5f);
  HugePageVector<char> big(kHuge, 'x');
  HugePageVector<char> moved = std::move(big);
  CHECK(moved[kHuge - 1] == 'x');
}

}  // namespace
}  // namespace graphstore
