#ifndef GRAPHSTORE_SERVER_GRAPH_PARTITION_H_
#define GRAPHSTORE_SERVER_GRAPH_PARTITION_H_

// One partition of a graph, memory-mapped from its directory and validated on load. This is
// the storage the samplers read; it is immutable after Load and safe to share across threads.
// docs/format.md specifies the directory.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/manifest.pb.h"
#include "server/graph/alias_cells.h"
#include "server/graph/npy.h"
#include "server/util/huge_pages.h"
#include "server/util/progress.h"

namespace graphstore {

/// The arrays of one node type held by a partition.
struct NodeTypeStore {
  std::string name;
  /// Nodes of this type in the whole graph; global ids are 0 .. num_nodes-1.
  int64_t num_nodes = 0;
  /// Nodes owned here (rows of ids, features and labels).
  int64_t num_local = 0;
  int64_t feature_dim = 0;
  NpyDtype feature_dtype = NpyDtype::kFloat32;
  int64_t num_classes = 0;

  MappedNpy ids;       ///< int64 [num_local]: owned global ids, ascending.
  MappedNpy book;      ///< int32 [num_nodes]: owning partition of every global id.
  MappedNpy local;     ///< int64 [num_nodes]: row in the owner's arrays (several partitions only).
  MappedNpy features;  ///< [num_local, feature_dim], when feature_dim > 0.
  /// float32 [2, feature_dim]: each column's min and max over the whole graph, when stored.
  MappedNpy feature_range;
  MappedNpy labels;    ///< int64 [num_local], when the type has labels; -1 means unlabelled.
  MappedNpy raw_ids;   ///< int64 [num_nodes]: input id of every global id, when kept.
  MappedNpy degree;    ///< int64 [num_nodes]: column degree of every global id, when stored.
  MappedNpy times;     ///< int64 [num_nodes]: time of every global id, when stored (temporal).
  std::map<std::string, MappedNpy> splits;  ///< split name -> int64 owned global ids.

  const int64_t* global_ids() const { return ids.data<int64_t>(); }
  /// Node times by global id, or null when the type stores none.
  const int64_t* times_data() const { return times.is_open() ? times.data<int64_t>() : nullptr; }
  /// Owning partition of a global id in [0, num_nodes).
  int32_t Owner(int64_t gid) const { return book.data<int32_t>()[gid]; }
  /// Row of a global id within its owner's arrays (on a single partition, the id itself).
  int64_t OwnerRow(int64_t gid) const {
    return local.is_open() ? local.data<int64_t>()[gid] : gid;
  }
};

/// The CSR of one edge type held by a partition. Rows are this partition's nodes of the row
/// type (the source type for edge_dir "out", the destination type for "in"); indices are
/// global ids of the column type.
/// Indexes of an edge type's weights for weighted draws, built on first use: sums of the
/// weights in blocks (draws without replacement, and from a prefix of a row), Fenwick trees of
/// the longest rows (the same draws, where walking the blocks would take long) and per-row
/// alias tables (independent draws from a whole row). Weights that are not positive and finite
/// count as 0.
class WeightIndex {
 public:
  /// What the index is of (the edge type's name), for the log lines its builds write.
  std::string label;
  /// CSR positions per block of GetBlocks: 16 float weights, one cache line.
  static constexpr int64_t kBlock = 16;
  /// Sums of the usable weights (positive and finite; others count as 0) of the edge type's
  /// `num_edges` CSR positions in aligned blocks: entry b covers positions [16 b, 16 b + 16),
  /// whichever rows they belong to.
  const HugePageVector<double>& GetBlocks(int64_t num_edges, const float* weights) const;

  /// Rows longer than this also get a Fenwick tree (GetTrees).
  static constexpr int64_t kTreeMinDegree = 4096;
  /// The Fenwick trees of the rows longer than kTreeMinDegree, one after another.
  struct Trees {
    std::vector<int64_t> starts;   ///< each such row's first CSR position, ascending
    std::vector<int64_t> offsets;  ///< where its tree begins in `sums`
    HugePageVector<double> sums;
    /// The tree of the row that starts at CSR position `begin`, or null when it has none.
    const double* Of(int64_t begin) const;
  };
  const Trees& GetTrees(const int64_t* indptr, int64_t rows, const float* weights) const;
  /// Writes the Fenwick tree of a row's `d` weights `w` to `tree`: tree[i - 1] is the sum of
  /// the usable weights in (i - lowbit(i), i].
  static void BuildTree(const float* w, int64_t d, double* tree);

  /// Walker's alias tables of the same rows, for independent draws in O(1), one 32-bit cell
  /// per position of a row of up to kAliasMaxDegree edges (alias_cells.h): its low
  /// AliasBits(degree) bits hold the alias (an offset within the row), the bits above them the
  /// threshold under which a uniform draw of as many bits keeps the position itself instead.
  /// Thresholds are rounded to those bits (24 or more for rows of up to 255 edges, 16 or more up
  /// to kAliasMaxDegree); a position kept whole is its own alias, one that cannot be drawn has
  /// threshold 0. A row without a positive weight holds AliasNone(degree) in its first cell.
  /// Longer rows have no table (their independent draws use their Fenwick trees).
  struct Alias {
    HugePageVector<uint32_t> cells;
    int64_t longest_row = 0;  ///< the longest row's degree: over kAliasMaxDegree, trees serve it
  };
  const Alias& GetAlias(const int64_t* indptr, int64_t rows, const float* weights) const;

  /// Bytes of the indexes built so far (each counted once its build is done).
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<int64_t> bytes_{0};
  mutable std::once_flag alias_once_, blocks_once_, trees_once_;
  mutable HugePageVector<double> blocks_;
  mutable Trees trees_;
  mutable Alias alias_;
};

/// Each row's extent, time range and time fences side by side, for temporal draws: one cache
/// line per node tells whether its time reaches the whole row, none of it, or where inside it
/// the cut falls. The fences are the times at evenly spaced offsets, kept as steps above the
/// row's oldest time (shifted right so that the newest fits): fifteen 16-bit steps for rows of
/// up to 16 edges, thirty-one 8-bit steps for longer rows. They give the cut outright for rows
/// of up to 32 edges and otherwise narrow the search to one short stretch of the row's times
/// (whose lines can be fetched ahead); only a time that falls in a fence's own step leaves that
/// fence undecided. Built on first use from an edge type that stores times.
class TimeRows {
 public:
  /// What the index is of (the edge type's name), for the log line its build writes.
  std::string label;
  /// Rows of up to kWideRow edges keep kWideFences 16-bit fences; longer ones kNarrowFences
  /// 8-bit fences, in the same 31 bytes.
  static constexpr int64_t kWideRow = 16;
  static constexpr int kWideFences = 15;
  static constexpr int kNarrowFences = 31;
  struct alignas(64) Row {
    int64_t begin = 0;   ///< CSR position of the row's first edge
    int64_t end = 0;     ///< one past its last
    int64_t oldest = 0;  ///< the row's first edge time (rows are sorted by time); 0 when empty
    int64_t newest = 0;  ///< its last
    /// Fence j (in 0..Fences(degree) - 1) is Step(time at row offset FencePosition(j + 1,
    /// degree)): little-endian at bytes 2j and 2j + 1 for rows of up to kWideRow edges, at byte
    /// j for longer ones.
    uint8_t fences[kNarrowFences] = {};
    uint8_t shift = 0;  ///< the fences' step is 2^shift
  };
  static_assert(sizeof(Row) == 64 && offsetof(Row, fences) == 32);
  /// How many fences a row of `degree` edges keeps, and how many bits each.
  static int Fences(int64_t degree) { return degree <= kWideRow ? kWideFences : kNarrowFences; }
  static int FenceBits(int64_t degree) { return degree <= kWideRow ? 16 : 8; }
  /// Row offset of fence j in 1..Fences(degree) (offset 0 for j = 0, the degree for j =
  /// Fences(degree) + 1).
  static int64_t FencePosition(int j, int64_t degree) { return degree * j / (Fences(degree) + 1); }
  /// The step of time t in a row, for oldest <= t <= newest.
  static uint64_t Step(const Row& row, int64_t t) {
    return (static_cast<uint64_t>(t) - static_cast<uint64_t>(row.oldest)) >> row.shift;
  }
  /// Fence j of a row of `degree` edges, read and written.
  static uint64_t Fence(const Row& row, int64_t degree, int j) {
    if (degree > kWideRow) return row.fences[j];
    return row.fences[2 * j] | static_cast<uint64_t>(row.fences[2 * j + 1]) << 8;
  }
  static void SetFence(Row* row, int64_t degree, int j, uint64_t step) {
    if (degree > kWideRow) {
      row->fences[j] = static_cast<uint8_t>(step);
    } else {
      row->fences[2 * j] = static_cast<uint8_t>(step);
      row->fences[2 * j + 1] = static_cast<uint8_t>(step >> 8);
    }
  }
  /// The stretch [lo, hi) of a row's offsets that a search for time t must read, for
  /// oldest <= t < newest: every offset before lo holds a time <= t, every offset from hi on
  /// (or the row's last) a later one. Empty (lo >= hi) when the fences alone give the cut, lo.
  static std::pair<int64_t, int64_t> SearchRange(const Row& row, int64_t t) {
    const int64_t d = row.end - row.begin;
    const uint64_t step = Step(row, t);
    const int fences = Fences(d);
    // Fences in an earlier step hold earlier times, fences in a later step later ones; a
    // fence in t's own step is undecided unless steps are single time units. The fences rise
    // with their offsets, so those before t's step come first and those after it last: each
    // side is counted by the first fence that leaves it.
    int before = 0, through = 0;
#if defined(__SSE2__)
    // The fence bytes are the line's second half (16-byte aligned), the shift its last byte:
    // compared as signed after flipping their top bits, sixteen bytes or eight 16-bit fences to
    // a register, one mask bit a byte.
    const __m128i low = _mm_load_si128(reinterpret_cast<const __m128i*>(row.fences));
    const __m128i high = _mm_load_si128(reinterpret_cast<const __m128i*>(row.fences + 16));
    auto bits = [](__m128i lo_mask, __m128i hi_mask) {
      return static_cast<uint32_t>(_mm_movemask_epi8(lo_mask)) | static_cast<uint32_t>(_mm_movemask_epi8(hi_mask)) << 16;
    };
    if (d > kWideRow) {
      const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
      const __m128i at = _mm_xor_si128(_mm_set1_epi8(static_cast<char>(step)), flip);
      const __m128i l = _mm_xor_si128(low, flip), h = _mm_xor_si128(high, flip);
      constexpr uint32_t kShiftBit = uint32_t{1} << kNarrowFences;  // the shift byte's mask bit
      before = __builtin_ctz(~bits(_mm_cmplt_epi8(l, at), _mm_cmplt_epi8(h, at)) | kShiftBit);
      through = __builtin_ctz(bits(_mm_cmpgt_epi8(l, at), _mm_cmpgt_epi8(h, at)) | kShiftBit);
    } else {
      const __m128i flip = _mm_set1_epi16(static_cast<int16_t>(0x8000));
      const __m128i at = _mm_xor_si128(_mm_set1_epi16(static_cast<int16_t>(step)), flip);
      const __m128i l = _mm_xor_si128(low, flip), h = _mm_xor_si128(high, flip);
      constexpr uint32_t kPastFences = uint32_t{1} << (2 * kWideFences);  // two bytes a fence; not the last pair
      before = __builtin_ctz(~bits(_mm_cmplt_epi16(l, at), _mm_cmplt_epi16(h, at)) | kPastFences) / 2;
      through = __builtin_ctz(bits(_mm_cmpgt_epi16(l, at), _mm_cmpgt_epi16(h, at)) | kPastFences) / 2;
    }
#else
    while (before < fences && Fence(row, d, before) < step) ++before;
    through = before;
    while (through < fences && Fence(row, d, through) <= step) ++through;
#endif
    if (row.shift == 0) before = through;
    const int64_t lo = FencePosition(before, d) + 1;
    const int64_t hi = through == fences ? d - 1 : FencePosition(through + 1, d);
    return {lo, std::max(lo, hi)};
  }
  const HugePageVector<Row>& Get(const int64_t* indptr, int64_t rows, const int64_t* times) const;

  /// Bytes of the index once built (0 before).
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<int64_t> bytes_{0};
  mutable std::once_flag once_;
  mutable HugePageVector<Row> rows_;
};

struct EdgeTypeStore {
  std::string name;
  int src_type = 0;
  int dst_type = 0;
  int row_type = 0;
  int col_type = 0;
  int64_t num_edges = 0;
  int64_t num_local = 0;
  int64_t feature_dim = 0;
  NpyDtype feature_dtype = NpyDtype::kFloat32;

  MappedNpy indptr;    ///< int64 [rows + 1], indptr[0] == 0, non-decreasing.
  MappedNpy indices;   ///< int64 [num_local]: global ids of the column type.
  MappedNpy edge_ids;  ///< int64 [num_local]: global edge ids, when stored.
  MappedNpy features;  ///< [num_local, feature_dim], when feature_dim > 0.
  MappedNpy weights;   ///< float32 [num_local]: sampling weights (finite, >= 0), when stored.
  /// int64 [num_local]: the time from which each edge may be sampled, when stored; each row is
  /// then sorted by (time, neighbour id, edge id).
  MappedNpy times;
  /// float32 [2, feature_dim]: each column's min and max over the whole graph, when stored.
  MappedNpy feature_range;
  /// Label edges (link prediction): split name -> int64 [k, 2] (src, dst) global ids, sorted,
  /// src owned here.
  std::map<std::string, MappedNpy> label_splits;
  /// int64 [num dst nodes]: each destination node's degree in this type over the whole graph;
  /// open when there are label splits.
  MappedNpy dst_degree;

  const int64_t* indptr_data() const { return indptr.data<int64_t>(); }
  const int64_t* indices_data() const { return indices.data<int64_t>(); }
  /// Sampling weights in CSR order, or null when the type stores none.
  const float* weights_data() const { return weights.is_open() ? weights.data<float>() : nullptr; }
  /// Edge times in CSR order, or null when the type stores none.
  const int64_t* times_data() const { return times.is_open() ? times.data<int64_t>() : nullptr; }
  /// The indexes of the weights (see WeightIndex), built by the first weighted draw.
  std::shared_ptr<WeightIndex> weight_index = std::make_shared<WeightIndex>();
  /// The rows' extents and time ranges (see TimeRows), built by the first temporal draw.
  std::shared_ptr<TimeRows> time_rows = std::make_shared<TimeRows>();
  /// Global edge id of the edge at CSR position `pos`.
  int64_t EdgeId(int64_t pos) const {
    return edge_ids.is_open() ? edge_ids.data<int64_t>()[pos] : pos;
  }
};

/// A loaded partition.
class Partition {
 public:
  /// How much of the data Load checks.
  struct LoadOptions {
    /// Check every CSR index, partition book entry and split id (a linear scan of the files).
    /// Turn off only for data already verified, to start in milliseconds on huge graphs.
    bool verify_contents = true;
  };

  /// Maps and validates the partition in `dir`. Every error names the offending file and the
  /// problem: NotFound for a missing file, DataLoss for malformed or inconsistent contents.
  static absl::StatusOr<std::unique_ptr<Partition>> Load(const std::string& dir,
                                                         const LoadOptions& options);
  static absl::StatusOr<std::unique_ptr<Partition>> Load(const std::string& dir) {
    return Load(dir, LoadOptions());
  }

  const std::string& dir() const { return dir_; }
  const v1::PartitionManifest& manifest() const { return manifest_; }
  int num_partitions() const { return manifest_.num_partitions(); }
  int partition_id() const { return manifest_.partition_id(); }
  /// True when the CSR rows are source nodes (edge_dir "out").
  bool rows_are_sources() const { return manifest_.edge_dir() == "out"; }

  const std::vector<NodeTypeStore>& node_types() const { return nodes_; }
  const std::vector<EdgeTypeStore>& edge_types() const { return edges_; }
  const NodeTypeStore& node_type(int i) const { return nodes_[i]; }
  const EdgeTypeStore& edge_type(int i) const { return edges_[i]; }

  /// Index of a node type by name; "" names the only node type of a homogeneous graph.
  /// InvalidArgument naming the type when unknown or ambiguous.
  absl::StatusOr<int> FindNodeType(const std::string& name) const;
  /// Index of an edge type by "src__rel__dst"; "" names the only edge type.
  absl::StatusOr<int> FindEdgeType(const std::string& name) const;

 private:
  Partition() = default;
  // Loading a type: open and shape-check its files, then (verify) check every entry.
  absl::Status LoadNodeType(int index, Progress* verify);
  absl::Status OpenNodeType(int index);
  absl::Status VerifyNodeType(const NodeTypeStore& t, Progress* progress) const;
  absl::Status LoadEdgeType(int index, Progress* verify);
  absl::Status OpenEdgeType(int index);
  absl::Status CheckIndptr(const EdgeTypeStore& e) const;
  absl::Status VerifyEdgeType(const EdgeTypeStore& e, Progress* progress) const;
  absl::Status VerifyLabelEdges(const EdgeTypeStore& e) const;

  std::string dir_;
  v1::PartitionManifest manifest_;
  std::vector<NodeTypeStore> nodes_;
  std::vector<EdgeTypeStore> edges_;
};

/// Splits `n` items into `world_size` near-equal contiguous pieces; returns piece `rank` as
/// [begin, end). world_size <= 1 is the whole range (GiGL's server slice).
std::pair<int64_t, int64_t> SliceRange(int64_t n, int rank, int world_size);

/// Path helpers for the directory layout (docs/format.md), shared by the loader and writers.
std::string NodeDir(const std::string& dir, const std::string& node_type);
std::string EdgeDir(const std::string& dir, const std::string& edge_type);
std::string BookFile(const std::string& dir, const std::string& node_type, const std::string& what);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_PARTITION_H_
