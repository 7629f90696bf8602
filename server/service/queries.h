#ifndef GRAPHSTORE_SERVER_SERVICE_QUERIES_H_
#define GRAPHSTORE_SERVER_SERVICE_QUERIES_H_

// The stateless half of the service: questions answered from the partition alone (metadata,
// partition lookups, ids by split, node and edge data, ABLP input) and the one-hop draw peers
// ask for. Each takes a request and fills a response (TF Serving's *Impl shape); bad requests
// get InvalidArgument / ResourceExhausted / FailedPrecondition naming the field. No gRPC.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/graphstore.pb.h"
#include "server/graph/partition.h"
#include "server/service/counters.h"
#include "server/service/feature_outputs.h"
#include "server/service/options.h"

namespace graphstore {

/// Queries over one partition. Thread-safe.
class PartitionQueries {
 public:
  /// All must outlive the queries; `outputs` encodes GetNodeFeatures' rows when asked to;
  /// `counters`, when given, counts the rows and labels answered.
  PartitionQueries(const Partition* partition, const CoreOptions* options, FeatureOutputs* outputs,
                   ServiceCounters* counters = nullptr)
      : partition_(partition), options_(options), outputs_(outputs), counters_(counters) {}

  /// The partition's part of DatasetMeta: name, partitions, direction, node and edge types.
  void FillDatasetMeta(v1::DatasetMeta* resp) const;
  absl::Status LookupPartitions(const v1::LookupPartitionsRequest& req, v1::LookupPartitionsResponse* resp) const;
  absl::Status GetNodeIds(const v1::GetNodeIdsRequest& req, v1::GetNodeIdsResponse* resp) const;
  absl::Status GetNodeFeatures(const v1::GetNodeFeaturesRequest& req, v1::GetNodeFeaturesResponse* resp) const;
  absl::Status GetNodeLabels(const v1::GetNodeLabelsRequest& req, v1::GetNodeLabelsResponse* resp) const;
  absl::Status GetNodeTimes(const v1::GetNodeTimesRequest& req, v1::GetNodeTimesResponse* resp) const;
  /// The destination nodes at positions of an edge type's running degree sum, in this server's
  /// range of them (DegreeIndex, built here on first use if no channel built it).
  absl::Status FindDegreeNodes(const v1::FindDegreeNodesRequest& req, v1::FindDegreeNodesResponse* resp) const;
  absl::Status GetEdgeFeatures(const v1::GetEdgeFeaturesRequest& req, v1::GetEdgeFeaturesResponse* resp) const;
  absl::Status GetAblpInput(const v1::GetAblpInputRequest& req, v1::GetAblpInputResponse* resp) const;
  /// One hop of neighbour sampling for nodes owned here, drawn exactly as this server's own
  /// sampler would (DrawOwnedNeighbors with the request's draw context).
  absl::Status SampleNeighbors(const v1::SampleNeighborsRequest& req, v1::SampleNeighborsResponse* resp) const;

  /// The owned ids of `split` of `node_type` ("" for every owned node), sliced; errors name
  /// node_type, split and slice (server/util/field.h; a caller nests them with InField).
  absl::StatusOr<std::vector<int64_t>> SplitIds(const std::string& node_type, const std::string& split,
                                                const v1::ServerSlice& slice) const;
  /// OK when every id is a node of `node_type` owned by this partition and there are not too
  /// many; `field` names the ids in errors.
  absl::Status CheckOwnedIds(int node_type, const google::protobuf::RepeatedField<int64_t>& ids,
                             const std::string& field) const;
  /// CheckOwnedIds when `owned`; otherwise only the ids' range and the count (ids of any
  /// partition: a registration with global batches).
  absl::Status CheckIds(int node_type, const google::protobuf::RepeatedField<int64_t>& ids, const std::string& field,
                        bool owned) const;

 private:
  // GetNodeFeatures with an encoding (the rows as a channel with it would get them).
  absl::Status EncodedFeatures(int type, const v1::GetNodeFeaturesRequest& req, v1::GetNodeFeaturesResponse* resp) const;
  // An int64 a node of owned `ids` of `node_type`, `value(row)` each, into `out` in request order.
  template <typename Value>
  absl::Status AnswerOwnedInt64s(int node_type, const google::protobuf::RepeatedField<int64_t>& ids, Value value,
                                 v1::Tensor* out) const;
  // CSR positions of an edge type's edges ordered by global edge id; built on first use.
  const std::vector<int64_t>& EdgePositionsById(int edge_type) const;

  const Partition* const partition_;
  const CoreOptions* const options_;
  FeatureOutputs* const outputs_;
  ServiceCounters* const counters_;
  mutable std::mutex edge_index_mu_;
  mutable std::map<int, std::vector<int64_t>> edge_index_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_QUERIES_H_
