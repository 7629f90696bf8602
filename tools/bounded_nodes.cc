#include "tools/bounded_nodes.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"

namespace graphstore {

void IdSet::Rank() {
  rank_.resize(bits_.size());
  count_ = 0;
  for (size_t w = 0; w < bits_.size(); ++w) {
    rank_[w] = count_;
    count_ += __builtin_popcountll(bits_[w]);
  }
  const int64_t full = count_ / 64;
  identity_ = true;
  for (int64_t w = 0; identity_ && w < full; ++w) identity_ = bits_[w] == ~uint64_t{0};
  if (identity_ && count_ % 64 != 0) identity_ = bits_[full] == (uint64_t{1} << (count_ % 64)) - 1;
}

int64_t IdSet::Raw(int64_t gid) const {
  // The word holding it is the last whose count of ids before it is <= gid.
  const size_t w = static_cast<size_t>(std::upper_bound(rank_.begin(), rank_.end(), gid) - rank_.begin()) - 1;
  uint64_t b = bits_[w];
  for (int64_t k = gid - rank_[w]; k > 0; --k) b &= b - 1;
  return static_cast<int64_t>(w * 64 + __builtin_ctzll(b));
}

int64_t IdSet::NextAtOrAfter(int64_t raw) const {
  size_t w = static_cast<size_t>(std::max<int64_t>(raw, 0) >> 6);
  if (w >= bits_.size()) return -1;
  uint64_t b = bits_[w] & (~uint64_t{0} << (std::max<int64_t>(raw, 0) & 63));
  while (b == 0) {
    if (++w == bits_.size()) return -1;
    b = bits_[w];
  }
  return static_cast<int64_t>(w * 64 + __builtin_ctzll(b));
}

int SmallInts::WidthFor(int64_t lo, int64_t hi) {
  if (lo >= 0) {
    if (hi <= std::numeric_limits<uint8_t>::max()) return 1;
    if (hi <= std::numeric_limits<uint16_t>::max()) return 2;
    if (hi <= std::numeric_limits<uint32_t>::max()) return 4;
    return 8;
  }
  if (lo >= std::numeric_limits<int8_t>::min() && hi <= std::numeric_limits<int8_t>::max()) return 1;
  if (lo >= std::numeric_limits<int16_t>::min() && hi <= std::numeric_limits<int16_t>::max()) return 2;
  if (lo >= std::numeric_limits<int32_t>::min() && hi <= std::numeric_limits<int32_t>::max()) return 4;
  return 8;
}

void SmallInts::Reset(int64_t n, int64_t lo, int64_t hi, int64_t fill) {
  width_ = WidthFor(lo, hi);
  const bool is_unsigned = lo >= 0;
  switch (width_) {
    case 1: kind_ = is_unsigned ? Kind::kU8 : Kind::kI8; break;
    case 2: kind_ = is_unsigned ? Kind::kU16 : Kind::kI16; break;
    case 4: kind_ = is_unsigned ? Kind::kU32 : Kind::kI32; break;
    default: kind_ = Kind::kI64; break;
  }
  n_ = n;
  bytes_.assign(static_cast<size_t>(n) * width_, 0);
  if (fill != 0) {
    for (int64_t i = 0; i < n; ++i) Set(i, fill);
  }
}

void SmallInts::Set(int64_t i, int64_t v) {
  uint8_t* p = bytes_.data() + i * width_;
  // Little-endian hosts only (as the npy files): the low bytes of v are the value.
  std::memcpy(p, &v, width_);
}

void SmallInts::Clear() {
  std::vector<uint8_t>().swap(bytes_);
  n_ = 0;
}

int64_t BoundedNodeType::BytesPerNodeAfterAssignment(int owner_width, bool counted) const {
  int64_t bytes = owner_width + (counted ? 4 : 0) + (labels.empty() ? 0 : labels.width());
  bytes += static_cast<int64_t>(feature_row.empty() ? 0 : 8);
  // A bit a split, rounded up to a byte over all of them.
  bytes += static_cast<int64_t>(splits.size() + 7) / 8;
  return bytes;
}

namespace {

// Appends values to a growing .npy a block at a time.
class BlockWriter {
 public:
  static absl::StatusOr<BlockWriter> Create(const std::string& path, NpyDtype dtype) {
    auto w = NpyWriter::Create(path, dtype);
    if (!w.ok()) return w.status();
    return BlockWriter(*std::move(w));
  }
  template <typename T>
  absl::Status Add(T v) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8);
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
    ++rows_;
    return bytes_.size() >= kFlushBytes ? Flush() : absl::OkStatus();
  }
  absl::Status Finish() {
    if (auto s = Flush(); !s.ok()) return s;
    return writer_->Finish();
  }

 private:
  static constexpr size_t kFlushBytes = size_t{1} << 20;
  explicit BlockWriter(std::unique_ptr<NpyWriter> w) : writer_(std::move(w)) {}
  absl::Status Flush() {
    auto s = writer_->Append(bytes_.data(), rows_);
    bytes_.clear();
    rows_ = 0;
    return s;
  }
  std::unique_ptr<NpyWriter> writer_;
  std::vector<uint8_t> bytes_;
  int64_t rows_ = 0;
};

// The whole-graph book files of a type: owners, the column degree and, where ids were remapped,
// the raw ids.
absl::Status WriteBookFiles(const NodeTypeData& meta, const BoundedNodeType& nodes, const std::string& dir) {
  auto owners = BlockWriter::Create(BookFile(dir, meta.name, "partition"), NpyDtype::kInt32);
  if (!owners.ok()) return owners.status();
  for (int64_t gid = 0; gid < meta.num_nodes; ++gid) {
    if (auto s = owners->Add(static_cast<int32_t>(nodes.owner.Get(gid))); !s.ok()) return s;
  }
  if (auto s = owners->Finish(); !s.ok()) return s;
  auto degree = BlockWriter::Create(BookFile(dir, meta.name, "degree"), NpyDtype::kInt64);
  if (!degree.ok()) return degree.status();
  for (int64_t gid = 0; gid < meta.num_nodes; ++gid) {
    const int64_t d = nodes.col_degree.empty() ? 0 : nodes.col_degree[gid];
    if (auto s = degree->Add(d); !s.ok()) return s;
  }
  if (auto s = degree->Finish(); !s.ok()) return s;
  if (nodes.ids.identity()) return absl::OkStatus();
  auto raw = NpyWriter::Create(BookFile(dir, meta.name, "raw_ids"), NpyDtype::kInt64);
  if (!raw.ok()) return raw.status();
  auto s = nodes.ids.ForEachRaw([&](const int64_t* ids, size_t n) { return (*raw)->Append(ids, static_cast<int64_t>(n)); });
  if (!s.ok()) return s;
  return (*raw)->Finish();
}

// The owned nodes' files: ids, features, labels and splits, in one walk of the owners.
absl::Status WriteOwnedFiles(const NodeTypeData& meta, const BoundedNodeType& nodes, int p, const std::string& ndir,
                             const FeatureSource& features, v1::ManifestNodeType* mt) {
  auto ids = NpyWriter::Create(ndir + "/ids.npy", NpyDtype::kInt64);
  if (!ids.ok()) return ids.status();
  std::unique_ptr<FeatureWriter> feats;
  if (features.dim > 0) {
    auto f = FeatureWriter::Start(features, ndir, mt);
    if (!f.ok()) return f.status();
    feats = *std::move(f);
  }
  std::unique_ptr<NpyWriter> labels;
  if (!nodes.labels.empty()) {
    mt->set_has_labels(true);
    mt->set_num_classes(nodes.max_label + 1);
    auto l = NpyWriter::Create(ndir + "/labels.npy", NpyDtype::kInt64);
    if (!l.ok()) return l.status();
    labels = *std::move(l);
  }
  std::vector<std::unique_ptr<NpyWriter>> splits;
  for (const auto& [name, bits] : nodes.splits) {
    mt->add_splits(name);
    auto w = NpyWriter::Create(absl::StrCat(ndir, "/", name, ".npy"), NpyDtype::kInt64);
    if (!w.ok()) return w.status();
    splits.push_back(*std::move(w));
  }
  std::vector<int64_t> column;
  auto s = ForEachOwned(nodes.owner, p, [&](const int64_t* gids, size_t n) -> absl::Status {
    if (auto st = (*ids)->Append(gids, static_cast<int64_t>(n)); !st.ok()) return st;
    if (feats) {
      if (auto st = feats->Add(gids, n); !st.ok()) return st;
    }
    if (labels) {
      column.resize(n);
      for (size_t i = 0; i < n; ++i) column[i] = nodes.labels.Get(gids[i]);
      if (auto st = labels->Append(column.data(), static_cast<int64_t>(n)); !st.ok()) return st;
    }
    size_t k = 0;
    for (const auto& [name, bits] : nodes.splits) {
      column.clear();
      for (size_t i = 0; i < n; ++i) {
        if (bits.Get(gids[i])) column.push_back(gids[i]);
      }
      if (auto st = splits[k++]->Append(column.data(), static_cast<int64_t>(column.size())); !st.ok()) return st;
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (auto st = (*ids)->Finish(); !st.ok()) return st;
  if (feats) {
    if (auto st = feats->Finish(); !st.ok()) return st;
  }
  if (labels) splits.push_back(std::move(labels));
  for (auto& w : splits) {
    if (auto st = w->Finish(); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteBoundedNodeType(const NodeTypeData& meta, const BoundedNodeType& nodes, int p,
                                  const std::string& dir, const FeatureSource& features, v1::PartitionManifest* m) {
  const std::string ndir = NodeDir(dir, meta.name);
  if (auto s = MakeDirs(ndir); !s.ok()) return s;
  int64_t owned = 0;
  for (int64_t gid = 0; gid < meta.num_nodes; ++gid) owned += nodes.owner.Get(gid) == p;
  // The manifest entry's fields in WriteNodeType's order, so that the two agree byte for byte.
  auto* mt = m->add_node_types();
  mt->set_name(meta.name);
  mt->set_num_nodes(meta.num_nodes);
  mt->set_num_local_nodes(owned);
  if (auto s = WriteBookFiles(meta, nodes, dir); !s.ok()) return s;
  mt->set_has_degree(true);
  if (!nodes.ids.identity()) mt->set_has_raw_ids(true);
  return WriteOwnedFiles(meta, nodes, p, ndir, features, mt);
}

}  // namespace graphstore
