#ifndef GRAPHSTORE_CLIENT_OWNER_ROWS_H_
#define GRAPHSTORE_CLIENT_OWNER_ROWS_H_

// The rows a batch's assembling server left to their owners (RegisterSamplingInputRequest.
// rows_from_owners): per node type, the nodes NodeTensors.owners gives to another partition
// are asked of that partition's server -- their feature rows in the channel's encoding with
// their labels (GetNodeFeatures), or their labels alone where the trainer's feature cache holds
// the row (GetNodeLabels) -- and written into the decoded batch in node order, as the
// assembling server would have written them. A row so crosses the network once, from its owner.

#include <functional>

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

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_OWNER_ROWS_H_
