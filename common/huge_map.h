#ifndef GRAPHSTORE_COMMON_HUGE_MAP_H_
#define GRAPHSTORE_COMMON_HUGE_MAP_H_

// Mappings placed at a 2 MiB boundary, so that the kernel can map them with transparent huge
// pages: one page-table entry for 2 MiB instead of 512. Memory read at random (the daemon's
// mapped rows) or written end to end batch after batch (the shared-memory buffers, which both
// the daemon and the client map) then costs cache misses rather than cache misses and page
// walks. A mapping that is not aligned maps even a huge page with 4 KiB entries. Pages a tmpfs
// file already holds are moved onto huge pages by a collapse.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace graphstore {

/// The size and alignment of a transparent huge page.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// Maps `size` bytes at a 2 MiB boundary (`fd` with `prot` and `flags`; fd -1 with
/// MAP_ANONYMOUS) and advises huge pages for them before any page is touched. Reserves 2 MiB
/// more than asked, maps over its aligned part and gives back the rest. MAP_FAILED on failure.
inline void* MapAtHugeBoundary(size_t size, int prot, int flags, int fd) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = (size + page - 1) / page * page;
  const size_t room_size = mapped + kHugePageBytes;
  void* room = mmap(nullptr, room_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (room == MAP_FAILED) return MAP_FAILED;
  const uintptr_t start = reinterpret_cast<uintptr_t>(room);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  void* map = mmap(reinterpret_cast<void*>(aligned), size, prot, flags | MAP_FIXED, fd, 0);
  if (map == MAP_FAILED) {
    munmap(room, room_size);
    return MAP_FAILED;
  }
  if (aligned > start) munmap(room, aligned - start);
  const uintptr_t end = aligned + mapped;
  if (start + room_size > end) munmap(reinterpret_cast<void*>(end), start + room_size - end);
#ifdef MADV_HUGEPAGE
  madvise(map, size, MADV_HUGEPAGE);  // advice only: else small pages
#endif
  return map;
}

/// Moves the pages a tmpfs file already holds under `map` (`size` bytes of a shared mapping that
/// MapAtHugeBoundary placed) onto 2 MiB pages now, each whole 2 MiB of the file that holds at
/// least one page, its holes filled with zeros. A tmpfs such as /dev/shm gives its files 4 KiB
/// pages unless it was mounted with huge=; a collapse (MADV_COLLAPSE, Linux 6.1) moves them
/// whatever the mount says, except where /sys/kernel/mm/transparent_hugepage/shmem_enabled is
/// "deny". Whether the kernel did; where it cannot, the pages stay as they are.
inline bool CollapseIntoHugePages(void* map, size_t size) {
#ifndef MADV_COLLAPSE
  constexpr int MADV_COLLAPSE = 25;
#endif
  const size_t whole = size / kHugePageBytes * kHugePageBytes;
  return whole > 0 && madvise(map, whole, MADV_COLLAPSE) == 0;
}

}  // namespace graphstore

#endif  // GRAPHSTORE_COMMON_HUGE_MAP_H_
