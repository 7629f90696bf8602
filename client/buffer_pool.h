#ifndef GRAPHSTORE_CLIENT_BUFFER_POOL_H_
#define GRAPHSTORE_CLIENT_BUFFER_POOL_H_

// Memory that decoded batches' tensors live in, kept for reuse. A trainer streams batches of
// similar sizes; giving each one freshly allocated memory means the kernel zero-fills and maps
// every page again (on some virtual machines that is slower than the network). A buffer goes
// back to the pool when the last tensor viewing it dies and serves a later batch. Large buffers
// ask for transparent huge pages.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace graphstore::client {

class BufferPool;

/// Told of every block of memory a pool allocates (`added` true) and of every block it frees
/// (false), with its address and size: e.g. to register the blocks with a GPU as page-locked.
using MemoryHook = std::function<void(void* data, size_t size, bool added)>;

/// A block of memory from a BufferPool, 64-byte aligned. Returns to its pool when destroyed.
class Buffer {
 public:
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  friend class BufferPool;
  Buffer(std::weak_ptr<BufferPool> pool, std::shared_ptr<const MemoryHook> hook, char* data, size_t size)
      : pool_(std::move(pool)), hook_(std::move(hook)), data_(data), size_(size) {}
  std::weak_ptr<BufferPool> pool_;
  std::shared_ptr<const MemoryHook> hook_;  // outlives the pool while a buffer is out
  char* data_;
  size_t size_;
};

/// Buffers by size class. Thread-safe.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  /// Keeps at most `max_idle_bytes` of unused buffers; `hook` (may be null) hears of every
  /// block allocated and freed.
  static std::shared_ptr<BufferPool> Create(size_t max_idle_bytes = size_t{2} << 30, MemoryHook hook = nullptr);
  ~BufferPool();

  /// A buffer of at least `bytes` (its contents are whatever the last user left).
  std::shared_ptr<Buffer> Acquire(size_t bytes);

  /// Bytes handed out and not returned, and kept idle.
  size_t bytes_in_use() const;
  size_t bytes_idle() const;

 private:
  friend class Buffer;
  BufferPool(size_t max_idle_bytes, MemoryHook hook)
      : max_idle_bytes_(max_idle_bytes),
        hook_(hook != nullptr ? std::make_shared<const MemoryHook>(std::move(hook)) : nullptr) {}
  // Takes back a buffer (from Buffer's destructor); false when the pool frees it.
  bool Return(char* data, size_t size);

  const size_t max_idle_bytes_;
  const std::shared_ptr<const MemoryHook> hook_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<char*>> idle_;  // by size class
  size_t idle_bytes_ = 0;
  size_t in_use_bytes_ = 0;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_BUFFER_POOL_H_
