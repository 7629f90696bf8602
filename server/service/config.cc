#include "server/service/config.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "server/sampling/hop_codec.h"
#include "server/sampling/neighbor_sampler.h"
#include "server/sampling/ppr_sampler.h"
#include "server/sampling/subgraph_sampler.h"
#include "server/util/log.h"
#include "server/util/thread_priority.h"

namespace graphstore {
namespace {

// A sampler's own errors name its option ("num_neighbors[0]..."); the request names it
// "config.num_neighbors[0]...".
absl::Status InConfig(const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("config.", s.message()));
}

// The fields every kind shares: batch shape, kind-specific fields, link-prediction negatives.
absl::Status CheckCommon(const v1::SamplingConfig& c, const CoreOptions& limits) {
  if (!v1::SamplerKind_IsValid(c.kind())) return absl::InvalidArgumentError(absl::StrCat("config.kind ", c.kind(), " is unknown"));
  if (c.kind() == v1::SAMPLER_KIND_PPR) {
    if (c.num_neighbors_size() > 0 || c.num_neighbors_by_type_size() > 0) {
      return absl::InvalidArgumentError("config.num_neighbors: the PPR sampler takes config.ppr, not fanouts");
    }
    if (c.with_edge_ids() || c.with_edge_features()) {
      return absl::InvalidArgumentError("config.with_edge_ids / with_edge_features: the PPR sampler returns no edges (see ppr weights)");
    }
    if (c.weighted_edge_types_size() > 0) {
      return absl::InvalidArgumentError("config.weighted_edge_types: the PPR sampler walks every edge; it takes no weighted draws");
    }
    if (c.with_node_times()) {
      return absl::InvalidArgumentError("config.with_node_times: the PPR sampler gathers features and labels only");
    }
  } else if (c.has_ppr()) {
    return absl::InvalidArgumentError("config.ppr is only for config.kind SAMPLER_KIND_PPR");
  }
  if (!v1::TemporalStrategy_IsValid(c.temporal_strategy())) {
    return absl::InvalidArgumentError(absl::StrCat("config.temporal_strategy ", c.temporal_strategy(), " is unknown"));
  }
  if (c.temporal_strategy() != v1::TEMPORAL_STRATEGY_NONE && c.kind() != v1::SAMPLER_KIND_NEIGHBOR &&
      c.kind() != v1::SAMPLER_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError("config.temporal_strategy: only the neighbour sampler (SAMPLER_KIND_NEIGHBOR) samples "
                   "temporally (an induced subgraph or a PPR walk would reach edges after a seed's time)");
  }
  if (c.batch_size() <= 0) return absl::InvalidArgumentError(absl::StrCat("config.batch_size must be >= 1, got ", c.batch_size()));
  if (c.batch_size() > limits.max_batch_size) {
    return absl::ResourceExhaustedError(absl::StrCat("config.batch_size ", c.batch_size(), " exceeds the limit ", limits.max_batch_size));
  }
  if (c.num_negatives() < 0) return absl::InvalidArgumentError("config.num_negatives must be >= 0");
  if (c.num_negatives() > limits.max_negatives) {
    return absl::ResourceExhaustedError(absl::StrCat("config.num_negatives ", c.num_negatives(), " exceeds the limit ", limits.max_negatives));
  }
  if (!v1::NegativeSampling_IsValid(c.negative_sampling())) {
    return absl::InvalidArgumentError(absl::StrCat("config.negative_sampling ", c.negative_sampling(), " is unknown"));
  }
  if (c.num_negatives() > 0 && c.negative_sampling() == v1::NEGATIVE_SAMPLING_NONE) {
    return absl::InvalidArgumentError("config.num_negatives needs config.negative_sampling UNIFORM or DEGREE");
  }
  return absl::OkStatus();
}

// One list of per-hop fanouts: at most max_hops hops, each >= -1 (-1 takes all) and within
// max_fanout; `field` names the list in errors.
absl::Status CheckFanoutList(const std::vector<int>& fanouts, const std::string& field, const SamplingLimits& limits) {
  if (static_cast<int>(fanouts.size()) > limits.max_hops) {
    return absl::ResourceExhaustedError(absl::StrCat(field, " has ", fanouts.size(), " hops; the limit is ", limits.max_hops));
  }
  for (size_t i = 0; i < fanouts.size(); ++i) {
    if (fanouts[i] < -1) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "]=", fanouts[i], " is below -1 (-1 takes all)"));
    }
    if (fanouts[i] > limits.max_fanout) {
      return absl::ResourceExhaustedError(absl::StrCat(field, "[", i, "]=", fanouts[i], " exceeds the limit ", limits.max_fanout));
    }
  }
  return absl::OkStatus();
}

// Every fanout list of the config, and that they agree on the number of hops (edge types are
// resolved by the sampler, which holds the partition).
absl::Status CheckFanouts(const v1::SamplingConfig& c, const SamplingLimits& limits) {
  int hops = -1;
  auto check = [&](const std::vector<int>& list, const std::string& field) -> absl::Status {
    if (auto s = CheckFanoutList(list, field, limits); !s.ok()) return s;
    if (hops >= 0 && static_cast<int>(list.size()) != hops) {
      return absl::InvalidArgumentError(absl::StrCat(field, " has ", list.size(), " hops but other fanouts have ", hops));
    }
    hops = static_cast<int>(list.size());
    return absl::OkStatus();
  };
  if (c.num_neighbors_size() > 0) {
    if (auto s = check({c.num_neighbors().begin(), c.num_neighbors().end()}, "config.num_neighbors"); !s.ok()) return s;
  }
  // In name order, so that the same request always names the same list.
  std::map<std::string, std::vector<int>> by_type;
  for (const auto& [name, f] : c.num_neighbors_by_type()) by_type[name].assign(f.per_hop().begin(), f.per_hop().end());
  for (const auto& [name, list] : by_type) {
    if (auto s = check(list, absl::StrCat("config.num_neighbors_by_type['", name, "']")); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The PPR walk's parameters.
absl::Status CheckPpr(const v1::PprOptions& p, const SamplingLimits& limits) {
  if (!(p.alpha() > 0 && p.alpha() < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("config.ppr.alpha must be in (0, 1), got ", p.alpha()));
  }
  if (!(p.eps() >= 1e-7)) return absl::InvalidArgumentError(absl::StrCat("config.ppr.eps must be >= 1e-7, got ", p.eps()));
  if (p.max_nodes_per_seed() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.ppr.max_nodes_per_seed must be >= 1, got ", p.max_nodes_per_seed()));
  }
  if (p.max_nodes_per_seed() > limits.max_fanout) {
    return absl::ResourceExhaustedError(absl::StrCat("config.ppr.max_nodes_per_seed ", p.max_nodes_per_seed(),
                                                     " exceeds the limit ", limits.max_fanout));
  }
  return absl::OkStatus();
}

NeighborSamplerOptions NeighborOptionsOf(const v1::SamplingConfig& c, const CoreOptions& limits,
                                         const SamplerEnvironment& env) {
  NeighborSamplerOptions o;
  o.fanouts.assign(c.num_neighbors().begin(), c.num_neighbors().end());
  for (const auto& [name, f] : c.num_neighbors_by_type()) o.fanouts_by_type[name].assign(f.per_hop().begin(), f.per_hop().end());
  o.replace = c.replace();
  o.weighted_edge_types.assign(c.weighted_edge_types().begin(), c.weighted_edge_types().end());
  o.temporal = TemporalStrategyOf(c.temporal_strategy());
  o.with_edge_ids = c.with_edge_ids();
  o.with_node_features = c.with_node_features();
  o.with_labels = c.with_labels();
  o.with_edge_features = c.with_edge_features();
  o.with_node_times = c.with_node_times();
  o.peers = env.peers;
  o.remote_cache = env.remote_cache;
  return o;
}

PprSamplerOptions PprOptionsOf(const v1::SamplingConfig& c, const CoreOptions& limits, const SamplerEnvironment& env) {
  PprSamplerOptions o;
  o.alpha = c.ppr().alpha();
  o.eps = c.ppr().eps();
  o.max_nodes_per_seed = c.ppr().max_nodes_per_seed();
  o.with_node_features = c.with_node_features();
  o.with_labels = c.with_labels();
  o.peers = env.peers;
  o.remote_cache = env.remote_cache;
  return o;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Sampler>> BuildSampler(const v1::SamplingConfig& c, const CoreOptions& limits,
                                                      const SamplerEnvironment& env) {
  if (auto s = CheckCommon(c, limits); !s.ok()) return s;
  const absl::Status shape = c.kind() == v1::SAMPLER_KIND_PPR ? CheckPpr(c.ppr(), limits.sampling)
                                                              : CheckFanouts(c, limits.sampling);
  if (!shape.ok()) return shape;
  // The sampler resolves the rest against its partition: edge types, stored weights, times,
  // features and labels.
  absl::StatusOr<std::unique_ptr<Sampler>> sampler;
  switch (c.kind()) {
    case v1::SAMPLER_KIND_PPR:
      sampler = PprSampler::Create(env.partition, PprOptionsOf(c, limits, env));
      break;
    case v1::SAMPLER_KIND_SUBGRAPH:
      sampler = SubgraphSampler::Create(env.partition, NeighborOptionsOf(c, limits, env));
      break;
    default:
      sampler = NeighborSampler::Create(env.partition, NeighborOptionsOf(c, limits, env));
      break;
  }
  if (!sampler.ok()) return InConfig(sampler.status());
  return sampler;
}

absl::StatusOr<scheduler::BackendOptions> BuildBackendOptions(const v1::SamplerOptions& o, const CoreOptions& limits,
                                                              const std::string& name) {
  if (o.num_workers() < 0) return absl::InvalidArgumentError("options.num_workers must be >= 0 (0 = server default)");
  if (o.num_workers() > limits.max_num_workers) {
    return absl::ResourceExhaustedError(absl::StrCat("options.num_workers ", o.num_workers(), " exceeds the limit ", limits.max_num_workers));
  }
  if (o.max_in_flight_per_channel() < 0) return absl::InvalidArgumentError("options.max_in_flight_per_channel must be >= 0");
  if (o.max_in_flight_per_channel() > limits.max_in_flight_per_channel) {
    return absl::ResourceExhaustedError(absl::StrCat("options.max_in_flight_per_channel exceeds the limit ", limits.max_in_flight_per_channel));
  }
  scheduler::BackendOptions bo;
  bo.num_workers = o.num_workers() > 0 ? o.num_workers() : limits.default_num_workers;
  bo.max_in_flight_per_channel =
      o.max_in_flight_per_channel() > 0 ? o.max_in_flight_per_channel() : limits.default_max_in_flight;
  bo.max_buffered_messages = limits.default_buffer_messages;
  bo.max_buffered_bytes = limits.default_buffer_bytes;
  bo.speculative_batches = limits.sample_ahead_batches;
  bo.name = name;
  if (limits.sampling_nice > 0) {
    bo.on_worker_start = [nice = limits.sampling_nice, name](int worker) {
      const absl::Status s = LowerThreadPriority(nice);
      // Logged once per backend: the other workers fail alike.
      if (!s.ok() && worker == 0) {
        Logger("core")->warn("backend '{}': workers keep the daemon's priority: {}", name, std::string(s.message()));
      }
    };
  }
  return bo;
}

NegativeOptions NegativesOf(const v1::SamplingConfig& config) {
  NegativeOptions n;
  n.num = config.num_negatives();
  switch (config.negative_sampling()) {
    case v1::NEGATIVE_SAMPLING_UNIFORM: n.kind = NegativeOptions::Kind::kUniform; break;
    case v1::NEGATIVE_SAMPLING_DEGREE: n.kind = NegativeOptions::Kind::kDegree; break;
    default: n.kind = NegativeOptions::Kind::kNone; break;
  }
  return n;
}

AblpRequest ToAblpRequest(const v1::GetAblpInputRequest& req) {
  AblpRequest r;
  r.split = req.split();
  r.node_type = req.node_type();
  r.supervision_edge_type = req.supervision_edge_type();
  r.negative_edge_type = req.negative_edge_type();
  r.rank = req.slice().rank();
  r.world_size = req.slice().world_size();
  return r;
}

}  // namespace graphstore
