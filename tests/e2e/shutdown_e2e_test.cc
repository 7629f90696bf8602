// End to end: how a daemon and its channels end: SIGTERM, Exit, leases, a bad partition.

#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "server/graph/partition.h"
#include "tests/daemon.h"
#include "tests/e2e/e2e_util.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using client::Client;
using namespace testing;

TEST_CASE("SIGTERM with live streams ends them and exits 0", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d, 64 << 10);
  const uint64_t backend = InitBackend(*c, "term", 8);
  const uint64_t channel = RegisterSplit(*c, backend, "train", 2);
  Start(*c, channel, 0);
  auto stream = Open(*c, channel, 0);
  REQUIRE(stream->Next().ok());
  // The reader takes a few batches, then holds still until SIGTERM is sent: the epoch (225
  // batches) is far more than the 64 KiB window and the buffer hold, so the stream is live.
  std::atomic<bool> ended{false};
  std::atomic<int> received{1};
  std::promise<void> terminated;
  absl::Status end;
  std::thread reader([&, go_on = terminated.get_future()] {
    while (true) {
      if (received.load() == 3) go_on.wait();
      auto m = stream->Next();
      if (!m.ok()) {
        end = m.status();
        break;
      }
      if (*m == nullptr) break;
      ++received;
    }
    ended = true;
  });
  REQUIRE(PollUntil([&] { return received.load() >= 3; }));
  d.Signal(SIGTERM);
  terminated.set_value();
  CHECK(d.WaitExit(30) == 0);
  reader.join();
  CHECK(ended.load());
  CHECK(!end.ok());
  CHECK_THAT(d.Log(), Catch::Contains("destroying live channel"));
}
TEST_CASE("SIGTERM while backends are being created answers every creation and exits 0", "[e2e]") {
  // Weighted backends build their indexes on the server's creation threads; the signal comes
  // once the first is up, so it finds the others waiting, building or done, whichever the
  // machine allows. Every call is answered (created, or refused as the server goes), and the
  // daemon exits 0.
  Daemon d(Dataset());
  auto c = Connect(d);
  std::vector<std::future<absl::StatusCode>> calls;
  for (int i = 0; i < 24; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      v1::InitSamplingBackendRequest req;
      req.set_backend_key("weighted-" + std::to_string(i));
      req.mutable_options()->set_num_workers(1);
      req.mutable_config()->set_batch_size(16 + i);
      req.mutable_config()->add_num_neighbors(4);
      req.mutable_config()->add_weighted_edge_types("*");
      req.mutable_config()->set_replace(i % 2 == 1);
      return c->InitSamplingBackend(req).status().code();
    }));
  }
  REQUIRE(calls[0].get() == absl::StatusCode::kOk);
  d.Signal(SIGTERM);
  for (size_t i = 1; i < calls.size(); ++i) {
    auto& call = calls[i];
    const absl::StatusCode code = call.get();
    INFO(absl::StatusCodeToString(code));
    CHECK((code == absl::StatusCode::kOk || code == absl::StatusCode::kUnavailable ||
           code == absl::StatusCode::kCancelled));
  }
  CHECK(d.WaitExit(30) == 0);
}

TEST_CASE("the Exit RPC shuts the daemon down with exit code 0", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "exit");
  RegisterSplit(*c, backend, "val");
  auto r = c->Exit();
  REQUIRE(r.ok());
  CHECK(r->channels_destroyed() == 1);
  CHECK(d.WaitExit(30) == 0);
}
TEST_CASE("a channel whose client vanished is reaped when its lease expires", "[e2e]") {
  Daemon d(Dataset());
  auto c = Connect(d);
  const uint64_t backend = InitBackend(*c, "lease");
  v1::RegisterSamplingInputRequest req;
  req.set_backend_id(backend);
  req.mutable_split()->set_split("val");
  req.set_lease_ms(300);
  const uint64_t channel = c->RegisterSamplingInput(req)->channel_id();
  v1::DescribeChannelRequest dc;
  dc.set_channel_id(channel);
  CHECK(PollUntil([&] { return c->DescribeChannel(dc)->state() == "destroyed"; }));
  CHECK(c->GetServerStats()->leases_expired() == 1);
  CHECK(d.Stop(SIGTERM) == 0);
}
TEST_CASE("a bad partition directory stops the daemon with the file named", "[e2e]") {
  TempDir dir;
  REQUIRE_THROWS_WITH(Daemon(dir.path()), Catch::Contains("manifest.json: file is missing"));
}
}  // namespace
}  // namespace graphstore
