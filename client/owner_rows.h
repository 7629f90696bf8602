#ifndef GRAPHSTORE_CLIENT_OWNER_ROWS_H_
#define GRAPHSTORE_CLIENT_OWNER_ROWS_H_

// The trainer's third stage, rows from their owners. With rows_from_owners
// (RegisterSamplingInputRequest), the server that assembles a batch sends only its own
// partition's rows and labels, and NodeTensors.owners says whose each node is; the others are
// asked of their owners here -- their feature rows in the channel's encoding with their labels
// (GetNodeFeatures), or their labels alone where the trainer's feature cache holds the row
// (GetNodeLabels) -- and written into the batch in node order, as the assembling server would
// have written them. A row so crosses the network once, from its owner.
//
// One OwnerRows serves one batch of one stream, over either transport: Start(nodes) as soon as
// a node type's ids and owners are known (the socket decoder announces them while the rest of
// the batch arrives; a shared-memory batch has them at once), Finish(batch) once the batch is
// whole. Every owner is asked at once, on asynchronous calls (Client::ReadNodeFeaturesAsync):
// no thread is started, and each answer's rows are written where they belong on the thread the
// answer arrives on.

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
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
  /// Told the bytes of each answer partition k sent (rows, labels), on the answer's thread.
  std::function<void(int partition, int64_t bytes)> received;
};

/// The rows and labels one batch left to their owners, asked of them. Thread-compatible: one
/// stream's reader calls it; the answers arrive on the connections' threads.
class OwnerRows {
 public:
  /// `sender` is the partition of the server that sent the batch; `options` outlives this.
  OwnerRows(const OwnerRowsOptions& options, int sender);
  /// Waits for the calls still in flight.
  ~OwnerRows();
  OwnerRows(const OwnerRows&) = delete;
  OwnerRows& operator=(const OwnerRows&) = delete;

  /// Asks the owners for the rows (and labels) of `nodes` that partitions other than the
  /// sender own. `nodes` has its ids and owners whole and its features and labels allocated;
  /// it shares their buffers with the batch, whose rows the answers are written into as they
  /// come (rows the stream does not carry). Labels wait aside until Finish: the batch's own
  /// label tensor may still be on its way. Errors are Finish's to report.
  void Start(const DecodedNodes& nodes);
  /// Asks for the node types of `batch` not started yet, waits for every answer and writes the
  /// owners' labels into the batch. The first error: a failed call names the owner's partition
  /// (UNAVAILABLE while it is down: asking again with a new OwnerRows mends it); DataLoss for an
  /// answer or a batch that does not fit; FailedPrecondition for a partition this loader has no
  /// server for, and for a node type whose tensors changed since Start.
  absl::Status Finish(DecodedBatch* batch);

  /// Node rows asked for (by features or labels alone) and calls made so far.
  int64_t rows_asked() const;
  int64_t calls() const;

 private:
  // One node type: the batch's views, and the labels its owners answered.
  struct Started {
    DecodedNodes nodes;
    std::vector<int64_t> labels;
  };
  // The nodes of one type to ask one owner about: rows (with labels, when the batch has them)
  // and labels alone.
  struct Asks {
    std::vector<size_t> rows, labels;
  };
  void Ask(Started* type);
  // The nodes other partitions own, by owner: DataLoss for an owner that cannot be one.
  absl::Status ByOwner(const DecodedNodes& nodes, std::vector<Asks>* by_owner) const;
  // The calls to `owner` (partition `partition`) for `asks`, answers written into `nodes`.
  void AskOwner(Client* owner, int partition, const Asks& asks, DecodedNodes* nodes);
  // One call's start and end: its completion's status is kept when it is the first error.
  void Begin();
  void Done(const absl::Status& status);

  const OwnerRowsOptions& options_;
  const int sender_;
  std::deque<Started> started_;  // stable addresses: the calls write into them
  mutable absl::Mutex mu_;
  absl::CondVar idle_;
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int64_t rows_asked_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_OWNER_ROWS_H_
