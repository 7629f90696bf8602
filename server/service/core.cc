#include "server/service/core.h"

#include "server/service/message.h"
#include "server/util/log.h"

namespace graphstore {

Core::Core(std::unique_ptr<Partition> partition, CoreOptions options, std::unique_ptr<SharedMemoryArea> shared_memory)
    : state_(std::move(partition), std::move(options), std::move(shared_memory)) {
  Logger("core")->info("budgets: {} MiB of unread sampled batches, {} worker threads", state_.budget->limit() >> 20,
                       state_.quotas.max_worker_threads());
  if (state_.shared_memory != nullptr) {
    absl::MutexLock lock(&state_.mu);
    Logger("core")->info("shared memory: {} MiB of buffers not freed by clients ({} MiB per channel)",
                         state_.shared_account.limit() >> 20, state_.options.max_unfreed_shared_bytes_per_channel >> 20);
  }
}

Core::~Core() { Shutdown(); }

absl::Status Core::GetDatasetMeta(const v1::GetDatasetMetaRequest& req, v1::DatasetMeta* resp) const {
  state_.queries.FillDatasetMeta(resp);
  if (req.with_feature_ranges()) {
    for (int t = 0; t < static_cast<int>(state_.partition->node_types().size()); ++t) {
      const NodeTypeStore& type = state_.partition->node_type(t);
      if (type.feature_dim == 0 || type.feature_dtype != NpyDtype::kFloat32) continue;
      std::vector<float> min, max;
      if (auto s = state_.feature_outputs.Range(t, &min, &max); !s.ok()) return s;
      auto* r = resp->add_feature_ranges();
      r->set_node_type(type.name);
      SetTensor(v1::DTYPE_FLOAT32, {type.feature_dim}, min.data(), min.size() * 4, r->mutable_min());
      SetTensor(v1::DTYPE_FLOAT32, {type.feature_dim}, max.data(), max.size() * 4, r->mutable_max());
      r->set_num_rows(type.num_nodes);
    }
  }
  if (state_.shared_memory != nullptr) {
    resp->mutable_shared_memory()->set_dir(state_.shared_memory->dir());
    resp->mutable_shared_memory()->set_probe_path(state_.shared_memory->probe_path());
    resp->mutable_shared_memory()->set_probe_token(state_.shared_memory->probe_token());
  }
  absl::MutexLock lock(&state_.mu);
  for (const auto& a : state_.cluster_addresses) resp->add_cluster(a);
  return absl::OkStatus();
}

void Core::SetCluster(Cluster* cluster, std::vector<std::string> addresses) {
  absl::MutexLock lock(&state_.mu);
  state_.cluster_addresses = std::move(addresses);
  if (state_.options.peer_cache_bytes > 0 && state_.remote_cache == nullptr) {
    state_.remote_cache =
        std::make_unique<RemoteCache>(state_.partition.get(), state_.options.peer_cache_bytes, state_.options.peer_cache_lists);
  }
  state_.cluster.store(cluster);
}

}  // namespace graphstore
