#include "server/sampling/remote_cache.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "server/util/huge_pages.h"

namespace graphstore {

namespace {
constexpr int64_t kNoLabel = std::numeric_limits<int64_t>::min();
constexpr size_t kChunkBytes = HugePageAllocator<char>::kHugePage;
// A list slot's mark for a node whose list is too long to keep.
constexpr int32_t kTooLong = -2;
}  // namespace

struct RemoteCache::Type {
  int64_t num_nodes = 0;
  size_t row_bytes = 0;
  std::mutex mu;  // serialises writers of this type
  // Feature rows: slot of each node (-1: absent), rows in chunks that never move. A gather
  // reads cached rows at random, as it reads the partition's own mapped rows: each chunk is one
  // 2 MiB huge page (or a whole row where a row is larger), so a row costs a cache miss and not
  // also a page walk, as the mapped rows do.
  std::atomic<std::atomic<int32_t>*> slot{nullptr};
  HugePageVector<std::atomic<int32_t>> slot_storage;
  std::vector<HugePageVector<char>> chunk_storage;
  std::unique_ptr<std::atomic<char*>[]> chunks;  // max_chunks entries
  int64_t max_chunks = 0;
  int64_t rows_per_chunk = 1;
  int32_t next_slot = 0;
  // Labels: one entry per node (kNoLabel: absent).
  std::atomic<std::atomic<int64_t>*> label{nullptr};
  HugePageVector<std::atomic<int64_t>> label_storage;

  size_t chunk_bytes() const { return std::max(kChunkBytes, static_cast<size_t>(rows_per_chunk) * row_bytes); }
};

// Neighbour lists of one edge type: per node of its row type the position of its list (-1:
// absent) in chunks that never move, where a list is its degree followed by its neighbours and
// never straddles two chunks.
struct RemoteCache::Lists {
  static constexpr int64_t kChunkEntries = static_cast<int64_t>(kChunkBytes / sizeof(int64_t));
  int64_t num_nodes = 0;
  std::mutex mu;  // serialises writers
  std::atomic<std::atomic<int32_t>*> slot{nullptr};
  HugePageVector<std::atomic<int32_t>> slot_storage;
  std::vector<HugePageVector<int64_t>> chunk_storage;
  std::unique_ptr<std::atomic<int64_t*>[]> chunks;  // max_chunks entries
  int64_t max_chunks = 0;
  int64_t next = 0;  // the next free entry: chunk * kChunkEntries + offset
};

RemoteCache::RemoteCache(const Partition* partition, int64_t capacity_bytes, bool lists)
    : capacity_(capacity_bytes), lists_on_(lists && capacity_bytes > 0) {
  for (const auto& e : partition->edge_types()) {
    auto lists = std::make_unique<Lists>();
    lists->num_nodes = partition->node_type(e.row_type).num_nodes;
    // Slot values are int32 entry positions.
    lists->max_chunks = !lists_on_ ? 0
                                   : std::min<int64_t>(capacity_bytes / static_cast<int64_t>(kChunkBytes),
                                                       std::numeric_limits<int32_t>::max() / Lists::kChunkEntries);
    lists->chunks = std::make_unique<std::atomic<int64_t*>[]>(std::max<int64_t>(1, lists->max_chunks));
    for (int64_t i = 0; i < lists->max_chunks; ++i) lists->chunks[i].store(nullptr);
    lists_.push_back(std::move(lists));
  }
  for (const auto& t : partition->node_types()) {
    auto type = std::make_unique<Type>();
    type->num_nodes = t.num_nodes;
    type->row_bytes = static_cast<size_t>(t.feature_dim) * DtypeSize(t.feature_dtype);
    if (type->row_bytes > 0) {
      type->rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / type->row_bytes));
      const int64_t rows = std::min<int64_t>(t.num_nodes, capacity_bytes / static_cast<int64_t>(type->row_bytes));
      type->max_chunks = (rows + type->rows_per_chunk - 1) / type->rows_per_chunk;
      type->chunks = std::make_unique<std::atomic<char*>[]>(type->max_chunks);
      for (int64_t i = 0; i < type->max_chunks; ++i) type->chunks[i].store(nullptr);
    }
    types_.push_back(std::move(type));
  }
}

RemoteCache::~RemoteCache() = default;

bool RemoteCache::Reserve(int64_t n) {
  int64_t cur = bytes_.load(std::memory_order_relaxed);
  while (cur + n <= capacity_) {
    if (bytes_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) return true;
  }
  return false;
}

bool RemoteCache::MakeSlots(int64_t num_nodes, HugePageVector<std::atomic<int32_t>>* storage,
                            std::atomic<std::atomic<int32_t>*>* published) {
  if (published->load(std::memory_order_relaxed) != nullptr) return true;
  if (!Reserve(num_nodes * static_cast<int64_t>(sizeof(int32_t)))) return false;
  *storage = HugePageVector<std::atomic<int32_t>>(static_cast<size_t>(num_nodes));
  for (auto& s : *storage) s.store(-1, std::memory_order_relaxed);
  published->store(storage->data(), std::memory_order_release);
  return true;
}

const char* RemoteCache::FindFeatures(int type, int64_t id) const {
  const Type& t = *types_[type];
  const std::atomic<int32_t>* slots = t.slot.load(std::memory_order_acquire);
  if (slots == nullptr) return nullptr;
  const int32_t s = slots[id].load(std::memory_order_acquire);
  if (s < 0) return nullptr;
  const char* chunk = t.chunks[s / t.rows_per_chunk].load(std::memory_order_relaxed);
  return chunk + static_cast<size_t>(s % t.rows_per_chunk) * t.row_bytes;
}

void RemoteCache::Prefetch(int type, int64_t id) const {
  const Type& t = *types_[type];
  if (const auto* slots = t.slot.load(std::memory_order_relaxed)) __builtin_prefetch(slots + id);
  if (const auto* labels = t.label.load(std::memory_order_relaxed)) __builtin_prefetch(labels + id);
}

bool RemoteCache::GetFeatures(int type, int64_t id, char* dst) const {
  const char* row = FindFeatures(type, id);
  if (row == nullptr) return false;
  std::memcpy(dst, row, types_[type]->row_bytes);
  return true;
}

void RemoteCache::PutFeatures(int type, int64_t id, const char* row) {
  Type& t = *types_[type];
  if (t.row_bytes == 0 || t.max_chunks == 0) return;
  std::lock_guard<std::mutex> lock(t.mu);
  if (!MakeSlots(t.num_nodes, &t.slot_storage, &t.slot)) return;
  std::atomic<int32_t>& slot = t.slot_storage[id];
  if (slot.load(std::memory_order_relaxed) >= 0) return;
  const int32_t s = t.next_slot;
  const int64_t chunk = s / t.rows_per_chunk;
  if (chunk >= t.max_chunks) return;
  if (s % t.rows_per_chunk == 0) {
    if (!Reserve(static_cast<int64_t>(t.chunk_bytes()))) return;
    t.chunk_storage.emplace_back(t.chunk_bytes());
    t.chunks[chunk].store(t.chunk_storage.back().data(), std::memory_order_relaxed);
  }
  char* dst = t.chunks[chunk].load(std::memory_order_relaxed) + static_cast<size_t>(s % t.rows_per_chunk) * t.row_bytes;
  std::memcpy(dst, row, t.row_bytes);
  ++t.next_slot;
  slot.store(s, std::memory_order_release);  // readers that see the slot see the row
}

const int64_t* RemoteCache::FindList(int edge_type, int64_t id, bool* too_long) const {
  const Lists& l = *lists_[edge_type];
  const std::atomic<int32_t>* slots = l.slot.load(std::memory_order_acquire);
  const int32_t s = slots != nullptr ? slots[id].load(std::memory_order_acquire) : -1;
  *too_long = s == kTooLong;
  if (s < 0) return nullptr;
  return l.chunks[s / Lists::kChunkEntries].load(std::memory_order_relaxed) + s % Lists::kChunkEntries;
}

const int64_t* RemoteCache::FindNeighbors(int edge_type, int64_t id, int64_t* degree) const {
  bool too_long = false;
  const int64_t* list = FindList(edge_type, id, &too_long);
  if (list == nullptr) {
    *degree = too_long ? -1 : 0;
    return nullptr;
  }
  *degree = list[0];
  return list + 1;
}

void RemoteCache::PrefetchList(int edge_type, int64_t id) const {
  if (const auto* slots = lists_[edge_type]->slot.load(std::memory_order_relaxed)) __builtin_prefetch(slots + id);
}

void RemoteCache::PutNeighbors(int edge_type, int64_t id, const int64_t* neighbors, int64_t degree) {
  Lists& l = *lists_[edge_type];
  const int64_t entries = degree + 1;
  if (l.max_chunks == 0) return;
  std::lock_guard<std::mutex> lock(l.mu);
  // Out of budget: no whole list is worth fetching any more (has_room).
  auto refuse = [this] { lists_full_.store(true, std::memory_order_relaxed); };
  if (!MakeSlots(l.num_nodes, &l.slot_storage, &l.slot)) return refuse();
  std::atomic<int32_t>& slot = l.slot_storage[id];
  if (slot.load(std::memory_order_relaxed) != -1) return;
  if (entries > Lists::kChunkEntries) {
    slot.store(kTooLong, std::memory_order_release);
    return;
  }
  int64_t chunk = l.next / Lists::kChunkEntries;
  int64_t offset = l.next % Lists::kChunkEntries;
  if (offset + entries > Lists::kChunkEntries) ++chunk, offset = 0;  // the rest of this chunk stays unused
  if (chunk >= l.max_chunks) return refuse();
  if (l.chunks[chunk].load(std::memory_order_relaxed) == nullptr) {
    if (!Reserve(static_cast<int64_t>(kChunkBytes))) return refuse();
    l.chunk_storage.emplace_back(static_cast<size_t>(Lists::kChunkEntries));
    l.chunks[chunk].store(l.chunk_storage.back().data(), std::memory_order_relaxed);
  }
  int64_t* list = l.chunks[chunk].load(std::memory_order_relaxed) + offset;
  list[0] = degree;
  std::memcpy(list + 1, neighbors, static_cast<size_t>(degree) * sizeof(int64_t));
  const int64_t position = chunk * Lists::kChunkEntries + offset;
  l.next = position + entries;
  slot.store(static_cast<int32_t>(position), std::memory_order_release);  // readers that see the slot see the list
}

bool RemoteCache::GetLabel(int type, int64_t id, int64_t* label) const {
  const std::atomic<int64_t>* labels = types_[type]->label.load(std::memory_order_acquire);
  if (labels == nullptr) return false;
  const int64_t v = labels[id].load(std::memory_order_relaxed);
  if (v == kNoLabel) return false;
  *label = v;
  return true;
}

void RemoteCache::PutLabel(int type, int64_t id, int64_t label) {
  Type& t = *types_[type];
  if (t.label.load(std::memory_order_acquire) == nullptr) {
    std::lock_guard<std::mutex> lock(t.mu);
    if (t.label.load(std::memory_order_relaxed) == nullptr) {
      if (!Reserve(t.num_nodes * static_cast<int64_t>(sizeof(int64_t)))) return;
      t.label_storage = HugePageVector<std::atomic<int64_t>>(static_cast<size_t>(t.num_nodes));
      for (auto& l : t.label_storage) l.store(kNoLabel, std::memory_order_relaxed);
      t.label.store(t.label_storage.data(), std::memory_order_release);
    }
  }
  t.label.load(std::memory_order_acquire)[id].store(label, std::memory_order_relaxed);
}

}  // namespace graphstore
