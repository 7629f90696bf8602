#include "client/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/huge_map.h"

namespace graphstore::client {

bool SharesHostWith(const v1::DatasetMeta& meta) {
  if (!meta.has_shared_memory() || meta.shared_memory().probe_path().empty()) return false;
  const std::string& token = meta.shared_memory().probe_token();
  const int fd = open(meta.shared_memory().probe_path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string got(token.size() + 1, '\0');
  const ssize_t n = read(fd, got.data(), got.size());
  close(fd);
  return n == static_cast<ssize_t>(token.size()) && got.compare(0, token.size(), token) == 0;
}

MappedBuffer::~MappedBuffer() {
  if (data_ == nullptr) return;
  if (hook_ != nullptr) (*hook_)(data_, size_, false);
  munmap(data_, size_);
}

absl::StatusOr<std::shared_ptr<const MappedBuffer>> MapSharedBuffer(const v1::SharedBuffer& buffer,
                                                                    const std::string& dir,
                                                                    std::shared_ptr<const MemoryHook> hook) {
  const std::string& path = buffer.path();
  const std::string prefix = absl::StrCat(dir, "/graphstore-");
  if (dir.empty() || path.rfind(prefix, 0) != 0 || path.find("/..") != std::string::npos ||
      path.find('/', prefix.size()) != std::string::npos) {
    return absl::DataLossError(absl::StrCat("shared buffer ", path, " is not in the server's directory ", dir));
  }
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    // A live server never removes a file whose use it sent and that was not released; a server
    // restarting on the directory removes a dead one's. The batch is lost with its server.
    return absl::UnavailableError(absl::StrCat("shared buffer ", path,
                                               " is gone (the server that wrote it has stopped)"));
  }
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot open shared buffer ", path, ": ", std::strerror(errno),
        " (is the client on the server's host, as the same user? turn shared memory off otherwise)"));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != buffer.size() || buffer.size() == 0) {
    close(fd);
    return absl::DataLossError(absl::StrCat("shared buffer ", path, " is not ", buffer.size(), " bytes long"));
  }
  // At a 2 MiB boundary, so that the huge pages the server placed the file on are mapped whole.
  void* p = MapAtHugeBoundary(buffer.size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd);
  close(fd);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot map shared buffer ", path, ": ", std::strerror(errno)));
  }
  if (hook != nullptr) (*hook)(p, buffer.size(), true);
  return std::shared_ptr<const MappedBuffer>(new MappedBuffer(static_cast<char*>(p), buffer.size(), std::move(hook)));
}

absl::StatusOr<std::shared_ptr<const MappedBuffer>> SharedMappings::Map(const v1::SharedBuffer& buffer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->path != buffer.path()) continue;
      if (it->mapping->size() == buffer.size()) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().mapping;
      }
      entries_.erase(it);  // a new file under an old name
      break;
    }
  }
  auto mapping = MapSharedBuffer(buffer, dir_, hook_);
  if (!mapping.ok()) return mapping.status();
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_front(Entry{buffer.path(), *mapping});
  if (entries_.size() > capacity_) entries_.pop_back();
  return *mapping;
}

void SharedMappings::Forget(const google::protobuf::RepeatedPtrField<std::string>& paths) {
  if (paths.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& p : paths) {
    entries_.remove_if([&](const Entry& e) { return e.path == p; });
  }
}

absl::StatusOr<const char*> TensorBytes(const v1::Tensor& t, const MappedBuffer* buffer) {
  uint64_t n = 1;
  for (int64_t d : t.shape()) {
    if (d < 0) return absl::DataLossError("tensor has a negative dimension");
    n *= static_cast<uint64_t>(d);
  }
  const uint64_t want = n * DtypeSize(t.dtype());
  if (!t.has_shared()) {
    if (t.data().size() != want) {
      return absl::DataLossError(absl::StrCat("tensor carries ", t.data().size(), " bytes, its shape needs ", want));
    }
    return t.data().data();
  }
  if (buffer == nullptr) return absl::DataLossError("tensor refers to a shared buffer but the message has none");
  const uint64_t off = t.shared().offset();
  const uint64_t len = t.shared().length();
  if (len != want || off > buffer->size() || len > buffer->size() - off) {
    return absl::DataLossError(absl::StrCat("tensor slice [", off, ", +", len, ") does not fit its shared buffer of ",
                                            buffer->size(), " bytes or its shape"));
  }
  return buffer->data() + off;
}

}  // namespace graphstore::client
