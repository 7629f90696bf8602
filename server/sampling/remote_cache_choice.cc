// RemoteCache's choice of what a budget smaller than the other partitions' data keeps: lookups
// counted (lookup_counts.h) within a share of the budget, announced so that the counts outlive
// every lookup that touches them, then the nodes that save the most bytes per byte kept
// (hot_set.h) published as the stores' indexes, and the counts freed.

#include <algorithm>
#include <array>
#include <limits>
#include <thread>

#include "server/sampling/hot_set.h"
#include "server/sampling/remote_cache.h"
#include "server/sampling/remote_cache_stores.h"

namespace graphstore {

namespace {
// Lookups counted per node counted (of every counting store) before the nodes to keep are chosen.
constexpr int64_t kLookupsPerNode = 4;
// Shares of the budget the counts may take, over the stores that count: a byte a node within
// half, a table within a quarter.
constexpr int64_t kPerNodeShare = 2;
constexpr int64_t kTableShare = 4;
// The cache whose LookupPass this thread holds (its lookups are announced already).
thread_local const RemoteCache* tls_pass = nullptr;
}  // namespace

void RemoteCache::StartCounting(Counting counting) {
  // The stores that can keep something count, within a share of the budget: a byte a node
  // (exact, every node named) where it fits half, else a table within a quarter.
  std::vector<Store*> counting_stores;
  for (auto& t : types_) {
    if (t->row_bytes > 0 || t->values() > 0) counting_stores.push_back(t.get());
  }
  if (lists_on_) {
    for (auto& l : lists_) counting_stores.push_back(l.get());
  }
  const int64_t stores = std::max<int64_t>(1, static_cast<int64_t>(counting_stores.size()));
  for (Store* s : counting_stores) {
    if (counting == Counting::kPerNode ||
        (counting == Counting::kAuto && s->num_nodes <= capacity_ / (kPerNodeShare * stores))) {
      if (Reserve(s->num_nodes)) s->counts.PerNode(s->num_nodes, s->remote);
      continue;
    }
    const int64_t positions = LookupCounts::TablePositions(capacity_ / (kTableShare * stores), s->remote);
    if (Reserve(LookupCounts::TableBytes(positions))) s->counts.Table(positions, s->remote);
  }
}

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

void RemoteCache::Count(const Store& store, int64_t id) const {
  if (!store.counts.on() || choosing_.load(std::memory_order_relaxed)) return;
  // Announced before the counts are touched (by the pass, or here), so that the chooser, which
  // sets choosing_ and then waits for counting_ to fall, frees them only after this lookup.
  const bool announced = tls_pass == this;
  if (!announced) counting_.fetch_add(1, std::memory_order_seq_cst);
  if (!choosing_.load(std::memory_order_seq_cst)) store.counts.Add(id);
  if (!announced) counting_.fetch_sub(1, std::memory_order_release);
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
  auto add = [&](const Store& s) {
    counts |= s.counts.on();
    if (s.counts.looked_up()) enough += kLookupsPerNode * s.counts.candidates();
  };
  for (const auto& t : types_) add(*t);
  for (const auto& l : lists_) add(*l);
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
    s.counts.ForEach([&](int64_t, int count) { ++c.nodes_with_count[count]; });
    candidates.push_back(c);
  };
  for (auto& t : types_) {
    if (!t->counts.on()) continue;
    types.push_back(t.get());
    // A hit saves the row, the label and the time.
    add(*t, static_cast<int64_t>(t->row_bytes) + Index::BytesPerNode(t->values()),
        static_cast<int64_t>(t->row_bytes) + 8 * t->values());
  }
  for (auto& l : lists_) {
    if (!l->counts.on()) continue;
    lists.push_back(l.get());
    // A hit saves at most the list (a draw of fewer neighbours saves less).
    add(*l, l->mean_entries * 8 + Index::BytesPerNode(0), l->mean_entries * 8);
  }
  // The counts' bytes go to what is chosen (their storage is freed once it is published).
  int64_t count_bytes = 0;
  for (const Store* s : types) count_bytes += s->counts.bytes();
  for (const Store* s : lists) count_bytes += s->counts.bytes();
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
  for (Type* t : types) t->counts.Drop();
  for (Lists* l : lists) l->counts.Drop();
  chosen_.store(true, std::memory_order_release);
}

bool RemoteCache::Publish(Store* s, const HotQuota& quota, const std::array<bool, kValues>& values) {
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
    s->counts.ForEach([&](int64_t id, int count) {
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

}  // namespace graphstore
