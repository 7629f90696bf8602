// HugePageAllocator: a large array gets a mapping of its own at a 2 MiB boundary, marked for
// huge pages before it is touched, and gives it back whole when freed; a small one comes from
// malloc.

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "server/util/huge_pages.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

constexpr size_t kHuge = HugePageAllocator<char>::kHugePage;

// The flags of the mapping holding `p` ("" when nothing is mapped there).
std::string MappingFlags(const void* p) { return testing::SmapsLine(p, "VmFlags:"); }

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

TEST_CASE("a tmpfs file's pages move onto huge pages whatever the mount says", "[util]") {
  // /dev/shm gives its files 4 KiB pages unless mounted with huge=, as it is by default.
  testing::TempDir dir("/dev/shm");
  REQUIRE(!dir.path().empty());
  const std::string path = dir.path() + "/buffer";
  const size_t size = 3 * kHuge + 4096;  // the last 4 KiB stay small
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  REQUIRE(fd >= 0);
  unlink(path.c_str());
  // One page at the start of each 2 MiB, holes between: the collapse fills them.
  REQUIRE(ftruncate(fd, static_cast<off_t>(size)) == 0);
  for (size_t at = 0; at < size; at += kHuge) REQUIRE(posix_fallocate(fd, static_cast<off_t>(at), 4096) == 0);
  auto* p = static_cast<char*>(MapAtHugeBoundary(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd));
  close(fd);
  REQUIRE(p != MAP_FAILED);
  REQUIRE(reinterpret_cast<uintptr_t>(p) % kHuge == 0);
  CollapseIntoHugePages(p, size);
  // The bytes are the file's: zeros, then what is written.
  CHECK(p[0] == 0);
  CHECK(p[kHuge + 4096 * 7] == 0);
  CHECK(p[size - 1] == 0);
  std::memset(p, 7, size);
  CHECK(p[2 * kHuge + 5] == 7);
  if (testing::KernelCollapsesTmpfs(dir.path())) {
    CHECK(testing::SmapsKb(p, "ShmemPmdMapped:") == static_cast<int64_t>(3 * kHuge / 1024));
  }
  munmap(p, size);
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
