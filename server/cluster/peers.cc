#include "server/cluster/peers.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/channel.h"
#include "server/sampling/hop_codec.h"
#include "server/util/log.h"

namespace graphstore {

using Clock = std::chrono::steady_clock;

struct Peers::Peer {
  int partition = 0;
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::GraphStore::Stub> stub;
  std::unique_ptr<grpc::health::v1::Health::Stub> health;
  std::atomic<bool> answering{false};
  Counters counters;
};

namespace {

// A peer's failure as the sampling stream reports it: UNAVAILABLE when the peer is down,
// unreachable or late (the trainer may retry once it is back), the peer's own code otherwise.
absl::Status PeerError(const std::string& name, const char* method, const grpc::Status& s, int64_t timeout_ms) {
  switch (s.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::UnavailableError(
          absl::StrCat(name, " did not answer ", method, " within ", timeout_ms, " ms"));
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::ABORTED:
      return absl::UnavailableError(absl::StrCat(name, " is unavailable (", method, ": ", s.error_message(), ")"));
    default:
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                          absl::StrCat(name, " refused ", method, ": ", s.error_message()));
  }
}

// The bytes of an int64 tensor, checked against its declared shape.
// An id tensor of an answer: int64, or int32 (SampleNeighborsRequest.compact) or uint8
// (narrow_counts) widened.
bool ReadInt64s(const v1::Tensor& t, std::vector<int64_t>* out) {
  if (t.dtype() == v1::DTYPE_UINT8) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(t.data().data());
    out->assign(bytes, bytes + t.data().size());
    return true;
  }
  if (t.dtype() == v1::DTYPE_INT32 && t.data().size() % 4 == 0) {
    out->resize(t.data().size() / 4);
    const char* p = t.data().data();
    for (size_t i = 0; i < out->size(); ++i) {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      (*out)[i] = v;
    }
    return true;
  }
  if (t.dtype() != v1::DTYPE_INT64 || t.data().size() % 8 != 0) return false;
  out->resize(t.data().size() / 8);
  if (!out->empty()) std::memcpy(out->data(), t.data().data(), t.data().size());
  return true;
}

// One call to one peer: its context, messages and how to read the answer.
struct Slot {
  virtual ~Slot() = default;
  Peers::Counters* counters = nullptr;
  std::string name;
  const char* method = "";
  grpc::ClientContext ctx;
  grpc::Status status;
  // Starts the call; `done` runs when it ends.
  std::function<void(std::function<void(grpc::Status)> done)> issue;
  // Reads the response into the caller's call; false when it is malformed.
  virtual bool Finish() = 0;
  virtual size_t ResponseBytes() const = 0;
};

template <typename Request, typename Response, typename Call>
struct TypedSlot : Slot {
  using CallType = Call;
  Request request;
  Response response;
  Call* call = nullptr;
  std::function<bool(Response*, Call*)> read;
  bool Finish() override { return read(&response, call); }
  size_t ResponseBytes() const override { return response.ByteSizeLong(); }
};

// Calls issued together; Wait joins them.
class PendingCalls : public PeerSampling::Pending {
 public:
  explicit PendingCalls(int64_t timeout_ms) : timeout_ms_(timeout_ms) {}
  ~PendingCalls() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (remaining_ > 0) {
      for (auto& s : slots_) s->ctx.TryCancel();
    }
    cv_.wait(lock, [&] { return remaining_ == 0; });
  }

  // Adds a slot (its request and `issue` set) before Start.
  void Add(std::unique_ptr<Slot> slot) {
    slot->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    slots_.push_back(std::move(slot));
  }

  // Starts every slot.
  void Start() {
    remaining_ = static_cast<int>(slots_.size());
    for (auto& s : slots_) {
      Slot* slot = s.get();
      slot->counters->calls.fetch_add(1, std::memory_order_relaxed);
      const auto start = std::chrono::steady_clock::now();
      slot->issue([this, slot, start](grpc::Status st) {
        slot->counters->latency.Observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        slot->status = std::move(st);
        std::lock_guard<std::mutex> lock(mu_);
        if (--remaining_ == 0) cv_.notify_all();
      });
    }
  }

  absl::Status Wait() override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return remaining_ == 0; });
    }
    absl::Status first;
    for (auto& s : slots_) {
      if (!s->status.ok()) {
        s->counters->failed_calls.fetch_add(1, std::memory_order_relaxed);
        if (first.ok()) first = PeerError(s->name, s->method, s->status, timeout_ms_);
        continue;
      }
      s->counters->bytes_received.fetch_add(static_cast<int64_t>(s->ResponseBytes()), std::memory_order_relaxed);
      if (!s->Finish() && first.ok()) {
        first = absl::InternalError(absl::StrCat(s->name, " answered ", s->method, " with malformed tensors"));
      }
    }
    return first;
  }

 private:
  const int64_t timeout_ms_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  int remaining_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Peers>> Peers::Create(PeerOptions options) {
  const int n = static_cast<int>(options.addresses.size());
  if (options.self < 0 || options.self >= n) {
    return absl::InvalidArgumentError(absl::StrCat("cluster: ", n, " addresses do not include partition ",
                                                   options.self, " (this server's)"));
  }
  for (int k = 0; k < n; ++k) {
    if (options.addresses[k].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("cluster: the address of partition ", k, " is empty"));
    }
  }
  if (options.call_timeout_ms <= 0) {
    return absl::InvalidArgumentError("peer_timeout_ms must be > 0");
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  // A restarted peer is found again within about a second.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::vector<std::shared_ptr<grpc::Channel>> channels(n);
  for (int k = 0; k < n; ++k) {
    if (k == options.self) continue;
    auto channel = OpenChannel(options.addresses[k], options.security, args);
    if (!channel.ok()) return channel.status();
    channels[k] = *std::move(channel);
  }
  std::unique_ptr<Peers> p(new Peers(std::move(options), std::move(channels)));
  return p;
}

Peers::Peers(PeerOptions options, std::vector<std::shared_ptr<grpc::Channel>> channels)
    : options_(std::move(options)) {
  for (size_t k = 0; k < options_.addresses.size(); ++k) {
    if (static_cast<int>(k) == options_.self) {
      peers_.push_back(nullptr);
      continue;
    }
    auto peer = std::make_unique<Peer>();
    peer->partition = static_cast<int>(k);
    peer->address = options_.addresses[k];
    peer->channel = std::move(channels[k]);
    peer->stub = v1::GraphStore::NewStub(peer->channel);
    peer->health = grpc::health::v1::Health::NewStub(peer->channel);
    peers_.push_back(std::move(peer));
  }
  monitor_ = std::thread([this] { MonitorLoop(); });
}

Peers::~Peers() { StopMonitor(); }

void Peers::StopMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
}

std::string Peers::Name(int partition) const {
  return absl::StrCat("partition ", partition, " (", options_.addresses[partition], ")");
}

absl::Status Peers::Ready() const {
  if (ready_.load()) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  return absl::UnavailableError(absl::StrCat("sampling waits for the cluster's peers: ", absl::StrJoin(missing_, "; ")));
}

absl::StatusOr<std::vector<int64_t>> Peers::SplitIds(int partition, const std::string& node_type,
                                                     const std::string& split) {
  if (partition < 0 || partition >= static_cast<int>(peers_.size()) || peers_[partition] == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("partition ", partition, " is not a peer"));
  }
  Peer& peer = *peers_[partition];
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(options_.call_timeout_ms));
  v1::GetNodeIdsRequest req;
  req.set_node_type(node_type);
  req.set_split(split);
  v1::GetNodeIdsResponse resp;
  const auto start = Clock::now();
  const grpc::Status s = peer.stub->GetNodeIds(&ctx, req, &resp);
  ++peer.counters.calls;
  peer.counters.latency.Observe(std::chrono::duration<double>(Clock::now() - start).count());
  peer.counters.bytes_sent += static_cast<int64_t>(req.ByteSizeLong());
  if (!s.ok()) {
    ++peer.counters.failed_calls;
    return PeerError(Name(partition), "GetNodeIds", s, options_.call_timeout_ms);
  }
  peer.counters.bytes_received += static_cast<int64_t>(resp.ByteSizeLong());
  std::vector<int64_t> ids;
  if (!ReadInt64s(resp.ids(), &ids)) {
    return absl::DataLossError(absl::StrCat(Name(partition), " answered GetNodeIds with a malformed ids tensor"));
  }
  return ids;
}

absl::Status Peers::Check(Peer& peer) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(std::min<int64_t>(1000, options_.call_timeout_ms)));
  grpc::health::v1::HealthCheckRequest req;  // "": the server as a whole (loaded and listening)
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status s = peer.health->Check(&ctx, req, &resp);
  if (!s.ok()) return absl::UnavailableError(absl::StrCat("health check failed: ", s.error_message()));
  if (resp.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError("health check says it is not serving");
  }
  return absl::OkStatus();
}

void Peers::MonitorLoop() {
  auto log = Logger("cluster");
  Clock::time_point last_report{};
  while (true) {
    std::vector<std::string> missing;
    for (auto& peer : peers_) {
      if (peer == nullptr) continue;
      const absl::Status s = Check(*peer);
      const bool was = peer->answering.exchange(s.ok());
      if (ready_.load() && was != s.ok()) {
        if (s.ok()) {
          log->info("peer {} answers again", Name(peer->partition));
        } else {
          log->warn("peer {} stopped answering: {}", Name(peer->partition), std::string(s.message()));
        }
      }
      if (!s.ok()) missing.push_back(absl::StrCat(Name(peer->partition), ": ", s.message()));
    }
    bool opened = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      missing_ = missing;
      if (!ready_.load() && missing.empty()) {
        ready_.store(true);
        opened = true;
      }
    }
    if (opened) {
      log->info("every peer answers ({} in all); sampling is open", peers_.size() - 1);
      if (options_.on_ready) options_.on_ready();
    } else if (!ready_.load() && Clock::now() - last_report >= std::chrono::seconds(5)) {
      log->warn("sampling waits for {} of {} peers: {}", missing.size(), peers_.size() - 1,
                absl::StrJoin(missing, "; "));
      last_report = Clock::now();
    }
    std::unique_lock<std::mutex> lock(mu_);
    // While a peer is missing it is asked often; once all answer, only to notice a change.
    const int64_t interval = missing.empty() ? std::max<int64_t>(2000, options_.health_interval_ms)
                                             : options_.health_interval_ms;
    if (cv_.wait_for(lock, std::chrono::milliseconds(interval), [&] { return stopping_; })) return;
  }
}

template <typename S, typename Rpc>
std::unique_ptr<S> Peers::NewSlot(int partition, const char* method, typename S::CallType* call, Rpc rpc) {
  Peer& peer = *peers_.at(partition);
  auto slot = std::make_unique<S>();
  slot->counters = &peer.counters;
  slot->name = Name(partition);
  slot->method = method;
  slot->call = call;
  S* raw = slot.get();
  slot->issue = [stub = peer.stub.get(), raw, rpc](std::function<void(grpc::Status)> done) {
    rpc(stub->async(), &raw->ctx, &raw->request, &raw->response, std::move(done));
  };
  return slot;
}

std::unique_ptr<PeerSampling::Pending> Peers::SampleNeighbors(const Hop& hop, std::vector<NeighborCall>* calls) {
  using S = TypedSlot<v1::SampleNeighborsRequest, v1::SampleNeighborsResponse, NeighborCall>;
  auto pending = std::make_unique<PendingCalls>(options_.call_timeout_ms);
  for (auto& call : *calls) {
    auto slot = NewSlot<S>(call.partition, "SampleNeighbors", &call, [](auto* async, auto... args) {
      async->SampleNeighbors(args...);
    });
    auto& r = slot->request;
    EncodeHop(hop, call, &r);
    const bool eids = hop.with_edge_ids;
    const bool efeatures = hop.with_edge_features;
    slot->read = [eids, efeatures](v1::SampleNeighborsResponse* resp, NeighborCall* c) {
      // The sampler checks the feature bytes against the stored row width.
      if (efeatures) c->edge_features.swap(*resp->mutable_edge_features()->mutable_data());
      return ReadInt64s(resp->counts(), &c->counts) && ReadInt64s(resp->neighbors(), &c->neighbors) &&
             (!eids || ReadInt64s(resp->edge_ids(), &c->edge_ids));
    };
    slot->counters->bytes_sent.fetch_add(static_cast<int64_t>(r.ByteSizeLong()), std::memory_order_relaxed);
    pending->Add(std::move(slot));
  }
  pending->Start();
  return pending;
}

std::unique_ptr<PeerSampling::Pending> Peers::FetchNodeData(const std::string& node_type, bool features, bool labels,
                                                            std::vector<NodeDataCall>* calls) {
  using F = TypedSlot<v1::GetNodeFeaturesRequest, v1::GetNodeFeaturesResponse, NodeDataCall>;
  using L = TypedSlot<v1::GetNodeLabelsRequest, v1::GetNodeLabelsResponse, NodeDataCall>;
  auto pending = std::make_unique<PendingCalls>(options_.call_timeout_ms);
  auto add = [&](auto slot, NodeDataCall& call) {
    slot->request.set_node_type(node_type);
    slot->request.mutable_ids()->Add(call.ids.begin(), call.ids.end());
    slot->counters->bytes_sent.fetch_add(static_cast<int64_t>(slot->request.ByteSizeLong()),
                                         std::memory_order_relaxed);
    pending->Add(std::move(slot));
  };
  for (auto& call : *calls) {
    // Features come with their labels in one call; labels alone have their own method.
    if (features) {
      auto slot = NewSlot<F>(call.partition, "GetNodeFeatures", &call, [](auto* async, auto... args) {
        async->GetNodeFeatures(args...);
      });
      slot->request.set_with_labels(labels);
      slot->read = [labels](v1::GetNodeFeaturesResponse* resp, NodeDataCall* c) {
        c->features.swap(*resp->mutable_features()->mutable_data());
        // The sampler checks the feature bytes against the stored row width.
        return !labels || ReadInt64s(resp->labels(), &c->labels);
      };
      add(std::move(slot), call);
    } else if (labels) {
      auto slot = NewSlot<L>(call.partition, "GetNodeLabels", &call, [](auto* async, auto... args) {
        async->GetNodeLabels(args...);
      });
      slot->read = [](v1::GetNodeLabelsResponse* resp, NodeDataCall* c) {
        return ReadInt64s(resp->labels(), &c->labels);
      };
      add(std::move(slot), call);
    }
  }
  pending->Start();
  return pending;
}

std::unique_ptr<PeerSampling::Pending> Peers::FetchNodeTimes(const std::string& node_type,
                                                             std::vector<NodeTimesCall>* calls) {
  using T = TypedSlot<v1::GetNodeTimesRequest, v1::GetNodeTimesResponse, NodeTimesCall>;
  auto pending = std::make_unique<PendingCalls>(options_.call_timeout_ms);
  for (auto& call : *calls) {
    auto slot = NewSlot<T>(call.partition, "GetNodeTimes", &call, [](auto* async, auto... args) {
      async->GetNodeTimes(args...);
    });
    slot->request.set_node_type(node_type);
    slot->request.mutable_ids()->Add(call.ids.begin(), call.ids.end());
    slot->counters->bytes_sent.fetch_add(static_cast<int64_t>(slot->request.ByteSizeLong()), std::memory_order_relaxed);
    slot->read = [](v1::GetNodeTimesResponse* resp, NodeTimesCall* c) { return ReadInt64s(resp->times(), &c->times); };
    pending->Add(std::move(slot));
  }
  pending->Start();
  return pending;
}

std::unique_ptr<PeerSampling::Pending> Peers::FindDegreeNodes(const std::string& edge_type,
                                                              std::vector<DegreeNodesCall>* calls) {
  using T = TypedSlot<v1::FindDegreeNodesRequest, v1::FindDegreeNodesResponse, DegreeNodesCall>;
  auto pending = std::make_unique<PendingCalls>(options_.call_timeout_ms);
  for (auto& call : *calls) {
    auto slot = NewSlot<T>(call.partition, "FindDegreeNodes", &call, [](auto* async, auto... args) {
      async->FindDegreeNodes(args...);
    });
    slot->request.set_edge_type(edge_type);
    slot->request.mutable_positions()->Add(call.positions.begin(), call.positions.end());
    slot->counters->bytes_sent.fetch_add(static_cast<int64_t>(slot->request.ByteSizeLong()), std::memory_order_relaxed);
    slot->read = [](v1::FindDegreeNodesResponse* resp, DegreeNodesCall* c) {
      if (resp->nodes_size() != static_cast<int>(c->positions.size())) return false;  // one node a position
      c->nodes.assign(resp->nodes().begin(), resp->nodes().end());
      return true;
    };
    pending->Add(std::move(slot));
  }
  pending->Start();
  return pending;
}

void Peers::VisitLatency(
    const std::function<void(int, const std::string&, const LatencyHistogram&)>& visit) const {
  for (const auto& peer : peers_) {
    if (peer != nullptr) visit(peer->partition, peer->address, peer->counters.latency);
  }
}

void Peers::FillStats(v1::ServerStats* out) const {
  for (const auto& peer : peers_) {
    if (peer == nullptr) continue;
    auto* p = out->add_peers();
    p->set_partition(peer->partition);
    p->set_address(peer->address);
    p->set_answering(peer->answering.load());
    p->set_calls(peer->counters.calls.load());
    p->set_failed_calls(peer->counters.failed_calls.load());
    p->set_bytes_sent(peer->counters.bytes_sent.load());
    p->set_bytes_received(peer->counters.bytes_received.load());
  }
}

}  // namespace graphstore
