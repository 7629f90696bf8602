// What a registration's seeds resolve to, as plain functions of the request, the partition and
// the cluster (registration.h).

#include "server/service/registration.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/service/config.h"
#include "server/util/field.h"

namespace graphstore {

absl::Status CheckRegistration(const v1::RegisterSamplingInputRequest& req, const CoreOptions& o,
                               bool offers_shared_memory) {
  constexpr auto kExhausted = absl::StatusCode::kResourceExhausted;
  if (req.backend_id() == 0) return InvalidField("backend_id", " is required");
  if (req.worker_key().size() > o.max_key_length) {
    return FieldError(kExhausted, "worker_key", absl::StrCat(" is longer than ", o.max_key_length, " bytes"));
  }
  const auto& buf = req.buffer();
  if (buf.max_messages() < 0) return InvalidField("buffer.max_messages", " must be >= 0 (0 = server default)");
  if (buf.max_bytes() < 0) return InvalidField("buffer.max_bytes", " must be >= 0 (0 = server default)");
  if (buf.max_messages() > o.max_buffer_messages) {
    return FieldError(kExhausted, "buffer.max_messages",
                      absl::StrCat(" ", buf.max_messages(), " exceeds the limit ", o.max_buffer_messages));
  }
  if (buf.max_bytes() > o.max_buffer_bytes) {
    return FieldError(kExhausted, "buffer.max_bytes", absl::StrCat(" ", buf.max_bytes(), " exceeds the limit ", o.max_buffer_bytes));
  }
  if (req.lease_ms() < 0) return InvalidField("lease_ms", " must be >= 0 (0 = server default)");
  if (req.lease_ms() > o.max_lease_ms) {
    return FieldError(kExhausted, "lease_ms", absl::StrCat(" ", req.lease_ms(), " exceeds the limit ", o.max_lease_ms));
  }
  if (req.has_global_batches()) {
    const v1::BatchSelection& g = req.global_batches();
    if (g.stride() < 1) return InvalidField("global_batches.stride", absl::StrCat(" must be >= 1, got ", g.stride()));
    if (g.offset() < 0 || g.offset() >= g.stride()) {
      return InvalidField("global_batches.offset",
                          absl::StrCat(" ", g.offset(), " is outside [0, global_batches.stride ", g.stride(), ")"));
    }
  }
  if (req.shared_memory() && !offers_shared_memory) {
    return FieldError(absl::StatusCode::kFailedPrecondition, "shared_memory",
                      ": this server does not offer shared memory (it runs with an empty --shared_memory_dir)");
  }
  return absl::OkStatus();
}

int64_t EpochBatches(int64_t seeds, const v1::SamplingConfig& config) {
  const int64_t bs = std::max<int64_t>(1, config.batch_size());
  return config.drop_last() ? seeds / bs : (seeds + bs - 1) / bs;
}

absl::StatusOr<ChannelInput> ClusterSplit(const SeedSources& from, const std::string& node_type, const std::string& split) {
  auto t = from.partition->FindNodeType(node_type);
  if (!t.ok()) return InField(t.status(), "split.node_type");
  const int64_t num_nodes = from.partition->node_type(*t).num_nodes;
  Cluster* cluster = from.cluster;
  if (cluster == nullptr && from.partition->num_partitions() > 1) {
    return FieldError(absl::StatusCode::kFailedPrecondition, "global_batches",
                      ": this server holds one partition of several and knows no peers to gather the split from "
                      "(start graphstored with --cluster)");
  }
  // The cluster's order is ascending global id, whichever partition holds each node: for every
  // node of the type, position p is node p.
  if (split.empty()) return ChannelInput::Every(num_nodes);
  auto build = [&]() -> absl::StatusOr<std::shared_ptr<IdSet>> {
    auto set = std::make_shared<IdSet>(num_nodes);
    auto ids = from.queries->SplitIds(node_type, split, v1::ServerSlice());
    if (!ids.ok()) return InField(ids.status(), "split");
    if (auto s = set->Add(*ids); !s.ok()) return InField(s, "split");
    for (int p = 0; cluster != nullptr && p < from.partition->num_partitions(); ++p) {
      if (p == from.partition->partition_id()) continue;
      auto theirs = cluster->SplitIds(p, node_type, split);
      absl::Status s = theirs.ok() ? set->Add(*theirs) : theirs.status();
      if (!s.ok()) {
        return InField(absl::Status(s.code(), absl::StrCat("the split on partition ", p, ": ", s.message())),
                       "global_batches");
      }
    }
    return set;
  };
  // Built once per server and split, however many channels register on it.
  InputSets local;
  InputSets* sets = from.input_sets != nullptr ? from.input_sets : &local;
  auto set = sets->Get(*t, split, build);
  if (!set.ok()) return set.status();
  return ChannelInput::Members(*std::move(set));
}

absl::StatusOr<ChannelInput> ResolveSeeds(const SeedSources& from, const v1::RegisterSamplingInputRequest& req,
                                          int* node_type, AblpInput* ablp) {
  const bool global = req.has_global_batches();
  switch (req.input_case()) {
    case v1::RegisterSamplingInputRequest::kNodes: {
      auto t = from.partition->FindNodeType(req.nodes().node_type());
      if (!t.ok()) return InField(t.status(), "nodes.node_type");
      *node_type = *t;
      if (auto s = from.queries->CheckIds(*t, req.nodes().ids(), "nodes.ids", /*owned=*/!global); !s.ok()) return s;
      // Seeds come first in every batch's node list, in order: an id given twice would be one
      // node but two seeds, and seeds[i] would no longer be node i.
      absl::flat_hash_map<int64_t, int> first;
      first.reserve(req.nodes().ids_size());
      for (int i = 0; i < req.nodes().ids_size(); ++i) {
        const auto [it, inserted] = first.emplace(req.nodes().ids(i), i);
        if (!inserted) {
          return InvalidField(absl::StrCat("nodes.ids[", i, "]"), absl::StrCat("=", req.nodes().ids(i), " repeats nodes.ids[",
                                                                               it->second, "]; each seed may appear once"));
        }
      }
      return ChannelInput::Listed(std::vector<int64_t>(req.nodes().ids().begin(), req.nodes().ids().end()));
    }
    case v1::RegisterSamplingInputRequest::kSplit: {
      auto t = from.partition->FindNodeType(req.split().node_type());
      if (!t.ok()) return InField(t.status(), "split.node_type");
      *node_type = *t;
      if (!global) {
        auto ids = from.queries->SplitIds(req.split().node_type(), req.split().split(), req.split().slice());
        if (!ids.ok()) return InField(ids.status(), "split");
        return ChannelInput::Listed(*std::move(ids));
      }
      if (req.split().slice().world_size() > 1 || req.split().slice().rank() != 0) {
        return InvalidField("split.slice", ": with global_batches, global_batches.stride and offset share the batches out; "
                                           "leave slice unset");
      }
      return ClusterSplit(from, req.split().node_type(), req.split().split());
    }
    case v1::RegisterSamplingInputRequest::kAblp: {
      if (global) {
        return InvalidField("global_batches", ": link-prediction inputs are batched by the server that owns each anchor "
                                              "(their labels live there); leave global_batches unset");
      }
      auto in = LoadAblpInput(*from.partition, ToAblpRequest(req.ablp().input()));
      if (!in.ok()) return InField(in.status(), "ablp.input");
      *node_type = in->anchor_type;
      *ablp = *std::move(in);
      return ChannelInput::Listed(ablp->anchors);
    }
    case v1::RegisterSamplingInputRequest::INPUT_NOT_SET:
      break;
  }
  return InvalidField("input", ": set one of nodes, split or ablp");
}

absl::StatusOr<std::vector<int64_t>> ResolveSeedTimes(const Partition& partition, const v1::RegisterSamplingInputRequest& req,
                                                      const v1::SamplingConfig& config, int node_type) {
  const bool temporal = config.temporal_strategy() != v1::TEMPORAL_STRATEGY_NONE;
  const int given = req.has_nodes() ? req.nodes().times_size() : 0;
  if (given > 0) {
    if (!temporal) {
      return InvalidField("nodes.times", ": the backend does not sample temporally (config.temporal_strategy is NONE)");
    }
    if (given != req.nodes().ids_size()) {
      return InvalidField("nodes.times",
                          absl::StrCat(" has ", given, " entries for ", req.nodes().ids_size(), " ids; give one time per seed"));
    }
    return std::vector<int64_t>(req.nodes().times().begin(), req.nodes().times().end());
  }
  // Without explicit times the sampler takes the seeds' node times, if it needs any.
  const NodeTypeStore& t = partition.node_type(node_type);
  if (!temporal || t.has_times) return std::vector<int64_t>();
  const char* field = req.has_nodes() ? "nodes.times" : req.has_split() ? "split" : "ablp";
  return InvalidField(field, absl::StrCat(": the backend samples temporally and node type '", t.name,
                                          "' stores no node times (book/", t.name, ".time.npy), so each seed needs its time",
                                          req.has_nodes() ? "" : "; register the seeds as nodes with nodes.times"));
}

absl::StatusOr<RegistrationPlan> PlanRegistration(const RegistrationContext& context,
                                                  const v1::RegisterSamplingInputRequest& req,
                                                  const v1::SamplingConfig& config) {
  RegistrationPlan plan;
  AblpInput ablp;
  auto seeds = ResolveSeeds(context.sources, req, &plan.node_type, &ablp);
  if (!seeds.ok()) return seeds.status();
  plan.seeds = *std::move(seeds);
  auto seed_times = ResolveSeedTimes(*context.sources.partition, req, config, plan.node_type);
  if (!seed_times.ok()) return seed_times.status();
  plan.seed_times = *std::move(seed_times);
  // A link-prediction channel's labeler follows its backend's negative sampling (degree
  // negatives sum a degree array).
  if (req.has_ablp()) {
    NegativeOptions negatives = NegativesOf(config);
    negatives.whole_degree_index_bytes = context.options->whole_degree_index_bytes;
    auto labeler = AblpLabeler::Create(context.sources.partition, std::move(ablp), negatives, context.sources.cluster);
    if (!labeler.ok()) return InField(labeler.status(), "ablp");
    plan.labeler = *std::move(labeler);
  }
  OwnerRowsRule owner_rows;
  owner_rows.asked = req.rows_from_owners();
  owner_rows.shared_memory = req.shared_memory();
  owner_rows.peer_cache_keeps_all = context.peer_cache_keeps_all;
  auto features = context.feature_outputs->ForChannel(req.feature_encoding(), req.feature_cache_rows(), owner_rows);
  if (!features.ok()) return features.status();
  plan.features = *std::move(features);
  return plan;
}

}  // namespace graphstore
