// The client's mapping of shared buffers: what each failure to map a message's file means to
// the Loader (Unavailable is mended by reconnecting; the others are not).

#include "client/shared_memory.h"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/huge_map.h"
#include "server/shm/shared_buffer.h"
#include "tests/test_util.h"

namespace graphstore::client {
namespace {

using testing::TempDir;
using testing::WriteFile;

v1::SharedBuffer Buffer(const std::string& path, uint64_t size) {
  v1::SharedBuffer b;
  b.set_path(path);
  b.set_size(size);
  return b;
}

TEST_CASE("a shared buffer maps with its bytes, once per file", "[shared_memory]") {
  TempDir dir;
  const std::string path = dir / "graphstore-1-ab-1";
  WriteFile(path, "0123456789");
  SharedMappings mappings(dir.path());
  auto m = mappings.Map(Buffer(path, 10));
  REQUIRE(m.ok());
  CHECK(std::string((*m)->data(), 10) == "0123456789");
  auto again = mappings.Map(Buffer(path, 10));
  REQUIRE(again.ok());
  CHECK(again->get() == m->get());
  // Another size under the same name is another file: mapped afresh, and checked.
  CHECK(mappings.Map(Buffer(path, 11)).status().code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("a server's buffer lies on huge pages, in the server's mapping and the client's", "[shared_memory]") {
  // /dev/shm gives its files 4 KiB pages unless mounted with huge=; the server moves each
  // buffer's pages onto 2 MiB pages, and the client maps them at a 2 MiB boundary, whole.
  testing::TempDir dir("/dev/shm");
  REQUIRE(!dir.path().empty());
  auto area = SharedMemoryArea::Open(dir.path());
  REQUIRE(area.ok());
  auto pool = std::make_shared<SharedBufferPool>(area->get(), 2);
  auto use = pool->Acquire(5 << 20);
  REQUIRE(use.ok());
  SharedBufferFile& file = *(*use)->file;
  const size_t size = file.size();
  REQUIRE(size % kHugePageBytes == 0);
  for (size_t i = 0; i < size; i += 4096) file.data()[i] = static_cast<char>(i / 4096);
  auto mapped = MapSharedBuffer(Buffer(file.path(), size), dir.path());
  REQUIRE(mapped.ok());
  const char* client = (*mapped)->data();
  CHECK(reinterpret_cast<uintptr_t>(file.data()) % kHugePageBytes == 0);
  CHECK(reinterpret_cast<uintptr_t>(client) % kHugePageBytes == 0);
  for (size_t i = 0; i < size; i += 4096) REQUIRE(client[i] == static_cast<char>(i / 4096));
  if (testing::KernelCollapsesTmpfs(dir.path())) {
    CHECK(testing::SmapsKb(file.data(), "ShmemPmdMapped:") == static_cast<int64_t>(size / 1024));
    CHECK(testing::SmapsKb(client, "ShmemPmdMapped:") == static_cast<int64_t>(size / 1024));
  }
}

TEST_CASE("a buffer whose file is gone is Unavailable: its server died and was replaced", "[shared_memory]") {
  // A server restarted on the directory removes the files of the one before; messages that the
  // dead server sent are still in the client's stream. The reader reconnects on this code.
  TempDir dir;
  auto m = MapSharedBuffer(Buffer(dir / "graphstore-78-1cecb06c72293645-8", 4096), dir.path());
  REQUIRE(!m.ok());
  CHECK(m.status().code() == absl::StatusCode::kUnavailable);
  CHECK(m.status().message().find("graphstore-78-1cecb06c72293645-8") != std::string::npos);
}

TEST_CASE("a buffer outside the server's directory or of another size is DataLoss", "[shared_memory]") {
  TempDir dir;
  CHECK(MapSharedBuffer(Buffer("/etc/passwd", 10), dir.path()).status().code() == absl::StatusCode::kDataLoss);
  CHECK(MapSharedBuffer(Buffer(dir / "graphstore-1/../../x", 10), dir.path()).status().code() ==
        absl::StatusCode::kDataLoss);
  const std::string path = dir / "graphstore-1-ab-2";
  WriteFile(path, std::string(100, 'x'));
  CHECK(MapSharedBuffer(Buffer(path, 64), dir.path()).status().code() == absl::StatusCode::kDataLoss);
  CHECK(MapSharedBuffer(Buffer(path, 100), dir.path()).ok());
}

TEST_CASE("a buffer that is there but cannot be opened for mapping is FailedPrecondition", "[shared_memory]") {
  // Not ENOENT: no reconnect mends it (another user's file, or not a file at all).
  TempDir dir;
  const std::string path = dir / "graphstore-1-ab-3";
  REQUIRE(mkdir(path.c_str(), 0700) == 0);
  auto m = MapSharedBuffer(Buffer(path, 100), dir.path());
  CHECK(m.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(m.status().message().find("turn shared memory off") != std::string::npos);
}

TEST_CASE("the memory hook hears of every mapping once, and of its end", "[shared_memory]") {
  // What Loader(pin_memory=True) registers with CUDA: each file once, however many batches
  // it carries, and unregistered before it is unmapped.
  TempDir dir;
  const std::string path = dir / "graphstore-1-ab-4";
  WriteFile(path, std::string(100, 'x'));
  std::vector<std::pair<const void*, bool>> heard;
  {
    SharedMappings mappings(dir.path(), 64, [&](void* data, size_t size, bool added) {
      CHECK(size == 100);
      heard.emplace_back(data, added);
    });
    auto m = mappings.Map(Buffer(path, 100));
    REQUIRE(m.ok());
    REQUIRE(mappings.Map(Buffer(path, 100)).ok());
    REQUIRE(heard.size() == 1);
    CHECK(heard[0] == std::make_pair(static_cast<const void*>((*m)->data()), true));
  }
  REQUIRE(heard.size() == 2);
  CHECK(heard[1] == std::make_pair(heard[0].first, false));
}

TEST_CASE("the memory hook hears of every pooled buffer allocated and freed, not of reuse", "[buffer_pool]") {
  std::map<const void*, size_t> live;
  int allocated = 0;
  {
    auto pool = BufferPool::Create(size_t{1} << 20, [&](void* data, size_t size, bool added) {
      if (added) {
        CHECK(live.emplace(data, size).second);
        ++allocated;
      } else {
        CHECK(live.erase(data) == 1);
      }
    });
    const void* first;
    {
      auto a = pool->Acquire(5000);
      first = a->data();
      CHECK(live.count(first) == 1);
    }
    auto again = pool->Acquire(5000);  // reused: no new registration
    CHECK(again->data() == first);
    CHECK(allocated == 1);
    auto big = pool->Acquire(size_t{4} << 20);  // past the idle limit when it comes back
    CHECK(allocated == 2);
  }
  CHECK(live.empty());  // everything freed was heard of, pool and buffers alike
}

}  // namespace
}  // namespace graphstore::client
