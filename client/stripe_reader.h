#ifndef GRAPHSTORE_CLIENT_STRIPE_READER_H_
#define GRAPHSTORE_CLIENT_STRIPE_READER_H_

// The trainer's first stage, read the stream, and the one that walks a batch through the rest.
// A StripeReader reads one stream of one server's channel (one stripe of its batches) on a
// thread of its own, and takes each batch through the stages in order:
//
//   1. read the stream     Client::StreamBatches / Client::Stream, opened here
//   2. decode              client/wire_decoder.h, as the bytes arrive (socket), or
//                          client/shared_memory.h, mapping the message's buffer
//   3. rows from owners    client/owner_rows.h: started as the decoder names a type's owners,
//                          finished once the batch is whole
//   4. assemble            client/batch_assembly.h: the HostBatch the trainer receives
//   5. deliver in order    client/channel_progress.h (each batch once), client/delivery.h
//
// A failed stream or owner is taken up by client/recovery.h; a resumed stream starts from the
// first batch the trainer lacks, and what it sends again is dropped. No LibTorch.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/batch_assembly.h"
#include "client/channel_progress.h"
#include "client/delivery.h"
#include "client/host_batch.h"
#include "client/owner_rows.h"
#include "client/recovery.h"
#include "client/server_link.h"
#include "client/wire_decoder.h"

namespace graphstore::client {

/// What a reader reads and where its batches go; everything pointed to outlives the reader.
struct StripeContext {
  ServerLink* link = nullptr;
  int server = 0;       // index into LoaderOptions::servers: the partition it serves
  int stripe = 0;       // of link->streams
  int64_t epoch = 0;
  /// How the epoch's socket batches are decoded; rows left to their owners are asked for when
  /// `owner_rows` is set.
  DecodeOptions decode;
  const OwnerRowsOptions* owner_rows = nullptr;
  AssemblyContext assembly;
  ChannelProgress* progress = nullptr;
  Delivery* delivery = nullptr;
  Recovery* recovery = nullptr;
  /// A call's deadline: how long a stream the server still holds is opened again.
  std::chrono::milliseconds deadline{30000};
};

/// One stream's reader. Start once; Cancel and Join from the loader's thread.
class StripeReader {
 public:
  explicit StripeReader(StripeContext context) : c_(std::move(context)) {}
  ~StripeReader();
  StripeReader(const StripeReader&) = delete;
  StripeReader& operator=(const StripeReader&) = delete;

  /// Opens the stream at the channel's batch `from` and starts reading it on a thread of its own.
  void Start(int64_t from);
  /// Cancels the open stream: the reader's wait for it ends (its thread then stops, as the
  /// delivery was told to stop before).
  void Cancel();
  void Join();

 private:
  // Opens (again) the stream from epoch batch `from`; CANCELLED once the readers stop.
  absl::Status Open(int64_t from);
  void Run();
  // One read of the stream: a batch, nullopt with OK at its end, or the failure.
  std::optional<HostBatch> ReadOne(absl::Status* status);
  std::optional<HostBatch> ReadShared(MessageStream* stream, absl::Status* status);
  std::optional<HostBatch> ReadDecoded(BatchStream* stream, absl::Status* status);
  // Finishes the rows of `batch` left to their owners, asked again while that fails.
  absl::Status RowsFromOwners(std::unique_ptr<OwnerRows> started, DecodedBatch* batch);

  const StripeContext c_;
  // The channel the open stream reads (the link's, until another stripe registers it again).
  std::atomic<uint64_t> opened_channel_{0};
  std::thread thread_;
  absl::Mutex mu_;
  std::unique_ptr<MessageStream> messages_ ABSL_GUARDED_BY(mu_);  // shared memory
  std::unique_ptr<BatchStream> batches_ ABSL_GUARDED_BY(mu_);     // socket
  // The owners asked about the batch being decoded (the reader's thread only: the decoder runs
  // on it, inside BatchStream::Next).
  std::unique_ptr<OwnerRows> owner_rows_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_STRIPE_READER_H_
