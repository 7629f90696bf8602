#include "client/loader.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphstore::client {

// Ids of shared-buffer uses freed by batches' tensors (on any thread), waiting to be reported.
struct FreedUses {
  std::mutex mu;
  std::vector<uint64_t> ids;
  void Push(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    ids.push_back(id);
  }
  std::vector<uint64_t> Take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::exchange(ids, {});
  }
};

struct Loader::Server {
  std::unique_ptr<Client> client;
  uint64_t channel = 0;
  int64_t num_batches = 0;
  std::unique_ptr<MessageStream> stream;
  std::thread reader;
  bool shared_memory = false;  // messages come through shared memory
  std::unique_ptr<SharedMappings> mappings;
  // Uses of shared buffers whose batches are gone, to hand back with the next release.
  std::shared_ptr<FreedUses> freed = std::make_shared<FreedUses>();
  int in_queue = 0;  // messages of this server waiting in queue_ (guarded by Loader::mu_)

  // Reports the use `received` (0: none) and every use freed since the last report.
  absl::Status Release(uint64_t received) {
    v1::ReleaseSharedBuffersRequest release;
    release.set_channel_id(channel);
    if (received != 0) release.add_received_ids(received);
    for (uint64_t id : freed->Take()) release.add_freed_ids(id);
    if (release.received_ids().empty() && release.freed_ids().empty()) return absl::OkStatus();
    return client->ReleaseSharedBuffers(release).status();
  }

  // Maps a message's shared buffer (usually a file mapped before) and reports it received at
  // once, so that the stream never waits for the trainer.
  absl::StatusOr<std::shared_ptr<const MappedBuffer>> Receive(const v1::SampledMessage& m) {
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
};

namespace {

template <typename T>
T Check(absl::StatusOr<T> v) {
  if (!v.ok()) throw Error(v.status());
  return *std::move(v);
}

c10::ScalarType TorchType(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT64: return torch::kInt64;
    case v1::DTYPE_INT32: return torch::kInt32;
    case v1::DTYPE_FLOAT32: return torch::kFloat32;
    case v1::DTYPE_FLOAT16: return torch::kFloat16;
    case v1::DTYPE_FLOAT64: return torch::kFloat64;
    case v1::DTYPE_UINT8: return torch::kUInt8;
    case v1::DTYPE_BOOL: return torch::kBool;
    default: break;
  }
  throw Error(absl::DataLossError(absl::StrCat("tensor has unknown dtype ", static_cast<int>(d))));
}

}  // namespace

at::Tensor ToTensor(const v1::Tensor& t, std::shared_ptr<const void> owner, const MappedBuffer* shared) {
  const c10::ScalarType type = TorchType(t.dtype());
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  auto bytes = TensorBytes(t, shared);
  if (!bytes.ok()) {
    throw Error(absl::Status(bytes.status().code(), absl::StrCat("tensor of shape [", absl::StrJoin(shape, ", "),
                                                                 "]: ", bytes.status().message())));
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return torch::empty(shape, torch::TensorOptions().dtype(type));
  // The bytes stay where protobuf or the mapping put them; the deleter keeps them alive.
  void* data = const_cast<char*>(*bytes);
  return torch::from_blob(data, shape, [owner](void*) mutable { owner.reset(); },
                          torch::TensorOptions().dtype(type));
}

Loader::Loader(LoaderOptions options) : options_(std::move(options)) {
  if (options_.servers.empty()) throw Error(absl::InvalidArgumentError("LoaderOptions.servers is empty"));
  if (options_.prefetch < 1) throw Error(absl::InvalidArgumentError("LoaderOptions.prefetch must be >= 1"));
  for (const auto& address : options_.servers) {
    ClientOptions co;
    co.address = address;
    co.deadline = options_.deadline;
    co.stream_window_bytes = options_.stream_window_bytes;
    auto s = std::make_unique<Server>();
    s->client = Check(Client::Connect(co));
    servers_.push_back(std::move(s));
  }
  meta_ = Check(servers_[0]->client->GetDatasetMeta());
  for (size_t i = 0; i < servers_.size() && options_.shared_memory; ++i) {
    const v1::DatasetMeta meta = i == 0 ? meta_ : Check(servers_[i]->client->GetDatasetMeta());
    servers_[i]->shared_memory = SharesHostWith(meta);
    if (servers_[i]->shared_memory) servers_[i]->mappings = std::make_unique<SharedMappings>(meta.shared_memory().dir());
  }
  if (meta_.num_partitions() != static_cast<int>(servers_.size())) {
    throw Error(absl::InvalidArgumentError(absl::StrCat("the dataset has ", meta_.num_partitions(),
                                                        " partitions but ", servers_.size(), " servers were given")));
  }

  // Explicit seeds go to the server that owns each of them.
  std::vector<std::vector<int64_t>> seeds_of(servers_.size());
  if (!options_.seeds.empty()) {
    v1::LookupPartitionsRequest lp;
    lp.set_node_type(options_.node_type);
    for (int64_t id : options_.seeds) lp.add_ids(id);
    auto owners = Check(servers_[0]->client->LookupPartitions(lp));
    const auto* p = reinterpret_cast<const int32_t*>(owners.partitions().data().data());
    for (size_t i = 0; i < options_.seeds.size(); ++i) seeds_of[p[i]].push_back(options_.seeds[i]);
  }

  try {
    for (size_t i = 0; i < servers_.size(); ++i) {
      Server& s = *servers_[i];
      v1::InitSamplingBackendRequest init;
      init.set_backend_key(options_.backend_key);
      *init.mutable_config() = options_.config;
      *init.mutable_options() = options_.sampler_options;
      const uint64_t backend = Check(s.client->InitSamplingBackend(init)).backend_id();
      v1::RegisterSamplingInputRequest reg;
      reg.set_backend_id(backend);
      reg.set_worker_key(options_.worker_key);
      if (options_.ablp.has_value()) {
        v1::GetAblpInputRequest* in = reg.mutable_ablp()->mutable_input();
        *in = *options_.ablp;
        in->mutable_slice()->set_rank(options_.rank);
        in->mutable_slice()->set_world_size(options_.world_size);
      } else if (!options_.seeds.empty()) {
        reg.mutable_nodes()->set_node_type(options_.node_type);
        for (int64_t id : seeds_of[i]) reg.mutable_nodes()->add_ids(id);
      } else {
        reg.mutable_split()->set_node_type(options_.node_type);
        reg.mutable_split()->set_split(options_.split);
        reg.mutable_split()->mutable_slice()->set_rank(options_.rank);
        reg.mutable_split()->mutable_slice()->set_world_size(options_.world_size);
      }
      reg.set_seed(options_.seed);
      reg.mutable_buffer()->set_max_messages(options_.buffer_messages);
      reg.mutable_buffer()->set_max_bytes(options_.buffer_bytes);
      reg.set_lease_ms(options_.lease_ms);
      reg.set_shared_memory(s.shared_memory);
      auto r = Check(s.client->RegisterSamplingInput(reg));
      s.channel = r.channel_id();
      s.num_batches = r.num_batches_per_epoch();
      num_seeds_ += r.num_seeds();
      num_batches_ += r.num_batches_per_epoch();
    }
  } catch (...) {
    Close();
    throw;
  }
}

Loader::~Loader() { Close(); }

int Loader::num_shared_memory_servers() const {
  int n = 0;
  for (const auto& s : servers_) n += s->shared_memory;
  return n;
}

void Loader::StopReaders() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  for (auto& s : servers_) {
    if (s->stream) s->stream->Cancel();
  }
  cv_.notify_all();
  for (auto& s : servers_) {
    if (s->reader.joinable()) s->reader.join();
    s->stream.reset();
  }
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  for (auto& s : servers_) s->in_queue = 0;
  open_streams_ = 0;
  stopping_ = false;
}

void Loader::StartEpoch(int64_t epoch) {
  if (closed_) throw Error(absl::FailedPreconditionError("the loader is closed"));
  StopReaders();
  for (auto& s : servers_) {
    // Batches of the last epoch that are gone free their files for this one.
    if (auto st = s->Release(0); !st.ok()) throw Error(st);
  }
  // A server without seeds for this trainer has no batches: it counts as finished at once
  // (GiGL's active mask) and is not asked for an epoch.
  for (auto& s : servers_) {
    if (s->num_batches == 0) continue;
    v1::StartEpochRequest req;
    req.set_channel_id(s->channel);
    req.set_epoch(epoch);
    auto r = Check(s->client->StartEpoch(req));
    if (r.outcome() != v1::StartEpochResponse::STARTED) {
      throw Error(absl::FailedPreconditionError(absl::StrCat(
          s->client->address(), ": epoch ", epoch, " was not started (",
          v1::StartEpochResponse::Outcome_Name(r.outcome()), "); epochs must increase")));
    }
  }
  epoch_ = epoch;
  open_streams_ = 0;
  for (size_t i = 0; i < servers_.size(); ++i) {
    Server* s = servers_[i].get();
    if (s->num_batches == 0) continue;
    ++open_streams_;
    v1::StreamSampledMessagesRequest req;
    req.set_channel_id(s->channel);
    req.set_epoch(epoch);
    s->stream = s->client->Stream(req);
    // One reader per server keeps up to `prefetch` messages ahead of the trainer.
    s->reader = std::thread([this, s, i] {
      while (true) {
        auto m = s->stream->Next();
        std::shared_ptr<const MappedBuffer> shared;
        if (m.ok() && *m != nullptr && (*m)->has_shared_buffer()) {
          auto mapped = s->Receive(**m);
          if (mapped.ok()) {
            shared = *std::move(mapped);
          } else {
            m = mapped.status();
          }
        }
        std::unique_lock<std::mutex> lock(mu_);
        if (!m.ok() || *m == nullptr) {
          queue_.push_back(Item{static_cast<int>(i), nullptr, nullptr, m.ok() ? absl::OkStatus() : m.status()});
          cv_.notify_all();
          return;
        }
        ++s->in_queue;
        queue_.push_back(Item{static_cast<int>(i), *std::move(m), std::move(shared), absl::OkStatus()});
        cv_.notify_all();
        cv_.wait(lock, [&] { return s->in_queue < options_.prefetch || stopping_; });
        if (stopping_) return;
      }
    });
  }
}

std::optional<Batch> Loader::Next() {
  if (epoch_ < 0) throw Error(absl::FailedPreconditionError("call StartEpoch before Next"));
  while (true) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (open_streams_ == 0) return std::nullopt;
      cv_.wait(lock, [&] { return !queue_.empty(); });
      item = std::move(queue_.front());
      queue_.pop_front();
      if (item.message != nullptr) --servers_[item.server]->in_queue;
    }
    cv_.notify_all();
    if (item.message != nullptr) return ToBatch(item.server, std::move(item.message), std::move(item.shared));
    if (!item.status.ok()) {
      const absl::Status s(item.status.code(),
                           absl::StrCat(servers_[item.server]->client->address(), ": ", item.status.message()));
      StopReaders();
      throw Error(s);
    }
    std::lock_guard<std::mutex> lock(mu_);
    --open_streams_;
  }
}

Batch Loader::ToBatch(int server, std::shared_ptr<const v1::SampledMessage> msg,
                      std::shared_ptr<const MappedBuffer> shared) const {
  Batch b;
  b.server = server;
  b.epoch = msg->epoch();
  b.batch_index = msg->batch_index();
  b.message = msg;
  b.shared = shared;
  // Every tensor keeps the message and the mapping alive; when the last one goes, the use of
  // the shared buffer is freed and the server may put a later batch in the file.
  struct Owner {
    std::shared_ptr<const v1::SampledMessage> msg;
    std::shared_ptr<const MappedBuffer> shared;
    std::shared_ptr<FreedUses> freed;
    ~Owner() {
      if (shared != nullptr) freed->Push(msg->shared_buffer().id());
    }
  };
  auto owner = std::make_shared<Owner>();
  owner->msg = msg;
  owner->shared = shared;
  owner->freed = servers_[server]->freed;
  const MappedBuffer* buf = shared.get();
  if (msg->nodes_size() > 0) {
    const v1::NodeTensors& n = msg->nodes(0);
    b.node = ToTensor(n.ids(), owner, buf);
    b.batch = ToTensor(n.batch(), owner, buf);
    b.num_sampled_nodes = ToTensor(n.num_sampled_nodes(), owner, buf);
    if (n.has_features()) b.x = ToTensor(n.features(), owner, buf);
    if (n.has_labels()) b.y = ToTensor(n.labels(), owner, buf);
  }
  if (msg->edges_size() > 0) {
    const v1::EdgeTensors& e = msg->edges(0);
    b.rows = ToTensor(e.rows(), owner, buf);
    b.cols = ToTensor(e.cols(), owner, buf);
    b.num_sampled_edges = ToTensor(e.num_sampled_edges(), owner, buf);
    if (e.has_eids()) b.eids = ToTensor(e.eids(), owner, buf);
  }
  for (const v1::NodeTensors& n : msg->nodes()) {
    NodeView& v = b.nodes[n.node_type()];
    v.node = ToTensor(n.ids(), owner, buf);
    v.batch = ToTensor(n.batch(), owner, buf);
    v.num_sampled_nodes = ToTensor(n.num_sampled_nodes(), owner, buf);
    if (n.has_features()) v.x = ToTensor(n.features(), owner, buf);
    if (n.has_labels()) v.y = ToTensor(n.labels(), owner, buf);
  }
  const bool out_edges = meta_.edge_dir() != v1::EDGE_DIRECTION_IN;
  for (const v1::EdgeTensors& e : msg->edges()) {
    EdgeView& v = b.edges[out_edges ? ReverseEdgeTypeName(e.edge_type()) : e.edge_type()];
    v.stored_type = e.edge_type();
    at::Tensor rows = ToTensor(e.rows(), owner, buf);
    at::Tensor cols = ToTensor(e.cols(), owner, buf);
    v.edge_index = out_edges ? torch::stack({cols, rows}) : torch::stack({rows, cols});
    v.num_sampled_edges = ToTensor(e.num_sampled_edges(), owner, buf);
    if (e.has_eids()) v.eids = ToTensor(e.eids(), owner, buf);
    if (e.has_features()) v.edge_attr = ToTensor(e.features(), owner, buf);
  }
  if (msg->has_ablp()) {
    AblpView a;
    a.anchors = ToTensor(msg->ablp().anchors(), owner, buf);
    a.positive = ToTensor(msg->ablp().positive(), owner, buf);
    a.negative = ToTensor(msg->ablp().negative(), owner, buf);
    b.ablp = a;
  }
  for (const v1::PprWeights& p : msg->ppr()) {
    PprView v;
    v.seed_type = p.seed_type();
    v.node_type = p.node_type();
    v.seed_index = ToTensor(p.seed_index(), owner, buf);
    v.node_index = ToTensor(p.node_index(), owner, buf);
    v.weight = ToTensor(p.weight(), owner, buf);
    b.ppr.push_back(std::move(v));
  }
  return b;
}


void Loader::Close() {
  if (closed_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  StopReaders();
  for (auto& s : servers_) {
    if (s->channel == 0) continue;
    v1::DestroySamplingInputRequest req;
    req.set_channel_id(s->channel);
    (void)s->client->DestroySamplingInput(req);
    s->channel = 0;
    s->mappings.reset();  // the server deleted the channel's files
  }
}

void Loader::ShutdownServers() {
  Close();
  for (auto& s : servers_) (void)s->client->Exit();
}

}  // namespace graphstore::client
