#include "server/shm/shared_buffer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <thread>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/util/huge_pages.h"
#include "server/util/log.h"

namespace graphstore {

namespace {

constexpr char kFilePrefix[] = "graphstore-";

std::string Errno(const std::string& what, const std::string& path) {
  return absl::StrCat(what, " ", path, ": ", std::strerror(errno));
}

std::string RandomHex(int bytes) {
  std::random_device rd;
  std::string out;
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    const unsigned v = rd() & 0xff;
    out += kHex[v >> 4];
    out += kHex[v & 15];
  }
  return out;
}

constexpr char kProbeSuffix[] = "probe";

// Removes the files of servers that are gone. A live server holds an exclusive lock on its
// probe file; a probe that can be locked belongs to a dead one, and so do the files sharing
// its "graphstore-<pid>-<instance>-" prefix. (A pid alone cannot tell: servers in other pid
// namespaces, such as containers, may share the directory.)
void RemoveStaleFiles(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name).rfind(kFilePrefix, 0) == 0) names.emplace_back(e->d_name);
  }
  closedir(d);
  int removed = 0;
  for (const std::string& probe : names) {
    if (!absl::EndsWith(probe, absl::StrCat("-", kProbeSuffix))) continue;
    const std::string probe_path = absl::StrCat(dir, "/", probe);
    const int fd = open(probe_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      const std::string prefix = probe.substr(0, probe.size() - (sizeof(kProbeSuffix) - 1));
      for (const std::string& name : names) {
        if (name != probe && name.rfind(prefix, 0) == 0 && unlink(absl::StrCat(dir, "/", name).c_str()) == 0) {
          ++removed;
        }
      }
      unlink(probe_path.c_str());
    }
    close(fd);
  }
  if (removed > 0) Logger("main")->info("removed {} shared buffers left in {} by servers that are gone", removed, dir);
}

}  // namespace

// Deletes released files (unmaps them) on its own thread. After Stop(), at once.
struct SharedMemoryArea::Reaper {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<SharedBufferFile*> queue;
  bool stopped = false;
  std::thread thread;

  void Start() {
    thread = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu);
      while (true) {
        cv.wait(lock, [&] { return stopped || !queue.empty(); });
        if (queue.empty()) return;  // stopped and drained
        SharedBufferFile* f = queue.front();
        queue.pop_front();
        lock.unlock();
        delete f;
        lock.lock();
      }
    });
  }
  void Release(SharedBufferFile* f) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!stopped) {
        queue.push_back(f);
        cv.notify_one();
        return;
      }
    }
    delete f;
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopped = true;
    }
    cv.notify_one();
    if (thread.joinable()) thread.join();
  }
};

SharedBufferFile::~SharedBufferFile() {
  if (data_ != nullptr) munmap(data_, size_);
  Unlink();
}

void SharedBufferFile::Unlink() {
  if (!unlinked_) unlink(path_.c_str());
  unlinked_ = true;
}

SharedUse::~SharedUse() {
  if (auto pool = this->pool.lock()) pool->Return(std::move(file));
}

absl::StatusOr<std::shared_ptr<SharedUse>> SharedBufferPool::Acquire(size_t size) {
  auto use = std::make_shared<SharedUse>();
  use->pool = weak_from_this();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return absl::CancelledError("the channel's shared-memory pool is closed");
    use->id = next_use_++;
    // The smallest free file that fits; of equal ones, the one given back last. A steady stream
    // then keeps writing the few files it has in flight, whose pages are warm, and leaves the
    // pool's other idle files untouched, instead of cycling through every file the pool keeps.
    // (free_ is in the order files came back, so `<=` keeps the later of equal ones.)
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if ((*it)->size() >= size && (best == free_.end() || (*it)->size() <= (*best)->size())) best = it;
    }
    if (best != free_.end()) {
      use->file = std::move(*best);
      free_.erase(best);
      return use;
    }
  }
  // Room for batches a little larger than this one, so that files keep fitting.
  constexpr size_t kGranule = 2 << 20;
  const size_t want = (size + size / 8 + kGranule - 1) / kGranule * kGranule;
  auto file = area_->NewBuffer(want);
  if (!file.ok()) return file.status();
  use->file = *std::move(file);
  std::lock_guard<std::mutex> lock(mu_);
  ++num_files_;
  bytes_ += static_cast<int64_t>(use->file->size());
  return use;
}

void SharedBufferPool::Return(std::shared_ptr<SharedBufferFile> file) {
  if (file == nullptr) return;
  std::shared_ptr<SharedBufferFile> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
      --num_files_;
      bytes_ -= static_cast<int64_t>(file->size());
      dropped = std::move(file);
      return;
    }
    free_.push_back(std::move(file));
    if (static_cast<int>(free_.size()) <= max_free_) return;
    // Too many idle files: delete the smallest.
    auto smallest = std::min_element(free_.begin(), free_.end(),
                                     [](const auto& a, const auto& b) { return a->size() < b->size(); });
    dropped = std::move(*smallest);
    free_.erase(smallest);
    retired_.push_back(dropped->path());
    --num_files_;
    bytes_ -= static_cast<int64_t>(dropped->size());
  }
}

void SharedBufferPool::Close() {
  std::vector<std::shared_ptr<SharedBufferFile>> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  for (auto& f : free_) {
    --num_files_;
    bytes_ -= static_cast<int64_t>(f->size());
  }
  dropped.swap(free_);
}

std::vector<std::string> SharedBufferPool::TakeRetired() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(retired_, {});
}

int SharedBufferPool::num_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_files_;
}

int64_t SharedBufferPool::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

absl::StatusOr<std::unique_ptr<SharedMemoryArea>> SharedMemoryArea::Open(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("--shared_memory_dir ", dir, " is not a directory"));
  }
  RemoveStaleFiles(dir);
  std::unique_ptr<SharedMemoryArea> a(new SharedMemoryArea());
  a->dir_ = dir;
  a->prefix_ = absl::StrCat(dir, "/", kFilePrefix, getpid(), "-", RandomHex(8), "-");
  a->probe_path_ = a->prefix_ + kProbeSuffix;
  a->probe_token_ = RandomHex(16);
  // Written and locked under another name first, so that no server ever sees it unlocked.
  const std::string tmp = a->prefix_ + "new";
  const int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--shared_memory_dir: ", Errno("cannot create", tmp)));
  }
  const bool ok = flock(fd, LOCK_EX | LOCK_NB) == 0 &&
                  write(fd, a->probe_token_.data(), a->probe_token_.size()) ==
                      static_cast<ssize_t>(a->probe_token_.size()) &&
                  rename(tmp.c_str(), a->probe_path_.c_str()) == 0;
  if (!ok) {
    close(fd);
    unlink(tmp.c_str());
    return absl::InvalidArgumentError(absl::StrCat("--shared_memory_dir: cannot write ", a->probe_path_));
  }
  a->probe_fd_ = fd;  // holds the lock for the server's life
  return a;
}

SharedMemoryArea::SharedMemoryArea() : reaper_(std::make_shared<Reaper>()) { reaper_->Start(); }

SharedMemoryArea::~SharedMemoryArea() {
  reaper_->Stop();
  unlink(probe_path_.c_str());
  if (probe_fd_ >= 0) close(probe_fd_);
}

absl::StatusOr<std::shared_ptr<SharedBufferFile>> SharedMemoryArea::NewBuffer(size_t size) {
  size = std::max<size_t>(size, 64);
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
  }
  std::string path = absl::StrCat(prefix_, id);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(Errno("shared memory: cannot create", path));
  // On huge pages: a channel's files take turns, each written end to end once a batch, and on
  // 4 KiB pages every batch would walk page tables for each 4 KiB of it, on the server and in
  // the trainer, the more so the more files a host keeps in turn (several channels, a cluster).
  // One page in each whole 2 MiB first: the collapse then fills each huge page itself rather
  // than copying 512 small pages into it.
  const off_t bytes = static_cast<off_t>(size);
  const char* what = "allocate";
  void* p = MAP_FAILED;
  int err = ftruncate(fd, bytes) == 0 ? 0 : errno;
  if (err == 0) {
    for (off_t at = 0; at + static_cast<off_t>(kHugePageBytes) <= bytes; at += kHugePageBytes) {
      posix_fallocate(fd, at, 4096);  // a full tmpfs answers below
    }
    p = MapAtHugeBoundary(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
    if (p == MAP_FAILED) {
      err = errno;
      what = "map";
    }
  }
  if (err == 0) {
    CollapseIntoHugePages(p, size);
    // Allocate the rest now: writing to an unallocated page of a full tmpfs would raise SIGBUS.
    err = posix_fallocate(fd, 0, bytes);
  }
  close(fd);
  if (err != 0) {
    if (p != MAP_FAILED) munmap(p, size);
    unlink(path.c_str());
    const std::string m =
        absl::StrCat("shared memory: cannot ", what, " ", size, " bytes in ", dir_, ": ", std::strerror(err));
    return err == ENOSPC ? absl::ResourceExhaustedError(m) : absl::InternalError(m);
  }
  madvise(p, size, MADV_POPULATE_WRITE);  // mapped now, so that no write faults later
  std::shared_ptr<Reaper> reaper = reaper_;
  return std::shared_ptr<SharedBufferFile>(new SharedBufferFile(id, std::move(path), size, static_cast<char*>(p)),
                                           [reaper](SharedBufferFile* f) {
                                             f->Unlink();
                                             reaper->Release(f);
                                           });
}

}  // namespace graphstore
