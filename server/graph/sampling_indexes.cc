#include "server/graph/sampling_indexes.h"

// The sampling indexes of an edge type (WeightIndex, TimeRows), built on first use over every
// core.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/util/progress.h"

namespace graphstore {

namespace {

// Index builds run on every core: a partition of a billion edges takes a thread tens of
// seconds. Chunks are given out in turn; each writes only what its own range owns, so the
// index is the same whatever the number of threads. Each chunk done counts its share of
// `progress`'s total (if any).
void RunChunks(const std::vector<int64_t>& bounds, const std::function<void(int64_t, int64_t)>& fn,
               Progress* progress) {
  const int64_t chunks = static_cast<int64_t>(bounds.size()) - 1;
  std::atomic<int64_t> next{0};
  auto run = [&] {
    for (int64_t c; (c = next.fetch_add(1)) < chunks;) {
      fn(bounds[c], bounds[c + 1]);
      if (progress) progress->Add(progress->total() * (c + 1) / chunks - progress->total() * c / chunks);
    }
  };
  const int64_t threads = std::min<int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> helpers;
  for (int64_t t = 1; t < threads; ++t) helpers.emplace_back(run);
  run();
  for (auto& t : helpers) t.join();
}

// How many chunks `work` units make: a few per core, none under kMinChunkWork.
int64_t ChunksFor(int64_t work) {
  constexpr int64_t kMinChunkWork = int64_t{1} << 16;
  const int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<int64_t>(work / kMinChunkWork, 1, 4 * threads);
}

// fn(first, end) over [0, n) in chunks of about equal length.
void ForRanges(int64_t n, const std::function<void(int64_t, int64_t)>& fn, Progress* progress) {
  const int64_t chunks = ChunksFor(n);
  std::vector<int64_t> bounds(static_cast<size_t>(chunks) + 1);
  for (int64_t c = 0; c <= chunks; ++c) bounds[c] = n * c / chunks;
  RunChunks(bounds, fn, progress);
}

// fn(first_row, end_row) over the rows of a CSR in chunks of about equal edges plus rows.
void ForRowRanges(const int64_t* indptr, int64_t rows, const std::function<void(int64_t, int64_t)>& fn,
                  Progress* progress) {
  const int64_t work = indptr[rows] + rows;
  const int64_t chunks = ChunksFor(work);
  std::vector<int64_t> bounds(static_cast<size_t>(chunks) + 1, rows);
  bounds[0] = 0;
  for (int64_t c = 1; c < chunks; ++c) {
    // The first row r with indptr[r] + r >= the chunk's share of the work (non-decreasing in r).
    const int64_t target = work / chunks * c;
    int64_t lo = bounds[c - 1], hi = rows;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (indptr[mid] + mid < target) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    bounds[c] = lo;
  }
  RunChunks(bounds, fn, progress);
}

// Reports the build of an index of a partition's edge type as it goes, and its total (an
// index without a label is not one: nothing is reported).
class BuildLog {
 public:
  BuildLog(const std::string& what, const std::string& label, int64_t edges) {
    if (!label.empty()) progress_.emplace(absl::StrCat("edge type '", label, "': ", what), edges, "edges");
  }
  Progress* progress() { return progress_ ? &*progress_ : nullptr; }

 private:
  std::optional<Progress> progress_;
};

// Scratch of WriteAliasRow, reused from row to row.
struct AliasScratch {
  std::vector<double> scaled;
  std::vector<int32_t> small, large;
};

// Writes the alias table of a row of `d` (1..kAliasMaxDegree) weights `w` to its `cells`
// (WeightIndex::Alias), which start zeroed.
void WriteAliasRow(const float* w, int64_t d, uint32_t* cells, AliasScratch* scratch) {
  const int bits = AliasBits(d);
  // A cell keeps its own position when a uniform draw of `32 - bits` bits falls under its
  // threshold; the largest threshold goes with its own position as alias.
  const double one = std::ldexp(1.0, 32 - bits);
  const uint32_t most = static_cast<uint32_t>(one) - 1;
  auto cell = [&](double keep, int32_t alias) {
    const uint32_t threshold = static_cast<uint32_t>(std::min<double>(std::nearbyint(keep * one), most));
    return threshold << bits | static_cast<uint32_t>(alias);
  };
  auto usable = [](float x) { return x > 0 && std::isfinite(x); };
  double total = 0;
  int32_t heaviest = -1;
  for (int64_t k = 0; k < d; ++k) {
    if (usable(w[k])) {
      total += w[k];
      if (heaviest < 0 || w[k] > w[heaviest]) heaviest = static_cast<int32_t>(k);
    }
  }
  if (!(total > 0)) {
    cells[0] = AliasNone(d);  // nothing to draw
    return;
  }
  // Vose: pair each light position with a heavy one that covers the rest of its cell.
  std::vector<double>& scaled = scratch->scaled;
  std::vector<int32_t>& small = scratch->small;
  std::vector<int32_t>& large = scratch->large;
  scaled.assign(static_cast<size_t>(d), 0.0);
  small.clear();
  large.clear();
  for (int64_t k = 0; k < d; ++k) {
    scaled[k] = usable(w[k]) ? w[k] * static_cast<double>(d) / total : 0.0;
    (scaled[k] < 1.0 ? small : large).push_back(static_cast<int32_t>(k));
  }
  while (!small.empty() && !large.empty()) {
    const int32_t s = small.back();
    small.pop_back();
    const int32_t l = large.back();
    cells[s] = cell(scaled[s], l);
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What rounding leaves keeps its whole cell, unless its weight is zero: then the cell goes
  // to the heaviest position.
  for (const auto* rest : {&small, &large}) {
    for (int32_t k : *rest) cells[k] = usable(w[k]) ? cell(1.0, k) : cell(0.0, heaviest);
  }
}

// Fills a time row (TimeRows::Row) for the row [begin, end) of an edge type's `times`.
void FillTimeRow(int64_t begin, int64_t end, const int64_t* times, TimeRows::Row* row) {
  row->begin = begin;
  row->end = end;
  if (end == begin) return;
  row->oldest = times[begin];
  row->newest = times[end - 1];
  const int64_t d = end - begin;
  const uint64_t span = static_cast<uint64_t>(row->newest) - static_cast<uint64_t>(row->oldest);
  const uint64_t largest = (uint64_t{1} << TimeRows::FenceBits(d)) - 1;
  while ((span >> row->shift) > largest) ++row->shift;
  for (int j = 0; j < TimeRows::Fences(d); ++j) {
    TimeRows::SetFence(row, d, j, TimeRows::Step(*row, times[begin + TimeRows::FencePosition(j + 1, d)]));
  }
}

}  // namespace

const HugePageVector<double>& WeightIndex::GetBlocks(int64_t num_edges, const float* weights) const {
  std::call_once(blocks_once_, [&] {
    BuildLog log("block sums of the weights", label, num_edges);
    const int64_t blocks = (num_edges + kBlock - 1) / kBlock;
    blocks_.assign(static_cast<size_t>(blocks), 0.0);
    ForRanges(blocks, [&](int64_t first, int64_t end) {
      for (int64_t p = first * kBlock; p < std::min(end * kBlock, num_edges); ++p) {
        const float w = weights[p];
        if (w > 0 && std::isfinite(w)) blocks_[p / kBlock] += static_cast<double>(w);
      }
    }, log.progress());
    bytes_.fetch_add(blocks * static_cast<int64_t>(sizeof(double)));
  });
  return blocks_;
}

void WeightIndex::BuildTree(const float* w, int64_t d, double* tree) {
  std::fill(tree, tree + d, 0.0);
  for (int64_t i = 1; i <= d; ++i) {
    const float x = w[i - 1];
    tree[i - 1] += x > 0 && std::isfinite(x) ? static_cast<double>(x) : 0.0;
    const int64_t parent = i + (i & -i);
    if (parent <= d) tree[parent - 1] += tree[i - 1];
  }
}

const WeightIndex::Trees& WeightIndex::GetTrees(const int64_t* indptr, int64_t rows, const float* weights) const {
  std::call_once(trees_once_, [&] {
    int64_t total = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t d = indptr[r + 1] - indptr[r];
      if (d <= kTreeMinDegree) continue;
      trees_.starts.push_back(indptr[r]);
      trees_.offsets.push_back(total);
      total += d;
    }
    if (total == 0) return;
    BuildLog log("Fenwick trees of the rows over 4,096 edges", label, total);
    trees_.sums.resize(static_cast<size_t>(total));
    ForRanges(static_cast<int64_t>(trees_.starts.size()), [&](int64_t first, int64_t end) {
      for (int64_t j = first; j < end; ++j) {
        const int64_t d =
            (j + 1 < static_cast<int64_t>(trees_.offsets.size()) ? trees_.offsets[j + 1] : total) - trees_.offsets[j];
        BuildTree(weights + trees_.starts[j], d, trees_.sums.data() + trees_.offsets[j]);
      }
    }, log.progress());
    bytes_.fetch_add(total * static_cast<int64_t>(sizeof(double)) +
                     static_cast<int64_t>(trees_.starts.size() * 2 * sizeof(int64_t)));
  });
  return trees_;
}

const double* WeightIndex::Trees::Of(int64_t begin) const {
  const auto it = std::lower_bound(starts.begin(), starts.end(), begin);
  if (it == starts.end() || *it != begin) return nullptr;
  return sums.data() + offsets[it - starts.begin()];
}

const HugePageVector<TimeRows::Row>& TimeRows::Get(const int64_t* indptr, int64_t rows, const int64_t* times) const {
  std::call_once(once_, [&] {
    BuildLog log("time rows", label, indptr[rows]);
    rows_.resize(static_cast<size_t>(rows));
    ForRowRanges(indptr, rows, [&](int64_t first, int64_t end) {
      for (int64_t r = first; r < end; ++r) FillTimeRow(indptr[r], indptr[r + 1], times, &rows_[r]);
    }, log.progress());
    bytes_.store(rows * static_cast<int64_t>(sizeof(Row)));
  });
  return rows_;
}

const WeightIndex::Alias& WeightIndex::GetAlias(const int64_t* indptr, int64_t rows, const float* weights) const {
  std::call_once(alias_once_, [&] {
    BuildLog log("alias tables", label, indptr[rows]);
    alias_.cells.assign(static_cast<size_t>(indptr[rows]), 0);
    for (int64_t r = 0; r < rows; ++r) alias_.longest_row = std::max(alias_.longest_row, indptr[r + 1] - indptr[r]);
    ForRowRanges(indptr, rows, [&](int64_t first, int64_t end) {
      AliasScratch scratch;
      for (int64_t r = first; r < end; ++r) {
        const int64_t d = indptr[r + 1] - indptr[r];
        if (d > 0 && d <= kAliasMaxDegree) {
          WriteAliasRow(weights + indptr[r], d, alias_.cells.data() + indptr[r], &scratch);
        }
      }
    }, log.progress());
    bytes_.fetch_add(indptr[rows] * static_cast<int64_t>(sizeof(uint32_t)));
  });
  return alias_;
}

int64_t DegreeIndex::Begin(int64_t n, int parts, int r) {
  return static_cast<int64_t>(static_cast<__int128>(n) * r / parts);
}

const DegreeIndex& DegreeIndex::Get(const int64_t* degree, int64_t n, int parts, int self) const {
  std::call_once(once_, [&] {
    self_ = self;
    range_before_.assign(static_cast<size_t>(parts) + 1, 0);
    int64_t sum = 0;
    for (int r = 0; r < parts; ++r) {
      range_before_[r] = sum;
      for (int64_t i = Begin(n, parts, r); i < Begin(n, parts, r + 1); ++i) sum += degree[i];
    }
    range_before_[parts] = sum;
    first_ = Begin(n, parts, self);
    const int64_t count = Begin(n, parts, self + 1) - first_;
    const int64_t* own = degree + first_;
    int64_t largest = 0;
    for (int64_t i = 0; i < count; ++i) largest = std::max(largest, own[i]);
    width_ = largest <= 0xff ? 1 : largest <= 0xffff ? 2 : largest <= 0xffffffffLL ? 4 : 8;
    before_.resize(static_cast<size_t>((count + kBlock - 1) / kBlock));
    degrees_.resize(static_cast<size_t>(count) * width_);
    sum = range_before_[self];
    for (int64_t i = 0; i < count; ++i) {
      if (i % kBlock == 0) before_[static_cast<size_t>(i / kBlock)] = sum;
      std::memcpy(degrees_.data() + i * width_, &own[i], width_);  // little-endian: the low bytes
      sum += own[i];
    }
    bytes_.store(static_cast<int64_t>((before_.size() + range_before_.size()) * sizeof(int64_t) + degrees_.size()));
  });
  return *this;
}

int DegreeIndex::RangeOf(int64_t u) const {
  // The last range starting at or below u (an empty range before it starts there too).
  return static_cast<int>(std::upper_bound(range_before_.begin(), range_before_.end(), u) - range_before_.begin()) - 1;
}

int64_t DegreeIndex::DegreeOf(int64_t i) const {
  uint64_t d = 0;
  std::memcpy(&d, degrees_.data() + i * width_, width_);
  return static_cast<int64_t>(d);
}

int64_t DegreeIndex::NodeAt(int64_t u) const {
  // The last block starting at or below u holds the node (a later block that also starts at or
  // below u would start past the node's range).
  const size_t b = static_cast<size_t>(std::upper_bound(before_.begin(), before_.end(), u) - before_.begin()) - 1;
  int64_t sum = before_[b];
  int64_t i = static_cast<int64_t>(b) * kBlock;
  for (;; ++i) {
    const int64_t d = DegreeOf(i);
    if (sum + d > u) return first_ + i;
    sum += d;
  }
}

}  // namespace graphstore
