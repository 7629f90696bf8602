#ifndef GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_
#define GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_

// Memory for the large in-memory arrays that draws and gathers read at random (a row's time
// fences, the weights' block sums and alias tables, the peer cache's rows and slots): arrays of
// 2 MiB or more get their own anonymous mapping, aligned to 2 MiB and marked for transparent
// huge pages before any page is touched, so a random read costs a cache miss rather than a
// cache miss and a page walk. Taking them from the heap instead (aligned_alloc) gives small
// pages whenever malloc serves the block from memory it used before, which it does for blocks
// up to its mmap threshold (32 MiB once the threshold has grown, or where a process raised it).
// Where the kernel gives no huge pages the memory works the same.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace graphstore {

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;

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
    return static_cast<T*>(MapHuge(Rounded(bytes)));
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

  // A fresh mapping of `size` bytes (a multiple of 2 MiB) at a 2 MiB boundary: maps 2 MiB more
  // than asked and gives back the unaligned head and the tail.
  static void* MapHuge(size_t size) {
    void* room = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (room == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t start = reinterpret_cast<uintptr_t>(room);
    const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned > start) munmap(room, aligned - start);
    if (const uintptr_t tail = start + size + kHugePage - (aligned + size); tail > 0) {
      munmap(reinterpret_cast<void*>(aligned + size), tail);
    }
#ifdef MADV_HUGEPAGE
    madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);  // advice only: else small pages
#endif
    return reinterpret_cast<void*>(aligned);
  }
};

/// A vector whose storage, when 2 MiB or more, is backed by transparent huge pages.
template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_
