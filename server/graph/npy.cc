#include "server/graph/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/util/huge_pages.h"

namespace graphstore {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// Written headers (magic + version + length + text) take this many bytes: room for any shape
// of up to four 19-digit dimensions, and a multiple of 64 so data stays aligned.
constexpr size_t kWrittenHeaderBytes = 128;

struct DtypeEntry {
  NpyDtype dtype;
  const char* name;
  const char* descr;
  size_t size;
};

constexpr DtypeEntry kDtypes[] = {
    {NpyDtype::kInt64, "int64", "<i8", 8},     {NpyDtype::kInt32, "int32", "<i4", 4},
    {NpyDtype::kFloat32, "float32", "<f4", 4}, {NpyDtype::kFloat16, "float16", "<f2", 2},
    {NpyDtype::kFloat64, "float64", "<f8", 8}, {NpyDtype::kUint8, "uint8", "|u1", 1},
    {NpyDtype::kBool, "bool", "|b1", 1},
    // numpy has no bfloat16: it is an in-memory and wire type only, never read or written.
    {NpyDtype::kBfloat16, "bfloat16", "", 2},
};

const DtypeEntry& Entry(NpyDtype dtype) {
  for (const auto& e : kDtypes) {
    if (e.dtype == dtype) return e;
  }
  return kDtypes[0];
}

// The header text numpy writes: a Python dict literal with exactly the keys 'descr' (a string),
// 'fortran_order' (True or False) and 'shape' (a tuple of non-negative ints), then only
// whitespace. Parsed as strictly as numpy's own reader (ast.literal_eval and its key check);
// returns "" or what is wrong.
class HeaderDictParser {
 public:
  explicit HeaderDictParser(const std::string& text) : t_(text) {}

  std::string Parse(NpyHeader* out) {
    SkipSpace();
    if (!Eat('{')) return "the header is not a dict (no '{')";
    bool descr = false, fortran = false, shape = false;
    while (true) {
      SkipSpace();
      if (Eat('}')) break;
      std::string key;
      if (!String(&key)) return Error("a quoted key");
      SkipSpace();
      if (!Eat(':')) return Error("':' after '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (descr) return "'descr' appears twice";
        descr = true;
        if (!String(&descr_)) return Error("a quoted 'descr'");
      } else if (key == "fortran_order") {
        if (fortran) return "'fortran_order' appears twice";
        fortran = true;
        if (t_.compare(p_, 4, "True") == 0) {
          return "Fortran-order arrays are not supported; save with numpy.ascontiguousarray";
        }
        if (t_.compare(p_, 5, "False") != 0) return "bad 'fortran_order' value (expected True or False)";
        p_ += 5;
      } else if (key == "shape") {
        if (shape) return "'shape' appears twice";
        shape = true;
        if (auto s = Shape(&out->shape); !s.empty()) return s;
      } else {
        return "unexpected key '" + key + "' in the header (numpy writes descr, fortran_order, shape)";
      }
      SkipSpace();
      if (Eat(',')) continue;
      if (Eat('}')) break;
      return Error("',' or '}'");
    }
    if (!descr) return "no 'descr' in header";
    if (!fortran) return "no 'fortran_order' in header";
    if (!shape) return "no 'shape' in header";
    SkipSpace();
    if (p_ != t_.size()) return absl::StrCat("unexpected bytes after the header dict at offset ", p_);
    return "";
  }
  const std::string& descr() const { return descr_; }

 private:
  void SkipSpace() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\t' || t_[p_] == '\r')) ++p_;
  }
  bool Eat(char c) {
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool String(std::string* out) {
    if (p_ >= t_.size() || (t_[p_] != '\'' && t_[p_] != '"')) return false;
    const size_t close = t_.find(t_[p_], p_ + 1);
    if (close == std::string::npos) return false;
    *out = t_.substr(p_ + 1, close - p_ - 1);
    if (out->find('\\') != std::string::npos) return false;
    p_ = close + 1;
    return true;
  }
  std::string Shape(std::vector<int64_t>* shape) {
    if (!Eat('(')) return Error("'(' opening 'shape'");
    int64_t elements = 1;
    bool comma_after_last = false;
    while (true) {
      SkipSpace();
      if (Eat(')')) break;
      const size_t begin = p_;
      int64_t v = 0;
      while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return "a dimension of 'shape' overflows int64";
        v = v * 10 + (t_[p_++] - '0');
      }
      if (p_ == begin) return Error("a non-negative integer in 'shape'");
      if (v != 0 && elements > std::numeric_limits<int64_t>::max() / v) return "'shape' has more elements than int64 counts";
      elements *= v;
      shape->push_back(v);
      SkipSpace();
      comma_after_last = Eat(',');
      if (comma_after_last) continue;
      if (Eat(')')) break;
      return Error("',' or ')' in 'shape'");
    }
    if (shape->size() == 1 && !comma_after_last) return "'shape' of one dimension must be a tuple, like (5,)";
    return "";
  }
  std::string Error(const std::string& expected) const {
    return absl::StrCat("malformed header dict: expected ", expected, " at offset ", p_);
  }

  const std::string& t_;
  size_t p_ = 0;
  std::string descr_;
};

std::string ParseHeaderDict(const std::string& text, NpyHeader* header) {
  HeaderDictParser parser(text);
  if (auto s = parser.Parse(header); !s.empty()) return s;
  const std::string& descr = parser.descr();
  for (const auto& e : kDtypes) {
    if (e.descr[0] == '\0') continue;
    // A one-byte type may be written with any byte-order mark.
    if (descr == e.descr || (e.size == 1 && descr.size() == 3 && descr.substr(1) == std::string(e.descr).substr(1))) {
      header->dtype = e.dtype;
      return "";
    }
  }
  return absl::StrCat("unsupported dtype descriptor '", descr,
                      "' (expected little-endian int64, int32, float32, float16, float64, uint8 or bool)");
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// Maps a whole file read-only. The samplers read most arrays at random (CSR rows, weights,
// times, feature rows), so a file of 2 MiB or more is mapped at a 2 MiB boundary and marked
// for huge pages: where the kernel reads a file into huge pages (it does for pages faulted in
// through such a mapping, on filesystems with large folios), a random read then costs a cache
// miss rather than a cache miss and a page walk. Elsewhere the advice changes nothing.
void* MapReadOnly(int fd, size_t size) {
  if (size >= kHugePageBytes) {
    if (void* map = MapAtHugeBoundary(size, PROT_READ, MAP_SHARED, fd); map != MAP_FAILED) return map;
  }
  return mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
}

}  // namespace

size_t DtypeSize(NpyDtype dtype) { return Entry(dtype).size; }
const char* DtypeName(NpyDtype dtype) { return Entry(dtype).name; }

absl::StatusOr<NpyDtype> DtypeFromName(const std::string& name) {
  for (const auto& e : kDtypes) {
    if (name == e.name) return e.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
}

int64_t NpyHeader::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<NpyHeader> ParseNpyHeader(const char* bytes, size_t size, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(path, ": not a valid .npy file: ", what));
  };
  if (size < kMagicLen + 4 || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    return bad("missing the \\x93NUMPY magic");
  }
  const auto major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0;
  size_t prefix = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return bad("header truncated");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[8 + i]);
    prefix = 12;
  } else {
    return bad(absl::StrCat("unsupported format version ", major));
  }
  if (prefix + header_len > size) return bad("header truncated");
  const std::string text(bytes + prefix, header_len);
  NpyHeader header;
  header.data_offset = prefix + header_len;
  if (auto s = ParseHeaderDict(text, &header); !s.empty()) return bad(s);
  return header;
}

MappedNpy::~MappedNpy() {
  if (map_ != nullptr) munmap(map_, map_size_);
}

MappedNpy::MappedNpy(MappedNpy&& other) noexcept { *this = std::move(other); }

MappedNpy& MappedNpy::operator=(MappedNpy&& other) noexcept {
  if (this != &other) {
    if (map_ != nullptr) munmap(map_, map_size_);
    path_ = std::move(other.path_);
    header_ = std::move(other.header_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
  }
  return *this;
}

int64_t MappedNpy::row_width() const {
  int64_t w = 1;
  for (size_t i = 1; i < header_.shape.size(); ++i) w *= header_.shape[i];
  return w;
}

absl::StatusOr<MappedNpy> MappedNpy::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": file is missing"));
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat(path, ": not a valid .npy file: file is empty"));
  }
  void* map = MapReadOnly(fd, size);
  ::close(fd);
  if (map == MAP_FAILED) {
    return absl::InternalError(absl::StrCat(path, ": mmap failed: ", std::strerror(errno)));
  }
  MappedNpy out;
  out.path_ = path;
  out.map_ = map;
  out.map_size_ = size;
  auto header = ParseNpyHeader(static_cast<const char*>(map), size, path);
  if (!header.ok()) return header.status();
  out.header_ = *std::move(header);
  const size_t expected = out.header_.data_offset +
                          static_cast<size_t>(out.header_.num_elements()) * DtypeSize(out.header_.dtype);
  if (size < expected) {
    return absl::DataLossError(absl::StrCat(path, ": truncated: shape ", ShapeString(out.header_.shape),
                                            " needs ", expected, " bytes, file has ", size));
  }
  if (size > expected) {
    return absl::DataLossError(absl::StrCat(path, ": ", size - expected,
                                            " trailing bytes after the data of shape ",
                                            ShapeString(out.header_.shape)));
  }
  return out;
}

void MappedNpy::DropResident() const {
  if (map_ != nullptr) madvise(map_, map_size_, MADV_DONTNEED);
}

absl::Status MappedNpy::Expect(NpyDtype dtype, const std::vector<int64_t>& shape) const {
  if (header_.dtype != dtype) {
    return absl::DataLossError(absl::StrCat(path_, ": dtype is ", DtypeName(header_.dtype),
                                            ", expected ", DtypeName(dtype)));
  }
  bool match = shape.size() == header_.shape.size();
  for (size_t i = 0; match && i < shape.size(); ++i) {
    match = shape[i] < 0 || shape[i] == header_.shape[i];
  }
  if (!match) {
    std::vector<std::string> want;
    for (int64_t d : shape) want.push_back(d < 0 ? "*" : absl::StrCat(d));
    return absl::DataLossError(absl::StrCat(path_, ": shape is ", ShapeString(header_.shape),
                                            ", expected (", absl::StrJoin(want, ", "),
                                            shape.size() == 1 ? ",)" : ")"));
  }
  return absl::OkStatus();
}

NpyWriter::NpyWriter(std::string path, NpyDtype dtype, std::vector<int64_t> row_shape,
                     std::FILE* file)
    : path_(std::move(path)), dtype_(dtype), row_shape_(std::move(row_shape)), file_(file) {}

NpyWriter::~NpyWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::StatusOr<std::unique_ptr<NpyWriter>> NpyWriter::Create(const std::string& path,
                                                             NpyDtype dtype,
                                                             std::vector<int64_t> row_shape) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  std::unique_ptr<NpyWriter> w(new NpyWriter(path, dtype, std::move(row_shape), f));
  if (auto s = w->WriteHeader(); !s.ok()) return s;
  return w;
}

absl::Status NpyWriter::WriteHeader() {
  std::vector<int64_t> shape{rows_};
  shape.insert(shape.end(), row_shape_.begin(), row_shape_.end());
  std::string text = absl::StrCat("{'descr': '", Entry(dtype_).descr,
                                  "', 'fortran_order': False, 'shape': ", ShapeString(shape), ", }");
  const size_t room = kWrittenHeaderBytes - 10;
  if (text.size() + 1 > room) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": shape too long for header"));
  }
  text.append(room - text.size() - 1, ' ');
  text.push_back('\n');
  char prefix[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(room & 0xff),
                     static_cast<char>(room >> 8)};
  if (std::fseek(file_, 0, SEEK_SET) != 0 || std::fwrite(prefix, 1, 10, file_) != 10 ||
      std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
    return absl::DataLossError(absl::StrCat(path_, ": write failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status NpyWriter::Append(const void* data, int64_t num_rows) {
  if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": already finished"));
  int64_t width = 1;
  for (int64_t d : row_shape_) width *= d;
  const size_t bytes = static_cast<size_t>(num_rows * width) * DtypeSize(dtype_);
  if (bytes > 0 && std::fwrite(data, 1, bytes, file_) != bytes) {
    return absl::DataLossError(absl::StrCat(path_, ": write failed: ", std::strerror(errno)));
  }
  rows_ += num_rows;
  return absl::OkStatus();
}

absl::Status NpyWriter::Finish() {
  if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": already finished"));
  absl::Status s = WriteHeader();
  if (std::fclose(file_) != 0 && s.ok()) {
    s = absl::DataLossError(absl::StrCat(path_, ": close failed: ", std::strerror(errno)));
  }
  file_ = nullptr;
  return s;
}

absl::Status WriteNpy(const std::string& path, NpyDtype dtype, const std::vector<int64_t>& shape,
                      const void* data) {
  std::vector<int64_t> row_shape(shape.begin() + (shape.empty() ? 0 : 1), shape.end());
  auto w = NpyWriter::Create(path, dtype, row_shape);
  if (!w.ok()) return w.status();
  if (auto s = (*w)->Append(data, shape.empty() ? 1 : shape[0]); !s.ok()) return s;
  return (*w)->Finish();
}

}  // namespace graphstore
