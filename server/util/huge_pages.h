#ifndef GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_
#define GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_

// Memory for the large in-memory arrays that draws and gathers read at random (a row's time
// fences, the weights' block sums and alias tables, the peer cache's rows and slots): arrays of
// 2 MiB or more get their own anonymous mapping, aligned to 2 MiB and marked for transparent
// huge pages before any page is touched, so a random read costs a cache miss rather than a
// cache miss and a page walk. Taking them from the heap instead (aligned_alloc) gives small
// pages whenever malloc serves the block from memory it used before, which it does for blocks
// up to its mmap threshold (32 MiB once the threshold has grown, or where a process raised it).
// Mapped files read at random get the same placement (MapAtHugeBoundary). Where the kernel
// gives no huge pages the memory works the same.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

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

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = kHugePageBytes;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: allocators convert implicitly

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      const size_t align = alignof(T) > 64 ? alignof(T) : 64;
      void* p = std::aligned_alloc(align, bytes == 0 ? align : (bytes + align - 1) / align * align);
      if (p == nullptr) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    void* p = MapAtHugeBoundary(Rounded(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      std::free(p);
    } else {
      munmap(p, Rounded(bytes));
    }
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const HugePageAllocator<U>&) const { return false; }

 private:
  static size_t Rounded(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

};

/// A vector whose storage, when 2 MiB or more, is backed by transparent huge pages.
template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_
