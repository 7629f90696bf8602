// The registry of backends and channels: ids, lookups, and what a gone id reads as.

#include <catch2/catch.hpp>

#include <string>

#include "server/service/registry.h"

namespace graphstore {
namespace {

std::shared_ptr<ChannelEntry> NewChannel(Registry& r, std::shared_ptr<BackendEntry> b) {
  auto c = std::make_shared<ChannelEntry>(8, 1 << 20, int64_t{1} << 30);
  c->id = r.ReserveChannelId();
  c->backend = std::move(b);
  r.AddChannel(c);
  return c;
}

TEST_CASE("ids of two registries (a server and its restart) never meet", "[registry]") {
  Registry before(7), after(8), random_a, random_b;
  auto b = before.AddBackend("k", v1::SamplingConfig());
  auto old_channel = NewChannel(before, b);
  auto b2 = after.AddBackend("k", v1::SamplingConfig());
  auto new_channel = NewChannel(after, b2);
  CHECK(old_channel->id != new_channel->id);
  CHECK(b->id != b2->id);
  Registry::Found found;
  CHECK(after.FindChannel(old_channel->id, &found) == nullptr);
  CHECK(found == Registry::Found::kUnknown);  // NOT_FOUND, not another trainer's channel
  CHECK(after.FindBackend(b->id) == nullptr);
  CHECK(old_channel->id < (uint64_t{1} << 63));  // fits an int64
  CHECK(random_a.instance() != 0);
  CHECK(random_a.instance() != random_b.instance());  // 1 in 16 million to fail
}

TEST_CASE("channel ids are never reused, and a gone id reads as destroyed, an unknown one as unknown", "[registry]") {
  Registry r;
  auto b = r.AddBackend("k", v1::SamplingConfig());
  auto c1 = NewChannel(r, b);
  auto c2 = NewChannel(r, b);
  CHECK(c2->id > c1->id);
  CHECK(b->num_channels == 2);
  Registry::Found found;
  CHECK(r.FindChannel(c1->id, &found) == c1);
  CHECK(found == Registry::Found::kLive);
  CHECK(r.RemoveChannel(c1->id) == c1);
  CHECK(b->num_channels == 1);
  CHECK(r.FindChannel(c1->id, &found) == nullptr);
  CHECK(found == Registry::Found::kDestroyed);
  CHECK(r.RemoveChannel(c1->id) == nullptr);
  auto c3 = NewChannel(r, b);
  CHECK(c3->id > c2->id);
  CHECK(r.FindChannel(c3->id + 1, &found) == nullptr);
  CHECK(found == Registry::Found::kUnknown);
  CHECK(r.FindChannel(0, &found) == nullptr);
  CHECK(found == Registry::Found::kUnknown);
  // A reserved id whose channel was never added reads as destroyed, never as live.
  const uint64_t reserved = r.ReserveChannelId();
  CHECK(r.FindChannel(reserved, &found) == nullptr);
  CHECK(found == Registry::Found::kDestroyed);
}

TEST_CASE("a channel that is not live gets NOT_FOUND or FAILED_PRECONDITION, naming it", "[registry]") {
  const absl::Status gone = Registry::NotLive(7, Registry::Found::kDestroyed);
  CHECK(absl::IsFailedPrecondition(gone));
  CHECK(gone.message() == "channel_id 7 was destroyed");
  const absl::Status unknown = Registry::NotLive(8, Registry::Found::kUnknown);
  CHECK(absl::IsNotFound(unknown));
  CHECK(unknown.message() == "channel_id 8 does not exist");
}

TEST_CASE("backends are found by id and by key, and a removed key can name a new backend", "[registry]") {
  Registry r;
  auto a = r.AddBackend("a", v1::SamplingConfig());
  auto b = r.AddBackend("b", v1::SamplingConfig());
  CHECK(a->id != b->id);
  CHECK(a->state == BackendEntry::State::kCreating);
  CHECK(r.FindBackend(a->id) == a);
  CHECK(r.FindBackendByKey("b") == b);
  CHECK(r.FindBackendByKey("c") == nullptr);
  r.RemoveBackend(a->id);
  CHECK(r.FindBackend(a->id) == nullptr);
  CHECK(r.FindBackendByKey("a") == nullptr);
  auto again = r.AddBackend("a", v1::SamplingConfig());
  CHECK(again->id > b->id);
  CHECK(r.backends().size() == 2);
}

}  // namespace
}  // namespace graphstore
