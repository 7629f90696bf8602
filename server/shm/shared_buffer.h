#ifndef GRAPHSTORE_SERVER_SHM_SHARED_BUFFER_H_
#define GRAPHSTORE_SERVER_SHM_SHARED_BUFFER_H_

// Shared-memory buffers: the transport for clients on the server's host. A sampled message's
// tensor bytes go into a file in a tmpfs directory (/dev/shm); the gRPC message carries only
// the file's path and each tensor's byte range, and no bulk byte crosses a socket.
//
// Each channel keeps a small pool of such files, mapped once: mapping and unmapping hundreds
// of megabytes per batch costs more page-table work than sampling them. A use of a file goes
// to the client, which maps the file once (and keeps the mapping), reports the use received,
// and frees it when its tensors are gone; only then does the file take a later batch.
//
// File names are "graphstore-<pid>-<instance>-<id>". A live server holds a lock on its probe
// file "graphstore-<pid>-<instance>-probe", so a server starting on the directory can tell the
// files of dead servers (lockable probe) and remove them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace graphstore {

/// One file of a shared-memory directory, mapped for writing. Deleting the object deletes the
/// file (mappings elsewhere stay valid).
class SharedBufferFile {
 public:
  ~SharedBufferFile();
  SharedBufferFile(const SharedBufferFile&) = delete;
  SharedBufferFile& operator=(const SharedBufferFile&) = delete;

  uint64_t id() const { return id_; }
  const std::string& path() const { return path_; }
  size_t size() const { return size_; }
  /// The writable mapping.
  char* data() { return data_; }
  /// Removes the file's name now (cheap); its pages go with the last mapping.
  void Unlink();

 private:
  friend class SharedMemoryArea;
  SharedBufferFile(uint64_t id, std::string path, size_t size, char* data)
      : id_(id), path_(std::move(path)), size_(size), data_(data) {}

  const uint64_t id_;
  const std::string path_;
  const size_t size_;
  char* data_;
  bool unlinked_ = false;
};

/// A server's corner of a shared-memory directory: creates buffers, owns the probe file that
/// lets clients check they share the host, and removes files left by dead servers.
class SharedMemoryArea {
 public:
  /// Uses `dir`, which must exist and be writable. Removes stale files of dead processes.
  static absl::StatusOr<std::unique_ptr<SharedMemoryArea>> Open(const std::string& dir);
  /// Removes the probe file; deletes files released so far and, from then on, at once.
  ~SharedMemoryArea();

  /// A new file of `size` bytes, allocated (so a full tmpfs is an error here, not a SIGBUS
  /// later) and mapped for writing. ResourceExhausted when the directory is full. When the last
  /// reference goes, the file's name is removed at once and its mapping is released on the
  /// area's own thread: unmapping and freeing hundreds of megabytes takes tens of
  /// milliseconds, which a gRPC reaction or a sampling worker that drops the reference must
  /// not wait for.
  absl::StatusOr<std::shared_ptr<SharedBufferFile>> NewBuffer(size_t size);

  const std::string& dir() const { return dir_; }
  const std::string& probe_path() const { return probe_path_; }
  const std::string& probe_token() const { return probe_token_; }

 private:
  struct Reaper;
  SharedMemoryArea();

  std::shared_ptr<Reaper> reaper_;  // shared with every file's deleter
  std::string dir_;
  std::string prefix_;  // "<dir>/graphstore-<pid>-<instance>-"
  std::string probe_path_;
  std::string probe_token_;
  int probe_fd_ = -1;  // locked while the server lives
  std::mutex mu_;
  uint64_t next_id_ = 1;
};

class SharedBufferPool;

/// One use of a pooled file: given back to the pool when the last reference goes.
struct SharedUse {
  ~SharedUse();
  std::shared_ptr<SharedBufferFile> file;
  std::weak_ptr<SharedBufferPool> pool;
  /// Names the use on the wire (SharedBuffer.id).
  uint64_t id = 0;
};

/// The files of one channel. Thread-safe.
class SharedBufferPool : public std::enable_shared_from_this<SharedBufferPool> {
 public:
  /// Keeps at most `max_free` unused files; more are deleted.
  SharedBufferPool(SharedMemoryArea* area, int max_free) : area_(area), max_free_(max_free) {}

  /// A use of a free file of at least `size` bytes, or of a new one. CANCELLED once closed.
  absl::StatusOr<std::shared_ptr<SharedUse>> Acquire(size_t size);
  /// The channel is gone: free files are deleted, files coming back are deleted instead of
  /// kept, and Acquire fails. A file a client may still map (its use was sent) is then never
  /// written again, however long a batch in flight keeps the pool alive.
  void Close();
  /// Paths of files deleted since the last call.
  std::vector<std::string> TakeRetired();
  /// Files and their bytes, in use or free.
  int num_files() const;
  int64_t bytes() const;

 private:
  friend struct SharedUse;
  void Return(std::shared_ptr<SharedBufferFile> file);

  SharedMemoryArea* const area_;
  const int max_free_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<SharedBufferFile>> free_;
  std::vector<std::string> retired_;
  bool closed_ = false;
  int num_files_ = 0;
  int64_t bytes_ = 0;
  uint64_t next_use_ = 1;
};

/// Rounds up to the 64-byte alignment of tensors within a buffer.
inline size_t AlignShared(size_t n) { return (n + 63) & ~size_t{63}; }

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SHM_SHARED_BUFFER_H_
