#include "client/loader_core.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/feature_cache_fill.h"
#include "client/loader_log.h"

namespace graphstore::client {

namespace {

template <typename T>
T Check(absl::StatusOr<T> v) {
  if (!v.ok()) throw Error(v.status());
  return *std::move(v);
}

void Check(const absl::Status& s) {
  if (!s.ok()) throw Error(s);
}

// A seed given twice would be two seeds and one node: refused before any server is asked.
void CheckDistinctSeeds(const std::vector<int64_t>& seeds) {
  std::unordered_map<int64_t, size_t> first;
  first.reserve(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    const auto [it, inserted] = first.emplace(seeds[i], i);
    if (!inserted) {
      throw Error(absl::InvalidArgumentError(absl::StrCat("LoaderOptions.seeds[", i, "]=", seeds[i], " repeats seeds[",
                                                          it->second, "]; each seed may appear once")));
    }
  }
}

}  // namespace

LoaderCore::Plan LoaderCore::Resolve(const LoaderOptions& o) {
  Plan p;
  p.connections = o.connections_per_server > 0 ? o.connections_per_server : DefaultConnectionsPerServer();
  // Shared memory carries features as stored, and keeps whole batches (a trainer's cache
  // leaves rows out of them).
  p.shared_memory = o.shared_memory && o.feature_encoding == v1::FEATURE_ENCODING_UNSPECIFIED &&
                    o.feature_cache_rows == 0;
  p.global = o.global_batches && !o.ablp.has_value();
  // Across servers there is an order only among global batches; each server's own stream is
  // ordered by the server either way.
  p.ordered = o.ordered && p.global;
  p.world_size = std::max(1, o.world_size);
  // Through shared memory the owners' rows go into places the server keeps for them, which a
  // trainer's cache does not combine with: shared memory is off with a cache (above).
  p.rows_from_owners = o.rows_from_owners && o.servers.size() > 1;
  return p;
}

LoaderCore::LoaderCore(LoaderOptions options, ClientFactory connect)
    : options_((Check(ValidateLoaderOptions(options)), std::move(options))),
      plan_(Resolve(options_)),
      pool_(BufferPool::Create(size_t{2} << 30, options_.host_memory_hook)) {
  DeliveryOptions delivery;
  delivery.ordered = plan_.ordered;
  delivery.prefetch = options_.prefetch;
  delivery.global = plan_.global;
  delivery.rank = options_.rank;
  delivery.world_size = plan_.world_size;
  delivery_ = std::make_unique<Delivery>(delivery);
  RecoveryOptions recovery;
  recovery.reconnect_deadline = options_.reconnect_deadline;
  recovery.backoff_max = options_.reconnect_backoff_max;
  recovery.rows_from_owners = plan_.rows_from_owners;
  recovery_ = std::make_unique<Recovery>(recovery, delivery_.get());
  for (const auto& address : options_.servers) {
    ClientOptions co;
    co.address = address;
    co.deadline = options_.deadline;
    co.stream_window_bytes = options_.stream_window_bytes;
    co.security = options_.security;
    co.connect_timeout = options_.connect_timeout;
    co.reconnect_backoff_max = options_.reconnect_backoff_max;
    co.keepalive_time = options_.keepalive_time;
    co.keepalive_timeout = options_.keepalive_timeout;
    auto s = std::make_unique<ServerLink>();
    s->client = Check(connect(co));
    for (int k = 1; k < plan_.connections; ++k) {
      co.connection = k;
      s->extra_clients.push_back(Check(connect(co)));
    }
    s->host_memory_hook = options_.host_memory_hook;
    servers_.push_back(std::move(s));
    progress_.push_back(std::make_unique<ChannelProgress>());
  }
  meta_ = Check(servers_[0]->client->GetDatasetMeta());
  for (size_t i = 0; i < servers_.size() && plan_.shared_memory; ++i) {
    ServerLink& s = *servers_[i];
    s.shared_memory_allowed = true;
    const v1::DatasetMeta meta = i == 0 ? meta_ : Check(s.client->GetDatasetMeta());
    s.shared_memory = SharesHostWith(meta);
    if (s.shared_memory) s.mappings = std::make_unique<SharedMappings>(meta.shared_memory().dir(), 64, options_.host_memory_hook);
  }
  if (meta_.num_partitions() != static_cast<int>(servers_.size())) {
    throw Error(absl::InvalidArgumentError(absl::StrCat("the dataset has ", meta_.num_partitions(),
                                                        " partitions but ", servers_.size(), " servers were given")));
  }
  CheckDistinctSeeds(options_.seeds);
  OpenRawIds();
  decode_.rows_are_sources = meta_.edge_dir() != v1::EDGE_DIRECTION_IN;
  decode_.decode_features = options_.decode_features;
  decode_.cache = options_.feature_cache_rows > 0 ? &cache_ : nullptr;
  decode_.pool = pool_;
  owner_rows_.owner = [this](int k) {
    return k >= 0 && k < static_cast<int>(servers_.size()) ? servers_[static_cast<size_t>(k)]->client.get() : nullptr;
  };
  owner_rows_.encoding = options_.feature_encoding;
  owner_rows_.decode_features = options_.decode_features;
  owner_rows_.cache = options_.feature_cache_rows > 0 ? &cache_ : nullptr;
  owner_rows_.received = [this](int k, int64_t bytes) {
    servers_.at(static_cast<size_t>(k))->owner_bytes_received.fetch_add(bytes, std::memory_order_relaxed);
  };
  try {
    Register();
  } catch (...) {
    Close();
    throw;
  }
  if (options_.renew_leases) keeper_ = std::make_unique<LeaseKeeper>(Links());
}

void LoaderCore::OpenRawIds() {
  if (options_.raw_ids.empty()) {
    for (const auto& t : meta_.node_types()) {
      if (!t.has_raw_ids()) continue;
      LoaderLog()->warn(
          "node type '{}' was written from ids of its own (book/{}.raw_ids.npy): this loader's seeds and n_id are "
          "the dataset's global ids; LoaderOptions.raw_ids (Python: raw_ids=) naming the dataset's directory makes them the input's",
          t.name(), t.name());
    }
    return;
  }
  raw_ids_ = std::make_unique<RawIds>(Check(RawIds::Open(options_.raw_ids, meta_)));
  const std::string type =
      options_.node_type.empty() && meta_.node_types_size() == 1 ? meta_.node_types(0).name() : options_.node_type;
  Check(raw_ids_->ToDense(type, "LoaderOptions.seeds", &options_.seeds));
}

std::vector<ServerLink*> LoaderCore::Links() const {
  std::vector<ServerLink*> links;
  for (const auto& s : servers_) links.push_back(s.get());
  return links;
}

void LoaderCore::SetInput(ServerLink* s, size_t index, const std::vector<int64_t>& seeds,
                          const std::vector<int64_t>& times) {
  v1::RegisterSamplingInputRequest& reg = s->registration;
  if (options_.ablp.has_value()) {
    v1::GetAblpInputRequest* in = reg.mutable_ablp()->mutable_input();
    *in = *options_.ablp;
    in->mutable_slice()->set_rank(options_.rank);
    in->mutable_slice()->set_world_size(options_.world_size);
    return;
  }
  if (!options_.seeds.empty()) {
    reg.mutable_nodes()->set_node_type(options_.node_type);
    reg.mutable_nodes()->mutable_ids()->Add(seeds.begin(), seeds.end());
    reg.mutable_nodes()->mutable_times()->Add(times.begin(), times.end());
  } else {
    reg.mutable_split()->set_node_type(options_.node_type);
    reg.mutable_split()->set_split(options_.split);
    if (!plan_.global) {
      reg.mutable_split()->mutable_slice()->set_rank(options_.rank);
      reg.mutable_split()->mutable_slice()->set_world_size(options_.world_size);
    }
  }
  if (plan_.global) {
    // Rank r's batches are r, r + W, r + 2W, ...; its i-th goes to server (i + r) mod N. Where W
    // does not divide the epoch's batches, the ranks with one more batch than the others so end
    // their epochs on different servers, not all on server 0 (at W = 16 over 8 servers, 391
    // batches gave server 0 55 an epoch and the others 48).
    const int64_t n = static_cast<int64_t>(servers_.size());
    const int64_t first = ((static_cast<int64_t>(index) - options_.rank) % n + n) % n;  // i of its first
    s->stride = plan_.world_size * n;
    s->offset = options_.rank + plan_.world_size * first;
    reg.mutable_global_batches()->set_stride(s->stride);
    reg.mutable_global_batches()->set_offset(s->offset);
  }
}

void LoaderCore::Register() {
  // Explicit seeds: with global batches every server gets all of them, in order; otherwise the
  // server that owns each of them.
  std::vector<std::vector<int64_t>> seeds_of(servers_.size()), times_of(servers_.size());
  if (!options_.seeds.empty() && !plan_.global) {
    v1::LookupPartitionsRequest lp;
    lp.set_node_type(options_.node_type);
    for (int64_t id : options_.seeds) lp.add_ids(id);
    auto owners = Check(servers_[0]->client->LookupPartitions(lp));
    const auto* p = reinterpret_cast<const int32_t*>(owners.partitions().data().data());
    for (size_t i = 0; i < options_.seeds.size(); ++i) {
      seeds_of[p[i]].push_back(options_.seeds[i]);
      servers_[p[i]]->input_index.push_back(static_cast<int64_t>(i));
      if (!options_.seed_times.empty()) times_of[p[i]].push_back(options_.seed_times[i]);
    }
  }
  std::vector<v1::RegisterSamplingInputResponse> registered;
  int64_t input_seeds = 0, epoch_batches = 0;
  const std::string backend_key = !options_.backend_key.empty()
                                      ? options_.backend_key
                                      : DefaultBackendKey(options_.config, options_.sampler_options);
  for (size_t i = 0; i < servers_.size(); ++i) {
    ServerLink& s = *servers_[i];
    s.init.set_backend_key(backend_key);
    *s.init.mutable_config() = options_.config;
    *s.init.mutable_options() = options_.sampler_options;
    v1::RegisterSamplingInputRequest& reg = s.registration;
    reg.set_worker_key(options_.worker_key);
    SetInput(&s, i, plan_.global ? options_.seeds : seeds_of[i], plan_.global ? options_.seed_times : times_of[i]);
    reg.set_seed(options_.seed);
    reg.set_ordered(options_.ordered);
    reg.mutable_buffer()->set_max_messages(options_.buffer_messages);
    reg.mutable_buffer()->set_max_bytes(options_.buffer_bytes);
    reg.set_lease_ms(options_.lease_ms);
    reg.set_feature_encoding(options_.feature_encoding);
    reg.set_feature_cache_rows(options_.feature_cache_rows);
    auto r = Check(s.Register(plan_.rows_from_owners, /*again=*/false));
    num_seeds_ += r.num_seeds();
    num_batches_ += r.num_batches_per_epoch();
    input_seeds = r.num_seeds();
    epoch_batches = r.num_epoch_batches();
    registered.push_back(std::move(r));
  }
  if (plan_.global) {
    // Every server holds the whole input: this trainer's seeds are those of its batches.
    const int64_t bs = std::max<int64_t>(1, options_.config.batch_size());
    num_seeds_ = 0;
    for (int64_t b = options_.rank; b < epoch_batches; b += plan_.world_size) {
      num_seeds_ += std::min(bs, input_seeds - b * bs);
    }
  }
  if (options_.feature_cache_rows > 0) {
    Check(FillFeatureCache(meta_, Links(), registered, options_.feature_encoding, options_.decode_features, &cache_));
  }
}

LoaderCore::~LoaderCore() { Close(); }

int LoaderCore::num_shared_memory_servers() const {
  int n = 0;
  for (const auto& s : servers_) n += s->shared_memory;
  return n;
}

int64_t LoaderCore::num_cached_rows() const {
  int64_t n = 0;
  for (const auto& [name, type] : cache_.types) {
    n += static_cast<int64_t>(std::count_if(type.slot_of.begin(), type.slot_of.end(), [](int32_t s) { return s >= 0; }));
  }
  return n;
}

uint64_t LoaderCore::channel_id(int server) const { return servers_.at(static_cast<size_t>(server))->channel; }

int64_t LoaderCore::bytes_received() const {
  int64_t n = 0;
  for (const auto& [stream, answers] : bytes_received_by_server()) n += stream + answers;
  return n;
}

std::vector<std::pair<int64_t, int64_t>> LoaderCore::bytes_received_by_server() const {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& s : servers_) {
    out.emplace_back(s->bytes_received.load(std::memory_order_relaxed),
                     s->owner_bytes_received.load(std::memory_order_relaxed));
  }
  return out;
}

void LoaderCore::StopReaders() {
  // Told to stop before their streams are cancelled: a stream a reader opens after that is
  // refused, so none is left open.
  delivery_->Stop();
  for (auto& r : readers_) r->Cancel();
  for (auto& r : readers_) r->Join();
  readers_.clear();
  delivery_->Clear();
}

void LoaderCore::StartOn(ServerLink* s, int64_t epoch) {
  absl::Status st = s->Start(epoch, 0, /*retry=*/false);
  if (!st.ok() && Retryable(st) && options_.reconnect_deadline.count() > 0) {
    LoaderLog()->warn("{}: starting epoch {} failed ({}); reconnecting for up to {} ms", s->client->address(), epoch,
                      st.ToString(), options_.reconnect_deadline.count());
    st = recovery_->RetryFor(st, [&] { return recovery_->Resync(s, epoch, 0, /*reading=*/false); });
  }
  if (!st.ok()) throw Error(absl::Status(st.code(), absl::StrCat(s->client->address(), ": ", st.message())));
}

void LoaderCore::StartEpoch(int64_t epoch) {
  if (closed_) throw Error(absl::FailedPreconditionError("the loader is closed"));
  StopReaders();
  for (auto& s : servers_) {
    // Batches of the last epoch that are gone free their files for this one (a server that is
    // down lost them anyway).
    if (auto st = s->Release(0); !st.ok() && !Retryable(st)) throw Error(st);
  }
  // A server without seeds for this trainer has no batches: it counts as finished at once
  // (GiGL's active mask) and is not asked for an epoch.
  for (auto& s : servers_) {
    if (s->num_batches > 0) StartOn(s.get(), epoch);
  }
  epoch_ = epoch;
  int streams = 0;
  for (auto& s : servers_) {
    // A stream per connection, each a stripe of the channel's batches; shared memory has one.
    s->streams = s->num_batches == 0 ? 0
                 : s->shared_memory  ? 1
                                     : static_cast<int>(std::min<int64_t>(plan_.connections, s->num_batches));
    streams += s->streams;
  }
  delivery_->Begin(static_cast<int>(servers_.size()), streams);
  for (size_t i = 0; i < servers_.size(); ++i) {
    ServerLink* s = servers_[i].get();
    if (s->streams == 0) continue;
    progress_[i]->Begin(s->num_batches, s->streams);
    for (int k = 0; k < s->streams; ++k) {
      StripeContext c;
      c.link = s;
      c.server = static_cast<int>(i);
      c.stripe = k;
      c.epoch = epoch;
      c.decode = decode_;
      c.decode.sender = static_cast<int>(i);
      c.owner_rows = &owner_rows_;
      c.assembly.server = static_cast<int>(i);
      c.assembly.out_edges = decode_.rows_are_sources;
      c.assembly.pool = pool_.get();
      c.assembly.input_ids_are_positions = plan_.global || !s->input_index.empty();
      c.assembly.input_index = &s->input_index;
      c.progress = progress_[i].get();
      c.delivery = delivery_.get();
      c.recovery = recovery_.get();
      c.deadline = options_.deadline;
      // Its reader keeps up to `prefetch` batches of the server ahead of the trainer.
      readers_.push_back(std::make_unique<StripeReader>(std::move(c)));
      readers_.back()->Start(0);
    }
  }
}

std::optional<HostBatch> LoaderCore::Next() {
  std::optional<HostBatch> b;
  while (!NextFor(std::chrono::hours(1), &b)) {
  }
  return b;
}

bool LoaderCore::NextFor(std::chrono::milliseconds timeout, std::optional<HostBatch>* out) {
  if (epoch_ < 0) throw Error(absl::FailedPreconditionError("call StartEpoch before Next"));
  std::optional<Delivered> d = delivery_->Take(timeout);
  if (!d.has_value()) return false;
  if (d->batch.has_value()) {
    *out = std::move(d->batch);
    if (raw_ids_ != nullptr) raw_ids_->ToRaw(pool_.get(), &**out);
    return true;
  }
  if (d->status.ok()) {
    out->reset();
    return true;
  }
  const absl::Status s = d->server < 0 ? d->status
                                       : absl::Status(d->status.code(),
                                                      absl::StrCat(servers_[d->server]->client->address(), ": ",
                                                                   d->status.message()));
  StopReaders();
  throw Error(s);
}

void LoaderCore::Close() {
  if (closed_) return;
  closed_ = true;
  keeper_.reset();
  StopReaders();
  for (auto& s : servers_) {
    if (s->channel.load() == 0) continue;
    v1::DestroySamplingInputRequest req;
    req.set_channel_id(s->channel);
    (void)s->client->DestroySamplingInput(req);
    s->channel = 0;
    s->mappings.reset();  // the server deleted the channel's files
  }
}

void LoaderCore::ShutdownServers() {
  Close();
  for (auto& s : servers_) (void)s->client->Exit();
}

}  // namespace graphstore::client
