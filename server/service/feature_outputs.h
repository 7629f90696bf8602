#ifndef GRAPHSTORE_SERVER_SERVICE_FEATURE_OUTPUTS_H_
#define GRAPHSTORE_SERVER_SERVICE_FEATURE_OUTPUTS_H_

// How channels' feature rows leave the server: the encoding a channel asked for
// (FeatureEncoding) and the rows its trainer caches (feature_cache_rows).
//
// The quantized encodings (INT8, INT4, INT2, INT1) quantize each column over its range in the
// whole graph: nodes/<type>/feature_range.npy when the dataset stores it (graphstore's tools
// always do), else, on a single partition, the range of its own rows, computed once. Every
// server of a cluster therefore encodes with the same scale and offset.
//
// A trainer's cache of k rows of a type holds the k nodes with the highest column degree
// (book/<type>.degree.npy: how often sampling can meet the node), ties by id: a set every server
// computes alike, so each knows which rows of any node — its own or a peer's — the trainer holds.

#include <cstdint>
#include <map>
#include <tuple>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/graph/partition.h"
#include "server/sampling/sampler.h"
#include "server/service/options.h"

namespace graphstore {

/// What decides where a channel that asks for rows_from_owners gets other partitions' rows:
/// FeatureOutputs::ForChannel decides once, and the gather only reads the result
/// (FeatureOutput::rows_from_owners, what ChannelStats reports the server does).
struct OwnerRowsRule {
  /// RegisterSamplingInputRequest.rows_from_owners.
  bool asked = false;
  /// This server's peer cache holds all of the other partitions' data: it sends those rows
  /// itself, and nothing crosses between servers once it is warm.
  bool peer_cache_keeps_all = false;
  /// The channel's batches go through shared memory, whose kept places for the owners' rows
  /// do not combine with a trainer's cache (rows left out of the matrix).
  bool shared_memory = false;
};

/// The feature outputs of one partition's channels. Thread-safe; results are computed once and
/// shared.
class FeatureOutputs {
 public:
  explicit FeatureOutputs(const Partition* partition) : partition_(partition) {}

  /// The output of a channel registering with `encoding`, `cache_rows` and `owner_rows`; null
  /// for the default (as stored, nothing cached, every row gathered). InvalidArgument naming
  /// the request field for a bad encoding or a negative count; FailedPrecondition when the data
  /// does not allow it (encoding features that are not float32, a cache without degree files, a
  /// quantized encoding in a cluster without range files).
  absl::StatusOr<std::shared_ptr<const FeatureOutput>> ForChannel(v1::FeatureEncoding encoding, int64_t cache_rows,
                                                                  OwnerRowsRule owner_rows = {});

  /// What a registration answers about `output` (made by ForChannel with `cache_rows`): this
  /// server's share of each cached type and the quantization parameters.
  void Describe(const FeatureOutput& output, int64_t cache_rows, v1::RegisterSamplingInputResponse* resp) const;

  /// The scale and offset of `bits`-bit codes of a node type with features.
  absl::Status QuantizationParameters(int type, int bits, std::vector<float>* scale, std::vector<float>* offset);

  /// Each column's minimum and maximum over the whole graph (see the file comment).
  absl::Status Range(int type, std::vector<float>* min, std::vector<float>* max);

  /// The `k` nodes of `type` a cache of k rows holds: those of the highest column degree, ties
  /// to the lower id. Ranked in one pass over the degrees keeping the best k (memory for k
  /// nodes, none for the others).
  absl::StatusOr<std::shared_ptr<const HotSet>> HotNodes(int type, int64_t k);

 private:
  const Partition* const partition_;
  std::mutex mu_;
  std::map<int, std::pair<std::vector<float>, std::vector<float>>> ranges_;
  std::map<std::pair<int, int64_t>, std::shared_ptr<const HotSet>> hot_;
  std::map<std::tuple<int, int64_t, bool>, std::shared_ptr<const FeatureOutput>> outputs_;
};

/// The sampling side's name of a wire encoding.
FeatureOutput::Encoding ToEncoding(v1::FeatureEncoding encoding);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_FEATURE_OUTPUTS_H_
