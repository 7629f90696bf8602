#ifndef GRAPHSTORE_SERVER_SERVICE_CHANNEL_INPUT_H_
#define GRAPHSTORE_SERVER_SERVICE_CHANNEL_INPUT_H_

// What a channel keeps of its input: the global id at each position its batches are cut from.
// Explicit seeds are kept as the list they came in; a node type's every node is a count alone
// (position p is node p); a split of a whole cluster is a set of bits over the node type,
// built once per server and shared by every channel registered on it, so that a registration
// with global batches holds nothing per seed of the whole input.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace graphstore {

/// A set of ids in [0, universe), in ascending order: a bit an id and a running count of the
/// members before each 512 ids, 0.14 bytes an id of the universe whatever the set's size. Built
/// by Add, then Seal; read-only (and thread-safe) after.
class IdSet {
 public:
  explicit IdSet(int64_t universe);

  /// Adds `ids`; an id outside [0, universe) is refused, naming it.
  absl::Status Add(absl::Span<const int64_t> ids);
  /// Counts the members; Select and size are valid from here.
  void Seal();

  int64_t universe() const { return universe_; }
  int64_t size() const { return size_; }
  /// The k-th smallest member, 0 <= k < size().
  int64_t Select(int64_t k) const;
  /// Asks for the memory Select(k) is likely to read, ahead of it.
  void Prefetch(int64_t k) const;
  size_t ByteSize() const;

 private:
  static constexpr int kBlockWords = 8;
  static constexpr int64_t kHintEvery = 4096;

  /// The block Select(k) starts from, and the blocks [lo, hi] that hold member k.
  int64_t GuessBlock(int64_t k, int64_t* lo, int64_t* hi) const;

  int64_t universe_;
  int64_t size_ = 0;
  std::vector<uint64_t> words_;
  /// Members before each block of kBlockWords words.
  std::vector<int64_t> before_;
  /// The block holding member j · kHintEvery, for each j: where Select's search starts.
  std::vector<int64_t> hints_;
};

/// The ids a channel's positions stand for (ChannelSampling::input). Copyable and cheap: a
/// shared set is shared, not copied.
class ChannelInput {
 public:
  ChannelInput() = default;
  /// The given ids, position i standing for ids[i].
  static ChannelInput Listed(std::vector<int64_t> ids);
  /// Every node of a type of `num_nodes`: position p is node p.
  static ChannelInput Every(int64_t num_nodes);
  /// The members of `set` in ascending order.
  static ChannelInput Members(std::shared_ptr<const IdSet> set);

  int64_t size() const { return size_; }
  /// The id at position p, 0 <= p < size().
  int64_t operator[](int64_t p) const;
  /// The ids at `positions[0..n)` into `out`.
  void Ids(const int64_t* positions, size_t n, int64_t* out) const;
  /// Bytes this channel holds alone: its list; 0 for every node and for a shared set (which
  /// InputSets::ByteSize counts once).
  size_t OwnBytes() const { return listed_.size() * sizeof(int64_t); }

 private:
  int64_t size_ = 0;
  bool every_ = false;
  std::vector<int64_t> listed_;
  std::shared_ptr<const IdSet> set_;
};

/// The server's sets of cluster-wide splits, one per (node type, split) while a channel holds
/// it: registrations on a split built before take it as it is. Thread-safe.
class InputSets {
 public:
  /// The set of `split` of `node_type`, built by `build` unless a channel already holds one.
  /// Builds run one at a time, so that channels registering together gather the split once.
  absl::StatusOr<std::shared_ptr<const IdSet>> Get(int node_type, const std::string& split,
                                                   absl::FunctionRef<absl::StatusOr<std::shared_ptr<IdSet>>()> build);
  /// Bytes of the sets channels hold now.
  size_t ByteSize() const;

 private:
  absl::Mutex build_mu_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::pair<int, std::string>, std::weak_ptr<const IdSet>> sets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_CHANNEL_INPUT_H_
