#include "server/sampling/node_times.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "server/sampling/draw.h"
#include "server/sampling/owner_split.h"

namespace graphstore {

absl::Status LookUpNodeTimes(const Partition& partition, int node_type, const int64_t* ids, size_t n,
                             PeerSampling* peers, RemoteCache* cache, int64_t* out) {
  const NodeTypeStore& t = partition.node_type(node_type);
  OwnerSplit<PeerSampling::NodeTimesCall> split;
  // Other partitions' nodes found in the cache (their time written already) stay here.
  int64_t hits = 0;
  auto keep = [&](size_t i) {
    if (cache == nullptr) return false;
    if (i + kPrefetchAhead < n) cache->Prefetch(node_type, ids[i + kPrefetchAhead]);
    const bool found = cache->GetTime(node_type, ids[i], &out[i]);
    hits += found;
    return found;
  };
  absl::Status split_status;
  {
    RemoteCache::LookupPass pass(cache);
    split_status = split.Split(partition, t, ids, n, peers != nullptr, "its time needs", keep);
  }
  if (cache != nullptr) {
    int64_t asked = 0;
    for (const auto& c : split.calls) asked += static_cast<int64_t>(c.ids.size());
    cache->CountLookups(hits, asked);
  }
  if (!split_status.ok()) return split_status;
  auto issue = [&](std::vector<PeerSampling::NodeTimesCall>* calls) { return peers->FetchNodeTimes(t.name, calls); };
  // This partition's nodes while the owners answer for the others: a node's row, then its time.
  auto local = [&] {
    const int64_t* own = t.own_times.data();
    for (size_t i = 0; i < n; ++i) {
      if (i + kPrefetchAhead < n) t.owners.Prefetch(ids[i + kPrefetchAhead]);
      if (split.call_of_item(i) < 0 && !split.kept(i)) out[i] = own[t.OwnerRow(ids[i])];
    }
    return absl::OkStatus();
  };
  auto check = [&](const PeerSampling::NodeTimesCall& c) {
    if (c.times.size() == c.ids.size()) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat("partition ", c.partition, " answered ", c.times.size(), " times of '",
                                            t.name, "' nodes for ", c.ids.size(), " ids"));
  };
  if (auto s = split.Run(issue, local, check); !s.ok()) return s;
  // The owners' answers, each in its call's list order.
  std::vector<size_t> next(split.calls.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const int32_t c = split.call_of_item(i);
    if (c < 0) continue;
    out[i] = split.calls[c].times[next[c]++];
    if (cache != nullptr) cache->PutTime(node_type, ids[i], out[i]);
  }
  return absl::OkStatus();
}

}  // namespace graphstore
