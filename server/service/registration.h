#ifndef GRAPHSTORE_SERVER_SERVICE_REGISTRATION_H_
#define GRAPHSTORE_SERVER_SERVICE_REGISTRATION_H_

// What a RegisterSamplingInput request asks for, worked out before any state changes: every
// check of the request, in one place -- its own fields, its seeds (explicit ids, a split of this
// partition or of the whole cluster, or link-prediction anchors) with their node type and times,
// the link-prediction labeler and the feature output -- and the batches an epoch over them
// holds. Plain functions of the request, the partition, the cluster and the backend's config:
// Channels calls them outside the service lock, and the tests call them with no server. Errors
// name the request field in one way (server/util/field.h): the checks of nested inputs (ablp.h,
// PartitionQueries::SplitIds / CheckIds) name their fields, and these functions nest them.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/cluster/cluster.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/service/channel_input.h"
#include "server/service/feature_outputs.h"
#include "server/service/options.h"
#include "server/service/queries.h"

namespace graphstore {

/// Where a registration's seeds come from: this partition, its queries, and the cluster's other
/// partitions (null outside a cluster).
struct SeedSources {
  const Partition* partition = nullptr;
  const PartitionQueries* queries = nullptr;
  Cluster* cluster = nullptr;
  /// Where a cluster-wide split is built once and shared.
  InputSets* input_sets = nullptr;
};

/// The checks of a registration's own fields (backend id, keys, buffer, lease, global batches,
/// shared memory), against `options`' limits, before anything is looked up.
absl::Status CheckRegistration(const v1::RegisterSamplingInputRequest& req, const CoreOptions& options,
                               bool offers_shared_memory);

/// The seeds of a registration, in the order its batches take them, and their node type; for
/// an ablp input, its labels too (`ablp`). Explicit ids must be distinct (and owned here unless
/// batched globally); a split with global batches is every partition's, ascending (ClusterSplit).
absl::StatusOr<ChannelInput> ResolveSeeds(const SeedSources& from, const v1::RegisterSamplingInputRequest& req,
                                          int* node_type, AblpInput* ablp);

/// A split's nodes on every partition (this one's and each peer's), in ascending id order: every
/// node of the type as a count alone (split ""), a named split as the server's shared set of it
/// (gathered once from the peers while channels hold it); FAILED_PRECONDITION on a partition of
/// several that knows no peers.
absl::StatusOr<ChannelInput> ClusterSplit(const SeedSources& from, const std::string& node_type, const std::string& split);

/// The explicit seed times of a registration, one per input entry (empty when the seeds take
/// their node times or the backend is not temporal); InvalidArgument naming the field when times
/// are given to a backend that is not temporal, miscounted, or needed and missing.
absl::StatusOr<std::vector<int64_t>> ResolveSeedTimes(const Partition& partition, const v1::RegisterSamplingInputRequest& req,
                                                      const v1::SamplingConfig& config, int node_type);

/// What a registration resolves to besides the request: where its seeds come from, this
/// server's limits and offers, and the feature outputs of its partition.
struct RegistrationContext {
  SeedSources sources;
  const CoreOptions* options = nullptr;
  bool offers_shared_memory = false;
  FeatureOutputs* feature_outputs = nullptr;
  /// This server's peer cache holds all of the other partitions' data (OwnerRowsRule).
  bool peer_cache_keeps_all = false;
};

/// A registration, checked and resolved: what its channel is made of.
struct RegistrationPlan {
  int node_type = 0;
  ChannelInput seeds;
  /// One per seed, or empty (ResolveSeedTimes).
  std::vector<int64_t> seed_times;
  /// Link-prediction inputs only.
  std::shared_ptr<const AblpLabeler> labeler;
  /// Null for the default output (FeatureOutputs::ForChannel).
  std::shared_ptr<const FeatureOutput> features;
};

/// The checks and resolution of `req` past CheckRegistration, against the `config` of the
/// backend it names: seeds, seed times, the labeler (negatives follow the backend) and the
/// feature output.
absl::StatusOr<RegistrationPlan> PlanRegistration(const RegistrationContext& context,
                                                  const v1::RegisterSamplingInputRequest& req,
                                                  const v1::SamplingConfig& config);

/// Batches of an epoch over `seeds` seeds with `config`'s batch size and drop_last.
int64_t EpochBatches(int64_t seeds, const v1::SamplingConfig& config);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_REGISTRATION_H_
