#include "server/service/quotas.h"

#include "absl/strings/str_cat.h"

namespace graphstore {

int Quotas::LiveWorkerThreads() const {
  int threads = 0;
  for (const auto& [id, b] : registry_->backends()) {
    if (b->scheduler != nullptr) threads += b->scheduler->num_live_workers();
  }
  return threads;
}

absl::Status Quotas::CheckBackendRoom(const Caller& caller, int num_workers) const {
  if (static_cast<int>(registry_->backends().size()) >= options_->max_backends) {
    return absl::ResourceExhaustedError(absl::StrCat("too many backends (limit ", options_->max_backends, ")"));
  }
  const int quota = options_->max_backends_per_identity;
  if (!caller.identity.empty() && quota > 0 && registry_->HoldingsOf(caller.identity).backends >= quota) {
    return absl::ResourceExhaustedError(absl::StrCat("identity '", caller.identity, "' already holds ", quota,
                                                     " backends (quota max_backends_per_identity=", quota, ")"));
  }
  // Backends hold their workers only while they have channels (scheduler/backend.h): one that
  // a client opened and left holds none, and locks nobody out.
  const int threads = LiveWorkerThreads();
  if (threads + num_workers > max_worker_threads_) {
    return absl::ResourceExhaustedError(absl::StrCat("options.num_workers: the backends hold ", threads,
                                                     " worker threads; ", num_workers,
                                                     " more would pass the server's limit of ", max_worker_threads_,
                                                     " (--max_worker_threads)"));
  }
  return absl::OkStatus();
}

absl::Status Quotas::CheckChannelRoom(const Caller& caller, const v1::RegisterSamplingInputRequest& req,
                                      const BackendEntry& backend) const {
  if (static_cast<int>(registry_->channels().size()) >= options_->max_channels) {
    return absl::ResourceExhaustedError(absl::StrCat("too many live channels (limit ", options_->max_channels, ")"));
  }
  const int64_t buffer_bytes = req.buffer().max_bytes() > 0 ? req.buffer().max_bytes() : options_->default_buffer_bytes;
  if (auto s = CheckChannelQuota(caller, buffer_bytes); !s.ok()) return s;
  // The first channel starts the backend's workers: they must fit beside the others'.
  if (backend.scheduler == nullptr || backend.scheduler->num_live_workers() == 0) {
    const int threads = LiveWorkerThreads();
    if (threads + backend.worker_threads > max_worker_threads_) {
      return absl::ResourceExhaustedError(absl::StrCat("backend_id: its ", backend.worker_threads,
                                                       " worker threads would pass the server's limit of ",
                                                       max_worker_threads_, " (--max_worker_threads) beside the ",
                                                       threads,
                                                       " that backends with channels hold; try again when a channel "
                                                       "is destroyed"));
    }
  }
  return absl::OkStatus();
}

absl::Status Quotas::CheckChannelQuota(const Caller& caller, int64_t buffer_bytes) const {
  if (caller.identity.empty()) return absl::OkStatus();
  const Holdings h = registry_->HoldingsOf(caller.identity);
  const int channels = options_->max_channels_per_identity;
  if (channels > 0 && h.channels >= channels) {
    return absl::ResourceExhaustedError(absl::StrCat("identity '", caller.identity, "' already holds ", h.channels,
                                                     " channels (quota max_channels_per_identity=", channels, ")"));
  }
  return CheckBufferQuota(caller.identity, buffer_bytes);
}

absl::Status Quotas::CheckBufferQuota(const std::string& identity, int64_t more) const {
  const int64_t quota = options_->max_buffer_bytes_per_identity;
  if (identity.empty() || quota <= 0) return absl::OkStatus();
  const int64_t held = registry_->HoldingsOf(identity).buffer_bytes;
  if (held + more <= quota) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("identity '", identity, "' holds channels with ", held,
                                                   " buffer bytes; ", more,
                                                   " more would pass its quota max_buffer_bytes_per_identity=", quota));
}

absl::Status Quotas::CheckStreamRoom(const ChannelEntry& c, int streams) const {
  if (streams <= c.room_streams) return absl::OkStatus();
  const int64_t more = c.buffer_bytes * (streams - c.room_streams);
  if (auto s = CheckBufferQuota(c.owner, more); !s.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat("num_stripes: ", streams, " streams of channel_id ", c.id,
                                                     " buffer up to ", streams, " x ", c.buffer_bytes, " bytes; ",
                                                     s.message(),
                                                     " (read with fewer stripes, or register a smaller buffer.max_bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace graphstore
