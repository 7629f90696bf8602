#ifndef GRAPHSTORE_SERVER_UTIL_UNINITIALIZED_H_
#define GRAPHSTORE_SERVER_UTIL_UNINITIALIZED_H_

// Buffers that are written whole right after they are sized. std::vector<char>::resize fills
// every new byte with zero; for a batch's feature rows, which the gather overwrites at once,
// that fill is a second pass over hundreds of megabytes (a sampled subgraph is reset before
// every batch, so the fill ran over the whole buffer each time).

#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace graphstore {

/// std::allocator whose value-initialisation (resize, the size constructor) leaves elements
/// default-initialised: for char and the other scalars, unwritten.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };

  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}  // NOLINT: allocators convert implicitly

  template <typename U>
  void construct(U* p) noexcept(noexcept(::new (static_cast<void*>(p)) U)) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// Bytes that resize() does not clear.
using UninitializedBytes = std::vector<char, UninitializedAllocator<char>>;

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_UNINITIALIZED_H_
