// Trainers ride out failures: a Loader whose server is killed with SIGKILL mid-epoch and
// restarted (alone, or as one of a 2-server cluster, where it is also the owner the trainer
// asks for the rows the other server's batches leave to it) delivers every batch of the epoch
// once, byte-identical to an uninterrupted epoch; past its deadline it fails with the server's last
// error; its background lease renewal keeps a busy trainer's channels alive.

#include "client/loader.h"  // LibTorch first (see loader.h)

#undef CHECK
#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/daemon.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::Daemon;
using testing::PollUntil;

// The test graph: 512 features make each batch ~0.7 MB and an epoch ~80 MB, far more than the
// server's one-message buffer, the 64 KiB window, the client's 16 MiB read-ahead queue and one
// batch of prefetch hold together, so most of an epoch is still unsent when a server is killed.
const std::string& Dataset(int num_partitions) {
  return testing::GeneratedDataset(3000, 512, 8, num_partitions, 11);
}

// Small batches, a one-message server buffer, a small window and one batch of prefetch.
client::LoaderOptions Options(const std::vector<std::string>& servers, bool shared_memory) {
  client::LoaderOptions o;
  o.servers = servers;
  o.backend_key = "resume";
  o.config.set_batch_size(16);
  o.config.add_num_neighbors(5);
  o.config.add_num_neighbors(3);
  o.config.set_shuffle(true);
  o.config.set_with_node_features(true);
  o.config.set_with_labels(true);
  o.config.set_with_edge_ids(true);
  o.split = "train";
  o.seed = 41;
  o.buffer_messages = 1;
  o.prefetch = 1;
  o.stream_window_bytes = 64 << 10;
  o.shared_memory = shared_memory;
  o.connections_per_server = 1;
  o.reconnect_deadline = std::chrono::seconds(60);
  o.reconnect_backoff_max = std::chrono::milliseconds(200);
  return o;
}

// A batch's tensors, copied out of whatever they viewed.
struct Snapshot {
  at::Tensor n_id, edge_index, e_id, x, y;
  std::vector<int64_t> num_sampled_nodes;
  explicit Snapshot(const client::Batch& b)
      : n_id(b.n_id.clone()), edge_index(b.edge_index.clone()), e_id(b.e_id.clone()), x(b.x.clone()),
        y(b.y.clone()), num_sampled_nodes(b.num_sampled_nodes) {}
};
using Epoch = std::map<std::pair<int, int64_t>, Snapshot>;

// Reads batches into `out` until the epoch ends or `limit` batches were read; each batch once.
// `order`, when given, gets their batch indices in the order they came.
void Read(client::Loader& loader, Epoch* out, size_t limit = SIZE_MAX, std::vector<int64_t>* order = nullptr) {
  while (out->size() < limit) {
    auto b = loader.Next();
    if (!b.has_value()) return;
    if (order != nullptr) order->push_back(b->batch_index);
    const auto [it, inserted] = out->emplace(std::make_pair(b->server, b->batch_index), Snapshot(*b));
    INFO("server " << b->server << " batch " << b->batch_index);
    REQUIRE(inserted);
  }
}

void CheckSame(const Epoch& got, const Epoch& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [key, w] : want) {
    INFO("server " << key.first << " batch " << key.second);
    REQUIRE(got.count(key) == 1);
    const Snapshot& g = got.at(key);
    CHECK(torch::equal(g.n_id, w.n_id));
    CHECK(torch::equal(g.edge_index, w.edge_index));
    CHECK(torch::equal(g.e_id, w.e_id));
    CHECK(torch::equal(g.x, w.x));
    CHECK(torch::equal(g.y, w.y));
    CHECK(g.num_sampled_nodes == w.num_sampled_nodes);
  }
}

std::string Address(int port) { return absl::StrCat("127.0.0.1:", port); }

TEST_CASE("a trainer rides out its server's SIGKILL and restart mid-epoch, byte-identical", "[resume]") {
  // Over one connection, over three (each stream a stripe of the batches), through shared memory.
  const int mode = GENERATE(0, 1, 2);
  const bool shared_memory = mode == 2;
  const int connections = mode == 1 ? 3 : 1;
  INFO((shared_memory ? "shared memory" : "socket") << ", " << connections << " connection(s)");
  const std::string dir = Dataset(1);
  const int port = testing::FreeLoopbackPorts(1)[0];
  const std::vector<std::string> flags = {"--state_log_interval_s=0"};
  auto d = std::make_unique<Daemon>(dir, flags, port);

  Epoch want;
  {
    client::Loader reference(Options({Address(port)}, shared_memory));
    REQUIRE(reference.num_shared_memory_servers() == (shared_memory ? 1 : 0));
    reference.StartEpoch(0);
    Read(reference, &want);
    REQUIRE(static_cast<int64_t>(want.size()) == reference.num_batches());
    REQUIRE(want.size() > 40);
  }

  client::LoaderOptions options = Options({Address(port)}, shared_memory);
  options.connections_per_server = connections;
  client::Loader loader(options);
  const uint64_t first_channel = loader.channel_id(0);
  loader.StartEpoch(0);
  Epoch got;
  std::vector<int64_t> order;
  Read(loader, &got, 5, &order);
  REQUIRE(got.size() == 5);
  if (connections > 1) {
    // Every stripe's stream is open on the server.
    client::ClientOptions co;
    co.address = Address(port);
    auto probe = client::Client::Connect(co);
    REQUIRE(probe.ok());
    v1::DescribeChannelRequest req;
    req.set_channel_id(first_channel);
    REQUIRE(PollUntil([&] {
      auto s = (*probe)->DescribeChannel(req);
      return s.ok() && s->open_streams() == connections;
    }));
    CHECK(testing::EstablishedConnectionsTo(port) >= connections + 1);
  }
  CHECK(d->Stop(SIGKILL) == -1);
  d = std::make_unique<Daemon>(dir, flags, port);
  Read(loader, &got, SIZE_MAX, &order);
  CheckSame(got, want);
  // In batch order across the restart, each once, over any number of connections.
  for (size_t i = 0; i < order.size(); ++i) REQUIRE(order[i] == static_cast<int64_t>(i));
  CHECK(loader.num_reconnects() >= 1);
  CHECK(loader.channel_id(0) != first_channel);
  CHECK(loader.num_shared_memory_servers() == (shared_memory ? 1 : 0));

  // The next epoch runs on the new channel as usual.
  loader.StartEpoch(1);
  Epoch next;
  Read(loader, &next);
  CHECK(static_cast<int64_t>(next.size()) == loader.num_batches());
  loader.Close();
  CHECK(d->Stop(SIGTERM) == 0);
}

TEST_CASE("a server killed between epochs is reconnected by the next StartEpoch", "[resume]") {
  const std::string dir = Dataset(1);
  const int port = testing::FreeLoopbackPorts(1)[0];
  const std::vector<std::string> flags = {"--state_log_interval_s=0"};
  auto d = std::make_unique<Daemon>(dir, flags, port);
  client::Loader loader(Options({Address(port)}, false));
  loader.StartEpoch(0);
  Epoch first;
  Read(loader, &first);
  CHECK(d->Stop(SIGKILL) == -1);
  d = std::make_unique<Daemon>(dir, flags, port);
  loader.StartEpoch(1);
  Epoch second;
  Read(loader, &second);
  CHECK(static_cast<int64_t>(second.size()) == loader.num_batches());
  CHECK(loader.num_reconnects() >= 1);
  CHECK(d->Stop(SIGTERM) == 0);
}

TEST_CASE("a 2-server cluster: a trainer rides out one server's SIGKILL and restart, byte-identical",
          "[resume][cluster]") {
  const std::string dir = Dataset(2);
  const std::vector<int> ports = testing::FreeLoopbackPorts(2);
  const std::vector<std::string> addresses = {Address(ports[0]), Address(ports[1])};
  // Peer caches far smaller than the other partition's rows: the trainer asks the owners.
  const std::vector<std::string> flags = {"--cluster=" + addresses[0] + "," + addresses[1], "--peer_timeout_ms=2000",
                                          "--shared_memory_dir=", "--state_log_interval_s=0", "--peer_cache_mb=1"};
  auto d0 = std::make_unique<Daemon>(dir + "/part-0", flags, ports[0], /*wait=*/false);
  auto d1 = std::make_unique<Daemon>(dir + "/part-1", flags, ports[1], /*wait=*/false);
  d0->WaitReady();
  d1->WaitReady();

  Epoch want;
  {
    client::Loader reference(Options(addresses, false));
    reference.StartEpoch(0);
    Read(reference, &want);
    REQUIRE(static_cast<int64_t>(want.size()) == reference.num_batches());
  }
  // Two connections to each server: a stripe of each server's batches on each.
  client::LoaderOptions options = Options(addresses, false);
  options.connections_per_server = 2;
  client::Loader loader(options);
  loader.StartEpoch(0);
  Epoch got;
  std::vector<int64_t> order;
  Read(loader, &got, 6, &order);
  REQUIRE(got.size() == 6);
  // Server 1 goes: its own stream breaks, server 0's batches that reach partition 1 fail, and
  // so do the trainer's calls for the rows server 0's batches leave to partition 1.
  CHECK(d1->Stop(SIGKILL) == -1);
  d1 = std::make_unique<Daemon>(dir + "/part-1", flags, ports[1]);
  Read(loader, &got, SIZE_MAX, &order);
  CheckSame(got, want);
  CHECK(loader.num_reconnects() >= 1);
  // Global batches, in order across the restart: 0, 1, 2, ... each once.
  for (size_t i = 0; i < order.size(); ++i) REQUIRE(order[i] == static_cast<int64_t>(i));
  // Rows came from their owners: server 0 sent the trainer none of partition 1's.
  auto c0 = client::Client::Connect({addresses[0]});
  REQUIRE(c0.ok());
  auto stats = (*c0)->GetServerStats();
  REQUIRE(stats.ok());
  int from_owners = 0;
  for (const auto& b : stats->backends()) {
    for (const auto& c : b.channels()) {
      from_owners += c.rows_from_owners();
      CHECK(c.other_partitions_rows_sent() == 0);
    }
  }
  CHECK(from_owners >= 1);
  loader.Close();
  CHECK(d0->Stop(SIGTERM) == 0);
  CHECK(d1->Stop(SIGTERM) == 0);
}

TEST_CASE("a stopped server delays the batches after it, never reorders them", "[resume][cluster]") {
  // Server 1 is frozen (SIGSTOP) while the trainer waits for its batch: server 0's later
  // batches arrive and are held; once server 1 goes on, every batch comes in order.
  const std::string dir = Dataset(2);
  const std::vector<int> ports = testing::FreeLoopbackPorts(2);
  const std::vector<std::string> addresses = {Address(ports[0]), Address(ports[1])};
  const std::vector<std::string> flags = {"--cluster=" + addresses[0] + "," + addresses[1], "--shared_memory_dir=",
                                          "--state_log_interval_s=0"};
  auto d0 = std::make_unique<Daemon>(dir + "/part-0", flags, ports[0], /*wait=*/false);
  auto d1 = std::make_unique<Daemon>(dir + "/part-1", flags, ports[1], /*wait=*/false);
  d0->WaitReady();
  d1->WaitReady();
  client::LoaderOptions o = Options(addresses, false);
  o.prefetch = 3;
  o.buffer_messages = 4;
  // Seeds only: server 0 samples its batches without asking server 1 for anything, so it goes
  // on while server 1 is frozen.
  o.config.clear_num_neighbors();
  o.config.add_num_neighbors(0);
  o.config.set_with_node_features(false);
  o.config.set_with_labels(false);
  o.config.set_with_edge_ids(false);
  client::Loader loader(o);
  loader.StartEpoch(0);
  d1->Signal(SIGSTOP);
  // The trainer takes batches as they come (no Catch2 assertions off the test's thread).
  std::vector<int64_t> order;
  std::thread trainer([&] {
    while (auto b = loader.Next()) order.push_back(b->batch_index);
  });
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{trainer};
  // It soon waits for one of server 1's batches while server 0's later ones arrive and are held.
  const bool held = loader.WaitUntilHeld(2, std::chrono::seconds(60));
  d1->Signal(SIGCONT);
  trainer.join();
  CHECK(held);
  REQUIRE(static_cast<int64_t>(order.size()) == loader.num_batches());
  for (size_t i = 0; i < order.size(); ++i) REQUIRE(order[i] == static_cast<int64_t>(i));
  loader.Close();
  CHECK(d0->Stop(SIGTERM) == 0);
  CHECK(d1->Stop(SIGTERM) == 0);
}

TEST_CASE("past its reconnect deadline the Loader fails with the server's last error", "[resume]") {
  const std::string dir = Dataset(1);
  Daemon d(dir, {"--state_log_interval_s=0"});
  client::LoaderOptions o = Options({d.address()}, false);
  o.reconnect_deadline = std::chrono::milliseconds(1500);
  client::Loader loader(o);
  loader.StartEpoch(0);
  Epoch got;
  Read(loader, &got, 3);
  CHECK(d.Stop(SIGKILL) == -1);
  try {
    Read(loader, &got);
    FAIL("the epoch ended although its server is gone");
  } catch (const client::Error& e) {
    CHECK(e.code() == absl::StatusCode::kUnavailable);
    CHECK_THAT(e.message(), Catch::Contains(d.address()));
    CHECK_THAT(e.message(), Catch::Contains("gave up reconnecting after 1500 ms"));
  }
  CHECK(static_cast<int64_t>(got.size()) < loader.num_batches());
}

TEST_CASE("the Loader renews its leases while the trainer is busy; a silent channel is reaped", "[resume]") {
  const std::string dir = Dataset(1);
  Daemon d(dir, {"--state_log_interval_s=0"});
  client::LoaderOptions o = Options({d.address()}, false);
  o.lease_ms = 300;
  client::Loader loader(o);
  loader.StartEpoch(0);
  Epoch first;
  Read(loader, &first);  // the stream is closed now: only the lease holds the channel

  // The trainer is busy. A channel registered after the epoch ended with the same lease and no
  // renewal is reaped; had the loader's lease lapsed, the same reaper pass would take it first.
  client::ClientOptions co;
  co.address = d.address();
  auto c = client::Client::Connect(co);
  REQUIRE(c.ok());
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("silent");
  *init.mutable_config() = o.config;
  auto backend = (*c)->InitSamplingBackend(init);
  REQUIRE(backend.ok());
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend->backend_id());
  reg.mutable_split()->set_split("val");
  reg.set_lease_ms(300);
  auto silent = (*c)->RegisterSamplingInput(reg);
  REQUIRE(silent.ok());
  auto state = [&](uint64_t channel) {
    v1::DescribeChannelRequest req;
    req.set_channel_id(channel);
    auto s = (*c)->DescribeChannel(req);
    return s.ok() ? s->state() : std::string(s.status().message());
  };
  CHECK(PollUntil([&] { return state(silent->channel_id()) == "destroyed"; }));
  CHECK(state(loader.channel_id(0)) != "destroyed");
  CHECK(loader.num_lease_renewals() > 0);

  loader.StartEpoch(1);
  Epoch second;
  Read(loader, &second);
  CHECK(static_cast<int64_t>(second.size()) == loader.num_batches());
  CHECK(loader.num_reconnects() == 0);
  CHECK(d.Stop(SIGTERM) == 0);
}

}  // namespace
}  // namespace graphstore
