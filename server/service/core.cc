#include "server/service/core.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/sampling/draw.h"
#include "server/service/config.h"
#include "server/service/message.h"
#include "server/service/registration.h"
#include "server/util/log.h"

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

// The scheduler's view of a new channel: positions into its input (the workers look the ids
// up), in its backend's batch shape and order, carrying `sampling` to the workers.
scheduler::ChannelOptions SchedulerOptionsOf(const v1::RegisterSamplingInputRequest& req, const ChannelEntry& channel,
                                             const v1::SamplingConfig& config, std::shared_ptr<ChannelSampling> sampling) {
  scheduler::ChannelOptions co;
  co.seeds.resize(channel.num_seeds);
  std::iota(co.seeds.begin(), co.seeds.end(), int64_t{0});
  co.batch_size = config.batch_size();
  co.batch_stride = channel.batch_stride;
  co.batch_offset = channel.batch_offset;
  if (config.shuffle()) {
    co.order = [seed = req.seed()](int64_t epoch, std::vector<int64_t>* ids) { ShuffleForEpoch(seed, epoch, ids); };
  }
  co.drop_last = config.drop_last();
  co.seed = req.seed();
  co.ordered = req.ordered();
  co.max_buffered_messages = req.buffer().max_messages();
  co.max_buffered_bytes = req.buffer().max_bytes();
  co.context = channel.node_type;
  co.attachment = std::move(sampling);
  co.worker_key = req.worker_key();
  return co;
}

}  // namespace

Core::Core(std::unique_ptr<Partition> partition, CoreOptions options, std::unique_ptr<SharedMemoryArea> shared_memory)
    : partition_(std::move(partition)),
      options_(std::move(options)),
      feature_outputs_(partition_.get()),
      queries_(partition_.get(), &options_, &feature_outputs_),
      shared_memory_(std::move(shared_memory)),
      budget_(std::make_shared<scheduler::MemoryBudget>(options_.max_buffered_bytes_total > 0
                                                           ? options_.max_buffered_bytes_total
                                                           : HostMemoryBytes() / 4)),
      shared_account_(options_.max_unfreed_shared_bytes_total > 0
                              ? options_.max_unfreed_shared_bytes_total
                              : (shared_memory_ != nullptr ? FilesystemBytes(shared_memory_->dir()) / 2 : 0)),
      quotas_(&options_, &registry_,
              options_.max_worker_threads > 0 ? options_.max_worker_threads
                                              : std::max(64, 16 * static_cast<int>(std::thread::hardware_concurrency()))) {
  Logger("core")->info("budgets: {} MiB of unread sampled batches, {} worker threads", budget_->limit() >> 20,
                       quotas_.max_worker_threads());
  if (shared_memory_ != nullptr) {
    Logger("core")->info("shared memory: {} MiB of buffers not freed by clients ({} MiB per channel)",
                         shared_account_.limit() >> 20, options_.max_unfreed_shared_bytes_per_channel >> 20);
  }
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

Core::~Core() { Shutdown(); }

// ----- Metadata and lookups ---------------------------------------------------------------

absl::Status Core::GetDatasetMeta(const v1::GetDatasetMetaRequest& req, v1::DatasetMeta* resp) const {
  queries_.FillDatasetMeta(resp);
  if (req.with_feature_ranges()) {
    for (int t = 0; t < static_cast<int>(partition_->node_types().size()); ++t) {
      const NodeTypeStore& type = partition_->node_type(t);
      if (type.feature_dim == 0 || type.feature_dtype != NpyDtype::kFloat32) continue;
      std::vector<float> min, max;
      if (auto s = feature_outputs_.Range(t, &min, &max); !s.ok()) return s;
      auto* r = resp->add_feature_ranges();
      r->set_node_type(type.name);
      SetTensor(v1::DTYPE_FLOAT32, {type.feature_dim}, min.data(), min.size() * 4, r->mutable_min());
      SetTensor(v1::DTYPE_FLOAT32, {type.feature_dim}, max.data(), max.size() * 4, r->mutable_max());
      r->set_num_rows(type.num_nodes);
    }
  }
  if (shared_memory_ != nullptr) {
    resp->mutable_shared_memory()->set_dir(shared_memory_->dir());
    resp->mutable_shared_memory()->set_probe_path(shared_memory_->probe_path());
    resp->mutable_shared_memory()->set_probe_token(shared_memory_->probe_token());
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& a : cluster_addresses_) resp->add_cluster(a);
  return absl::OkStatus();
}

// ----- Backends ---------------------------------------------------------------------------

void Core::SetCluster(Cluster* cluster, std::vector<std::string> addresses) {
  std::lock_guard<std::mutex> lock(mu_);
  cluster_addresses_ = std::move(addresses);
  if (options_.peer_cache_bytes > 0 && remote_cache_ == nullptr) {
    remote_cache_ =
        std::make_unique<RemoteCache>(partition_.get(), options_.peer_cache_bytes, options_.peer_cache_lists);
  }
  cluster_.store(cluster);
}

absl::Status Core::SamplingOpen() const {
  const Cluster* cluster = cluster_.load();
  return cluster == nullptr ? absl::OkStatus() : cluster->Ready();
}

std::shared_ptr<ChannelEntry> Core::NewChannel(const v1::RegisterSamplingInputRequest& req,
                                               std::shared_ptr<BackendEntry> backend) {
  const auto& buf = req.buffer();
  const int messages = buf.max_messages() > 0 ? buf.max_messages() : options_.default_buffer_messages;
  auto channel = std::make_shared<ChannelEntry>(
      messages, buf.max_bytes() > 0 ? buf.max_bytes() : options_.default_buffer_bytes,
      options_.max_unfreed_shared_bytes_per_channel, &shared_account_);
  channel->id = registry_.ReserveChannelId();
  channel->backend = std::move(backend);
  channel->worker_key = req.worker_key();
  channel->lease_ms = req.lease_ms() > 0 ? req.lease_ms() : options_.default_lease_ms;
  channel->last_activity = Clock::now();
  if (req.shared_memory()) {
    // Idle files are kept for as many batches as the channel can have alive (buffered or in
    // flight, sampled ahead, being written, sent and not yet received, with the trainer), so
    // that a steady stream reuses its files instead of making new ones.
    const int live = 2 * messages + options_.sample_ahead_batches + 3;
    channel->pool = std::make_shared<SharedBufferPool>(shared_memory_.get(), live);
  }
  return channel;
}

absl::Status Core::RegisterSamplingInput(const v1::RegisterSamplingInputRequest& req,
                                         v1::RegisterSamplingInputResponse* resp, const Caller& caller) {
  if (auto s = CheckRegistration(req, options_, shared_memory_ != nullptr); !s.ok()) return s;
  if (!budget_->HasRoom()) {
    return absl::ResourceExhaustedError(absl::StrCat("the server holds ", budget_->used() >> 20, " MiB of sampled batches that no one has "
                               "read yet (limit ", budget_->limit() >> 20,
                               " MiB, --max_buffered_mb); register again once trainers have caught up"));
  }
  int node_type = 0;
  AblpInput ablp;
  auto seeds = ResolveSeeds(SeedSources{partition_.get(), &queries_, cluster_.load()}, req, &node_type, &ablp);
  if (!seeds.ok()) return seeds.status();

  // The backend's config decides what the input needs (negatives, times); an unknown backend is
  // refused below.
  v1::SamplingConfig config;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto b = registry_.FindBackend(req.backend_id());
    if (b != nullptr && b->state == BackendEntry::State::kReady) config = b->config;
  }
  auto seed_times = ResolveSeedTimes(*partition_, req, config, node_type);
  if (!seed_times.ok()) return seed_times.status();

  // A link-prediction channel's labeler follows its backend's negative sampling; it is built
  // outside the lock (degree negatives sum a degree array).
  std::shared_ptr<const AblpLabeler> labeler;
  if (req.has_ablp()) {
    auto created = AblpLabeler::Create(partition_.get(), std::move(ablp), NegativesOf(config));
    if (!created.ok()) return InField(created.status(), "ablp");
    labeler = *std::move(created);
  }

  auto features = feature_outputs_.ForChannel(req.feature_encoding(), req.feature_cache_rows(), req.rows_from_owners());
  if (!features.ok()) return features.status();

  std::shared_ptr<ChannelEntry> channel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return absl::UnavailableError("the server is shutting down");
    std::shared_ptr<BackendEntry> backend = registry_.FindBackend(req.backend_id());
    if (backend == nullptr || backend->state != BackendEntry::State::kReady) {
      return absl::NotFoundError(absl::StrCat("backend_id ", req.backend_id(), " does not exist"));
    }
    if (auto s = quotas_.CheckChannelRoom(caller, req, *backend); !s.ok()) return s;
    backend->last_activity = Clock::now();
    channel = NewChannel(req, backend);
    channel->owner = caller.identity;
    channel->node_type = node_type;
    channel->num_seeds = static_cast<int64_t>(seeds->size());
    if (req.has_global_batches()) {
      channel->batch_stride = req.global_batches().stride();
      channel->batch_offset = req.global_batches().offset();
    }
    auto sampling = std::make_shared<ChannelSampling>();
    sampling->input = *std::move(seeds);
    sampling->input_times = *std::move(seed_times);
    sampling->send_input_ids = !req.has_ablp();
    sampling->pool = channel->pool;
    sampling->ablp = std::move(labeler);
    sampling->features = *features;
    channel->sampling = sampling;
    channel->feature_encoding = req.feature_encoding();
    channel->feature_cache_rows = req.feature_cache_rows();
    scheduler::ChannelOptions co = SchedulerOptionsOf(req, *channel, backend->config, std::move(sampling));
    if (auto s = backend->scheduler->AddChannel(channel->id, std::move(co)); !s.ok()) return s;
    registry_.AddChannel(channel);
    if (channel->pool != nullptr) shared_account_.AddChannel();
  }
  DescribeRegistration(*channel, req.feature_cache_rows(), resp);
  Logger("core")->info("channel {} registered on backend {} by '{}': {} seeds", channel->id, channel->backend->id,
                       channel->worker_key, channel->num_seeds);
  return absl::OkStatus();
}

void Core::DescribeRegistration(const ChannelEntry& channel, int64_t cache_rows,
                                v1::RegisterSamplingInputResponse* resp) const {
  resp->set_channel_id(channel.id);
  resp->set_num_seeds(channel.num_seeds);
  resp->set_num_batches_per_epoch(*channel.backend->scheduler->NumBatches(channel.id));
  resp->set_num_epoch_batches(channel.batch_stride == 1 ? resp->num_batches_per_epoch()
                                                        : EpochBatches(channel.num_seeds, channel.backend->config));
  resp->set_lease_ms(channel.lease_ms);
  if (channel.sampling->features != nullptr) feature_outputs_.Describe(*channel.sampling->features, cache_rows, resp);
}

absl::StatusOr<std::shared_ptr<ChannelEntry>> Core::LiveChannel(uint64_t id) const {
  Registry::Found found;
  std::shared_ptr<ChannelEntry> c = registry_.FindChannel(id, &found);
  if (c == nullptr) return Registry::NotLive(id, found);
  return c;
}

absl::Status Core::StartEpoch(const v1::StartEpochRequest& req, v1::StartEpochResponse* resp, const Caller& caller) {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  if (req.epoch() < 0) return absl::InvalidArgumentError(absl::StrCat("epoch must be >= 0, got ", req.epoch()));
  if (req.start_batch() < 0) return absl::InvalidArgumentError(absl::StrCat("start_batch must be >= 0, got ", req.start_batch()));
  if (auto s = SamplingOpen(); !s.ok()) return s;
  std::shared_ptr<scheduler::Backend> backend;
  int64_t start = 0;  // the channel's own number of the first batch
  {
    std::lock_guard<std::mutex> lock(mu_);
    Registry::Found found;
    std::shared_ptr<ChannelEntry> c = registry_.FindChannelFor(req.channel_id(), caller, false, &found);
    if (found == Registry::Found::kDestroyed) {
      resp->set_outcome(v1::StartEpochResponse::DESTROYED);
      return absl::OkStatus();
    }
    if (c == nullptr) return Registry::NotLive(req.channel_id(), found);
    c->last_activity = Clock::now();
    backend = c->backend->scheduler;
    start = c->ChannelBatch(req.start_batch());
  }
  auto outcome = backend->StartEpoch(req.channel_id(), req.epoch(), start);
  if (!outcome.ok()) {
    // Destroyed between the lookup and the call.
    if (absl::IsNotFound(outcome.status())) {
      resp->set_outcome(v1::StartEpochResponse::DESTROYED);
      return absl::OkStatus();
    }
    return outcome.status();
  }
  switch (*outcome) {
    case scheduler::StartOutcome::kStarted: resp->set_outcome(v1::StartEpochResponse::STARTED); break;
    case scheduler::StartOutcome::kAlreadyStarted: resp->set_outcome(v1::StartEpochResponse::ALREADY_STARTED); break;
    case scheduler::StartOutcome::kStale: resp->set_outcome(v1::StartEpochResponse::STALE); break;
  }
  auto n = backend->NumBatches(req.channel_id());
  resp->set_num_batches(n.ok() ? *n : 0);
  if (*outcome == scheduler::StartOutcome::kStarted) {
    Logger("core")->info("channel {} epoch {} started: {} batches", req.channel_id(), req.epoch(), resp->num_batches());
  }
  return absl::OkStatus();
}

absl::Status Core::RenewLease(const v1::RenewLeaseRequest& req, v1::RenewLeaseResponse* resp, const Caller& caller) {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  std::lock_guard<std::mutex> lock(mu_);
  Registry::Found found;
  std::shared_ptr<ChannelEntry> c = registry_.FindChannelFor(req.channel_id(), caller, false, &found);
  if (c == nullptr) return Registry::NotLive(req.channel_id(), found);
  c->last_activity = Clock::now();
  resp->set_lease_ms(c->lease_ms);
  return absl::OkStatus();
}

absl::Status Core::DestroySamplingInput(const v1::DestroySamplingInputRequest& req,
                                        v1::DestroySamplingInputResponse* resp, const Caller& caller) {
  if (req.channel_id() == 0) return absl::InvalidArgumentError("channel_id is required");
  std::unique_lock<std::mutex> lock(mu_);
  Registry::Found found;
  registry_.FindChannelFor(req.channel_id(), caller, false, &found);
  if (found == Registry::Found::kDestroyed) {
    resp->set_destroyed(false);
    return absl::OkStatus();
  }
  if (found == Registry::Found::kUnknown) return Registry::NotLive(req.channel_id(), found);
  resp->set_backend_stopped(DestroyLocked(lock, req.channel_id()));
  resp->set_destroyed(true);
  Logger("core")->info("channel {} destroyed", req.channel_id());
  return absl::OkStatus();
}

}  // namespace graphstore
