#ifndef GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_STORES_H_
#define GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_STORES_H_

// What RemoteCache keeps per node type (feature rows, labels, times) and per edge type
// (neighbour lists), shared by its two sources: remote_cache.cc keeps and finds entries,
// remote_cache_choice.cc counts lookups and chooses what a small budget keeps. Not for other
// users.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "server/sampling/lookup_counts.h"
#include "server/sampling/remote_cache.h"
#include "server/util/huge_pages.h"

namespace graphstore {
// Where each kept node's entry lies: a dense array over the graph's ids when everything is
// kept, else an open-addressing table of the chosen ids (with their labels and times). Fixed
// once published.
struct RemoteCache::Index {
  int64_t positions = 0;
  HugePageVector<int64_t> keys;               // table only: the node at each position (-1: none)
  HugePageVector<std::atomic<int32_t>> slot;  // per position: the entry's slot (-1: absent)
  // Table only, of a type with labels (kLabel) or node times (kTime): per position.
  std::array<HugePageVector<std::atomic<int64_t>>, kValues> value;

  // A kept node's bytes in a table with `values` labels and times a position.
  static int64_t BytesPerNode(int values) {
    return kPositionsPerNode * static_cast<int64_t>(sizeof(int64_t) + sizeof(int32_t) + values * sizeof(int64_t));
  }
  bool table() const { return !keys.empty(); }
  int64_t Home(int64_t id) const {
    const uint64_t h = static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL;
    return static_cast<int64_t>((static_cast<unsigned __int128>(h) * static_cast<uint64_t>(positions)) >> 64);
  }
  // The position of node `id`, or -1 when it is not kept.
  int64_t Find(int64_t id) const {
    if (!table()) return id;
    for (int64_t p = Home(id);; p = p + 1 == positions ? 0 : p + 1) {
      const int64_t k = keys[p];
      if (k == id) return p;
      if (k < 0) return -1;
    }
  }
  void Insert(int64_t id) {
    int64_t p = Home(id);
    while (keys[p] >= 0) p = p + 1 == positions ? 0 : p + 1;
    keys[p] = id;
  }
  const void* HomeAddress(int64_t id) const {
    return table() ? static_cast<const void*>(&keys[Home(id)]) : static_cast<const void*>(&slot[id]);
  }
};

// What the rows of a node type and the lists of an edge type share: the index, the lookup
// counts while choosing, and the writers' lock.
struct RemoteCache::Store {
  int64_t num_nodes = 0;
  int64_t remote = 0;  // nodes owned by other partitions
  std::mutex mu;       // serialises writers
  std::atomic<Index*> index{nullptr};
  std::unique_ptr<Index> index_storage;
  LookupCounts counts;  // off when everything is kept and when the store does not count
};

struct RemoteCache::Type : Store {
  size_t row_bytes = 0;
  std::array<bool, kValues> has{};  // labels, node times
  int values() const { return has[kLabel] + has[kTime]; }
  // Feature rows in chunks that never move. When everything is kept, each chunk is one 2 MiB
  // huge page (or a whole row where a row is larger), so that a row costs a cache miss and not
  // also a page walk, as the mapped rows do; else one chunk holds the chosen rows.
  std::vector<HugePageVector<char>> chunk_storage;
  std::unique_ptr<std::atomic<char*>[]> chunks;  // max_chunks entries
  int64_t max_chunks = 0;
  int64_t rows_per_chunk = 1;
  size_t chunk_bytes = 0;
  int32_t next_slot = 0;
  // Labels and times when everything is kept: one entry per node (kNoValue: absent).
  std::array<std::atomic<std::atomic<int64_t>*>, kValues> value{};
  std::array<HugePageVector<std::atomic<int64_t>>, kValues> value_storage;
};

// Neighbour lists of one edge type in chunks that never move: each list is its degree followed
// by its neighbours, and never straddles two chunks.
struct RemoteCache::Lists : Store {
  int64_t chunk_entries = static_cast<int64_t>(kChunkBytes / sizeof(int64_t));
  std::vector<HugePageVector<int64_t>> chunk_storage;
  std::unique_ptr<std::atomic<int64_t*>[]> chunks;  // max_chunks entries
  int64_t max_chunks = 0;
  int64_t next = 0;  // the next free entry: chunk * chunk_entries + offset
  int64_t mean_entries = 1;  // of the partition's own lists, with their degree
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_REMOTE_CACHE_STORES_H_
