#ifndef GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_
#define GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_

// Memory for the large in-memory indexes that draws read at random (a row's time fences, the
// weights' block sums and alias tables): arrays of 2 MiB or more are aligned to 2 MiB and
// marked for transparent huge pages, so a random read costs a cache miss rather than a cache
// miss and a page walk. Where the kernel gives no huge pages the memory works the same.

#include <sys/mman.h>

#include <cstddef>
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
    const bool huge = bytes >= kHugePage;
    const size_t align = huge ? kHugePage : (alignof(T) > 64 ? alignof(T) : 64);
    const size_t rounded = bytes == 0 ? align : (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (huge) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without it the pages are small
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const HugePageAllocator<U>&) const { return false; }
};

/// A vector whose storage, when 2 MiB or more, is backed by transparent huge pages.
template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_HUGE_PAGES_H_
