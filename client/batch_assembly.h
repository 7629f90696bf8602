#ifndef GRAPHSTORE_CLIENT_BATCH_ASSEMBLY_H_
#define GRAPHSTORE_CLIENT_BATCH_ASSEMBLY_H_

// The trainer's fourth stage, assemble: a batch that arrived whole (its rows from their owners
// filled in) becomes the HostBatch the trainer receives, viewing the memory it arrived in --
// the pooled buffers a socket stream was decoded into, or a message's slices of a mapped
// shared-memory file. Every tensor is found through client/batch_tensors.h's tables, so both
// transports build the same batch, and the memory the batch views is listed from them too.
// Edge types are keyed by the name messages flow along (the stored type's reverse when the
// dataset stores out-edges), and input_id is mapped to the loader's input where the server
// numbered it in its own. No gRPC, no LibTorch.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/buffer_pool.h"
#include "client/decoded_batch.h"
#include "client/host_batch.h"
#include "client/shared_memory.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

/// What assembling one server's batches needs to know. Outlives the batches' assembly only.
struct AssemblyContext {
  /// Which server (index into LoaderOptions::servers) sent them.
  int server = 0;
  /// The dataset's CSR rows are sources (edge_dir "out"): each edge type is presented under its
  /// reverse name, its edges pointing from the node drawn to the node that drew it.
  bool out_edges = false;
  /// Where a shared-memory message's edge_index is built.
  BufferPool* pool = nullptr;
  /// Whether the seed type's input_ids mean positions in the loader's input (global batches, or
  /// explicit seeds batched per server through `input_index`); else HostBatch::input_id stays
  /// undefined.
  bool input_ids_are_positions = false;
  /// Explicit seeds batched per server: each of this server's seeds' position in the loader's
  /// seeds (the server's input_ids index it); empty otherwise.
  const std::vector<int64_t>* input_index = nullptr;
};

/// A decoded batch (socket) as the trainer receives it. Its tensors keep `decoded`'s buffers.
HostBatch AssembleDecoded(const AssemblyContext& context, std::shared_ptr<const DecodedBatch> decoded);

/// A shared-memory message and its mapped buffer as the trainer receives it. `freed` runs once
/// the batch's last tensor is gone (the server may then reuse the file). DataLoss when a tensor
/// lies outside the buffer.
absl::StatusOr<HostBatch> AssembleShared(const AssemblyContext& context,
                                         std::shared_ptr<const v1::SampledMessage> message,
                                         std::shared_ptr<const MappedBuffer> shared, std::function<void()> freed);

/// The node types of a shared-memory batch whose rows its server left to their owners, as
/// writable views of the places the server kept for them in the mapped file (for
/// client/owner_rows.h); empty when the message left none. DataLoss for a message that leaves
/// rows to owners without places for them.
absl::StatusOr<DecodedBatch> SharedRowsForOwners(const v1::SampledMessage& message, const MappedBuffer* shared,
                                                 const HostBatch& batch);

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_BATCH_ASSEMBLY_H_
