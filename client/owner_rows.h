#ifndef GRAPHSTORE_CLIENT_OWNER_ROWS_H_
#define GRAPHSTORE_CLIENT_OWNER_ROWS_H_

// The rows a batch's assembling server left to their owners (RegisterSamplingInputRequest.
// rows_from_owners): per node type, the nodes NodeTensors.owners gives to another partition
// are asked of that partition's server -- their feature rows in the channel's encoding with
// their labels (GetNodeFeatures), or their labels alone where the trainer's feature cache holds
// the row (GetNodeLabels) -- and written into the decoded batch in node order, as the
// assembling server would have written them. A row so crosses the network once, from its owner.

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "client/decoded_batch.h"

namespace graphstore::client {

/// Where a batch's left-out rows come from and how they are written.
struct OwnerRowsOptions {
  /// The connection to the server of partition k (null: none).
  std::function<Client*(int)> owner;
  /// The channel's encoding, and whether `x` is handed out decoded to float32.
  v1::FeatureEncoding encoding = v1::FEATURE_ENCODING_UNSPECIFIED;
  bool decode_features = true;
  /// The trainer's feature cache (rows it holds were filled in by the decoder), or null.
  const FeatureCache* cache = nullptr;
};

/// Fills in the rows and labels of `batch`'s nodes that partitions other than `sender` own.
/// A failed call's status names the owner (UNAVAILABLE while it is down: the caller asks again;
/// rows already written are written again); DataLoss for an answer or a batch that does not fit.
absl::Status FetchOwnerRows(const OwnerRowsOptions& options, int sender, DecodedBatch* batch);
/// The same for one node type's nodes.
absl::Status FetchOwnerRows(const OwnerRowsOptions& options, int sender, DecodedNodes* nodes);

/// One node type's rows asked of their owners on a thread of its own while the rest of its
/// batch is still arriving (DecodeOptions::owners_known): the owners' answers are written into
/// the batch's feature rows as they come (rows the stream does not carry), their labels aside.
class OwnerRowsInFlight {
 public:
  /// Starts asking; `nodes` (ids and owners whole, features and labels allocated) shares its
  /// buffers with the batch, and `options` must outlive this.
  OwnerRowsInFlight(const OwnerRowsOptions& options, int sender, const DecodedNodes& nodes);
  /// Waits for the answers.
  ~OwnerRowsInFlight();
  OwnerRowsInFlight(const OwnerRowsInFlight&) = delete;
  OwnerRowsInFlight& operator=(const OwnerRowsInFlight&) = delete;

  const std::string& node_type() const { return nodes_.node_type; }
  /// Waits for the answers and writes their labels into the whole batch's `nodes`. An error is
  /// FetchOwnerRows'; FailedPrecondition when `nodes` is not the node type that was asked about.
  absl::Status Finish(int sender, DecodedNodes* nodes);

 private:
  DecodedNodes nodes_;
  std::vector<int64_t> labels_;
  absl::Status status_;
  std::thread thread_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_OWNER_ROWS_H_
