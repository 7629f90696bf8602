#ifndef GRAPHSTORE_TOOLS_EDGE_STREAM_H_
#define GRAPHSTORE_TOOLS_EDGE_STREAM_H_

// Reads an edge list a chunk at a time, for inputs larger than memory: a text file of "a b"
// lines (the syntax ReadEdgeList takes) or two .npy id arrays "SRC.npy,DST.npy", read with
// pread so that nothing of the file stays resident. Errors name the file and the line (text)
// or the edge (npy) where the input goes wrong.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/graph/npy.h"

namespace graphstore {

/// A file read with pread at any offset, so that nothing of it stays resident.
class ReadOnlyFile {
 public:
  ReadOnlyFile() = default;
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  /// NotFound naming the file when it cannot be opened.
  absl::Status Open(const std::string& path);
  /// Reads exactly `n` bytes at `offset`; DataLoss naming the file and the offset otherwise.
  absl::Status ReadAt(int64_t offset, size_t n, void* out) const;
  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

/// A .npy file read by rows with pread: its header parsed, and its length checked against the
/// header when opened (DataLoss naming the file and the `what` it ends inside, e.g. "id 499").
class NpyFile {
 public:
  absl::Status Open(const std::string& path, const std::string& what);
  /// Reads rows [first, first + n) into `out` (n * row_bytes() bytes).
  absl::Status ReadRows(int64_t first, int64_t n, void* out) const;
  const NpyHeader& header() const { return header_; }
  const std::string& path() const { return file_.path(); }
  /// Rows (shape[0]) and bytes per row.
  int64_t rows() const { return header_.shape.empty() ? 1 : header_.shape[0]; }
  int64_t row_bytes() const { return row_bytes_; }

 private:
  ReadOnlyFile file_;
  NpyHeader header_;
  int64_t row_bytes_ = 0;
};

/// Whether an --edges value names a pair of npy id arrays ("SRC.npy,DST.npy").
bool IsNpyPair(const std::string& path);

class EdgeStream {
 public:
  virtual ~EdgeStream() = default;

  /// Opens `path` as graphstore-partition's --edges names it; `swap_columns` reads text lines
  /// as "dst src". NotFound for a missing file, DataLoss for a truncated npy, InvalidArgument
  /// for npy arrays of other dtypes or of different lengths.
  static absl::StatusOr<std::unique_ptr<EdgeStream>> Open(const std::string& path, bool swap_columns);

  /// Reads up to `max_edges` more edges into `src` and `dst` (replacing their contents); an
  /// empty chunk at the end. The first edge of the chunk has index `position()` before the call.
  virtual absl::Status Next(size_t max_edges, std::vector<int64_t>* src, std::vector<int64_t>* dst) = 0;
  /// Starts again from the first edge.
  virtual absl::Status Rewind() = 0;
  /// Edges read so far.
  int64_t position() const { return position_; }
  /// Bytes of the input, for progress.
  virtual int64_t size_bytes() const = 0;
  /// Bytes read so far.
  virtual int64_t bytes_read() const = 0;

 protected:
  int64_t position_ = 0;
};

/// Calls `fn(src, dst, first_edge, n)` for each chunk of up to `chunk` edges of `stream`, from
/// its start; stops at the first error, of the stream or of `fn`.
template <typename Fn>
absl::Status ForEachChunk(EdgeStream* stream, size_t chunk, Fn fn) {
  if (auto s = stream->Rewind(); !s.ok()) return s;
  std::vector<int64_t> src, dst;
  for (;;) {
    const int64_t first = stream->position();
    if (auto s = stream->Next(chunk, &src, &dst); !s.ok()) return s;
    if (src.empty()) return absl::OkStatus();
    if (auto s = fn(src.data(), dst.data(), first, src.size()); !s.ok()) return s;
  }
}

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_EDGE_STREAM_H_
