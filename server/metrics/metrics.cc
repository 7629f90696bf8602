#include "server/metrics/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <google/protobuf/descriptor.h>

#include <map>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphstore {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// "NOT_FOUND" for grpc::StatusCode::NOT_FOUND: absl and gRPC share the canonical numbering.
std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

prometheus::Histogram::BucketBoundaries Bounds() {
  return {LatencyHistogram::kBounds.begin(), LatencyHistogram::kBounds.end()};
}

// Families built at scrape time.
class Families {
 public:
  // A sample of `name` (declared on first use) with `labels`.
  ClientMetric& Add(const std::string& name, MetricType type, const std::string& help,
                    std::vector<ClientMetric::Label> labels = {}) {
    auto it = index_.find(name);
    if (it == index_.end()) {
      it = index_.emplace(name, out_.size()).first;
      out_.push_back(MetricFamily{name, help, type, {}});
    }
    ClientMetric& m = out_[it->second].metric.emplace_back();
    m.label = std::move(labels);
    return m;
  }
  void Gauge(const std::string& name, const std::string& help, double value,
             std::vector<ClientMetric::Label> labels = {}) {
    Add(name, MetricType::Gauge, help, std::move(labels)).gauge.value = value;
  }
  void Counter(const std::string& name, const std::string& help, double value,
               std::vector<ClientMetric::Label> labels = {}) {
    Add(name, MetricType::Counter, help, std::move(labels)).counter.value = value;
  }
  void Histogram(const std::string& name, const std::string& help, const LatencyHistogram& h,
                 std::vector<ClientMetric::Label> labels = {}) {
    const LatencyHistogram::Snapshot s = h.Read();
    ClientMetric& m = Add(name, MetricType::Histogram, help, std::move(labels));
    m.histogram.sample_count = s.count;
    m.histogram.sample_sum = s.sum_seconds;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < LatencyHistogram::kBounds.size(); ++i) {
      cumulative += s.counts[i];
      m.histogram.bucket.push_back({cumulative, LatencyHistogram::kBounds[i]});
    }
    m.histogram.bucket.push_back({s.count, std::numeric_limits<double>::infinity()});
  }
  std::vector<MetricFamily> Take() { return std::move(out_); }

 private:
  std::map<std::string, size_t> index_;
  std::vector<MetricFamily> out_;
};

}  // namespace

// Calls by method and code, and their latency by method.
class Metrics::Requests {
 public:
  explicit Requests(prometheus::Registry& registry)
      : calls_(prometheus::BuildCounter()
                   .Name("graphstore_requests_total")
                   .Help("GraphStore calls answered, by method and status code")
                   .Register(registry)),
        latency_(prometheus::BuildHistogram()
                     .Name("graphstore_request_duration_seconds")
                     .Help("Time from a call's arrival to its answer (streams: to their attachment), by method")
                     .Register(registry)) {
    // Every method's OK series exists from the start at 0, so that rate() sees its first call.
    const auto* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("graphstore.v1.GraphStore");
    for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
      const std::string m = service->method(i)->name();
      counters_[{m, static_cast<int>(grpc::StatusCode::OK)}] =
          &calls_.Add({{"method", m}, {"code", CodeName(grpc::StatusCode::OK)}});
      histograms_[m] = &latency_.Add({{"method", m}}, Bounds());
    }
  }

  void Observe(const char* method, grpc::StatusCode code, double seconds) {
    prometheus::Counter* counter;
    prometheus::Histogram* histogram;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string m(method);
      auto& c = counters_[{m, static_cast<int>(code)}];
      if (c == nullptr) c = &calls_.Add({{"method", m}, {"code", CodeName(code)}});
      auto& h = histograms_[m];
      if (h == nullptr) h = &latency_.Add({{"method", m}}, Bounds());
      counter = c;
      histogram = h;
    }
    counter->Increment();
    histogram->Observe(seconds);
  }

 private:
  prometheus::Family<prometheus::Counter>& calls_;
  prometheus::Family<prometheus::Histogram>& latency_;
  std::mutex mu_;
  std::map<std::pair<std::string, int>, prometheus::Counter*> counters_;
  std::map<std::string, prometheus::Histogram*> histograms_;
};

namespace {

// One channel's own series (with --metrics_per_channel), and one per open stream of it (a
// connection of a striped channel), gone when the stream closes.
void ChannelSeries(const v1::ChannelStats& c, Families* f) {
  const std::vector<ClientMetric::Label> labels = {{"channel", absl::StrCat(c.channel_id())}};
  f->Gauge("graphstore_channel_buffered_bytes", "Bytes waiting in one channel's output buffer",
           static_cast<double>(c.buffered_bytes()), labels);
  f->Counter("graphstore_channel_batches_sampled_total", "Batches sampled for one channel",
             static_cast<double>(c.total_batches_sampled()), labels);
  for (const v1::StreamStats& st : c.streams()) {
    const std::vector<ClientMetric::Label> stream = {{"channel", absl::StrCat(c.channel_id())},
                                                     {"stripe", absl::StrCat(st.stripe())}};
    f->Counter("graphstore_channel_stream_bytes_sent_total", "Bytes one open stream of a channel has written",
               static_cast<double>(st.bytes_sent()), stream);
    f->Counter("graphstore_channel_stream_batches_sent_total", "Batches one open stream of a channel has written",
               static_cast<double>(st.batches_sent()), stream);
  }
}

// Channels and backends by state; buffers and queues per backend; open streams and workers.
void CollectState(const v1::ServerStats& stats, bool per_channel, Families* f) {
  std::map<std::string, int> channel_states = {{"idle", 0}, {"running", 0}, {"epoch_done", 0}, {"failed", 0}};
  int serving = 0, unused = 0, workers = 0;
  for (const v1::BackendStats& b : stats.backends()) {
    ++(b.num_channels() > 0 ? serving : unused);
    if (b.num_channels() > 0) workers += b.num_workers();  // a backend without channels runs none
    int64_t buffered_bytes = 0, buffered_messages = 0, in_flight = 0;
    for (const v1::ChannelStats& c : b.channels()) {
      ++channel_states[c.state()];
      buffered_bytes += c.buffered_bytes();
      buffered_messages += c.buffered_messages();
      in_flight += c.in_flight();
      if (per_channel) ChannelSeries(c, f);
    }
    const std::vector<ClientMetric::Label> backend = {{"backend", b.backend_key()}};
    f->Gauge("graphstore_backend_buffered_bytes", "Bytes sampled and not yet sent, per backend",
             static_cast<double>(buffered_bytes), backend);
    f->Gauge("graphstore_backend_buffered_messages", "Batches sampled and not yet sent, per backend",
             static_cast<double>(buffered_messages), backend);
    f->Gauge("graphstore_backend_queue_depth", "Channels that could be given a batch now (waiting for a worker)",
             b.num_runnable_channels(), backend);
    f->Gauge("graphstore_backend_in_flight", "Batches being sampled now, per backend", static_cast<double>(in_flight),
             backend);
  }
  for (const auto& [state, n] : channel_states) {
    f->Gauge("graphstore_channels", "Live channels by state", n, {{"state", state}});
  }
  f->Gauge("graphstore_backends", "Live backends: serving (with channels) or unused (none yet; reaped after "
           "their lease)", serving, {{"state", "serving"}});
  f->Gauge("graphstore_backends", "", unused, {{"state", "unused"}});
  f->Gauge("graphstore_streams_open", "StreamSampledMessages calls open now", stats.open_streams());
  f->Gauge("graphstore_workers", "Sampling worker threads running, over the backends with channels", workers);
}

// What was sampled, sent and dropped; leases, shared memory and sampling indexes.
void CollectCounters(const Core& core, const v1::ServerStats& stats, Families* f) {
  const ServiceCounters& c = core.counters();
  f->Counter("graphstore_batches_sampled_total", "Batches sampled and encoded", c.batches_sampled.load());
  f->Counter("graphstore_sampling_failures_total", "Batches whose sampling failed", c.sampling_failures.load());
  f->Counter("graphstore_batches_dropped_total",
             "Sampled batches discarded unsent (their stream was cancelled or their channel destroyed)",
             c.batches_dropped.load());
  f->Counter("graphstore_worker_busy_seconds_total",
             "Seconds workers spent sampling and encoding; rate() / graphstore_workers is their utilisation",
             static_cast<double>(c.worker_busy_ns.load()) / 1e9);
  const char* transports[] = {"socket", "shared_memory"};
  for (int t = 0; t < 2; ++t) {
    f->Counter("graphstore_batches_sent_total", "Whole batches written to streams, by transport",
               c.batches_sent[t].load(), {{"transport", transports[t]}});
    f->Counter("graphstore_stream_bytes_sent_total",
               "Bytes written to streams, by transport (shared-memory messages carry byte ranges; their tensors "
               "travel in graphstore_shared_memory_bytes)",
               c.bytes_sent[t].load(), {{"transport", transports[t]}});
  }
  for (size_t k = 0; k < kSamplerKindNames.size(); ++k) {
    f->Histogram("graphstore_sampling_duration_seconds", "Time to sample and encode one batch, by sampler kind",
                 c.sampling_seconds[k], {{"kind", kSamplerKindNames[k]}});
  }
  f->Counter("graphstore_channel_lease_expirations_total", "Channels destroyed because their lease expired",
             stats.leases_expired());
  f->Counter("graphstore_backend_lease_expirations_total",
             "Backends stopped because nobody registered on them within their lease", stats.backend_leases_expired());
  f->Gauge("graphstore_shared_memory_bytes", "Bytes of shared-memory buffer files over every channel's pool",
           static_cast<double>(core.shared_memory_bytes()));
  f->Gauge("graphstore_sampling_index_bytes",
           "Bytes of the sampling indexes built for weighted and temporal backends, over every edge type",
           static_cast<double>(stats.sampling_index_bytes()));
  f->Gauge("graphstore_input_set_bytes",
           "Bytes of the cluster-wide splits channels with global batches are registered on, each kept once",
           static_cast<double>(stats.input_set_bytes()));
}

// The cluster's peers: health, calls, bytes, latency and the cache of their node data.
void CollectPeers(const Core& core, const v1::ServerStats& stats, Families* f) {
  for (const v1::PeerStats& p : stats.peers()) {
    const std::vector<ClientMetric::Label> peer = {{"peer", p.address()}};
    f->Gauge("graphstore_peer_up", "Whether the peer's last health check answered SERVING", p.answering() ? 1 : 0,
             peer);
    f->Counter("graphstore_peer_calls_total", "Calls made to the peer for cross-partition sampling", p.calls(), peer);
    f->Counter("graphstore_peer_call_failures_total", "Calls to the peer that failed", p.failed_calls(), peer);
    f->Counter("graphstore_peer_bytes_sent_total", "Request bytes sent to the peer", p.bytes_sent(), peer);
    f->Counter("graphstore_peer_bytes_received_total", "Response bytes received from the peer", p.bytes_received(),
               peer);
  }
  if (const Cluster* cluster = core.cluster(); cluster != nullptr) {
    cluster->VisitLatency([&](int, const std::string& address, const LatencyHistogram& h) {
      f->Histogram("graphstore_peer_call_duration_seconds", "Time from issuing a call to a peer to its answer", h,
                   {{"peer", address}});
    });
    const Core::PeerCacheLookups lookups = core.peer_cache_lookups();
    f->Gauge("graphstore_peer_cache_bytes", "Bytes of other partitions' node data cached here",
             stats.peer_cache_bytes());
    f->Gauge("graphstore_peer_cache_chosen", "1 once the peer cache has chosen what to keep, 0 while it counts lookups",
             stats.peer_cache_chosen() ? 1 : 0);
    f->Counter("graphstore_peer_cache_hits_total", "Other partitions' nodes whose data the cache held", lookups.hits);
    f->Counter("graphstore_peer_cache_misses_total", "Other partitions' nodes whose data was asked of their owner",
               lookups.misses);
    f->Counter("graphstore_peer_cache_list_hits_total",
               "Other partitions' nodes drawn from here, their neighbour list cached", lookups.list_hits);
    f->Counter("graphstore_peer_cache_list_misses_total",
               "Other partitions' nodes whose neighbours were asked of their owner (lists cacheable)",
               lookups.list_misses);
  }
}

}  // namespace

// The core's state, read at each scrape.
class Metrics::CoreCollector : public prometheus::Collectable {
 public:
  explicit CoreCollector(bool per_channel) : per_channel_(per_channel) {}
  void Watch(const Core* core) {
    std::lock_guard<std::mutex> lock(mu_);
    core_ = core;
  }
  std::vector<MetricFamily> Collect() const override {
    std::lock_guard<std::mutex> lock(mu_);
    Families f;
    if (core_ != nullptr) CollectCore(*core_, &f);
    return f.Take();
  }

 private:
  void CollectCore(const Core& core, Families* f) const;

  const bool per_channel_;
  mutable std::mutex mu_;
  const Core* core_ = nullptr;
};

void Metrics::CoreCollector::CollectCore(const Core& core, Families* f) const {
  v1::ServerStats stats;
  core.GetServerStats(v1::GetServerStatsRequest(), &stats).IgnoreError();
  CollectState(stats, per_channel_, f);
  CollectCounters(core, stats, f);
  CollectPeers(core, stats, f);
}

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Start(const Options& options) {
  std::unique_ptr<Metrics> m(new Metrics());
  try {
    m->exposer_ = std::make_unique<prometheus::Exposer>(options.address, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", options.address, ": ", e.what()));
  }
  const std::vector<int> ports = m->exposer_->GetListeningPorts();
  if (ports.empty()) return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", options.address));
  m->port_ = ports.front();
  m->registry_ = std::make_shared<prometheus::Registry>();
  m->requests_ = std::make_unique<Requests>(*m->registry_);
  m->collector_ = std::make_shared<CoreCollector>(options.per_channel);
  m->exposer_->RegisterCollectable(m->registry_);
  m->exposer_->RegisterCollectable(m->collector_);
  return m;
}

Metrics::~Metrics() {
  if (collector_ != nullptr) collector_->Watch(nullptr);
  exposer_.reset();  // no scrape runs after this
}

void Metrics::Watch(const Core* core) { collector_->Watch(core); }

void Metrics::OnCall(const char* method, grpc::StatusCode code, double seconds) {
  requests_->Observe(method, code, seconds);
}

}  // namespace graphstore
