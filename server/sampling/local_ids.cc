#include "server/sampling/local_ids.h"

namespace graphstore {

void LocalIdMap::Reset(int64_t num_nodes, int64_t dense_nodes) {
  dense_ = num_nodes <= dense_nodes;
  std::vector<int32_t>().swap(array_);
  std::vector<int32_t>().swap(slots_);
  touched_.clear();
  mask_ = 0;
  shift_ = 64;
  if (dense_) array_.assign(static_cast<size_t>(num_nodes), -1);
  SetPrefetch();
}

void LocalIdMap::SetPrefetch() {
  const bool table = !dense_ && !slots_.empty();
  prefetch_base_ = reinterpret_cast<const char*>(dense_ ? array_.data() : slots_.data());
  prefetch_mul_ = dense_ ? 1 : table ? kMix : 0;
  prefetch_shift_ = table ? shift_ : 0;
}

void LocalIdMap::Clear(const std::vector<int64_t>& ids) {
  if (dense_) {
    for (int64_t id : ids) array_[static_cast<size_t>(id)] = -1;
    return;
  }
  for (uint32_t s : touched_) slots_[s] = -1;
  touched_.clear();
}

void LocalIdMap::Grow(const std::vector<int64_t>& ids) {
  const size_t slots = slots_.empty() ? kFirstSlots : 2 * slots_.size();
  std::vector<int32_t> old(slots, -1);
  old.swap(slots_);
  mask_ = slots - 1;
  shift_ = 64 - __builtin_ctzll(slots);
  std::vector<uint32_t> taken;
  taken.swap(touched_);
  touched_.reserve(slots / 2);
  for (uint32_t s : taken) {
    const int32_t local = old[s];
    if (local >= 0) Slot(ids[static_cast<size_t>(local)], ids) = local;
  }
  SetPrefetch();
}

}  // namespace graphstore
