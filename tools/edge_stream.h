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

namespace graphstore {

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
