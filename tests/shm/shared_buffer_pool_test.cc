// A channel's pool of shared-memory files: which file a batch is written into, how many idle
// files it keeps, and what closing it does.

#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <vector>

#include "server/shm/shared_buffer.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

struct Pool {
  testing::TempDir dir;
  std::unique_ptr<SharedMemoryArea> area;
  std::shared_ptr<SharedBufferPool> pool;
  explicit Pool(int max_free) {
    auto a = SharedMemoryArea::Open(dir.path());
    REQUIRE(a.ok());
    area = *std::move(a);
    pool = std::make_shared<SharedBufferPool>(area.get(), max_free);
  }
  std::shared_ptr<SharedUse> Use(size_t bytes) {
    auto u = pool->Acquire(bytes);
    REQUIRE(u.ok());
    return *std::move(u);
  }
};

TEST_CASE("a steady stream keeps reusing the file given back last, not every idle one", "[shm]") {
  Pool p(8);
  // Five batches in flight at once leave five idle files of one size.
  std::vector<std::shared_ptr<SharedUse>> uses;
  for (int i = 0; i < 5; ++i) uses.push_back(p.Use(1000));
  std::vector<uint64_t> returned;
  for (auto& u : uses) returned.push_back(u->file->id());
  uses.clear();  // given back in order: the last one is the warmest
  REQUIRE(p.pool->num_files() == 5);
  // Then one batch at a time: always the same file.
  std::set<uint64_t> written;
  for (int i = 0; i < 10; ++i) written.insert(p.Use(900)->file->id());
  CHECK(written == std::set<uint64_t>{returned.back()});
  CHECK(p.pool->num_files() == 5);
}

TEST_CASE("the smallest idle file that fits is taken before a warmer larger one", "[shm]") {
  Pool p(8);
  auto small = p.Use(1000);
  auto large = p.Use(64 << 20);
  const uint64_t small_id = small->file->id();
  const uint64_t large_id = large->file->id();
  small.reset();
  large.reset();
  CHECK(p.Use(1000)->file->id() == small_id);
  CHECK(p.Use(8 << 20)->file->id() == large_id);
  // Nothing idle fits: a new file.
  auto larger = p.Use(100 << 20);
  CHECK(larger->file->id() != small_id);
  CHECK(larger->file->id() != large_id);
  CHECK(p.pool->num_files() == 3);
}

TEST_CASE("past its idle limit the pool deletes the smallest idle file; closed, it deletes all", "[shm]") {
  Pool p(1);
  auto a = p.Use(1000);
  auto b = p.Use(8 << 20);
  const std::string a_path = a->file->path();
  a.reset();
  b.reset();
  CHECK(p.pool->num_files() == 1);
  CHECK(p.pool->TakeRetired() == std::vector<std::string>{a_path});
  p.pool->Close();
  CHECK(p.pool->num_files() == 0);
  CHECK(!p.pool->Acquire(10).ok());
}

}  // namespace
}  // namespace graphstore
