#include "tools/bounded_nodes.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"

namespace graphstore {

void IdSet::SetLimits(int64_t bitmap_words, int64_t run_ids, std::string tmp_dir) {
  bitmap_limit_ = std::max<int64_t>(1, bitmap_words);
  run_ids_ = static_cast<size_t>(std::max<int64_t>(1024, run_ids));
  tmp_dir_ = std::move(tmp_dir);
}

absl::Status IdSet::MarkSparse(int64_t raw) {
  if (!sparse_) {
    // The bitmap's ids become the first of the runs.
    sparse_ = true;
    for (size_t w = 0; w < bits_.size(); ++w) {
      for (uint64_t b = bits_[w]; b != 0; b &= b - 1) {
        run_.push_back(static_cast<int64_t>(w * 64 + __builtin_ctzll(b)));
        if (run_.size() >= run_ids_) {
          if (auto s = Spill(); !s.ok()) return s;
        }
      }
    }
    std::vector<uint64_t>().swap(bits_);
  }
  run_.push_back(raw);
  return run_.size() >= run_ids_ ? Spill() : absl::OkStatus();
}

absl::Status IdSet::Spill() {
  std::sort(run_.begin(), run_.end());
  run_.erase(std::unique(run_.begin(), run_.end()), run_.end());
  const std::string path = absl::StrCat(tmp_dir_, "/graphstore-ids-", ::getpid(), "-", runs_.size(), "-",
                                        reinterpret_cast<uintptr_t>(this), ".bin");
  std::FILE* f = std::fopen(path.c_str(), "w+b");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create (--tmp_dir): ", std::strerror(errno)));
  }
  ::unlink(path.c_str());  // nameless from now on
  runs_.emplace_back(f, [](std::FILE* p) { std::fclose(p); });
  const uint64_t n = run_.size();
  if (std::fwrite(&n, sizeof(n), 1, f) != 1 || std::fwrite(run_.data(), sizeof(int64_t), run_.size(), f) != run_.size()) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": write failed (--tmp_dir full?): ", std::strerror(errno)));
  }
  run_.clear();
  return absl::OkStatus();
}

namespace {

// Reads one spilled run back a block at a time.
struct RunReader {
  std::FILE* file = nullptr;
  uint64_t left = 0;
  std::vector<int64_t> block;
  size_t at = 0;

  absl::Status Open(std::FILE* f, size_t block_ids) {
    file = f;
    block.reserve(block_ids);
    block.resize(0);
    at = 0;
    if (std::fseek(f, 0, SEEK_SET) != 0 || std::fread(&left, sizeof(left), 1, f) != 1) {
      return absl::DataLossError("a spilled run of ids cannot be read back");
    }
    return Fill();
  }
  absl::Status Fill() {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, block.capacity()));
    block.resize(n);
    at = 0;
    if (n > 0 && std::fread(block.data(), sizeof(int64_t), n, file) != n) {
      return absl::DataLossError("a spilled run of ids cannot be read back");
    }
    left -= n;
    return absl::OkStatus();
  }
  bool done() const { return at == block.size(); }
  int64_t head() const { return block[at]; }
  absl::Status Next() { return ++at == block.size() && left > 0 ? Fill() : absl::OkStatus(); }
};

// Calls fn(id) for every distinct id of the sorted runs, ascending.
template <typename Fn>
absl::Status MergeRuns(const std::vector<std::shared_ptr<std::FILE>>& runs, size_t block_ids, Fn fn) {
  std::vector<RunReader> readers(runs.size());
  using Head = std::pair<int64_t, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (size_t r = 0; r < runs.size(); ++r) {
    if (auto s = readers[r].Open(runs[r].get(), block_ids); !s.ok()) return s;
    if (!readers[r].done()) heads.emplace(readers[r].head(), r);
  }
  bool any = false;
  int64_t last = 0;
  while (!heads.empty()) {
    const auto [id, r] = heads.top();
    heads.pop();
    if (!any || id != last) fn(id);
    any = true;
    last = id;
    if (auto s = readers[r].Next(); !s.ok()) return s;
    if (!readers[r].done()) heads.emplace(readers[r].head(), r);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status IdSet::Rank() {
  if (!sparse_) {
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
    return absl::OkStatus();
  }
  // Two merges of the runs: one counts the ids and their range, the other lays them out.
  if (auto s = Spill(); !s.ok()) return s;
  std::vector<int64_t>().swap(run_);
  const size_t block = std::max<size_t>(1024, run_ids_ / (runs_.size() + 1));
  int64_t n = 0, lo = 0, hi = 0;
  auto s = MergeRuns(runs_, block, [&](int64_t id) {
    if (n++ == 0) lo = id;
    hi = id;
  });
  if (!s.ok()) return s;
  ef_.Begin(n, lo, hi);
  s = MergeRuns(runs_, block, [&](int64_t id) { ef_.Add(id); });
  if (!s.ok()) return s;
  ef_.Finish();
  runs_.clear();
  count_ = n;
  identity_ = n == 0 || (lo == 0 && hi == n - 1);
  return absl::OkStatus();
}

int64_t IdSet::Raw(int64_t gid) const {
  if (sparse_) return ef_.At(gid);
  // The word holding it is the last whose count of ids before it is <= gid.
  const size_t w = static_cast<size_t>(std::upper_bound(rank_.begin(), rank_.end(), gid) - rank_.begin()) - 1;
  uint64_t b = bits_[w];
  for (int64_t k = gid - rank_[w]; k > 0; --k) b &= b - 1;
  return static_cast<int64_t>(w * 64 + __builtin_ctzll(b));
}

int64_t IdSet::NextAtOrAfter(int64_t raw) const {
  if (sparse_) {
    const int64_t k = ef_.LowerBound(raw);
    return k < count_ ? ef_.At(k) : -1;
  }
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
