#include "client/raw_ids.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

#include "absl/strings/str_cat.h"

namespace graphstore::client {

RawIds::Mapped::~Mapped() {
  if (map != nullptr) ::munmap(map, size);
}

// A .npy file (docs/format.md) holding int64 [num_nodes], little-endian, in C order.
absl::StatusOr<RawIds::Type> RawIds::Map(const std::string& path, const std::string& type, int64_t num_nodes) {
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("raw_ids: ", path, " (node type '", type, "'): ", why));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string why = absl::StrCat("raw_ids: ", path, " (node type '", type, "'): ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(why) : absl::PermissionDeniedError(why);
  }
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  auto file = std::make_shared<Mapped>();
  file->path = path;
  file->size = stated ? static_cast<size_t>(st.st_size) : 0;
  if (file->size > 0) {
    void* m = ::mmap(nullptr, file->size, PROT_READ, MAP_SHARED, fd, 0);
    file->map = m == MAP_FAILED ? nullptr : m;
  }
  ::close(fd);
  if (file->map == nullptr) return bad(file->size == 0 ? "empty" : "cannot be mapped");
  const auto* bytes = static_cast<const unsigned char*>(file->map);
  if (file->size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0) return bad("not an .npy file");
  const bool version1 = bytes[6] == 1;
  const size_t header_len = version1 ? bytes[8] | bytes[9] << 8 : 0;
  const size_t offset = 10 + header_len;
  if (!version1 || offset > file->size || offset % 8 != 0) return bad("an .npy header this reader does not take (version 1)");
  const std::string header(reinterpret_cast<const char*>(bytes) + 10, header_len);
  std::smatch m;
  if (!std::regex_search(header, std::regex("'descr':\\s*'<i8'")) ||
      !std::regex_search(header, std::regex("'fortran_order':\\s*False")) ||
      !std::regex_search(header, m, std::regex("'shape':\\s*\\((\\d+),?\\)"))) {
    return bad(absl::StrCat("expected int64 [", num_nodes, "], header ", header));
  }
  if (std::stoll(m[1]) != num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat("raw_ids: ", path, " has ", m[1].str(), " ids, but node type '", type,
                                                   "' of the served dataset has ", num_nodes,
                                                   " nodes: a directory of another dataset?"));
  }
  if (file->size - offset < static_cast<size_t>(num_nodes) * 8) return bad("truncated");
  Type t;
  t.ids = reinterpret_cast<const int64_t*>(bytes + offset);
  t.count = num_nodes;
  t.file = std::move(file);
  return t;
}

absl::StatusOr<RawIds> RawIds::Open(const std::string& dir, const v1::DatasetMeta& meta) {
  namespace fs = std::filesystem;
  RawIds out;
  // Where the book is: the directory itself, its book/, or its first partition's.
  fs::path book = dir;
  for (const fs::path& at : {fs::path(dir) / "book", fs::path(dir) / "part-0" / "book"}) {
    if (fs::is_directory(at)) {
      book = at;
      break;
    }
  }
  if (!fs::is_directory(book)) {
    return absl::NotFoundError(absl::StrCat("raw_ids: ", dir, " is not a directory of the dataset"));
  }
  for (const auto& t : meta.node_types()) {
    if (!t.has_raw_ids()) continue;
    auto entry = Map((book / (t.name() + ".raw_ids.npy")).string(), t.name(), t.num_nodes());
    if (!entry.ok()) return entry.status();
    out.types_.emplace(t.name(), *std::move(entry));
  }
  return out;
}

absl::Status RawIds::ToDense(const std::string& type, const std::string& field, std::vector<int64_t>* ids) const {
  const auto it = types_.find(type);
  if (it == types_.end()) return absl::OkStatus();
  const Type& t = it->second;
  for (size_t i = 0; i < ids->size(); ++i) {
    const int64_t raw = (*ids)[i];
    const int64_t* at = std::lower_bound(t.ids, t.ids + t.count, raw);
    if (at == t.ids + t.count || *at != raw) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "]=", raw, " is no id of node type '", type, "' in ",
                                                     t.file->path, " (raw_ids: seeds are the input's ids)"));
    }
    (*ids)[i] = at - t.ids;
  }
  return absl::OkStatus();
}

HostTensor RawIds::Translate(BufferPool* pool, const Type& t, const HostTensor& dense, HostBatch* b) const {
  if (!dense.defined() || (dense.dtype != v1::DTYPE_INT64 && dense.dtype != v1::DTYPE_INT32)) return dense;
  const int64_t n = dense.numel();
  std::shared_ptr<Buffer> buffer = pool->Acquire(static_cast<size_t>(std::max<int64_t>(n, 1)) * 8);
  auto* out = reinterpret_cast<int64_t*>(buffer->data());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = dense.dtype == v1::DTYPE_INT64 ? reinterpret_cast<const int64_t*>(dense.data)[i]
                                                      : reinterpret_cast<const int32_t*>(dense.data)[i];
    out[i] = id >= 0 && id < t.count ? t.ids[id] : -1;
  }
  HostTensor raw;
  raw.dtype = v1::DTYPE_INT64;
  raw.shape = dense.shape;
  raw.data = buffer->data();
  raw.bytes = static_cast<size_t>(n) * 8;
  b->memory.emplace_back(buffer->data(), buffer->size());
  raw.owner = std::move(buffer);
  return raw;
}

void RawIds::ToRaw(BufferPool* pool, HostBatch* b) const {
  for (auto& [name, nodes] : b->nodes) {
    const auto it = types_.find(name);
    if (it == types_.end()) continue;
    nodes.n_id = Translate(pool, it->second, nodes.n_id, b);
    nodes.seeds = Translate(pool, it->second, nodes.seeds, b);
  }
}

}  // namespace graphstore::client
