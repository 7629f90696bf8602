// The deliver stage without a daemon: batches handed by readers come out in the trainer's
// order (or as they arrive), a reader a prefetch window ahead waits until the trainer takes,
// stopping wakes every wait, and an epoch whose streams ended with a batch missing is DataLoss;
// ChannelProgress keeps each of a channel's batches once.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "client/channel_progress.h"
#include "client/delivery.h"

namespace graphstore::client {
namespace {

using std::chrono::milliseconds;

HostBatch Batch(int64_t index) {
  HostBatch b;
  b.batch_index = index;
  return b;
}

TEST_CASE("ordered delivery holds early batches until their turn", "[delivery]") {
  DeliveryOptions o;
  o.ordered = true;
  o.global = true;
  o.prefetch = 4;
  Delivery d(o);
  d.Begin(/*num_servers=*/2, /*streams=*/2);
  std::thread a([&] {
    CHECK(d.Hand(0, Batch(2), absl::OkStatus()));
    CHECK(d.Hand(0, Batch(0), absl::OkStatus()));
    CHECK_FALSE(d.Hand(0, std::nullopt, absl::OkStatus()));
  });
  REQUIRE(d.WaitUntilHeld(1, milliseconds(10000)));
  CHECK(d.num_held() >= 1);
  std::thread b([&] {
    CHECK(d.Hand(1, Batch(1), absl::OkStatus()));
    CHECK_FALSE(d.Hand(1, std::nullopt, absl::OkStatus()));
  });
  for (int64_t want = 0; want < 3; ++want) {
    auto got = d.Take(milliseconds(10000));
    REQUIRE(got.has_value());
    REQUIRE(got->batch.has_value());
    CHECK(got->batch->batch_index == want);
  }
  auto end = d.Take(milliseconds(10000));
  REQUIRE(end.has_value());
  CHECK_FALSE(end->batch.has_value());
  CHECK(end->status.ok());
  a.join();
  b.join();
}

TEST_CASE("a reader a prefetch window ahead waits until the trainer takes, or the readers stop", "[delivery]") {
  DeliveryOptions o;
  o.prefetch = 1;
  Delivery d(o);
  d.Begin(1, 1);
  std::atomic<int> handed{0};
  std::thread reader([&] {
    while (d.Hand(0, Batch(handed), absl::OkStatus())) ++handed;
  });
  // The first batch is handed at once; the reader then waits for the trainer.
  auto first = d.Take(milliseconds(10000));
  REQUIRE(first.has_value());
  CHECK(first->batch->batch_index == 0);
  REQUIRE(d.Take(milliseconds(10000)).has_value());
  d.Stop();
  reader.join();
  CHECK(d.WaitStopped(milliseconds(0)));
  d.Clear();
  CHECK_FALSE(d.stopping());
}

TEST_CASE("every stream ended with a batch of the trainer's order missing is DataLoss", "[delivery]") {
  DeliveryOptions o;
  o.ordered = true;
  o.global = true;
  Delivery d(o);
  d.Begin(1, 1);
  CHECK(d.Hand(0, Batch(1), absl::OkStatus()));
  CHECK_FALSE(d.Hand(0, std::nullopt, absl::OkStatus()));
  auto got = d.Take(milliseconds(10000));
  REQUIRE(got.has_value());
  CHECK(got->status.code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("a stream's failure is handed on at once; nothing came is a timeout", "[delivery]") {
  Delivery d(DeliveryOptions{});
  d.Begin(1, 1);
  CHECK_FALSE(d.Take(milliseconds(1)).has_value());
  CHECK_FALSE(d.Hand(0, std::nullopt, absl::UnavailableError("gone")));
  auto got = d.Take(milliseconds(10000));
  REQUIRE(got.has_value());
  CHECK(got->server == 0);
  CHECK(got->status.code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("a channel's batches are kept once, each by its own stripe", "[delivery]") {
  ChannelProgress p;
  p.Begin(/*num_batches=*/4, /*stripes=*/2);
  bool resent = false;
  REQUIRE(p.Mark(0, 0, 100, &resent).ok());
  CHECK_FALSE(resent);
  REQUIRE(p.Mark(0, 0, 100, &resent).ok());
  CHECK(resent);
  CHECK(p.first_missing() == 1);
  CHECK(p.StripeMissing(0) == 2);
  CHECK(p.StripeMissing(1) == 1);
  CHECK(p.Mark(1, 0, 101, &resent).code() == absl::StatusCode::kDataLoss);  // stripe 1's
  CHECK(p.Mark(-1, 0, 7, &resent).code() == absl::StatusCode::kDataLoss);   // not the channel's
  REQUIRE(p.Mark(1, 1, 101, &resent).ok());
  CHECK(p.first_missing() == 2);
}

}  // namespace
}  // namespace graphstore::client
