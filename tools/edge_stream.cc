#include "tools/edge_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/int_fields.h"

namespace graphstore {
namespace {

// One 1-D int64 or int32 id array of an npy pair.
struct IdColumn {
  NpyFile file;

  absl::Status Open(const std::string& path) {
    if (auto s = file.Open(path, "id"); !s.ok()) return s;
    const NpyHeader& h = file.header();
    if (h.shape.size() != 1) return absl::InvalidArgumentError(absl::StrCat(path, ": expected a 1-D array of ids"));
    if (h.dtype != NpyDtype::kInt64 && h.dtype != NpyDtype::kInt32) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": dtype is ", DtypeName(h.dtype), ", expected int64 or int32"));
    }
    return absl::OkStatus();
  }

  int64_t Width() const { return file.row_bytes(); }
  int64_t Count() const { return file.rows(); }

  absl::Status Read(int64_t first, size_t n, std::vector<int64_t>* out, std::vector<char>* buf) const {
    out->resize(n);
    if (Width() == 8) return file.ReadRows(first, static_cast<int64_t>(n), out->data());
    buf->resize(n * 4);
    if (auto s = file.ReadRows(first, static_cast<int64_t>(n), buf->data()); !s.ok()) return s;
    const auto* v = reinterpret_cast<const int32_t*>(buf->data());
    for (size_t i = 0; i < n; ++i) (*out)[i] = v[i];
    return absl::OkStatus();
  }
};

class NpyPairStream : public EdgeStream {
 public:
  absl::Status Open(const std::string& a, const std::string& b) {
    if (auto s = src_.Open(a); !s.ok()) return s;
    if (auto s = dst_.Open(b); !s.ok()) return s;
    if (src_.Count() != dst_.Count()) {
      return absl::InvalidArgumentError(absl::StrCat(a, " has ", src_.Count(), " ids but ", b, " has ", dst_.Count()));
    }
    return absl::OkStatus();
  }

  absl::Status Next(size_t max_edges, std::vector<int64_t>* src, std::vector<int64_t>* dst) override {
    const size_t n = static_cast<size_t>(std::min<int64_t>(max_edges, src_.Count() - position_));
    if (auto s = src_.Read(position_, n, src, &buf_); !s.ok()) return s;
    if (auto s = dst_.Read(position_, n, dst, &buf_); !s.ok()) return s;
    position_ += static_cast<int64_t>(n);
    return absl::OkStatus();
  }

  absl::Status Rewind() override {
    position_ = 0;
    return absl::OkStatus();
  }
  int64_t size_bytes() const override { return src_.file.rows() * src_.Width() + dst_.file.rows() * dst_.Width(); }
  int64_t bytes_read() const override { return position_ * (src_.Width() + dst_.Width()); }

 private:
  IdColumn src_, dst_;
  std::vector<char> buf_;
};

class TextStream : public EdgeStream {
 public:
  TextStream(bool swap) : swap_(swap) {}
  absl::Status Open(const std::string& path) { return file_.Open(path); }

  absl::Status Next(size_t max_edges, std::vector<int64_t>* src, std::vector<int64_t>* dst) override {
    src->clear();
    dst->clear();
    while (src->size() < max_edges) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string::npos) {
        if (offset_ < file_.size()) {
          if (auto s = Refill(); !s.ok()) return s;
          continue;
        }
        if (pos_ >= text_.size()) break;
        end = text_.size();  // a last line without its newline
      }
      ++line_;
      const char* p = text_.data() + pos_;
      const char* e = text_.data() + end;
      pos_ = end + 1;
      int64_t v[2];
      const LineKind kind = ParseIntFields(p, e, 2, v);
      if (kind == LineKind::kBlank) continue;
      if (kind == LineKind::kBad) {
        return absl::InvalidArgumentError(absl::StrCat(file_.path(), ":", line_, ": expected 2 integer ids, got '",
                                                       std::string(p, e - p), "'"));
      }
      src->push_back(swap_ ? v[1] : v[0]);
      dst->push_back(swap_ ? v[0] : v[1]);
    }
    position_ += static_cast<int64_t>(src->size());
    return absl::OkStatus();
  }

  absl::Status Rewind() override {
    position_ = 0;
    offset_ = 0;
    line_ = 0;
    pos_ = 0;
    text_.clear();
    return absl::OkStatus();
  }
  int64_t size_bytes() const override { return file_.size(); }
  int64_t bytes_read() const override { return offset_; }

 private:
  // Keeps the unread part of the buffer and appends the next block of the file.
  absl::Status Refill() {
    text_.erase(0, std::min(pos_, text_.size()));
    pos_ = 0;
    const size_t n = static_cast<size_t>(std::min<int64_t>(kBlock, file_.size() - offset_));
    const size_t old = text_.size();
    text_.resize(old + n);
    if (auto s = file_.ReadAt(offset_, n, text_.data() + old); !s.ok()) return s;
    offset_ += static_cast<int64_t>(n);
    return absl::OkStatus();
  }

  static constexpr int64_t kBlock = 4 << 20;
  const bool swap_;
  ReadOnlyFile file_;
  std::string text_;
  size_t pos_ = 0;
  int64_t offset_ = 0;
  int64_t line_ = 0;
};

}  // namespace

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ReadOnlyFile::Open(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  struct stat st;
  if (::fstat(fd_, &st) != 0) return absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  size_ = st.st_size;
  return absl::OkStatus();
}

absl::Status ReadOnlyFile::ReadAt(int64_t offset, size_t n, void* out) const {
  char* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return absl::DataLossError(absl::StrCat(path_, ": read failed: ", std::strerror(errno)));
    if (got == 0) return absl::DataLossError(absl::StrCat(path_, ": truncated at byte ", offset));
    p += got;
    offset += got;
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::Status NpyFile::Open(const std::string& path, const std::string& what) {
  if (auto s = file_.Open(path); !s.ok()) return s;
  char head[4096];
  const size_t n = static_cast<size_t>(std::min<int64_t>(sizeof(head), file_.size()));
  if (auto s = file_.ReadAt(0, n, head); !s.ok()) return s;
  auto h = ParseNpyHeader(head, n, path);
  if (!h.ok()) return h.status();
  header_ = *h;
  int64_t width = 1;
  for (size_t d = 1; d < header_.shape.size(); ++d) width *= header_.shape[d];
  row_bytes_ = width * static_cast<int64_t>(DtypeSize(header_.dtype));
  const int64_t data = static_cast<int64_t>(header_.data_offset);
  const int64_t need = data + rows() * row_bytes_;
  if (file_.size() < need) {
    return absl::DataLossError(absl::StrCat(path, ": truncated: its header promises ", rows(), " ", what, "s (", need,
                                            " bytes) but the file has ", file_.size(), " bytes, ending inside ", what,
                                            " ", row_bytes_ > 0 ? (file_.size() - data) / row_bytes_ : 0));
  }
  return absl::OkStatus();
}

absl::Status NpyFile::ReadRows(int64_t first, int64_t n, void* out) const {
  return file_.ReadAt(static_cast<int64_t>(header_.data_offset) + first * row_bytes_, static_cast<size_t>(n * row_bytes_),
                      out);
}

bool IsNpyPair(const std::string& path) {
  return path.find(',') != std::string::npos && absl::EndsWith(path, ".npy");
}

absl::StatusOr<std::unique_ptr<EdgeStream>> EdgeStream::Open(const std::string& path, bool swap_columns) {
  const size_t comma = path.find(',');
  if (IsNpyPair(path)) {
    auto s = std::make_unique<NpyPairStream>();
    if (auto st = s->Open(path.substr(0, comma), path.substr(comma + 1)); !st.ok()) return st;
    return std::unique_ptr<EdgeStream>(std::move(s));
  }
  auto s = std::make_unique<TextStream>(swap_columns);
  if (auto st = s->Open(path); !st.ok()) return st;
  return std::unique_ptr<EdgeStream>(std::move(s));
}

}  // namespace graphstore
