#include "server/service/service_state.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace graphstore {

namespace {

int64_t HostMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{8} << 30;
}

// Size of the filesystem holding `dir` (8 GiB when it cannot be read).
int64_t FilesystemBytes(const std::string& dir) {
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) != 0 || fs.f_blocks == 0) return int64_t{8} << 30;
  return static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
}

}  // namespace

ServiceState::ServiceState(std::unique_ptr<Partition> p, CoreOptions o, std::unique_ptr<SharedMemoryArea> shm)
    : partition(std::move(p)),
      options(std::move(o)),
      feature_outputs(partition.get()),
      queries(partition.get(), &options, &feature_outputs, &counters),
      shared_memory(std::move(shm)),
      budget(std::make_shared<scheduler::MemoryBudget>(
          options.max_buffered_bytes_total > 0 ? options.max_buffered_bytes_total : HostMemoryBytes() / 4)),
      quotas(&options, &registry,
             options.max_worker_threads > 0 ? options.max_worker_threads
                                            : std::max(64, 16 * static_cast<int>(std::thread::hardware_concurrency()))),
      shared_account(options.max_unfreed_shared_bytes_total > 0
                         ? options.max_unfreed_shared_bytes_total
                         : (shared_memory != nullptr ? FilesystemBytes(shared_memory->dir()) / 2 : 0)) {}

absl::Status ServiceState::SamplingOpen() const {
  const Cluster* c = cluster.load();
  return c == nullptr ? absl::OkStatus() : c->Ready();
}

absl::StatusOr<std::shared_ptr<ChannelEntry>> ServiceState::LiveChannel(uint64_t id) const {
  Registry::Found found;
  std::shared_ptr<ChannelEntry> c = registry.FindChannel(id, &found);
  if (c == nullptr) return Registry::NotLive(id, found);
  return c;
}

}  // namespace graphstore
