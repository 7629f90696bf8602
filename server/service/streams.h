#ifndef GRAPHSTORE_SERVER_SERVICE_STREAMS_H_
#define GRAPHSTORE_SERVER_SERVICE_STREAMS_H_

// The service core's side of a channel's streams: attaching one to a channel's epoch (resuming
// where asked; one per stripe of the channel's batches, one in all for shared memory), detaching
// it, counting what it sent, and the shared-memory bookkeeping of the buffers it sent and the
// client received and freed. It is the StreamHost the gRPC stream writer calls. No gRPC.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/service/caller.h"
#include "server/service/service_state.h"
#include "server/service/stream_host.h"

namespace graphstore {

class Streams : public StreamHost {
 public:
  explicit Streams(ServiceState* state) : state_(*state) {}

  /// Validates a stream request and attaches it to the channel: one stream per stripe of the
  /// channel's batches (up to 64 with striped connections), one in all for shared memory.
  absl::StatusOr<StreamAttachment> AttachStream(const v1::StreamSampledMessagesRequest& req, const Caller& caller)
      ABSL_LOCKS_EXCLUDED(state_.mu);
  absl::Status ReleaseSharedBuffers(const v1::ReleaseSharedBuffersRequest& req,
                                    v1::ReleaseSharedBuffersResponse* resp, const Caller& caller)
      ABSL_LOCKS_EXCLUDED(state_.mu);

  // StreamHost.
  void DetachStream(const StreamAttachment& attachment, bool cancelled) override ABSL_LOCKS_EXCLUDED(state_.mu);
  void Touch(uint64_t channel_id) override ABSL_LOCKS_EXCLUDED(state_.mu);
  absl::StatusOr<bool> SharedHoldBack(uint64_t channel_id) override ABSL_LOCKS_EXCLUDED(state_.mu);
  void HandOff(uint64_t channel_id, std::shared_ptr<SharedUse> use) override ABSL_LOCKS_EXCLUDED(state_.mu);
  void Sent(const StreamAttachment& a, int64_t bytes, const BatchCounts* batch_done) override
      ABSL_LOCKS_EXCLUDED(state_.mu);

 private:
  // Raises channel `c`'s buffer room to `streams` streams (its buffer_bytes per stream), or
  // RESOURCE_EXHAUSTED naming num_stripes when its owner's quota has no room for it.
  absl::Status GrowStreamRoomLocked(ChannelEntry* c, int streams) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Where a stream of channel `c` starts: the channel batch it resumes from, or -1 for a fresh
  // epoch; FAILED_PRECONDITION for an epoch that is not the channel's current one.
  absl::StatusOr<int64_t> StartOf(const ChannelEntry& c, const v1::StreamSampledMessagesRequest& req)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // A shared-memory channel's new stream: the buffers its earlier streams lost (`lost`, freed
  // by the caller after the lock) and, when that made room on a full server, the streams to
  // wake (`wake`).
  void NewSharedStreamLocked(ChannelEntry* c, bool reclaim_unreceived, std::vector<std::shared_ptr<SharedUse>>* lost,
                             std::vector<std::pair<uint64_t, std::shared_ptr<scheduler::Backend>>>* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  ServiceState& state_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_STREAMS_H_
