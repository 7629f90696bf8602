#include "client/server_link.h"

#include "absl/strings/str_cat.h"

namespace graphstore::client {

namespace {

std::string CacheListing(const v1::RegisterSamplingInputResponse& r) {
  std::string out;
  for (const v1::FeatureCache& c : r.feature_cache()) out += c.SerializeAsString();
  return out;
}

}  // namespace

bool Retryable(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:  // the server has not yet seen the old stream go
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kAborted: return true;
    default: return false;
  }
}

int64_t ServerLink::ChannelBatch(int64_t b) const {
  if (b < offset || (b - offset) % stride != 0) return -1;
  const int64_t j = (b - offset) / stride;
  return j < num_batches ? j : -1;
}

absl::StatusOr<v1::RegisterSamplingInputResponse> ServerLink::Register(bool rows_from_owners, bool again) {
  if (again && shared_memory_allowed && streams <= 1) {
    // A restarted server may offer shared memory elsewhere, or not at all (an epoch read over
    // several connections goes on over them).
    auto meta = client->GetDatasetMeta();
    if (!meta.ok()) return meta.status();
    shared_memory = SharesHostWith(*meta);
    mappings = shared_memory ? std::make_unique<SharedMappings>(meta->shared_memory().dir(), 64, host_memory_hook)
                             : nullptr;
    freed = std::make_shared<FreedUses>();  // uses of the lost channel mean nothing here
  }
  auto backend = client->InitSamplingBackend(init);
  if (!backend.ok()) return backend.status();
  v1::RegisterSamplingInputRequest reg = registration;
  reg.set_backend_id(backend->backend_id());
  reg.set_shared_memory(shared_memory);
  reg.set_rows_from_owners(rows_from_owners);
  auto r = client->RegisterSamplingInput(reg);
  if (!r.ok()) return r.status();
  if (!again) {
    num_batches = r->num_batches_per_epoch();
    cache_listing = CacheListing(*r);
  } else if (r->num_batches_per_epoch() != num_batches || CacheListing(*r) != cache_listing) {
    v1::DestroySamplingInputRequest destroy;
    destroy.set_channel_id(r->channel_id());
    (void)client->DestroySamplingInput(destroy);
    return absl::FailedPreconditionError(absl::StrCat(
        client->address(), " came back serving different data (", r->num_batches_per_epoch(),
        " batches per epoch, was ", num_batches, "; or another feature cache): the epoch cannot resume"));
  }
  channel = r->channel_id();
  lease_ms = r->lease_ms();
  return r;
}

absl::Status ServerLink::Start(int64_t epoch, int64_t from, bool retry) {
  v1::StartEpochRequest req;
  req.set_channel_id(channel);
  req.set_epoch(epoch);
  req.set_start_batch(from);
  auto r = client->StartEpoch(req);
  if (!r.ok()) return r.status();
  if (r->outcome() == v1::StartEpochResponse::STARTED) return absl::OkStatus();
  if (retry && r->outcome() == v1::StartEpochResponse::ALREADY_STARTED) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("epoch ", epoch, " was not started (",
                                                    v1::StartEpochResponse::Outcome_Name(r->outcome()),
                                                    "); epochs must increase"));
}

absl::Status ServerLink::Release(uint64_t received) {
  v1::ReleaseSharedBuffersRequest release;
  release.set_channel_id(channel);
  if (received != 0) release.add_received_ids(received);
  for (uint64_t id : freed->Take()) release.add_freed_ids(id);
  if (release.received_ids().empty() && release.freed_ids().empty()) return absl::OkStatus();
  return client->ReleaseSharedBuffers(release).status();
}

absl::StatusOr<std::shared_ptr<const MappedBuffer>> ServerLink::Receive(const v1::SampledMessage& m) {
  absl::StatusOr<std::shared_ptr<const MappedBuffer>> mapped =
      absl::FailedPreconditionError("the server sent a shared buffer to a channel without shared memory");
  if (mappings != nullptr) {
    mappings->Forget(m.retired_shared_paths());
    mapped = mappings->Map(m.shared_buffer());
  }
  const absl::Status released = Release(m.shared_buffer().id());
  if (mapped.ok() && !released.ok()) return released;
  return mapped;
}

}  // namespace graphstore::client
