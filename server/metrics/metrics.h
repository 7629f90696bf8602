#ifndef GRAPHSTORE_SERVER_METRICS_METRICS_H_
#define GRAPHSTORE_SERVER_METRICS_METRICS_H_

// The Prometheus endpoint of graphstored (--metrics_port): every call's method, code and
// latency as the gRPC adapter reports them, and, read from the core when scraped, the state of
// channels, backends, buffers, workers, peers, caches and shared memory. docs/operations.md
// lists every metric. Labels are bounded: methods, codes, states, sampler kinds, transports,
// backend keys (at most --max_backends) and peers (the cluster's size); per-channel series
// only with --metrics_per_channel.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/rpc/grpc_service.h"
#include "server/service/core.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace graphstore {

class Metrics : public CallObserver {
 public:
  struct Options {
    /// host:port to serve /metrics on; port 0 picks a free one (see port()).
    std::string address = "0.0.0.0:0";
    /// Adds per-channel series (buffered bytes and batches delivered by channel id).
    bool per_channel = false;
  };
  /// Starts the HTTP endpoint. Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Metrics>> Start(const Options& options);
  ~Metrics() override;

  /// The port actually bound.
  int port() const { return port_; }
  /// Reports `core`'s state at each scrape from now on. `core` outlives the Metrics or is
  /// unwatched first with Watch(nullptr).
  void Watch(const Core* core);

  void OnCall(const char* method, grpc::StatusCode code, double seconds) override;

 private:
  class Requests;
  class CoreCollector;
  Metrics() = default;

  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Requests> requests_;
  std::shared_ptr<CoreCollector> collector_;
  int port_ = 0;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_METRICS_METRICS_H_
