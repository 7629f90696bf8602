#ifndef GRAPHSTORE_SERVER_GRAPH_NPY_H_
#define GRAPHSTORE_SERVER_GRAPH_NPY_H_

// NumPy .npy files: a read-only memory mapping with header validation, and a streaming writer.
//
// Byte layout (format versions 1.0, 2.0 and 3.0 are read; 1.0 is written):
//   bytes 0..5   magic "\x93NUMPY"
//   byte  6, 7   major, minor version
//   next 2 (v1) or 4 (v2, v3) bytes: little-endian length H of the header text
//   H bytes      a Python dict literal, e.g. {'descr': '<i8', 'fortran_order': False, 'shape': (3, 4), }
//                padded with spaces and ending in '\n' so that the data starts 64-byte aligned
//   data         product(shape) elements, C order, little endian, no padding
// Only little-endian (or byte-order-free) descriptors of the types in NpyDtype are accepted.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphstore {

/// Element types the partition format stores, and kBfloat16, which only sampled feature rows
/// take in memory and on the wire (numpy has no bfloat16; no .npy file holds it).
enum class NpyDtype { kInt64, kInt32, kFloat32, kFloat16, kFloat64, kUint8, kBool, kBfloat16 };

/// Bytes per element.
size_t DtypeSize(NpyDtype dtype);
/// numpy's name for the type: "int64", "float32", ...
const char* DtypeName(NpyDtype dtype);
/// Parses a numpy type name ("float32"); InvalidArgument for anything else.
absl::StatusOr<NpyDtype> DtypeFromName(const std::string& name);

/// A parsed .npy header.
struct NpyHeader {
  NpyDtype dtype = NpyDtype::kInt64;
  std::vector<int64_t> shape;
  /// Offset of the first data byte from the start of the file.
  size_t data_offset = 0;

  int64_t num_elements() const;
};

/// Parses the header at the start of `bytes`; errors name `path`.
absl::StatusOr<NpyHeader> ParseNpyHeader(const char* bytes, size_t size, const std::string& path);

/// A read-only, shared memory mapping of one .npy file. Move-only; unmaps on destruction.
class MappedNpy {
 public:
  MappedNpy() = default;
  ~MappedNpy();
  MappedNpy(MappedNpy&& other) noexcept;
  MappedNpy& operator=(MappedNpy&& other) noexcept;
  MappedNpy(const MappedNpy&) = delete;
  MappedNpy& operator=(const MappedNpy&) = delete;

  /// Maps `path` and validates its header and length. NotFound when the file is missing,
  /// DataLoss when it is truncated or its header is malformed.
  static absl::StatusOr<MappedNpy> Open(const std::string& path);

  const std::string& path() const { return path_; }
  NpyDtype dtype() const { return header_.dtype; }
  const std::vector<int64_t>& shape() const { return header_.shape; }
  int64_t num_elements() const { return header_.num_elements(); }
  /// Number of rows (shape[0]); 1 for a scalar.
  int64_t rows() const { return header_.shape.empty() ? 1 : header_.shape[0]; }
  /// Elements per row (product of shape[1:]).
  int64_t row_width() const;
  bool is_open() const { return map_ != nullptr; }

  const void* raw() const { return static_cast<const char*>(map_) + header_.data_offset; }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw());
  }

  /// OK when dtype and shape match; -1 in `shape` accepts any extent. The message names the file.
  absl::Status Expect(NpyDtype dtype, const std::vector<int64_t>& shape) const;

  /// Lets go of the pages read so far (they leave the process's resident set; a later read
  /// maps them again from the file). For arrays read once at load and rarely after.
  void DropResident() const;

 private:
  std::string path_;
  NpyHeader header_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
};

/// Writes a .npy file whose leading dimension grows as rows are appended; the header is
/// rewritten with the final row count by Finish().
class NpyWriter {
 public:
  ~NpyWriter();
  NpyWriter(const NpyWriter&) = delete;
  NpyWriter& operator=(const NpyWriter&) = delete;

  /// Creates `path` for rows of `row_shape` (the dimensions after the first; empty for 1-D).
  static absl::StatusOr<std::unique_ptr<NpyWriter>> Create(const std::string& path, NpyDtype dtype,
                                                           std::vector<int64_t> row_shape = {});
  /// Appends `num_rows` rows from `data` (num_rows * row bytes).
  absl::Status Append(const void* data, int64_t num_rows);
  /// Writes the final header and closes the file.
  absl::Status Finish();
  int64_t rows_written() const { return rows_; }

 private:
  NpyWriter(std::string path, NpyDtype dtype, std::vector<int64_t> row_shape, std::FILE* file);
  absl::Status WriteHeader();

  std::string path_;
  NpyDtype dtype_;
  std::vector<int64_t> row_shape_;
  std::FILE* file_ = nullptr;
  int64_t rows_ = 0;
};

/// Writes a whole array at once.
absl::Status WriteNpy(const std::string& path, NpyDtype dtype, const std::vector<int64_t>& shape,
                      const void* data);

template <typename T>
struct NpyTypeOf;
template <>
struct NpyTypeOf<int64_t> {
  static constexpr NpyDtype value = NpyDtype::kInt64;
};
template <>
struct NpyTypeOf<int32_t> {
  static constexpr NpyDtype value = NpyDtype::kInt32;
};
template <>
struct NpyTypeOf<float> {
  static constexpr NpyDtype value = NpyDtype::kFloat32;
};
template <>
struct NpyTypeOf<double> {
  static constexpr NpyDtype value = NpyDtype::kFloat64;
};

/// Writes a 1-D vector.
template <typename T>
absl::Status WriteNpyVector(const std::string& path, const std::vector<T>& values) {
  return WriteNpy(path, NpyTypeOf<T>::value, {static_cast<int64_t>(values.size())},
                  values.data());
}

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_NPY_H_
