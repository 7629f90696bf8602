#ifndef GRAPHSTORE_SERVER_SAMPLING_ABLP_H_
#define GRAPHSTORE_SERVER_SAMPLING_ABLP_H_

// Anchor-based link prediction (ABLP) over one partition: the anchors of a label split with
// their positive and negative label nodes (GetAblpInput), and what one batch of anchors adds to
// sampling: its label nodes as extra seeds, generated negatives, and the label edges that the
// batch's message passing must not see.
//
// Labels live with the supervision edge type (docs/format.md): edges/<type>/labels_<split>.npy
// holds (anchor, label node) pairs, stored by the partition that owns the anchor.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/graph/partition.h"
#include "server/sampling/peer_sampling.h"

namespace graphstore {

/// What GetAblpInput asks for, in the partition's terms.
struct AblpRequest {
  std::string split;
  /// Anchor node type; "" on a graph with one node type.
  std::string node_type;
  /// "src__rel__dst" with src = the anchor type; "" on a graph with one edge type.
  std::string supervision_edge_type;
  /// Edge type of explicit negatives (same endpoint types); "" for none.
  std::string negative_edge_type;
  /// Slice of the anchors (see SliceRange).
  int rank = 0;
  int world_size = 0;
};

/// The anchors of a split this partition owns, with their label nodes.
struct AblpInput {
  int anchor_type = 0;
  /// Node type of the label nodes: the supervision type's destination type.
  int label_type = 0;
  int supervision_edge_type = 0;
  /// -1 without explicit negatives.
  int negative_edge_type = -1;
  /// Anchors, ascending; anchor i's positives are positives[pos_offsets[i] .. pos_offsets[i+1]),
  /// ascending, and likewise its explicit negatives.
  std::vector<int64_t> anchors;
  std::vector<int64_t> pos_offsets{0};
  std::vector<int64_t> positives;
  std::vector<int64_t> neg_offsets{0};
  std::vector<int64_t> negatives;
  /// Every positive of each anchor in any label split of the supervision type (ascending per
  /// anchor): nodes a generated negative must never be.
  std::vector<int64_t> known_offsets{0};
  std::vector<int64_t> known;

  /// Index of `anchor` in `anchors`, or -1.
  int64_t IndexOf(int64_t anchor) const;
};

/// Reads the input of `req` from the partition's label files. InvalidArgument naming the field
/// (node_type, supervision_edge_type, negative_edge_type, split, slice).
absl::StatusOr<AblpInput> LoadAblpInput(const Partition& partition, const AblpRequest& req);

/// How a batch generates negatives when it has no explicit ones (or wants more).
struct NegativeOptions {
  enum class Kind { kNone, kUniform, kDegree };
  Kind kind = Kind::kNone;
  /// Negatives per anchor.
  int num = 0;
  /// Degree negatives keep the whole degree sum up to this (DegreeIndex::Ranges).
  int64_t whole_degree_index_bytes = 64LL << 20;
};

/// What one batch of anchors adds to sampling.
struct AblpBatch {
  int anchor_type = 0;
  int label_type = 0;
  int supervision_edge_type = 0;
  /// Per batch anchor i: its positives and negatives (explicit first, then generated).
  std::vector<int64_t> pos_offsets;
  std::vector<int64_t> positives;
  std::vector<int64_t> neg_offsets;
  std::vector<int64_t> negatives;
  /// Per edge type of the partition: the (row, column) global id pairs, sorted, that draws of
  /// this batch leave out: each positive label edge of the batch's anchors, in the supervision
  /// type and in its reverse type, in both directions when anchor and label types are the same.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> excluded;
};

/// The reverse edge type of `edge_type`: dst__rev_rel__src (or dst__rel__src for a relation
/// named rev_rel), -1 when the partition has none.
int ReverseEdgeType(const Partition& partition, int edge_type);

/// One ABLP channel's labels and negative sampling. Immutable; shared by the workers.
class AblpLabeler {
 public:
  /// FailedPrecondition when degree-proportional negatives are asked for a type without
  /// degrees, or on one partition of several without `peers` (the cluster's other servers, which
  /// resolve the degree draws in their ranges of destination ids; they outlive the labeler).
  static absl::StatusOr<std::shared_ptr<const AblpLabeler>> Create(const Partition* partition, AblpInput input,
                                                                   NegativeOptions negatives,
                                                                   PeerSampling* peers = nullptr);

  const AblpInput& input() const { return input_; }

  /// Labels and excluded edges of the batch of `anchors` (n of them, each in input().anchors).
  /// Generated negatives are keyed by (seed, epoch, batch, anchor, k): never a known positive of
  /// the anchor, never repeated for one anchor; fewer when the label type has too few nodes.
  /// Degree draws in other servers' ranges are theirs to resolve: UNAVAILABLE naming the peer
  /// when one does not answer.
  absl::Status MakeBatch(const int64_t* anchors, size_t n, uint64_t seed, int64_t epoch, int64_t batch,
                         AblpBatch* out) const;

 private:
  AblpLabeler(const Partition* partition, AblpInput input, NegativeOptions negatives, PeerSampling* peers)
      : partition_(partition), input_(std::move(input)), negatives_(negatives), peers_(peers) {}
  // The generated negatives of the batch's anchors, appended to `drawn` with an offset after
  // each anchor's (`offsets` starts at 0).
  absl::Status DrawNegatives(const int64_t* anchors, size_t n, uint64_t key, std::vector<int64_t>* drawn,
                             std::vector<size_t>* offsets) const;
  // The candidates' nodes: each degree position's node, from this server's index or its range's
  // server (one call per range).
  absl::Status Resolve(const std::vector<int64_t>& positions, std::vector<int64_t>* nodes) const;

  const Partition* partition_;
  AblpInput input_;
  NegativeOptions negatives_;
  PeerSampling* peers_;
  int reverse_edge_type_ = -1;
  /// Degree-proportional negatives: the edge type's shared DegreeIndex (the partition outlives
  /// the labeler); null otherwise.
  const DegreeIndex* degrees_ = nullptr;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_ABLP_H_
