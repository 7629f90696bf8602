#ifndef GRAPHSTORE_SERVER_SAMPLING_OWNER_SPLIT_H_
#define GRAPHSTORE_SERVER_SAMPLING_OWNER_SPLIT_H_

// Every step that crosses partitions (a hop's draw, a feature gather) has the same shape: split
// a list of nodes by owning partition, send each other owner one batched call, do this
// partition's share meanwhile, wait, check the answers, and merge them back in list order.
// OwnerSplit does all of it but the merge, whose shape differs per step.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/peer_sampling.h"

namespace graphstore {

/// A list of nodes of one type split by owner. `Call` is one owner's share (a PeerSampling
/// call type with `partition` and `ids`).
template <typename Call>
class OwnerSplit {
 public:
  /// One call per other owner met, in order of first meeting; each call's ids in list order.
  std::vector<Call> calls;

  /// Splits `ids[0, n)` of `type`: nodes this partition owns, and nodes for which `keep(i)`
  /// returns true (e.g. found in a cache), stay here; the others join their owner's call.
  /// `needs` says what needs the node's server ("sampling it needs"), in the FAILED_PRECONDITION
  /// returned when a node must go to another server and `have_peers` is false. `keep` is not asked about owned nodes.
  template <typename Keep>
  absl::Status Split(const Partition& partition, const NodeTypeStore& type, const int64_t* ids, size_t n,
                     bool have_peers, const char* needs, Keep keep) {
    calls.clear();
    item_call_.assign(n, -1);
    call_of_partition_.assign(partition.num_partitions(), -1);
    const int self = partition.partition_id();
    // Owners lie at random in an array the size of the graph: each is loaded some nodes ahead.
    for (size_t i = 0; i < n; ++i) {
      if (i + kPrefetchAhead < n) type.owners.Prefetch(ids[i + kPrefetchAhead]);
      const int owner = type.Owner(ids[i]);
      if (owner == self) continue;
      if (keep(i)) {
        item_call_[i] = kKept;
        continue;
      }
      if (!have_peers) {
        return absl::FailedPreconditionError(
            absl::StrCat("node ", ids[i], " of type '", type.name, "' is owned by partition ", owner, "; ", needs,
                         " that partition's server (start graphstored with --cluster)"));
      }
      int32_t& c = call_of_partition_[owner];
      if (c < 0) {
        c = static_cast<int32_t>(calls.size());
        calls.emplace_back();
        calls.back().partition = owner;
      }
      calls[c].ids.push_back(ids[i]);
      item_call_[i] = c;
    }
    return absl::OkStatus();
  }

  /// The call node `i` of the list joined, or a negative value when it stays here.
  int32_t call_of_item(size_t i) const { return item_call_[i]; }
  /// Whether node `i`, owned elsewhere, stays here because `keep` said so.
  bool kept(size_t i) const { return item_call_[i] == kKept; }
  /// The call of partition `p`, or -1 when none of its nodes are in the list.
  int32_t call_of_partition(int p) const { return call_of_partition_[p]; }

  /// Starts the calls with `issue(&calls)` (which returns the PeerSampling::Pending), runs
  /// `local()` meanwhile, waits, and checks every answer with `check(call)`. Without calls,
  /// only runs `local()`. Returns the first failure: a peer's, or a check's.
  template <typename Issue, typename Local, typename Check>
  absl::Status Run(Issue issue, Local local, Check check) {
    if (calls.empty()) return local();
    std::unique_ptr<PeerSampling::Pending> pending = issue(&calls);
    absl::Status here = local();
    absl::Status there = pending->Wait();
    if (!here.ok()) return here;
    if (!there.ok()) return there;
    for (const Call& c : calls) {
      if (auto st = check(c); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

 private:
  static constexpr int32_t kKept = -2;
  std::vector<int32_t> item_call_;
  std::vector<int32_t> call_of_partition_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_OWNER_SPLIT_H_
