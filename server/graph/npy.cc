#include "server/graph/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

// Returns the quoted string value following `key` in the header dict, or "" if absent.
std::string StringValue(const std::string& text, const std::string& key) {
  size_t k = text.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t colon = text.find(':', k);
  if (colon == std::string::npos) return "";
  size_t q1 = text.find_first_of("'\"", colon);
  if (q1 == std::string::npos) return "";
  size_t q2 = text.find(text[q1], q1 + 1);
  if (q2 == std::string::npos) return "";
  return text.substr(q1 + 1, q2 - q1 - 1);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
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
  const std::string descr = StringValue(text, "descr");
  bool found = false;
  for (const auto& e : kDtypes) {
    if (e.descr[0] == '\0') continue;
    // A one-byte type may be written with any byte-order mark.
    if (descr == e.descr || (e.size == 1 && descr.size() == 3 && descr.substr(1) == std::string(e.descr).substr(1))) {
      header.dtype = e.dtype;
      found = true;
    }
  }
  if (!found) {
    return bad(absl::StrCat("unsupported dtype descriptor '", descr,
                            "' (expected little-endian int64, int32, float32, float16, float64, "
                            "uint8 or bool)"));
  }
  const size_t fo = text.find("'fortran_order'");
  if (fo == std::string::npos) return bad("no 'fortran_order' in header");
  const size_t fo_val = text.find_first_not_of(" :", fo + 15);
  if (fo_val == std::string::npos) return bad("no 'fortran_order' value");
  if (text.compare(fo_val, 4, "True") == 0) {
    return bad("Fortran-order arrays are not supported; save with numpy.ascontiguousarray");
  }
  if (text.compare(fo_val, 5, "False") != 0) return bad("bad 'fortran_order' value");

  const size_t sk = text.find("'shape'");
  if (sk == std::string::npos) return bad("no 'shape' in header");
  const size_t open = text.find('(', sk);
  const size_t close = text.find(')', open == std::string::npos ? sk : open);
  if (open == std::string::npos || close == std::string::npos) return bad("bad 'shape'");
  const std::string dims = text.substr(open + 1, close - open - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    pos = dims.find_first_not_of(" ,", pos);
    if (pos == std::string::npos) break;
    size_t end = dims.find_first_of(" ,", pos);
    if (end == std::string::npos) end = dims.size();
    const std::string tok = dims.substr(pos, end - pos);
    errno = 0;
    char* stop = nullptr;
    const long long v = std::strtoll(tok.c_str(), &stop, 10);
    if (errno != 0 || stop != tok.c_str() + tok.size() || v < 0) {
      return bad(absl::StrCat("bad dimension '", tok, "' in shape"));
    }
    header.shape.push_back(v);
    pos = end;
  }
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
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
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
