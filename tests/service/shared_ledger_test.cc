// A shared-memory channel's ledger of sent buffers: the backlog that holds a stream back, and
// receiving and freeing uses.

#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "server/service/shared_ledger.h"
#include "server/shm/shared_buffer.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using Ids = google::protobuf::RepeatedField<uint64_t>;

Ids Of(std::initializer_list<uint64_t> ids) {
  Ids out;
  for (uint64_t id : ids) out.Add(id);
  return out;
}

struct Buffers {
  testing::TempDir dir;
  std::unique_ptr<SharedMemoryArea> area;
  std::shared_ptr<SharedBufferPool> pool;
  Buffers() {
    auto a = SharedMemoryArea::Open(dir.path());
    REQUIRE(a.ok());
    area = *std::move(a);
    pool = std::make_shared<SharedBufferPool>(area.get(), 4);
  }
  std::shared_ptr<SharedUse> Use(size_t bytes) {
    auto u = pool->Acquire(bytes);
    REQUIRE(u.ok());
    return *std::move(u);
  }
};

TEST_CASE("unreceived uses hold the stream back at the message limit; receiving one lets it go on", "[ledger]") {
  Buffers b;
  SharedLedger ledger(2, int64_t{1} << 40, int64_t{1} << 40);
  auto u1 = b.Use(100);
  auto u2 = b.Use(100);
  const uint64_t id1 = u1->id, id2 = u2->id;
  ledger.Sent(std::move(u1));
  CHECK(!ledger.BacklogFull());
  ledger.Sent(std::move(u2));
  CHECK(ledger.BacklogFull());
  CHECK(ledger.unreleased() == 2);
  const SharedLedger::Release r = ledger.Apply(Of({id1}), Of({}));
  CHECK(r.unblocked);
  CHECK(r.freed.empty());
  CHECK(!ledger.BacklogFull());
  CHECK(ledger.unreleased() == 2);  // received, still with the trainer
  const SharedLedger::Release f = ledger.Apply(Of({}), Of({id1, id2}));
  CHECK(!f.unblocked);
  CHECK(f.freed.size() == 2);
  CHECK(ledger.unreleased() == 0);
  CHECK(ledger.unreceived_bytes() == 0);
}

TEST_CASE("a new stream stops counting what earlier streams left unreceived; reclaiming frees it", "[ledger]") {
  Buffers b;
  const bool reclaim = GENERATE(false, true);
  INFO("reclaim: " << reclaim);
  SharedMemoryAccount server(int64_t{1} << 40);
  SharedLedger ledger(2, int64_t{1} << 40, int64_t{1} << 40, &server);
  auto kept = b.Use(100), lost1 = b.Use(100), lost2 = b.Use(100);
  const uint64_t kept_id = kept->id, lost_id = lost1->id;
  const int64_t size = static_cast<int64_t>(kept->file->size());
  ledger.Sent(std::move(kept));
  ledger.Apply(Of({kept_id}), Of({}));  // the trainer holds this batch
  ledger.Sent(std::move(lost1));
  ledger.Sent(std::move(lost2));
  REQUIRE(ledger.BacklogFull());
  const auto taken = ledger.NewStream(reclaim);
  CHECK(!ledger.BacklogFull());
  CHECK(ledger.unreceived_bytes() == 0);
  if (reclaim) {
    CHECK(taken.size() == 2);
    CHECK(ledger.unreleased() == 1);  // the received use stays with the trainer
    CHECK(ledger.unfreed_bytes() == size);
  } else {
    CHECK(taken.empty());
    CHECK(ledger.unreleased() == 3);
    CHECK(ledger.unfreed_bytes() == 3 * size);
    // A late report changes nothing twice; freeing still works.
    ledger.Apply(Of({lost_id}), Of({}));
    CHECK(!ledger.BacklogFull());
    CHECK(ledger.Apply(Of({}), Of({lost_id})).freed.size() == 1);
  }
  CHECK(server.unfreed() == ledger.unfreed_bytes());
  CHECK(ledger.Apply(Of({}), Of({kept_id})).freed.size() == 1);
}

TEST_CASE("unreceived bytes hold the stream back at the byte limit", "[ledger]") {
  Buffers b;
  auto u = b.Use(1 << 20);
  const int64_t size = static_cast<int64_t>(u->file->size());
  SharedLedger ledger(100, size, int64_t{1} << 40);
  ledger.Sent(std::move(u));
  CHECK(ledger.BacklogFull());
  CHECK(ledger.unreceived_bytes() == size);
}

TEST_CASE("uses received and never freed pause the stream at the channel's and the server's limits", "[ledger]") {
  Buffers b;
  auto u1 = b.Use(1 << 20);
  const int64_t size = static_cast<int64_t>(u1->file->size());
  // The server allows 2 * size unfreed over its two shared-memory channels: size each when full.
  SharedMemoryAccount server(2 * size);
  server.AddChannel();
  server.AddChannel();
  SharedLedger ledger(100, int64_t{1} << 40, 2 * size, &server);
  SharedLedger other(100, int64_t{1} << 40, 2 * size, &server);
  const uint64_t id1 = u1->id;
  ledger.Sent(std::move(u1));
  ledger.Apply(Of({id1}), Of({}));
  CHECK(ledger.HoldBack() == SharedLedger::Hold::kNone);
  // The server at its limit: past its share the channel waits, under it it goes on.
  other.Sent(b.Use(1 << 20));
  REQUIRE(server.full());
  CHECK(server.share() == size);
  CHECK(ledger.HoldBack() == SharedLedger::Hold::kUnfreed);
  server.RemoveChannel();
  CHECK(server.share() == 2 * size);
  CHECK(ledger.HoldBack() == SharedLedger::Hold::kNone);
  auto u2 = b.Use(1 << 20);
  const uint64_t id2 = u2->id;
  ledger.Sent(std::move(u2));
  ledger.Apply(Of({id2}), Of({}));
  CHECK(ledger.unfreed_bytes() == 2 * size);
  CHECK(server.unfreed() == 3 * size);
  CHECK(!ledger.BacklogFull());  // everything was received ...
  CHECK(ledger.HoldBack() == SharedLedger::Hold::kUnfreed);  // ... and kept
  const SharedLedger::Release f = ledger.Apply(Of({}), Of({id1}));
  CHECK(f.freed_bytes == size);
  CHECK(ledger.unfreed_bytes() == size);
  CHECK(server.unfreed() == 2 * size);
  CHECK(ledger.HoldBack() == SharedLedger::Hold::kNone);
}

TEST_CASE("one use always goes, however large", "[ledger]") {
  Buffers b;
  SharedMemoryAccount server(0);  // a server already at its limit
  SharedLedger ledger(100, int64_t{1} << 40, 1, &server);
  CHECK(ledger.HoldBack() == SharedLedger::Hold::kNone);
  ledger.Sent(b.Use(64));
  CHECK(ledger.HoldBack() == SharedLedger::Hold::kUnfreed);
}

TEST_CASE("ids the ledger does not hold are ignored, and TakeAll empties it", "[ledger]") {
  Buffers b;
  SharedLedger ledger(8, 1 << 30, int64_t{1} << 40);
  auto u = b.Use(64);
  const uint64_t id = u->id;
  ledger.Sent(std::move(u));
  const SharedLedger::Release r = ledger.Apply(Of({id + 100}), Of({id + 101}));
  CHECK(r.freed.empty());
  CHECK(ledger.unreleased() == 1);
  CHECK(ledger.Apply(Of({}), Of({id})).freed.size() == 1);
  CHECK(ledger.Apply(Of({}), Of({id})).freed.empty());  // freeing twice frees once
  ledger.Sent(b.Use(64));
  ledger.Sent(b.Use(64));
  CHECK(ledger.TakeAll().size() == 2);
  CHECK(ledger.unreleased() == 0);
  CHECK(!ledger.BacklogFull());
}

}  // namespace
}  // namespace graphstore
