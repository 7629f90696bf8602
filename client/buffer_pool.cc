#include "client/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace graphstore::client {
namespace {

constexpr size_t kMinClass = 4096;
constexpr size_t kHugePage = size_t{2} << 20;

// Sizes are rounded up to a class: four classes per power of two, so a buffer wastes at most a
// fifth of itself and similar batches share classes.
size_t SizeClass(size_t bytes) {
  if (bytes <= kMinClass) return kMinClass;
  size_t power = kMinClass;
  while (power * 2 < bytes) power *= 2;
  const size_t step = power / 4;
  return (bytes + step - 1) / step * step;
}

char* Allocate(size_t size, const MemoryHook* hook) {
  char* data;
  if (size >= kHugePage) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    madvise(p, size, MADV_HUGEPAGE);
    data = static_cast<char*>(p);
  } else {
    data = static_cast<char*>(std::aligned_alloc(64, size));
    if (data == nullptr) return nullptr;
  }
  if (hook != nullptr) (*hook)(data, size, true);
  return data;
}

void Free(char* data, size_t size, const MemoryHook* hook) {
  if (hook != nullptr) (*hook)(data, size, false);
  if (size >= kHugePage) {
    munmap(data, size);
  } else {
    std::free(data);
  }
}

}  // namespace

Buffer::~Buffer() {
  auto pool = pool_.lock();
  if (pool == nullptr || !pool->Return(data_, size_)) Free(data_, size_, hook_.get());
}

std::shared_ptr<BufferPool> BufferPool::Create(size_t max_idle_bytes, MemoryHook hook) {
  return std::shared_ptr<BufferPool>(new BufferPool(max_idle_bytes, std::move(hook)));
}

BufferPool::~BufferPool() {
  for (auto& [size, list] : idle_) {
    for (char* p : list) Free(p, size, hook_.get());
  }
}

std::shared_ptr<Buffer> BufferPool::Acquire(size_t bytes) {
  size_t size = SizeClass(bytes);
  char* data = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest idle buffer that fits and wastes at most a quarter of itself: batch sizes
    // wander across a class boundary, and a fresh buffer costs far more than a larger one.
    for (auto it = idle_.lower_bound(size); it != idle_.end() && it->first <= size + size / 4; ++it) {
      if (it->second.empty()) continue;
      size = it->first;
      data = it->second.back();
      it->second.pop_back();
      idle_bytes_ -= size;
      break;
    }
    in_use_bytes_ += size;
  }
  if (data == nullptr) data = Allocate(size, hook_.get());
  if (data == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_bytes_ -= size;
    throw std::bad_alloc();
  }
  return std::shared_ptr<Buffer>(new Buffer(weak_from_this(), hook_, data, size));
}

bool BufferPool::Return(char* data, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_bytes_ -= size;
  if (idle_bytes_ + size > max_idle_bytes_) return false;
  idle_[size].push_back(data);
  idle_bytes_ += size;
  return true;
}

size_t BufferPool::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_bytes_;
}

size_t BufferPool::bytes_idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_bytes_;
}

}  // namespace graphstore::client
