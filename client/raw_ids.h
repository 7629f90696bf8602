#ifndef GRAPHSTORE_CLIENT_RAW_IDS_H_
#define GRAPHSTORE_CLIENT_RAW_IDS_H_

// A dataset's own ids on the trainer. graphstore-partition numbers each node type's nodes 0 ..
// n-1 in ascending order of the ids its input was written with, and keeps those ids in
// book/<type>.raw_ids.npy (DatasetMeta's NodeTypeInfo.has_raw_ids says which types have them).
// Servers speak the dense ids; a loader given the dataset's directory (LoaderOptions::raw_ids)
// takes its seeds in the input's ids and hands out every batch's n_id and seeds in them, by a
// search of the mapped file and a read of it. Nothing is copied into memory: the file is mapped,
// and pages only as far as batches read them.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/buffer_pool.h"
#include "client/host_batch.h"
#include "graphstore/v1/graphstore.pb.h"

namespace graphstore::client {

class RawIds {
 public:
  /// Maps the raw ids of every node type of `meta` that has them, from `dir`: a partition
  /// directory of the dataset (each holds the whole graph's book), its book/ directory, or the
  /// directory holding its part-* directories. NotFound naming the file a type's ids should be
  /// in; DataLoss or InvalidArgument naming a file that is not int64 [num_nodes].
  static absl::StatusOr<RawIds> Open(const std::string& dir, const v1::DatasetMeta& meta);

  /// Whether node type `type` has ids of its own (otherwise its ids are the dense ones).
  bool Has(const std::string& type) const { return types_.count(type) > 0; }
  bool empty() const { return types_.empty(); }

  /// Replaces each of `ids`, of node type `type` in the input's ids, by its dense id.
  /// InvalidArgument naming `field`, the position and the id when one is not in the file.
  absl::Status ToDense(const std::string& type, const std::string& field, std::vector<int64_t>* ids) const;

  /// Every n_id and seeds of the node types with ids of their own, in those ids: new int64
  /// tensors from `pool` (a batch's own may be a shared file). A dense id out of range (which no
  /// server sends) becomes -1.
  void ToRaw(BufferPool* pool, HostBatch* b) const;

 private:
  // One type's file, mapped read-only: `count` int64 ids at `ids`.
  struct Mapped {
    std::string path;
    void* map = nullptr;
    size_t size = 0;
    Mapped() = default;
    Mapped(const Mapped&) = delete;
    Mapped& operator=(const Mapped&) = delete;
    ~Mapped();
  };
  struct Type {
    std::shared_ptr<Mapped> file;
    const int64_t* ids = nullptr;
    int64_t count = 0;
  };
  static absl::StatusOr<Type> Map(const std::string& path, const std::string& type, int64_t num_nodes);
  HostTensor Translate(BufferPool* pool, const Type& t, const HostTensor& dense, HostBatch* b) const;
  std::map<std::string, Type> types_;
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_RAW_IDS_H_
