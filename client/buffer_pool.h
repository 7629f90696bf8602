#ifndef GRAPHSTORE_CLIENT_BUFFER_POOL_H_
#define GRAPHSTORE_CLIENT_BUFFER_POOL_H_

// Memory that decoded batches' tensors live in, kept for reuse. A trainer streams batches of
// similar sizes; giving each one freshly allocated memory means the kernel zero-fills and maps
// every page again (on some virtual machines that is slower than the network). A buffer goes
// back to the pool when the last tensor viewing it dies and serves a later batch. Large buffers
// ask for transparent huge pages.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace graphstore::client {

class BufferPool;

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
  Buffer(std::weak_ptr<BufferPool> pool, char* data, size_t size) : pool_(std::move(pool)), data_(data), size_(size) {}
  std::weak_ptr<BufferPool> pool_;
  char* data_;
  size_t size_;
};

/// Buffers by size class. Thread-safe.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  /// Keeps at most `max_idle_bytes` of unused buffers.
  static std::shared_ptr<BufferPool> Create(size_t max_idle_bytes = size_t{2} << 30);
  ~BufferPool();

  /// A buffer of at least `bytes` (its contents are whatever the last user left).
  std::shared_ptr<Buffer> Acquire(size_t bytes);

  /// Bytes handed out and not returned, and kept idle.
  size_t bytes_in_use() const;
  size_t bytes_idle() const;

 private:
  friend class Buffer;
  explicit BufferPool(size_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}
  // Takes back a buffer (from Buffer's destructor); false when the pool frees it.
  bool Return(char* data, size_t size);

  const size_t max_idle_bytes_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<char*>> idle_;  // by size class
  size_t idle_bytes_ = 0;
  size_t in_use_bytes_ = 0;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_BUFFER_POOL_H_
