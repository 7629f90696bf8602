#include "client/loader_core.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/loader_server.h"
#include "client/feature_rows.h"

namespace graphstore::client {

namespace {

template <typename T>
T Check(absl::StatusOr<T> v) {
  if (!v.ok()) throw Error(v.status());
  return *std::move(v);
}

std::string CacheListing(const v1::RegisterSamplingInputResponse& r) {
  std::string out;
  for (const v1::FeatureCache& c : r.feature_cache()) out += c.SerializeAsString();
  return out;
}

}  // namespace

LoaderCore::LoaderCore(LoaderOptions options, ClientFactory connect)
    : options_(std::move(options)), pool_(BufferPool::Create(size_t{2} << 30, options_.host_memory_hook)) {
  if (auto s = ValidateLoaderOptions(options_); !s.ok()) throw Error(s);
  connections_ = options_.connections_per_server > 0 ? options_.connections_per_server : DefaultConnectionsPerServer();
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
    auto s = std::make_unique<Server>();
    s->client = Check(connect(co));
    for (int k = 1; k < connections_; ++k) {
      co.connection = k;
      s->extra_clients.push_back(Check(connect(co)));
    }
    servers_.push_back(std::move(s));
  }
  meta_ = Check(servers_[0]->client->GetDatasetMeta());
  // Shared memory carries features as stored.
  const bool shm = options_.shared_memory && options_.feature_encoding == v1::FEATURE_ENCODING_UNSPECIFIED &&
                   options_.feature_cache_rows == 0;
  for (size_t i = 0; i < servers_.size() && shm; ++i) {
    servers_[i]->shared_memory_allowed = true;
    const v1::DatasetMeta meta = i == 0 ? meta_ : Check(servers_[i]->client->GetDatasetMeta());
    servers_[i]->shared_memory = SharesHostWith(meta);
    if (servers_[i]->shared_memory) {
      servers_[i]->mappings = std::make_unique<SharedMappings>(meta.shared_memory().dir(), 64, options_.host_memory_hook);
    }
  }
  if (meta_.num_partitions() != static_cast<int>(servers_.size())) {
    throw Error(absl::InvalidArgumentError(absl::StrCat("the dataset has ", meta_.num_partitions(),
                                                        " partitions but ", servers_.size(), " servers were given")));
  }
  {
    // A seed given twice would be two seeds and one node: refused before any server is asked.
    std::unordered_map<int64_t, size_t> first;
    first.reserve(options_.seeds.size());
    for (size_t i = 0; i < options_.seeds.size(); ++i) {
      const auto [it, inserted] = first.emplace(options_.seeds[i], i);
      if (!inserted) {
        throw Error(absl::InvalidArgumentError(absl::StrCat("LoaderOptions.seeds[", i, "]=", options_.seeds[i],
                                                            " repeats seeds[", it->second,
                                                            "]; each seed may appear once")));
      }
    }
  }
  global_ = options_.global_batches && !options_.ablp.has_value();
  // Across servers there is an order only among global batches; each server's own stream is
  // ordered by the server either way.
  ordered_ = options_.ordered && global_;
  world_size_ = std::max(1, options_.world_size);
  seed_type_ = options_.ablp.has_value() ? std::string() : options_.node_type;
  owner_rows_.owner = [this](int k) {
    return k >= 0 && k < static_cast<int>(servers_.size()) ? servers_[static_cast<size_t>(k)]->client.get() : nullptr;
  };
  owner_rows_.encoding = options_.feature_encoding;
  owner_rows_.decode_features = options_.decode_features;
  owner_rows_.cache = options_.feature_cache_rows > 0 ? &cache_ : nullptr;
  try {
    Register();
  } catch (...) {
    Close();
    throw;
  }
  if (options_.renew_leases) keeper_ = std::thread([this] { KeepLeases(); });
}

void LoaderCore::SetInput(Server* s, size_t index, const std::vector<int64_t>& seeds,
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
    if (!global_) {
      reg.mutable_split()->mutable_slice()->set_rank(options_.rank);
      reg.mutable_split()->mutable_slice()->set_world_size(options_.world_size);
    }
  }
  if (global_) {
    // Rank r's batches are r, r + W, r + 2W, ...; its i-th goes to server i mod N.
    const int64_t n = static_cast<int64_t>(servers_.size());
    s->stride = world_size_ * n;
    s->offset = options_.rank + world_size_ * static_cast<int64_t>(index);
    reg.mutable_global_batches()->set_stride(s->stride);
    reg.mutable_global_batches()->set_offset(s->offset);
  }
}

void LoaderCore::Register() {
  // Explicit seeds: with global batches every server gets all of them, in order; otherwise the
  // server that owns each of them.
  std::vector<std::vector<int64_t>> seeds_of(servers_.size()), times_of(servers_.size());
  if (!options_.seeds.empty() && !global_) {
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
    Server& s = *servers_[i];
    v1::InitSamplingBackendRequest& init = s.init;
    init.set_backend_key(backend_key);
    *init.mutable_config() = options_.config;
    *init.mutable_options() = options_.sampler_options;
    v1::RegisterSamplingInputRequest& reg = s.registration;
    reg.set_worker_key(options_.worker_key);
    SetInput(&s, i, global_ ? options_.seeds : seeds_of[i], global_ ? options_.seed_times : times_of[i]);
    reg.set_seed(options_.seed);
    reg.set_ordered(options_.ordered);
    reg.mutable_buffer()->set_max_messages(options_.buffer_messages);
    reg.mutable_buffer()->set_max_bytes(options_.buffer_bytes);
    reg.set_lease_ms(options_.lease_ms);
    reg.set_feature_encoding(options_.feature_encoding);
    reg.set_feature_cache_rows(options_.feature_cache_rows);
    auto r = Check(RegisterOn(&s, /*again=*/false));
    num_seeds_ += r.num_seeds();
    num_batches_ += r.num_batches_per_epoch();
    input_seeds = r.num_seeds();
    epoch_batches = r.num_epoch_batches();
    registered.push_back(std::move(r));
  }
  if (global_) {
    // Every server holds the whole input: this trainer's seeds are those of its batches.
    const int64_t bs = std::max<int64_t>(1, options_.config.batch_size());
    num_seeds_ = 0;
    for (int64_t b = options_.rank; b < epoch_batches; b += world_size_) {
      num_seeds_ += std::min(bs, input_seeds - b * bs);
    }
  }
  if (options_.feature_cache_rows > 0) FillFeatureCache(registered);
}

int64_t LoaderCore::Position(int64_t batch_index) const {
  return global_ ? (batch_index - options_.rank) / world_size_ : batch_index;
}

absl::StatusOr<v1::RegisterSamplingInputResponse> LoaderCore::RegisterOn(Server* s, bool again) {
  if (again && s->shared_memory_allowed && s->stripes.size() <= 1) {
    // A restarted server may offer shared memory elsewhere, or not at all (an epoch read over
    // several connections goes on over them).
    auto meta = s->client->GetDatasetMeta();
    if (!meta.ok()) return meta.status();
    s->shared_memory = SharesHostWith(*meta);
    s->mappings = s->shared_memory
                      ? std::make_unique<SharedMappings>(meta->shared_memory().dir(), 64, options_.host_memory_hook)
                      : nullptr;
    s->freed = std::make_shared<FreedUses>();  // uses of the lost channel mean nothing here
  }
  auto backend = s->client->InitSamplingBackend(s->init);
  if (!backend.ok()) return backend.status();
  v1::RegisterSamplingInputRequest reg = s->registration;
  reg.set_backend_id(backend->backend_id());
  reg.set_shared_memory(s->shared_memory);
  // Through shared memory the owners' rows go into places the server keeps for them, which a
  // trainer's cache (rows left out of the matrix) does not combine with.
  reg.set_rows_from_owners(options_.rows_from_owners && servers_.size() > 1 &&
                           (!s->shared_memory || options_.feature_cache_rows == 0));
  auto r = s->client->RegisterSamplingInput(reg);
  if (!r.ok()) return r.status();
  if (!again) {
    s->num_batches = r->num_batches_per_epoch();
    s->cache_listing = CacheListing(*r);
  } else if (r->num_batches_per_epoch() != s->num_batches || CacheListing(*r) != s->cache_listing) {
    v1::DestroySamplingInputRequest destroy;
    destroy.set_channel_id(r->channel_id());
    (void)s->client->DestroySamplingInput(destroy);
    return absl::FailedPreconditionError(absl::StrCat(
        s->client->address(), " came back serving different data (", r->num_batches_per_epoch(),
        " batches per epoch, was ", s->num_batches, "; or another feature cache): the epoch cannot resume"));
  }
  s->channel = r->channel_id();
  s->lease_ms = r->lease_ms();
  return r;
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
  for (const auto& s : servers_) n += s->bytes_received.load(std::memory_order_relaxed);
  return n;
}

void LoaderCore::StopReaders() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  for (auto& s : servers_) {
    std::lock_guard<std::mutex> lock(s->stream_mu);
    for (auto& stripe : s->stripes) {
      if (stripe.stream) stripe.stream->Cancel();
      if (stripe.batches) stripe.batches->Cancel();
    }
  }
  cv_.notify_all();
  for (auto& s : servers_) {
    for (auto& stripe : s->stripes) {
      if (stripe.reader.joinable()) stripe.reader.join();
    }
    std::lock_guard<std::mutex> lock(s->stream_mu);
    s->stripes.clear();
  }
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  reorder_.clear();
  for (auto& s : servers_) s->in_queue = 0;
  open_streams_ = 0;
  stopping_ = false;
}

absl::Status LoaderCore::StartOn(Server* s, int64_t epoch, int64_t from, bool retry) {
  v1::StartEpochRequest req;
  req.set_channel_id(s->channel);
  req.set_epoch(epoch);
  req.set_start_batch(from);
  auto r = s->client->StartEpoch(req);
  if (!r.ok()) return r.status();
  if (r->outcome() == v1::StartEpochResponse::STARTED) return absl::OkStatus();
  // A retried call whose first attempt reached the server.
  if (retry && r->outcome() == v1::StartEpochResponse::ALREADY_STARTED) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("epoch ", epoch, " was not started (",
                                                    v1::StartEpochResponse::Outcome_Name(r->outcome()),
                                                    "); epochs must increase"));
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
    if (s->num_batches == 0) continue;
    absl::Status st = StartOn(s.get(), epoch, 0, /*retry=*/false);
    if (!st.ok() && Retryable(st) && options_.reconnect_deadline.count() > 0) {
      LoaderLog()->warn("{}: starting epoch {} failed ({}); reconnecting for up to {} ms", s->client->address(), epoch,
                        st.ToString(), options_.reconnect_deadline.count());
      auto backoff = kFirstBackoff;
      st = Retry(s.get(), st, SteadyClock::now() + options_.reconnect_deadline, &backoff,
                 [&] { return Resync(s.get(), epoch, 0, /*open=*/std::nullopt); });
    }
    if (!st.ok()) throw Error(absl::Status(st.code(), absl::StrCat(s->client->address(), ": ", st.message())));
  }
  epoch_ = epoch;
  open_streams_ = 0;
  next_position_ = 0;
  decode_ = DecodeOptions();
  decode_.rows_are_sources = meta_.edge_dir() != v1::EDGE_DIRECTION_IN;
  decode_.decode_features = options_.decode_features;
  decode_.cache = options_.feature_cache_rows > 0 ? &cache_ : nullptr;
  decode_.pool = pool_;
  for (size_t i = 0; i < servers_.size(); ++i) {
    Server* s = servers_[i].get();
    if (s->num_batches == 0) continue;
    s->delivered.assign(static_cast<size_t>(s->num_batches), 0);
    s->first_missing = 0;
    // A stream per connection, each a stripe of the channel's batches; shared memory has one.
    const int n = s->shared_memory ? 1 : static_cast<int>(std::min<int64_t>(connections_, s->num_batches));
    {
      std::lock_guard<std::mutex> lock(s->stream_mu);
      s->stripes = std::vector<Server::Stripe>(static_cast<size_t>(n));
    }
    for (int k = 0; k < n; ++k) {
      ++open_streams_;
      (void)OpenStream(s, 0, k);  // stopping_ is false here: it opens
      // Its reader keeps up to `prefetch` batches of the server ahead of the trainer.
      s->stripes[static_cast<size_t>(k)].reader = std::thread([this, s, i, k] { ReadStream(s, static_cast<int>(i), k); });
    }
  }
}

void LoaderCore::Close() {
  if (closed_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(keeper_mu_);
    keeper_stop_ = true;
  }
  keeper_cv_.notify_all();
  if (keeper_.joinable()) keeper_.join();
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
