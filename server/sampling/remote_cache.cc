#include "server/sampling/remote_cache.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "server/sampling/remote_cache_stores.h"
#include "server/util/huge_pages.h"
#include "server/util/prefetch.h"

namespace graphstore {

namespace {
// A list slot's mark for a node whose list is too long to keep.
constexpr int32_t kTooLong = -2;
}  // namespace

RemoteCache::RemoteCache(const Partition* partition, int64_t capacity_bytes, bool lists, Counting counting)
    : capacity_(capacity_bytes), lists_on_(lists && capacity_bytes > 0) {
  // What keeping everything takes: dense indexes, every remote row and label, every remote
  // list at the partition's own mean length, and a chunk's slack per store.
  int64_t all = 0;
  for (const auto& e : partition->edge_types()) {
    auto l = std::make_unique<Lists>();
    const NodeTypeStore& rows = partition->node_type(e.row_type);
    l->num_nodes = rows.num_nodes;
    l->remote = rows.num_nodes - rows.num_local;
    l->mean_entries = 1 + (rows.num_local > 0 ? (e.num_local + rows.num_local - 1) / rows.num_local : 0);
    // Slot values are int32 entry positions.
    l->max_chunks = !lists_on_ ? 0
                               : std::min<int64_t>(capacity_bytes / static_cast<int64_t>(kChunkBytes),
                                                   std::numeric_limits<int32_t>::max() / l->chunk_entries);
    l->chunks = std::make_unique<std::atomic<int64_t*>[]>(std::max<int64_t>(1, l->max_chunks));
    for (int64_t i = 0; i < l->max_chunks; ++i) l->chunks[i].store(nullptr);
    if (lists_on_) all += l->num_nodes * 4 + l->remote * l->mean_entries * 8 + static_cast<int64_t>(kChunkBytes);
    lists_.push_back(std::move(l));
  }
  for (const auto& n : partition->node_types()) {
    auto t = std::make_unique<Type>();
    t->num_nodes = n.num_nodes;
    t->remote = n.num_nodes - n.num_local;
    t->has[kLabel] = n.labels.is_open();
    t->has[kTime] = n.has_times;
    t->row_bytes = static_cast<size_t>(n.feature_dim) * DtypeSize(n.feature_dtype);
    if (t->row_bytes > 0) {
      t->rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / t->row_bytes));
      t->chunk_bytes = std::max(kChunkBytes, static_cast<size_t>(t->rows_per_chunk) * t->row_bytes);
      const int64_t rows = std::min<int64_t>(n.num_nodes, capacity_bytes / static_cast<int64_t>(t->row_bytes));
      t->max_chunks = (rows + t->rows_per_chunk - 1) / t->rows_per_chunk;
      t->chunks = std::make_unique<std::atomic<char*>[]>(t->max_chunks);
      for (int64_t i = 0; i < t->max_chunks; ++i) t->chunks[i].store(nullptr);
    }
    all += t->num_nodes * (4 + 8 * t->values()) + t->remote * static_cast<int64_t>(t->row_bytes + 8) +
           static_cast<int64_t>(kChunkBytes);
    types_.push_back(std::move(t));
  }
  keep_all_ = capacity_ == 0 || capacity_ >= all;
  if (keep_all_) {
    chosen_.store(true);
    lists_wanted_.store(std::numeric_limits<int64_t>::max());
    return;
  }
  // Too small for everything: count lookups first.
  StartCounting(counting);
}

RemoteCache::~RemoteCache() = default;

bool RemoteCache::Reserve(int64_t n) {
  int64_t cur = bytes_.load(std::memory_order_relaxed);
  while (cur + n <= capacity_) {
    if (bytes_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) return true;
  }
  return false;
}

RemoteCache::Index* RemoteCache::WritableIndex(Store* store) {
  if (Index* index = store->index.load(std::memory_order_relaxed)) return index;
  if (!keep_all_ || !Reserve(store->num_nodes * static_cast<int64_t>(sizeof(int32_t)))) return nullptr;
  auto index = std::make_unique<Index>();
  index->positions = store->num_nodes;
  index->slot = HugePageVector<std::atomic<int32_t>>(static_cast<size_t>(store->num_nodes));
  for (auto& s : index->slot) s.store(-1, std::memory_order_relaxed);
  store->index_storage = std::move(index);
  store->index.store(store->index_storage.get(), std::memory_order_release);
  return store->index_storage.get();
}

const char* RemoteCache::FindFeatures(int type, int64_t id) const {
  const Type& t = *types_[type];
  const Index* index = t.index.load(std::memory_order_acquire);
  if (index == nullptr) {
    Count(t, id);
    return nullptr;
  }
  const int64_t p = index->Find(id);
  if (p < 0) return nullptr;
  const int32_t s = index->slot[p].load(std::memory_order_acquire);
  if (s < 0) return nullptr;
  const char* chunk = t.chunks[s / t.rows_per_chunk].load(std::memory_order_relaxed);
  return chunk + static_cast<size_t>(s % t.rows_per_chunk) * t.row_bytes;
}

void RemoteCache::Prefetch(int type, int64_t id) const {
  const Type& t = *types_[type];
  if (const Index* index = t.index.load(std::memory_order_relaxed)) {
    PrefetchRead(index->HomeAddress(id));
  } else {
    t.counts.Prefetch(id);
  }
  if (const auto* labels = t.value[kLabel].load(std::memory_order_relaxed)) PrefetchRead(labels + id);
}

bool RemoteCache::GetFeatures(int type, int64_t id, char* dst) const {
  const char* row = FindFeatures(type, id);
  if (row == nullptr) return false;
  std::memcpy(dst, row, types_[type]->row_bytes);
  return true;
}

void RemoteCache::PutFeatures(int type, int64_t id, const char* row) {
  Type& t = *types_[type];
  if (t.row_bytes == 0 || capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(t.mu);
  Index* index = WritableIndex(&t);
  const int64_t p = index != nullptr ? index->Find(id) : -1;
  if (p < 0) return;
  std::atomic<int32_t>& slot = index->slot[p];
  if (slot.load(std::memory_order_relaxed) >= 0) return;
  const int32_t s = t.next_slot;
  const int64_t chunk = s / t.rows_per_chunk;
  if (chunk >= t.max_chunks) return;
  if (s % t.rows_per_chunk == 0) {
    if (!Reserve(static_cast<int64_t>(t.chunk_bytes))) return;
    t.chunk_storage.emplace_back(t.chunk_bytes);
    t.chunks[chunk].store(t.chunk_storage.back().data(), std::memory_order_relaxed);
  }
  char* dst = t.chunks[chunk].load(std::memory_order_relaxed) + static_cast<size_t>(s % t.rows_per_chunk) * t.row_bytes;
  std::memcpy(dst, row, t.row_bytes);
  ++t.next_slot;
  slot.store(s, std::memory_order_release);  // readers that see the slot see the row
}

const int64_t* RemoteCache::FindList(int edge_type, int64_t id, bool* too_long) const {
  const Lists& l = *lists_[edge_type];
  const Index* index = l.index.load(std::memory_order_acquire);
  *too_long = false;
  if (index == nullptr) {
    Count(l, id);
    return nullptr;
  }
  const int64_t p = index->Find(id);
  const int32_t s = p >= 0 ? index->slot[p].load(std::memory_order_acquire) : -1;
  *too_long = s == kTooLong;
  if (s < 0) return nullptr;
  return l.chunks[s / l.chunk_entries].load(std::memory_order_relaxed) + s % l.chunk_entries;
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
  const Lists& l = *lists_[edge_type];
  if (const Index* index = l.index.load(std::memory_order_relaxed)) {
    PrefetchRead(index->HomeAddress(id));
  } else {
    l.counts.Prefetch(id);
  }
}

void RemoteCache::PutNeighbors(int edge_type, int64_t id, const int64_t* neighbors, int64_t degree) {
  Lists& l = *lists_[edge_type];
  const int64_t entries = degree + 1;
  if (!lists_on_) return;
  std::lock_guard<std::mutex> lock(l.mu);
  // Out of budget: no whole list is worth fetching any more (has_room).
  auto refuse = [this] { lists_full_.store(true, std::memory_order_relaxed); };
  Index* index = WritableIndex(&l);
  if (index == nullptr) {
    if (keep_all_) refuse();
    return;
  }
  const int64_t p = index->Find(id);
  if (p < 0) return;
  std::atomic<int32_t>& slot = index->slot[p];
  if (slot.load(std::memory_order_relaxed) != -1) return;
  auto came = [this] {
    if (!keep_all_) lists_wanted_.fetch_sub(1, std::memory_order_relaxed);
  };
  if (entries > l.chunk_entries) {
    slot.store(kTooLong, std::memory_order_release);
    return came();
  }
  int64_t chunk = l.next / l.chunk_entries;
  int64_t offset = l.next % l.chunk_entries;
  if (offset + entries > l.chunk_entries) ++chunk, offset = 0;  // the rest of this chunk stays unused
  if (chunk >= l.max_chunks) return refuse();
  if (l.chunks[chunk].load(std::memory_order_relaxed) == nullptr) {
    if (!Reserve(l.chunk_entries * static_cast<int64_t>(sizeof(int64_t)))) return refuse();
    l.chunk_storage.emplace_back(static_cast<size_t>(l.chunk_entries));
    l.chunks[chunk].store(l.chunk_storage.back().data(), std::memory_order_relaxed);
  }
  int64_t* list = l.chunks[chunk].load(std::memory_order_relaxed) + offset;
  list[0] = degree;
  std::memcpy(list + 1, neighbors, static_cast<size_t>(degree) * sizeof(int64_t));
  const int64_t position = chunk * l.chunk_entries + offset;
  l.next = position + entries;
  slot.store(static_cast<int32_t>(position), std::memory_order_release);  // readers that see the slot see the list
  came();
}

bool RemoteCache::GetValue(int type, int k, int64_t id, bool count, int64_t* out) const {
  const Type& t = *types_[type];
  int64_t v = kNoValue;
  if (keep_all_) {
    const std::atomic<int64_t>* values = t.value[k].load(std::memory_order_acquire);
    if (values == nullptr) return false;
    v = values[id].load(std::memory_order_relaxed);
  } else if (const Index* index = t.index.load(std::memory_order_acquire)) {
    const int64_t p = index->value[k].empty() ? -1 : index->Find(id);
    if (p >= 0) v = index->value[k][p].load(std::memory_order_relaxed);
  } else if (count) {
    Count(t, id);
  }
  if (v == kNoValue) return false;
  *out = v;
  return true;
}

void RemoteCache::PutValue(int type, int k, int64_t id, int64_t value) {
  Type& t = *types_[type];
  if (capacity_ == 0) return;
  if (!keep_all_) {
    Index* index = t.index.load(std::memory_order_acquire);
    const int64_t p = index != nullptr && !index->value[k].empty() ? index->Find(id) : -1;
    if (p >= 0) index->value[k][p].store(value, std::memory_order_relaxed);
    return;
  }
  if (t.value[k].load(std::memory_order_acquire) == nullptr) {
    std::lock_guard<std::mutex> lock(t.mu);
    if (t.value[k].load(std::memory_order_relaxed) == nullptr) {
      if (!Reserve(t.num_nodes * static_cast<int64_t>(sizeof(int64_t)))) return;
      t.value_storage[k] = HugePageVector<std::atomic<int64_t>>(static_cast<size_t>(t.num_nodes));
      for (auto& v : t.value_storage[k]) v.store(kNoValue, std::memory_order_relaxed);
      t.value[k].store(t.value_storage[k].data(), std::memory_order_release);
    }
  }
  t.value[k].load(std::memory_order_acquire)[id].store(value, std::memory_order_relaxed);
}

bool RemoteCache::GetLabel(int type, int64_t id, int64_t* label) const {
  // (A type with features counts its lookups by row.)
  return GetValue(type, kLabel, id, types_[type]->row_bytes == 0, label);
}

void RemoteCache::PutLabel(int type, int64_t id, int64_t label) { PutValue(type, kLabel, id, label); }

bool RemoteCache::GetTime(int type, int64_t id, int64_t* time) const {
  // (Times are looked up apart from rows and labels: every lookup counts.)
  return GetValue(type, kTime, id, /*count=*/true, time);
}

void RemoteCache::PutTime(int type, int64_t id, int64_t time) { PutValue(type, kTime, id, time); }

}  // namespace graphstore
