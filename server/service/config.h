#ifndef GRAPHSTORE_SERVER_SERVICE_CONFIG_H_
#define GRAPHSTORE_SERVER_SERVICE_CONFIG_H_

// The one place a backend's request (SamplingConfig, SamplerOptions) becomes sampler and
// scheduler options: every field is checked here, once, against the service's CoreOptions, and
// errors name the request field ("config.num_neighbors[0]=-2 is below -1 (-1 takes all)").

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "scheduler/backend.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/sampling/peer_sampling.h"
#include "server/sampling/remote_cache.h"
#include "server/sampling/sampler.h"
#include "server/service/options.h"

namespace graphstore {

/// Where a backend's sampler reads: the partition, and in a cluster the peers and the cache of
/// their node data (null outside one).
struct SamplerEnvironment {
  const Partition* partition = nullptr;
  PeerSampling* peers = nullptr;
  RemoteCache* remote_cache = nullptr;
};

/// The sampler `config` asks for, after checking every field of it: InvalidArgument or
/// ResourceExhausted (a limit of `limits`) naming the field under "config.".
absl::StatusOr<std::unique_ptr<Sampler>> BuildSampler(const v1::SamplingConfig& config, const CoreOptions& limits,
                                                      const SamplerEnvironment& env);

/// The scheduler options of a backend whose request asks for `options`, after checking them
/// (fields named under "options."); `name` names the backend in logs.
absl::StatusOr<scheduler::BackendOptions> BuildBackendOptions(const v1::SamplerOptions& options,
                                                              const CoreOptions& limits, const std::string& name);

/// How a link-prediction channel of a backend with `config` generates negatives.
NegativeOptions NegativesOf(const v1::SamplingConfig& config);

/// A GetAblpInput request in the partition's terms.
AblpRequest ToAblpRequest(const v1::GetAblpInputRequest& req);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_CONFIG_H_
