#ifndef GRAPHSTORE_CLIENT_SHARED_MEMORY_H_
#define GRAPHSTORE_CLIENT_SHARED_MEMORY_H_

// The client half of the shared-memory transport: deciding whether a server shares this host,
// mapping the buffer of a received message, and finding each tensor's bytes in it. No LibTorch.

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "client/buffer_pool.h"
#include "client/wire_decoder.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// Whether the server that sent `meta` offers shared memory and shares this host with us: we
/// can read its probe file and find its token there.
bool SharesHostWith(const v1::DatasetMeta& meta);

/// A shared, writable mapping of a server's shared-buffer file. The server reuses the file
/// for later batches once a use is freed, and may delete it; the pages live until the mapping
/// goes.
class MappedBuffer {
 public:
  ~MappedBuffer();
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  friend absl::StatusOr<std::shared_ptr<const MappedBuffer>> MapSharedBuffer(
      const v1::SharedBuffer&, const std::string&, std::shared_ptr<const MemoryHook>);
  MappedBuffer(char* data, size_t size, std::shared_ptr<const MemoryHook> hook)
      : data_(data), size_(size), hook_(std::move(hook)) {}
  char* data_;
  size_t size_;
  std::shared_ptr<const MemoryHook> hook_;
};

/// Maps the file of a message's buffer. `dir` is the server's offered directory (DatasetMeta):
/// a path outside it, or a file whose size disagrees, is DataLoss; a file that is gone is
/// Unavailable (its server died and a new one removed its files: a reconnect mends it); a file
/// that cannot be opened otherwise is FailedPrecondition (not on the server's host, or another
/// user). `hook`, when set, hears of the mapping and of its end.
absl::StatusOr<std::shared_ptr<const MappedBuffer>> MapSharedBuffer(const v1::SharedBuffer& buffer,
                                                                    const std::string& dir,
                                                                    std::shared_ptr<const MemoryHook> hook = nullptr);

/// The mappings of one channel's files, kept across batches (mapping a file costs page-table
/// work proportional to its size). Thread-safe.
class SharedMappings {
 public:
  /// `dir`: the server's offered directory. Keeps at most `capacity` files mapped; `hook`
  /// (may be null) hears of every mapping made and ended.
  explicit SharedMappings(std::string dir, size_t capacity = 64, MemoryHook hook = nullptr)
      : dir_(std::move(dir)),
        capacity_(capacity),
        hook_(hook != nullptr ? std::make_shared<const MemoryHook>(std::move(hook)) : nullptr) {}
  /// The mapping of the message's buffer file, mapped now if it is not already.
  absl::StatusOr<std::shared_ptr<const MappedBuffer>> Map(const v1::SharedBuffer& buffer);
  /// Drops the mappings of files the server deleted (SampledMessage.retired_shared_paths).
  void Forget(const google::protobuf::RepeatedPtrField<std::string>& paths);

 private:
  struct Entry {
    std::string path;
    std::shared_ptr<const MappedBuffer> mapping;
  };
  const std::string dir_;
  const size_t capacity_;
  const std::shared_ptr<const MemoryHook> hook_;
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
};

/// A tensor's bytes: its `data`, or its slice of `buffer` (DataLoss when the slice is missing,
/// out of range, or disagrees with the shape and dtype).
absl::StatusOr<const char*> TensorBytes(const v1::Tensor& tensor, const MappedBuffer* buffer);

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_SHARED_MEMORY_H_
