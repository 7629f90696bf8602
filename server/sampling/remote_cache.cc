#include "server/sampling/remote_cache.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <thread>

#include "server/sampling/hot_set.h"
#include "server/util/huge_pages.h"
#include "server/util/prefetch.h"

namespace graphstore {

namespace {
// A node's label or time not (yet) kept. (A stored value equal to it is never kept: asked of
// the owner each time, still right.)
constexpr int64_t kNoValue = std::numeric_limits<int64_t>::min();
constexpr int kLabel = 0;
constexpr int kTime = 1;
constexpr int kValues = 2;
constexpr size_t kChunkBytes = HugePageAllocator<char>::kHugePage;
// A list slot's mark for a node whose list is too long to keep.
constexpr int32_t kTooLong = -2;
// Lookups counted per node counted (of every counting store) before the nodes to keep are chosen.
constexpr int64_t kLookupsPerNode = 4;
// The counts take at most a fraction of the budget, shared by the stores that count: a byte a
// node (exact, every node named) where it fits half, else a table within a quarter.
constexpr int64_t kPerNodeShare = 2;
constexpr int64_t kTableShare = 4;
// A count table's word: the count in the top byte, the node's id below (0: an empty position).
constexpr int kCountShift = 56;
constexpr uint64_t kOneCount = uint64_t{1} << kCountShift;
constexpr uint64_t kIdMask = kOneCount - 1;
// Positions a node's count is looked for from its home before it is left uncounted.
constexpr int kCountProbes = 16;
constexpr int64_t kMinCountPositions = 64;
// A count table has two positions per node it can count.
constexpr int64_t kCountPositionsPerNode = 2;

// The cache whose LookupPass this thread holds (its lookups are announced already).
thread_local const RemoteCache* tls_pass = nullptr;

int64_t FloorPow2(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
// A chosen store's table has two positions per kept node.
constexpr int64_t kPositionsPerNode = 2;
}  // namespace

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
  // Lookups counted while choosing (saturating at kMaxHotCount), in one of two forms: a byte per
  // node, or a table of words (count << kCountShift | id) with `count_shift` giving a node's
  // home. Null when everything is kept, when the store does not count, and once chosen.
  std::atomic<std::atomic<uint8_t>*> per_node{nullptr};
  std::atomic<std::atomic<uint64_t>*> table{nullptr};
  int count_shift = 64;
  int64_t count_positions = 0;
  int64_t count_bytes = 0;  // reserved for the counts (0: the store does not count)
  int64_t count_candidates = 0;  // nodes the counts can tell apart (its remote nodes at most)
  mutable std::atomic<bool> looked_up{false};  // a lookup was counted
  HugePageVector<std::atomic<uint8_t>> per_node_storage;
  HugePageVector<std::atomic<uint64_t>> table_storage;

  int64_t CountHome(int64_t id) const {
    return static_cast<int64_t>((static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL) >> count_shift);
  }
  // Each node counted and its count, in id order for a byte per node, else in table order.
  template <typename F>
  void ForEachCount(F&& f) const {
    if (const auto* c = per_node.load(std::memory_order_relaxed)) {
      for (int64_t id = 0; id < num_nodes; ++id) {
        if (const int v = c[id].load(std::memory_order_relaxed); v > 0) f(id, v);
      }
    } else if (const auto* t = table.load(std::memory_order_relaxed)) {
      for (int64_t p = 0; p < count_positions; ++p) {
        const uint64_t w = t[p].load(std::memory_order_relaxed);
        if (w != 0) f(static_cast<int64_t>(w & kIdMask), static_cast<int>(w >> kCountShift));
      }
    }
  }
  // Frees the counts (no lookup counts any more).
  void DropCounts() {
    per_node.store(nullptr, std::memory_order_relaxed);
    table.store(nullptr, std::memory_order_relaxed);
    per_node_storage = HugePageVector<std::atomic<uint8_t>>();
    table_storage = HugePageVector<std::atomic<uint64_t>>();
  }
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
  // Too small for everything: count lookups first, within a share of the budget.
  std::vector<Store*> counting_stores;
  for (auto& t : types_) {
    if (t->row_bytes > 0 || t->values() > 0) counting_stores.push_back(t.get());
  }
  if (lists_on_) {
    for (auto& l : lists_) counting_stores.push_back(l.get());
  }
  const int64_t stores = std::max<int64_t>(1, static_cast<int64_t>(counting_stores.size()));
  const int64_t share = capacity_ / (kTableShare * stores);
  for (Store* s : counting_stores) {
    if (counting == Counting::kPerNode ||
        (counting == Counting::kAuto && s->num_nodes <= capacity_ / (kPerNodeShare * stores))) {
      if (!Reserve(s->num_nodes)) continue;
      s->count_bytes = s->num_nodes;
      s->per_node_storage = HugePageVector<std::atomic<uint8_t>>(static_cast<size_t>(s->num_nodes));
      for (auto& c : s->per_node_storage) c.store(0, std::memory_order_relaxed);
      s->per_node.store(s->per_node_storage.data(), std::memory_order_relaxed);
      s->count_candidates = s->remote;
      continue;
    }
    // A table of as many positions as the share holds (a power of two), no more than twice
    // the remote nodes need.
    int64_t positions = FloorPow2(std::max<int64_t>(kMinCountPositions, share / static_cast<int64_t>(sizeof(uint64_t))));
    while (positions > kMinCountPositions && positions / 2 >= kCountPositionsPerNode * s->remote) positions /= 2;
    const int64_t bytes = positions * static_cast<int64_t>(sizeof(uint64_t));
    if (!Reserve(bytes)) continue;
    s->count_bytes = bytes;
    s->count_positions = positions;
    s->count_shift = 64 - __builtin_ctzll(static_cast<uint64_t>(positions));
    s->table_storage = HugePageVector<std::atomic<uint64_t>>(static_cast<size_t>(positions));
    for (auto& w : s->table_storage) w.store(0, std::memory_order_relaxed);
    s->table.store(s->table_storage.data(), std::memory_order_relaxed);
    s->count_candidates = std::min(s->remote, positions / kCountPositionsPerNode);
  }
}

RemoteCache::~RemoteCache() = default;

RemoteCache::LookupPass::LookupPass(const RemoteCache* cache) : outer_(tls_pass) {
  if (cache == nullptr || tls_pass == cache || cache->chosen()) return;
  cache->counting_.fetch_add(1, std::memory_order_seq_cst);
  cache_ = cache;
  tls_pass = cache;
}

RemoteCache::LookupPass::~LookupPass() {
  if (cache_ == nullptr) return;
  tls_pass = outer_;
  cache_->counting_.fetch_sub(1, std::memory_order_release);
}

bool RemoteCache::Reserve(int64_t n) {
  int64_t cur = bytes_.load(std::memory_order_relaxed);
  while (cur + n <= capacity_) {
    if (bytes_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) return true;
  }
  return false;
}

void RemoteCache::Count(const Store& store, int64_t id) const {
  if (store.count_bytes == 0 || choosing_.load(std::memory_order_relaxed)) return;
  // Announced before the counts are touched (by the pass, or here), so that the chooser, which
  // sets choosing_ and then waits for counting_ to fall, frees them only after this lookup.
  const bool announced = tls_pass == this;
  if (!announced) counting_.fetch_add(1, std::memory_order_seq_cst);
  if (!store.looked_up.load(std::memory_order_relaxed)) store.looked_up.store(true, std::memory_order_relaxed);
  if (!choosing_.load(std::memory_order_seq_cst)) {
    // (Racing writers may lose a count; never more than the saturating bound.)
    if (std::atomic<uint8_t>* counts = store.per_node.load(std::memory_order_relaxed)) {
      std::atomic<uint8_t>& c = counts[id];
      const uint8_t v = c.load(std::memory_order_relaxed);
      if (v < kMaxHotCount) c.store(static_cast<uint8_t>(v + 1), std::memory_order_relaxed);
    } else if (std::atomic<uint64_t>* table = store.table.load(std::memory_order_relaxed)) {
      const int64_t mask = store.count_positions - 1;
      int64_t p = store.CountHome(id);
      for (int probe = 0; probe < kCountProbes; ++probe, p = (p + 1) & mask) {
        std::atomic<uint64_t>& w = table[p];
        uint64_t v = w.load(std::memory_order_relaxed);
        if (v == 0 && w.compare_exchange_strong(v, kOneCount | static_cast<uint64_t>(id), std::memory_order_relaxed)) {
          break;
        }
        // (A failed exchange left the word that won in v: it may be this node's.)
        if ((v & kIdMask) == static_cast<uint64_t>(id)) {
          // The id bits never change once written: a plain store of v plus one keeps them.
          if ((v >> kCountShift) < static_cast<uint64_t>(kMaxHotCount)) w.store(v + kOneCount, std::memory_order_relaxed);
          break;
        }
      }
    }
  }
  if (!announced) counting_.fetch_sub(1, std::memory_order_release);
}

void RemoteCache::PrefetchCount(const Store& store, int64_t id) const {
  // (Counts freed meanwhile leave a prefetch of memory no longer ours: harmless.)
  if (const auto* counts = store.per_node.load(std::memory_order_relaxed)) {
    PrefetchRead(counts + id);
  } else if (const auto* table = store.table.load(std::memory_order_relaxed)) {
    PrefetchRead(table + store.CountHome(id));
  }
}

void RemoteCache::CountLookups(int64_t hits, int64_t misses) {
  hits_.fetch_add(hits, std::memory_order_relaxed);
  misses_.fetch_add(misses, std::memory_order_relaxed);
  Counted(hits + misses);
}

void RemoteCache::CountListLookups(int64_t hits, int64_t misses) {
  list_hits_.fetch_add(hits, std::memory_order_relaxed);
  list_misses_.fetch_add(misses, std::memory_order_relaxed);
  Counted(hits + misses);
}

void RemoteCache::Counted(int64_t lookups) {
  if (chosen_.load(std::memory_order_relaxed)) return;
  const int64_t counted = counted_.fetch_add(lookups, std::memory_order_relaxed) + lookups;
  // Enough once the stores looked up so far have seen kLookupsPerNode per node they can count
  // (a store never looked up, say the rows of a trainer that asks none, does not hold the
  // choice back); at once where no store could count.
  int64_t enough = 0;
  bool counts = false;
  for (const auto& t : types_) {
    counts |= t->count_bytes > 0;
    if (t->looked_up.load(std::memory_order_relaxed)) enough += kLookupsPerNode * t->count_candidates;
  }
  for (const auto& l : lists_) {
    counts |= l->count_bytes > 0;
    if (l->looked_up.load(std::memory_order_relaxed)) enough += kLookupsPerNode * l->count_candidates;
  }
  if (!counts || (enough > 0 && counted >= enough)) Choose();
}

void RemoteCache::Choose() {
  std::lock_guard<std::mutex> choosing(choose_mu_);
  if (chosen_.load(std::memory_order_relaxed)) return;
  // The counts stand still while they are read: no lookup starts counting, and those that
  // started are waited for.
  // (A chooser inside a pass of its own waits for the others alone.)
  choosing_.store(true, std::memory_order_seq_cst);
  const int64_t mine = tls_pass == this ? 1 : 0;
  while (counting_.load(std::memory_order_seq_cst) != mine) std::this_thread::yield();
  // The stores that counted: node types' rows first, then edge types' lists.
  std::vector<Type*> types;
  std::vector<Lists*> lists;
  std::vector<HotCandidates> candidates;
  auto add = [&](const Store& s, int64_t cost, int64_t saves) {
    HotCandidates c;
    c.cost = cost;
    c.saves = saves;
    s.ForEachCount([&](int64_t, int count) { ++c.nodes_with_count[count]; });
    candidates.push_back(c);
  };
  for (auto& t : types_) {
    if (t->count_bytes == 0) continue;
    types.push_back(t.get());
    // A hit saves the row, the label and the time.
    add(*t, static_cast<int64_t>(t->row_bytes) + Index::BytesPerNode(t->values()),
        static_cast<int64_t>(t->row_bytes) + 8 * t->values());
  }
  for (auto& l : lists_) {
    if (l->count_bytes == 0) continue;
    lists.push_back(l.get());
    // A hit saves at most the list (a draw of fewer neighbours saves less).
    add(*l, l->mean_entries * 8 + Index::BytesPerNode(false), l->mean_entries * 8);
  }
  // The counts' bytes go to what is chosen (their storage is freed once it is published).
  int64_t count_bytes = 0;
  for (const Store* s : types) count_bytes += s->count_bytes;
  for (const Store* s : lists) count_bytes += s->count_bytes;
  bytes_.fetch_sub(count_bytes, std::memory_order_relaxed);
  // (Less the tables of stores that keep nothing: a position each.)
  const int64_t empty_tables = static_cast<int64_t>(candidates.size()) * Index::BytesPerNode(kValues);
  const std::vector<HotQuota> quotas = ChooseHotSets(candidates, capacity_ - bytes() - empty_tables);
  for (size_t i = 0; i < types.size(); ++i) {
    Type& t = *types[i];
    const HotQuota& q = quotas[i];
    std::lock_guard<std::mutex> lock(t.mu);
    // One chunk holds the chosen rows.
    t.rows_per_chunk = std::max<int64_t>(1, q.kept);
    t.chunk_bytes = static_cast<size_t>(t.rows_per_chunk) * t.row_bytes;
    t.max_chunks = q.kept > 0 && t.row_bytes > 0 ? 1 : 0;
    t.chunks = std::make_unique<std::atomic<char*>[]>(1);
    t.chunks[0].store(nullptr);
    Publish(&t, q, t.has);
  }
  int64_t lists_kept = 0;
  for (size_t i = 0; i < lists.size(); ++i) {
    Lists& l = *lists[i];
    const HotQuota& q = quotas[types.size() + i];
    std::lock_guard<std::mutex> lock(l.mu);
    // One chunk holds the chosen lists, at the mean length.
    l.chunk_entries = std::clamp<int64_t>(q.kept * l.mean_entries, 1, std::numeric_limits<int32_t>::max());
    l.max_chunks = q.kept > 0 ? 1 : 0;
    l.chunks = std::make_unique<std::atomic<int64_t*>[]>(1);
    l.chunks[0].store(nullptr);
    if (Publish(&l, q, {})) lists_kept += q.kept;
  }
  // Whole lists are asked for until nearly every chosen list has come.
  lists_wanted_.store(lists_kept - lists_kept / 20, std::memory_order_relaxed);
  for (Type* t : types) t->DropCounts();
  for (Lists* l : lists) l->DropCounts();
  chosen_.store(true, std::memory_order_release);
}

bool RemoteCache::Publish(Store* s, const HotQuota& quota, const std::array<bool, 2>& values) {
  auto index = std::make_unique<Index>();
  index->positions = std::max<int64_t>(1, kPositionsPerNode * quota.kept);
  const bool room = Reserve(index->positions * Index::BytesPerNode(values[kLabel] + values[kTime]) / kPositionsPerNode);
  if (!room) index->positions = 1;  // (nothing kept; lookups are no longer counted)
  index->keys.assign(static_cast<size_t>(index->positions), -1);
  index->slot = HugePageVector<std::atomic<int32_t>>(static_cast<size_t>(index->positions));
  for (auto& v : index->slot) v.store(-1, std::memory_order_relaxed);
  for (int k = 0; k < kValues; ++k) {
    if (!values[k]) continue;
    index->value[k] = HugePageVector<std::atomic<int64_t>>(static_cast<size_t>(index->positions));
    for (auto& v : index->value[k]) v.store(kNoValue, std::memory_order_relaxed);
  }
  const bool kept = room && quota.kept > 0;
  if (kept) {
    // Lookups that were under way as counting stopped may have raised a count since the quota
    // was computed: no more than the quota's nodes go in (the table has room for twice that).
    int64_t at_min = quota.at_min;
    int64_t inserted = 0;
    s->ForEachCount([&](int64_t id, int count) {
      if (inserted < quota.kept && quota.Keeps(count, &at_min)) {
        index->Insert(id);
        ++inserted;
      }
    });
  }
  s->index_storage = std::move(index);
  s->index.store(s->index_storage.get(), std::memory_order_release);
  return kept;
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
    PrefetchCount(t, id);
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
    PrefetchCount(l, id);
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
