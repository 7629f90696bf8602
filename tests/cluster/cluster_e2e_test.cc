// A cluster of servers on loopback: cross-partition sampling gives the same subgraphs as one
// partition holding the whole graph, the Loader covers every server's seeds, sampling waits
// for every peer, and a dead or frozen peer turns into UNAVAILABLE naming it, from which
// sampling recovers once the peer is back.

#include "client/loader.h"  // LibTorch first (see loader.h)

#undef CHECK
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpc_health/v1/health.grpc.pb.h"
#include "server/server.h"
#include "tests/daemon.h"
#include "tests/fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::Daemon;
using testing::TempDir;

// The same generated graph (with edge weights and times) written as 1, 2, 4 and 8 randomly
// assigned partitions (dealt: from 8 on the servers compute owners and keep no book of them).
const std::string& Dataset(int num_partitions) {
  return testing::GeneratedDataset(3000, 8, 4, num_partitions, /*seed=*/11, /*times=*/true);
}

std::string PartDir(int num_partitions, int k) {
  return num_partitions == 1 ? Dataset(1) : Dataset(num_partitions) + "/part-" + std::to_string(k);
}

// In-process servers on port 0 that join each other once every port is known.
struct LocalCluster {
  std::vector<std::unique_ptr<GraphStoreServer>> servers;
  std::vector<std::string> addresses;

  // Every server's peer cache holds `peer_cache_bytes` (-1: the default); `shared_memory`:
  // the servers offer it (in /dev/shm).
  explicit LocalCluster(int n, int64_t peer_cache_bytes = -1, bool shared_memory = false) {
    std::vector<ServerOptions> options(n);
    for (int k = 0; k < n; ++k) {
      options[k].partition_dir = PartDir(n, k);
      if (!shared_memory) options[k].shared_memory_dir = "";
      options[k].core.state_log_interval_s = 0;
      if (peer_cache_bytes >= 0) options[k].core.peer_cache_bytes = peer_cache_bytes;
    }
    auto started = StartLocalCluster(options);
    REQUIRE(started.ok());
    servers = *std::move(started);
    for (const auto& s : servers) addresses.push_back(s->address());
  }
};

std::unique_ptr<client::Client> Connect(const std::string& address) {
  client::ClientOptions o;
  o.address = address;
  auto c = client::Client::Connect(o);
  REQUIRE(c.ok());
  return *std::move(c);
}

v1::SamplingConfig Config(int batch_size) {
  v1::SamplingConfig c;
  c.set_batch_size(batch_size);
  c.add_num_neighbors(6);
  c.add_num_neighbors(4);
  c.add_num_neighbors(3);
  c.set_shuffle(true);
  c.set_with_edge_ids(true);
  c.set_with_node_features(true);
  c.set_with_labels(true);
  return c;
}

std::vector<int64_t> TrainIds(client::Client& c) {
  v1::GetNodeIdsRequest req;
  req.set_split("train");
  auto r = c.GetNodeIds(req);
  REQUIRE(r.ok());
  const auto* p = reinterpret_cast<const int64_t*>(r->ids().data().data());
  return std::vector<int64_t>(p, p + r->ids().data().size() / 8);
}

// Registers `seeds` on a server and returns the channel.
uint64_t Register(client::Client& c, const std::vector<int64_t>& seeds, const v1::SamplingConfig& config,
                  int buffer_messages = 0, const std::vector<int64_t>& times = {}) {
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("cluster-test");
  *init.mutable_config() = config;
  auto b = c.InitSamplingBackend(init);
  REQUIRE(b.ok());
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(b->backend_id());
  reg.mutable_nodes()->mutable_ids()->Add(seeds.begin(), seeds.end());
  reg.mutable_nodes()->mutable_times()->Add(times.begin(), times.end());
  reg.set_seed(2024);
  reg.mutable_buffer()->set_max_messages(buffer_messages);
  auto r = c.RegisterSamplingInput(reg);
  REQUIRE(r.ok());
  return r->channel_id();
}

// Streams one whole epoch; the messages without their channel id, in batch order.
std::vector<v1::SampledMessage> Epoch(client::Client& c, uint64_t channel, int64_t epoch) {
  v1::StartEpochRequest start;
  start.set_channel_id(channel);
  start.set_epoch(epoch);
  REQUIRE(c.StartEpoch(start).ok());
  v1::StreamSampledMessagesRequest req;
  req.set_channel_id(channel);
  req.set_epoch(epoch);
  auto stream = c.Stream(req);
  std::vector<v1::SampledMessage> out;
  while (true) {
    auto m = stream->Next();
    REQUIRE(m.ok());
    if (*m == nullptr) break;
    (*m)->clear_channel_id();
    out.push_back(**m);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.batch_index() < b.batch_index(); });
  return out;
}

std::vector<int64_t> Int64s(const v1::Tensor& t) {
  const auto* p = reinterpret_cast<const int64_t*>(t.data().data());
  return std::vector<int64_t>(p, p + t.data().size() / 8);
}

TEST_CASE("1-, 2- and 4-partition clusters sample the same subgraphs for the same batch", "[cluster]") {
  // Uniform draws, draws by edge weight without and with replacement, temporal draws by weight
  // from the seeds' node times, the most recent neighbours from explicit seed times, uniform
  // temporal draws with replacement, and uniform temporal draws from explicit seed times; and
  // uniform draws of neighbour ids alone, without and with replacement, which a server makes
  // from the peers' neighbour lists it keeps once they have sent them (two epochs: the lists
  // are fetched in the first and drawn from in both).
  const int mode = GENERATE(0, 1, 2, 3, 4, 5, 6, 7, 8);
  const char* names[] = {"uniform",
                         "weighted",
                         "weighted, with replacement",
                         "temporal, weighted",
                         "temporal last, explicit times",
                         "temporal, with replacement",
                         "temporal, explicit times",
                         "uniform, neighbour ids from cached lists",
                         "uniform with replacement, neighbour ids from cached lists"};
  INFO(names[mode]);
  v1::SamplingConfig config = Config(40);
  config.set_with_edge_ids(mode < 7);
  if (mode == 8) config.set_replace(true);
  if (mode == 1 || mode == 2 || mode == 3) config.add_weighted_edge_types("*");
  if (mode < 7) config.set_replace(mode == 2 || mode == 5);
  if (mode == 3 || mode == 5 || mode == 6) config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
  if (mode == 4) config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_LAST);
  // Explicit times: every seed a while after the middle of the time range.
  auto times_of = [&](const std::vector<int64_t>& seeds) {
    std::vector<int64_t> t;
    if (mode == 4 || mode == 6) {
      for (int64_t id : seeds) t.push_back(500000 + (id % 7) * 50000);
    }
    return t;
  };
  LocalCluster single(1);
  auto whole = Connect(single.addresses[0]);
  for (int n : {2, 4}) {
    INFO(n << " partitions");
    LocalCluster cluster(n);
    int64_t foreign_nodes = 0;
    for (int k = 0; k < n; ++k) {
      auto c = Connect(cluster.addresses[k]);
      // The seeds partition k owns, batched the same way by it and by the single server.
      const std::vector<int64_t> seeds = TrainIds(*c);
      REQUIRE(!seeds.empty());
      const uint64_t here = Register(*c, seeds, config, 0, times_of(seeds));
      const uint64_t there = Register(*whole, seeds, config, 0, times_of(seeds));
      std::vector<v1::SampledMessage> got;
      for (int64_t epoch : mode < 7 ? std::vector<int64_t>{3} : std::vector<int64_t>{3, 4}) {
        got = Epoch(*c, here, epoch);
        const auto want = Epoch(*whole, there, epoch);
        REQUIRE(got.size() == want.size());
        REQUIRE(!got.empty());
        for (size_t b = 0; b < got.size(); ++b) {
          INFO("partition " << k << " epoch " << epoch << " batch " << b);
          REQUIRE(google::protobuf::util::MessageDifferencer::Equals(got[b], want[b]));
        }
      }
      // The subgraphs really crossed partitions.
      v1::LookupPartitionsRequest lp;
      for (int64_t id : Int64s(got[0].nodes(0).ids())) lp.add_ids(id);
      auto owners = c->LookupPartitions(lp);
      REQUIRE(owners.ok());
      const auto* p = reinterpret_cast<const int32_t*>(owners->partitions().data().data());
      for (int i = 0; i < lp.ids_size(); ++i) foreign_nodes += p[i] != k;
      auto stats = c->GetServerStats();
      REQUIRE(stats.ok());
      REQUIRE(stats->peers_size() == n - 1);
      int64_t calls = 0;
      for (const auto& peer : stats->peers()) {
        CHECK(peer.answering());
        CHECK(peer.failed_calls() == 0);
        calls += peer.calls();
        if (peer.calls() > 0) CHECK(peer.bytes_received() > 0);
      }
      CHECK(calls > 0);
    }
    CHECK(foreign_nodes > 0);
  }
}

TEST_CASE("the Loader covers every server's seeds once per epoch and merges their streams", "[cluster]") {
  for (int n : {2, 4}) {
    INFO(n << " partitions");
    LocalCluster cluster(n);
    std::vector<int64_t> all;
    for (const auto& a : cluster.addresses) {
      auto ids = TrainIds(*Connect(a));
      all.insert(all.end(), ids.begin(), ids.end());
    }
    std::sort(all.begin(), all.end());
    client::LoaderOptions o;
    o.servers = cluster.addresses;
    o.config = Config(50);
    o.shared_memory = false;
    client::Loader loader(o);
    CHECK(loader.num_seeds() == static_cast<int64_t>(all.size()));
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      loader.StartEpoch(epoch);
      std::vector<int64_t> seen;
      std::set<int> servers;
      int64_t batches = 0;
      while (auto b = loader.Next()) {
        ++batches;
        servers.insert(b->server);
        CHECK(b->epoch == epoch);
        CHECK(b->x.size(0) == b->n_id.size(0));
        const auto* p = b->seeds.data_ptr<int64_t>();
        seen.insert(seen.end(), p, p + b->seeds.numel());
      }
      std::sort(seen.begin(), seen.end());
      CHECK(seen == all);
      CHECK(batches == loader.num_batches());
      CHECK(static_cast<int>(servers.size()) == n);
    }
  }
}

TEST_CASE("the Loader sends each explicit seed's time to the server that owns it", "[cluster][temporal]") {
  LocalCluster cluster(2);
  std::vector<int64_t> seeds;
  for (const auto& a : cluster.addresses) {
    auto ids = TrainIds(*Connect(a));
    seeds.insert(seeds.end(), ids.begin(), ids.begin() + std::min<size_t>(ids.size(), 40));
  }
  std::sort(seeds.begin(), seeds.end());  // interleaves the two servers' seeds
  // Every other seed before every edge (it reaches nothing), the others after every edge.
  std::vector<int64_t> times;
  for (size_t i = 0; i < seeds.size(); ++i) times.push_back(i % 2 == 0 ? -1 : 2000000);
  client::LoaderOptions o;
  o.servers = cluster.addresses;
  o.config = Config(1);
  o.config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
  o.config.set_with_node_times(true);
  o.seeds = seeds;
  o.seed_times = times;
  o.shared_memory = false;  // (the cluster's servers offer none)
  client::Loader loader(o);
  loader.StartEpoch(0);
  int64_t batches = 0, reaching = 0;
  std::set<int> servers;
  while (auto b = loader.Next()) {
    ++batches;
    servers.insert(b->server);
    const int64_t seed = b->seeds.data_ptr<int64_t>()[0];
    const size_t i = std::lower_bound(seeds.begin(), seeds.end(), seed) - seeds.begin();
    INFO("seed " << seed << " at time " << times[i]);
    if (times[i] < 0) CHECK(b->edge_index.size(1) == 0);
    reaching += times[i] >= 0 && b->edge_index.size(1) > 0;
    // The batch carries the seed's time, and every node of it was sampled at that time.
    REQUIRE(b->seed_time.defined());
    CHECK(b->seed_time.numel() == 1);
    CHECK(b->seed_time.data_ptr<int64_t>()[0] == times[i]);
    REQUIRE(b->sampled_time.defined());
    CHECK(b->sampled_time.numel() == b->n_id.numel());
    CHECK(b->sampled_time.eq(times[i]).all().item<bool>());
    REQUIRE(b->time.defined());  // the generated graph stores node times
    CHECK(b->time.numel() == b->n_id.numel());
  }
  CHECK(batches == static_cast<int64_t>(seeds.size()));
  CHECK(servers.size() == 2);
  CHECK(reaching > 10);
  o.seed_times.pop_back();
  try {
    client::Loader bad(o);
    FAIL("seed_times of the wrong length were accepted");
  } catch (const client::Error& e) {
    CHECK(e.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(e.message(), Catch::Contains("LoaderOptions.seed_times"));
  }
}

// One epoch of a Loader's batches, copied out, in the order they were handed out.
struct GlobalBatch {
  int64_t index = 0;
  at::Tensor seeds, n_id, edge_index, e_id, x, y, input_id;
};
// With `edit` applied to the options; `stats`, when given, gets every server's stats after the
// epoch, while the loader's channels are open.
// A socket Loader of the train split in batches of 40 over `servers` (global batches).
client::LoaderOptions GlobalOptions(const std::vector<std::string>& servers) {
  client::LoaderOptions o;
  o.servers = servers;
  o.backend_key = "global";
  o.config = Config(40);
  o.split = "train";
  o.shared_memory = false;
  return o;
}

std::vector<GlobalBatch> LoaderEpoch(const std::vector<std::string>& servers, int64_t epoch, int rank = 0,
                                     int world_size = 1, bool drop_last = false, int64_t* num_batches = nullptr,
                                     const std::function<void(client::LoaderOptions*)>& edit = nullptr,
                                     std::vector<v1::ServerStats>* stats = nullptr) {
  client::LoaderOptions o = GlobalOptions(servers);
  o.config.set_drop_last(drop_last);
  o.seed = 77;
  o.rank = rank;
  o.world_size = world_size;
  if (edit) edit(&o);
  client::Loader loader(o);
  if (num_batches != nullptr) *num_batches = loader.num_batches();
  loader.StartEpoch(epoch);
  std::vector<GlobalBatch> out;
  while (auto b = loader.Next()) {
    out.push_back({b->batch_index, b->seeds.clone(), b->n_id.clone(), b->edge_index.clone(), b->e_id.clone(),
                   b->x.clone(), b->y.clone(), b->input_id.clone()});
  }
  for (size_t k = 0; stats != nullptr && k < servers.size(); ++k) {
    auto s = Connect(servers[k])->GetServerStats();
    REQUIRE(s.ok());
    stats->push_back(*s);
  }
  return out;
}

// What the servers' channels sent of other partitions' rows, and the bytes between servers.
struct Crossing {
  int64_t other_rows = 0;
  int64_t peer_bytes = 0;
  int channels_from_owners = 0;
};
Crossing CrossingOf(const std::vector<v1::ServerStats>& stats) {
  Crossing c;
  for (const v1::ServerStats& s : stats) {
    for (const auto& p : s.peers()) c.peer_bytes += p.bytes_sent() + p.bytes_received();
    for (const auto& b : s.backends()) {
      for (const auto& ch : b.channels()) {
        c.other_rows += ch.other_partitions_rows_sent();
        c.channels_from_owners += ch.rows_from_owners();
      }
    }
  }
  return c;
}

void CheckSameBatches(const std::vector<GlobalBatch>& got, const std::vector<GlobalBatch>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t b = 0; b < got.size(); ++b) {
    INFO("batch " << b);
    REQUIRE(got[b].index == want[b].index);
    CHECK(torch::equal(got[b].n_id, want[b].n_id));
    CHECK(torch::equal(got[b].edge_index, want[b].edge_index));
    CHECK(torch::equal(got[b].x, want[b].x));
    CHECK(torch::equal(got[b].y, want[b].y));
  }
}

std::set<int64_t> AllTrainIds(const std::vector<std::string>& servers) {
  std::set<int64_t> all;
  for (const auto& a : servers) {
    for (int64_t id : TrainIds(*Connect(a))) all.insert(id);
  }
  return all;
}

TEST_CASE("global batches are the same batches on 1, 2, 4 and 8 partitions, in batch order", "[cluster][global]") {
  // Batch b holds positions [b*40, (b+1)*40) of one permutation of the whole train split,
  // whichever partitions own them, and is sampled by one server with the rest through its
  // peers: the seeds, their order, the sampled nodes and their order, the edges, ids, features
  // and labels are equal to the last bit on every cluster, and batches come in order 0, 1, ...
  // At 8 partitions the servers' books are dealt: owners computed, rows in slots.
  LocalCluster single(1);
  const auto want = LoaderEpoch(single.addresses, 2);
  const std::set<int64_t> train = AllTrainIds(single.addresses);
  REQUIRE(want.size() == (train.size() + 39) / 40);
  std::vector<int64_t> sorted_train(train.begin(), train.end());
  for (int n : {2, 4, 8}) {
    INFO(n << " partitions");
    LocalCluster cluster(n);
    CHECK(AllTrainIds(cluster.addresses) == train);
    const auto got = LoaderEpoch(cluster.addresses, 2);
    REQUIRE(got.size() == want.size());
    std::set<int64_t> seen;
    int mixed = 0;  // batches whose seeds come from more than one partition
    for (size_t b = 0; b < got.size(); ++b) {
      INFO("batch " << b);
      const GlobalBatch& g = got[b];
      const GlobalBatch& w = want[b];
      REQUIRE(g.index == static_cast<int64_t>(b));
      CHECK(torch::equal(g.seeds, w.seeds));
      CHECK(torch::equal(g.n_id, w.n_id));
      CHECK(torch::equal(g.edge_index, w.edge_index));
      CHECK(torch::equal(g.e_id, w.e_id));
      CHECK(torch::equal(g.x, w.x));
      CHECK(torch::equal(g.y, w.y));
      // input_id: each seed's index in the split's ascending id list.
      REQUIRE(g.input_id.numel() == g.seeds.numel());
      std::set<int> owners;
      for (int64_t i = 0; i < g.seeds.numel(); ++i) {
        const int64_t id = g.seeds[i].item<int64_t>();
        CHECK(sorted_train[g.input_id[i].item<int64_t>()] == id);
        seen.insert(id);
      }
      v1::LookupPartitionsRequest lp;
      for (int64_t i = 0; i < g.seeds.numel(); ++i) lp.add_ids(g.seeds[i].item<int64_t>());
      auto where = Connect(cluster.addresses[0])->LookupPartitions(lp);
      REQUIRE(where.ok());
      const auto* p = reinterpret_cast<const int32_t*>(where->partitions().data().data());
      owners.insert(p, p + lp.ids_size());
      mixed += owners.size() > 1;
    }
    CHECK(seen == train);
    CHECK(mixed > static_cast<int>(got.size()) / 2);
  }
}

TEST_CASE("temporal global batches take other partitions' node times from their owners, as one server has them",
          "[cluster][global][temporal]") {
  // Each server keeps its own nodes' times alone: a batch's seeds owned elsewhere (their times
  // start the draw) and its sampled nodes owned elsewhere (with_node_times) are timed by their
  // owners or by the peer cache. The batches are one server's to the last bit, times included.
  auto epoch_of = [](const std::vector<std::string>& servers) {
    client::LoaderOptions o = GlobalOptions(servers);
    o.seed = 77;
    o.config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
    o.config.set_with_node_times(true);
    client::Loader loader(o);
    loader.StartEpoch(1);
    std::vector<client::Batch> out;
    while (auto b = loader.Next()) out.push_back(*std::move(b));
    return out;
  };
  LocalCluster single(1);
  const auto want = epoch_of(single.addresses);
  REQUIRE(want.size() > 3);
  // The times are the nodes' own: not one value for every node.
  REQUIRE(want[0].time.defined());
  CHECK(want[0].time.max().item<int64_t>() > want[0].time.min().item<int64_t>());
  // Read twice: the second time other partitions' times come from the peer caches (all of
  // them with the default budget; the chosen nodes' with a tiny one, once it has counted).
  for (int64_t cache_bytes : {int64_t{-1}, int64_t{64} << 10}) {
    for (int n : {2, 4}) {
      INFO(n << " partitions, peer cache " << cache_bytes);
      LocalCluster cluster(n, cache_bytes);
      // Before any lookup: the default cache holds every remote node and has chosen; the tiny
      // one counts lookups within half its budget.
      for (const auto& a : cluster.addresses) {
        const auto stats = Connect(a)->GetServerStats();
        REQUIRE(stats.ok());
        CHECK(stats->peer_cache_chosen() == (cache_bytes < 0));
        if (cache_bytes > 0) {
          CHECK(stats->peer_cache_bytes() > 0);
          CHECK(stats->peer_cache_bytes() <= cache_bytes / 2);
        }
      }
      for (int pass = 0; pass < 2; ++pass) {
        INFO("pass " << pass);
        const auto got = epoch_of(cluster.addresses);
        REQUIRE(got.size() == want.size());
        for (size_t b = 0; b < got.size(); ++b) {
          INFO("batch " << b);
          CHECK(torch::equal(got[b].n_id, want[b].n_id));
          CHECK(torch::equal(got[b].edge_index, want[b].edge_index));
          CHECK(torch::equal(got[b].seed_time, want[b].seed_time));
          CHECK(torch::equal(got[b].time, want[b].time));
          CHECK(torch::equal(got[b].sampled_time, want[b].sampled_time));
        }
      }
    }
  }
}

TEST_CASE("a row crosses once: servers leave other partitions' rows to their owners, batches unchanged",
          "[cluster][global]") {
  // 4 partitions, every peer cache far smaller than the other partitions' data (tiny caches
  // count lookups before keeping anything, and keep little): with rows_from_owners (the
  // Loader's default) no server sends a trainer a row or label another partition owns, and
  // fewer bytes cross between servers; the batches are those of one server to the last bit, in
  // every encoding and with the trainer's feature cache.
  LocalCluster single(1);
  LocalCluster cluster(4, /*peer_cache_bytes=*/64 << 10);
  for (const auto& [name, encoding, cache_rows] :
       {std::tuple<std::string, v1::FeatureEncoding, int64_t>{"as stored", v1::FEATURE_ENCODING_UNSPECIFIED, 0},
        {"int4", v1::FEATURE_ENCODING_INT4, 0},
        {"float16", v1::FEATURE_ENCODING_FLOAT16, 0},
        {"with a feature cache", v1::FEATURE_ENCODING_UNSPECIFIED, 500}}) {
    INFO(name);
    auto edit = [&, encoding = encoding, cache_rows = cache_rows](bool from_owners) {
      return [=](client::LoaderOptions* o) {
        o->feature_encoding = encoding;
        o->feature_cache_rows = cache_rows;
        o->rows_from_owners = from_owners;
      };
    };
    const auto want = LoaderEpoch(single.addresses, 1, 0, 1, false, nullptr, edit(true));
    std::vector<v1::ServerStats> before, once, twice;
    for (const auto& a : cluster.addresses) before.push_back(*Connect(a)->GetServerStats());
    const auto from_owners = LoaderEpoch(cluster.addresses, 1, 0, 1, false, nullptr, edit(true), &once);
    const auto through = LoaderEpoch(cluster.addresses, 1, 0, 1, false, nullptr, edit(false), &twice);
    CheckSameBatches(from_owners, want);
    CheckSameBatches(through, want);
    // The trainer called the owners, and each foreign row of each batch was answered once:
    // batch b comes from server b mod 4, and its nodes other partitions own are the rows their
    // owners answered (labels alone for rows the trainer's cache holds), besides the rows the
    // cache is filled with when the Loader starts, each read once from its owner.
    int64_t foreign = 0, answered = 0;
    for (const GlobalBatch& g : from_owners) {
      v1::LookupPartitionsRequest lp;
      for (int64_t i = 0; i < g.n_id.numel(); ++i) lp.add_ids(g.n_id[i].item<int64_t>());
      auto where = Connect(cluster.addresses[0])->LookupPartitions(lp);
      REQUIRE(where.ok());
      const auto* p = reinterpret_cast<const int32_t*>(where->partitions().data().data());
      for (int i = 0; i < lp.ids_size(); ++i) foreign += p[i] != g.index % 4;
    }
    for (size_t k = 0; k < once.size(); ++k) {
      answered += once[k].node_rows_answered() - before[k].node_rows_answered();
      answered += once[k].node_labels_answered() - before[k].node_labels_answered();
    }
    CHECK(foreign > 0);
    CHECK(answered == foreign + cache_rows);
    const Crossing a = CrossingOf(once), b = CrossingOf(twice);
    CHECK(a.channels_from_owners == 4);
    CHECK(a.other_rows == 0);
    CHECK(b.channels_from_owners == 0);
    CHECK(b.other_rows > 0);
    CHECK(a.peer_bytes > 0);  // (ids still cross: hops of other partitions' nodes)
  }
  // A trainer on the servers' host reads them through shared memory: each server keeps the
  // places of other partitions' rows in the buffer, and the trainer writes their owners' rows
  // there.
  {
    LocalCluster shared(2, /*peer_cache_bytes=*/64 << 10, /*shared_memory=*/true);
    const auto want = LoaderEpoch(single.addresses, 1);
    std::vector<v1::ServerStats> stats;
    const auto got = LoaderEpoch(shared.addresses, 1, 0, 1, false, nullptr,
                                 [](client::LoaderOptions* o) { o->shared_memory = true; }, &stats);
    CheckSameBatches(got, want);
    int shm_channels = 0;
    for (const v1::ServerStats& st : stats) {
      for (const auto& b : st.backends()) {
        for (const auto& ch : b.channels()) shm_channels += ch.shared_memory();
      }
    }
    CHECK(shm_channels == 2);
    const Crossing c = CrossingOf(stats);
    CHECK(c.channels_from_owners == 2);
    CHECK(c.other_rows == 0);
  }
  // A server whose peer cache holds all of the other partitions' data sends their rows itself,
  // and says so: the channel does not leave rows to owners, whatever the trainer asked.
  {
    LocalCluster roomy(2, /*peer_cache_bytes=*/int64_t{256} << 20);
    const auto want = LoaderEpoch(single.addresses, 1);
    std::vector<v1::ServerStats> stats;
    const auto got = LoaderEpoch(roomy.addresses, 1, 0, 1, false, nullptr,
                                 [](client::LoaderOptions* o) { o->rows_from_owners = true; }, &stats);
    CheckSameBatches(got, want);
    const Crossing c = CrossingOf(stats);
    CHECK(c.channels_from_owners == 0);
    CHECK(c.other_rows > 0);
  }
  // Bytes between servers: counted over each loader's life (the stats are cumulative, so the
  // second loader's figure includes the first's): ids alone add far less than rows.
  std::vector<v1::ServerStats> before, after_once, after_twice;
  for (const auto& a : cluster.addresses) before.push_back(*Connect(a)->GetServerStats());
  (void)LoaderEpoch(cluster.addresses, 2, 0, 1, false, nullptr,
                    [](client::LoaderOptions* o) { o->rows_from_owners = true; }, &after_once);
  (void)LoaderEpoch(cluster.addresses, 2, 0, 1, false, nullptr,
                    [](client::LoaderOptions* o) { o->rows_from_owners = false; }, &after_twice);
  const int64_t ids_only = CrossingOf(after_once).peer_bytes - CrossingOf(before).peer_bytes;
  const int64_t with_rows = CrossingOf(after_twice).peer_bytes - CrossingOf(after_once).peer_bytes;
  CHECK(ids_only < with_rows);
}

TEST_CASE("a loader counts what each server sent it: over its stream and as the owner of rows",
          "[cluster][global]") {
  // 2 partitions, peer caches far below the other partition's data: with rows from owners each
  // server answers the other's batches' rows, and the loader counts those answers per server
  // beside the streams; without, no server answers as an owner.
  LocalCluster cluster(2, /*peer_cache_bytes=*/64 << 10);
  for (bool from_owners : {true, false}) {
    INFO("rows_from_owners " << from_owners);
    client::LoaderOptions o = GlobalOptions(cluster.addresses);
    o.backend_key = "bytes-by-server";
    o.rows_from_owners = from_owners;
    client::Loader loader(o);
    loader.StartEpoch(0);
    int64_t batches = 0;
    while (loader.Next()) ++batches;
    REQUIRE(batches > 2);
    const auto by_server = loader.bytes_received_by_server();
    REQUIRE(by_server.size() == 2);
    int64_t sum = 0;
    for (const auto& [stream, answers] : by_server) {
      CHECK(stream > 0);
      CHECK((answers > 0) == from_owners);
      sum += stream + answers;
    }
    CHECK(loader.bytes_received() == sum);
  }
}

TEST_CASE("ranks share the global batches: every seed once per epoch, as PyG counts them", "[cluster][global]") {
  LocalCluster cluster(2);
  const std::set<int64_t> train = AllTrainIds(cluster.addresses);
  const int64_t total = static_cast<int64_t>(train.size());
  for (bool drop_last : {false, true}) {
    INFO("drop_last " << drop_last);
    const int64_t epoch_batches = drop_last ? total / 40 : (total + 39) / 40;
    const int world = 3;
    std::multiset<int64_t> seeds;
    int64_t batches = 0;
    for (int rank = 0; rank < world; ++rank) {
      int64_t len = 0;
      const auto got = LoaderEpoch(cluster.addresses, 1, rank, world, drop_last, &len);
      // This rank's batches: rank, rank + 3, ... of the epoch's, in that order.
      CHECK(len == (epoch_batches - rank + world - 1) / world);
      REQUIRE(static_cast<int64_t>(got.size()) == len);
      for (size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].index == rank + world * static_cast<int64_t>(i));
        for (int64_t k = 0; k < got[i].seeds.numel(); ++k) seeds.insert(got[i].seeds[k].item<int64_t>());
      }
      batches += len;
    }
    CHECK(batches == epoch_batches);
    if (drop_last) {
      CHECK(static_cast<int64_t>(seeds.size()) == epoch_batches * 40);
    } else {
      CHECK(std::set<int64_t>(seeds.begin(), seeds.end()) == train);
    }
    CHECK(std::set<int64_t>(seeds.begin(), seeds.end()).size() == seeds.size());  // each at most once
  }
}

TEST_CASE("a generic client's global channel on one server gets every batch of the epoch", "[cluster][global]") {
  // What grpcurl or another language does: register global_batches with stride 1 on any one
  // server; it samples every batch, the other partitions' nodes through its peers.
  LocalCluster single(1);
  const auto want = LoaderEpoch(single.addresses, 0);
  LocalCluster cluster(2);
  auto c = Connect(cluster.addresses[1]);
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("global");
  *init.mutable_config() = Config(40);
  auto b = c->InitSamplingBackend(init);
  REQUIRE(b.ok());
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(b->backend_id());
  reg.mutable_split()->set_split("train");
  reg.set_seed(77);
  reg.mutable_global_batches()->set_stride(1);
  auto r = c->RegisterSamplingInput(reg);
  REQUIRE(r.ok());
  CHECK(r->num_epoch_batches() == static_cast<int64_t>(want.size()));
  CHECK(r->num_batches_per_epoch() == r->num_epoch_batches());
  const auto got = Epoch(*c, r->channel_id(), 0);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].batch_index() == static_cast<int64_t>(i));
    const auto seeds = Int64s(got[i].nodes(0).batch());
    CHECK(seeds == std::vector<int64_t>(want[i].seeds.data_ptr<int64_t>(),
                                        want[i].seeds.data_ptr<int64_t>() + want[i].seeds.numel()));
  }
  // The channel keeps none of the split: the server keeps it once, a bit a node, for every
  // channel on it.
  v1::DescribeChannelRequest dc;
  dc.set_channel_id(r->channel_id());
  auto desc = c->DescribeChannel(dc);
  REQUIRE(desc.ok());
  CHECK(desc->input_bytes() == 0);
  const int64_t set_bytes = c->GetServerStats()->input_set_bytes();
  CHECK(set_bytes > 0);
  auto again = c->RegisterSamplingInput(reg);
  REQUIRE(again.ok());
  CHECK(c->GetServerStats()->input_set_bytes() == set_bytes);
  // Without global batches the channel lists its own partition's share, 8 bytes a seed.
  v1::RegisterSamplingInputRequest own = reg;
  own.clear_global_batches();
  auto listed = c->RegisterSamplingInput(own);
  REQUIRE(listed.ok());
  dc.set_channel_id(listed->channel_id());
  CHECK(c->DescribeChannel(dc)->input_bytes() == 8 * listed->num_seeds());
  CHECK(listed->num_seeds() > 0);
  // Every node: a count, no set.
  v1::RegisterSamplingInputRequest every = reg;
  every.mutable_split()->set_split("");
  auto all = c->RegisterSamplingInput(every);
  REQUIRE(all.ok());
  CHECK(all->num_seeds() > r->num_seeds());
  CHECK(c->GetServerStats()->input_set_bytes() == set_bytes);
  dc.set_channel_id(all->channel_id());
  CHECK(c->DescribeChannel(dc)->input_bytes() == 0);
  const auto every_batches = Epoch(*c, all->channel_id(), 0);
  std::set<int64_t> seen;
  size_t seeds = 0;
  for (const auto& m : every_batches) {
    const auto ids = Int64s(m.nodes(0).batch());
    seeds += ids.size();
    seen.insert(ids.begin(), ids.end());
  }
  // Every global id 0 .. n-1 once.
  CHECK(seeds == static_cast<size_t>(all->num_seeds()));
  CHECK(seen.size() == seeds);
  REQUIRE_FALSE(seen.empty());
  CHECK(*seen.begin() == 0);
  CHECK(*seen.rbegin() == all->num_seeds() - 1);
  // Refusals name the field.
  reg.mutable_global_batches()->set_offset(1);
  CHECK_THAT(std::string(c->RegisterSamplingInput(reg).status().message()), Catch::Contains("global_batches.offset"));
  reg.mutable_global_batches()->set_offset(0);
  reg.mutable_split()->mutable_slice()->set_world_size(2);
  CHECK_THAT(std::string(c->RegisterSamplingInput(reg).status().message()), Catch::Contains("split.slice"));
}

TEST_CASE("a server without seeds for the trainer counts as finished (active mask)", "[cluster]") {
  LocalCluster cluster(2);
  const std::vector<int64_t> seeds = TrainIds(*Connect(cluster.addresses[1]));
  client::LoaderOptions o;
  o.servers = cluster.addresses;
  o.config = Config(64);
  o.seeds = seeds;  // all owned by partition 1
  o.shared_memory = false;
  o.global_batches = false;  // each server batches its own: partition 0 has none
  client::Loader loader(o);
  CHECK(loader.num_seeds() == static_cast<int64_t>(seeds.size()));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    loader.StartEpoch(epoch);
    int64_t batches = 0;
    while (auto b = loader.Next()) {
      CHECK(b->server == 1);
      ++batches;
    }
    CHECK(batches == loader.num_batches());
  }
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& address, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  REQUIRE(stub->Check(&ctx, req, &resp).ok());
  return resp.status();
}

// Reads the stream until it fails; returns the failure and the messages before it.
absl::Status ReadUntilError(client::MessageStream& stream, int* received) {
  while (true) {
    auto m = stream.Next();
    if (!m.ok()) return m.status();
    if (*m == nullptr) return absl::OkStatus();
    ++*received;
  }
}

// Waits until a server's health monitor sees its one peer answering (or not).
void WaitPeer(client::Client& c, bool answering) {
  const bool changed = testing::PollUntil([&] {
    auto s = c.GetServerStats();
    return s.ok() && s->peers_size() == 1 && s->peers(0).answering() == answering;
  });
  if (!changed) FAIL("the peer's health did not change");
}

TEST_CASE("sampling waits for every peer; a dead or frozen peer gives UNAVAILABLE naming it; sampling recovers",
          "[cluster]") {
  const std::vector<int> ports = testing::FreeLoopbackPorts(2);
  const std::string a0 = absl::StrCat("127.0.0.1:", ports[0]);
  const std::string a1 = absl::StrCat("127.0.0.1:", ports[1]);
  const int64_t timeout_ms = 1500;
  const std::vector<std::string> flags = {"--cluster=" + a0 + "," + a1, absl::StrCat("--peer_timeout_ms=", timeout_ms),
                                          "--shared_memory_dir=", "--state_log_interval_s=0"};
  Daemon d0(PartDir(2, 0), flags, ports[0], /*wait=*/false);
  auto c = Connect(a0);

  // Alone, server 0 is up but refuses sampling, naming the missing peer.
  CHECK(Health(a0, "") == grpc::health::v1::HealthCheckResponse::SERVING);
  CHECK(Health(a0, "graphstore.v1.GraphStore") == grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("early");
  *init.mutable_config() = Config(16);
  auto early = c->InitSamplingBackend(init);
  REQUIRE(!early.ok());
  CHECK(early.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(early.status().message()), Catch::Contains("partition 1 (" + a1 + ")"));

  auto d1 = std::make_unique<Daemon>(PartDir(2, 1), flags, ports[1], /*wait=*/false);
  d0.WaitReady();
  d1->WaitReady();
  CHECK(Health(a0, "graphstore.v1.GraphStore") == grpc::health::v1::HealthCheckResponse::SERVING);
  CHECK_THAT(d0.Log(), Catch::Contains("waits for 1 of 1 peers: partition 1 (" + a1 + ")"));

  const std::vector<int64_t> seeds = TrainIds(*c);
  const uint64_t channel = Register(*c, seeds, Config(16), /*buffer_messages=*/2);
  const auto full = Epoch(*c, channel, 0);
  REQUIRE(full.size() > 20);

  auto run_broken_epoch = [&](int64_t epoch, auto&& breaker) {
    v1::StartEpochRequest start;
    start.set_channel_id(channel);
    start.set_epoch(epoch);
    REQUIRE(c->StartEpoch(start).ok());
    v1::StreamSampledMessagesRequest req;
    req.set_channel_id(channel);
    req.set_epoch(epoch);
    auto stream = c->Stream(req);
    for (int i = 0; i < 2; ++i) {
      auto m = stream->Next();
      REQUIRE(m.ok());
      REQUIRE(*m != nullptr);
    }
    breaker();
    const auto t0 = std::chrono::steady_clock::now();
    int received = 0;
    const absl::Status s = ReadUntilError(*stream, &received);
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(s.code() == absl::StatusCode::kUnavailable);
    CHECK_THAT(std::string(s.message()), Catch::Contains("partition 1 (" + a1 + ")"));
    CHECK(received < static_cast<int>(full.size()) - 2);
    // Never a hang: the error comes within the peer deadline (plus the buffered batches' time).
    CHECK(waited < std::chrono::milliseconds(timeout_ms + 5000));
    return std::string(s.message());
  };

  SECTION("killed") {
    run_broken_epoch(1, [&] { CHECK(d1->Stop(SIGKILL) == -1); });
    WaitPeer(*c, false);
    // Back on the same address: the channel's next epoch is whole, and a new channel with the
    // same seeds samples exactly what it did before the failure.
    d1 = std::make_unique<Daemon>(PartDir(2, 1), flags, ports[1]);
    WaitPeer(*c, true);
    CHECK(Epoch(*c, channel, 2).size() == full.size());
    const auto fresh = Epoch(*c, Register(*c, seeds, Config(16)), 0);
    REQUIRE(fresh.size() == full.size());
    for (size_t b = 0; b < full.size(); ++b) {
      CHECK(google::protobuf::util::MessageDifferencer::Equals(fresh[b], full[b]));
    }
  }
  SECTION("frozen") {
    const std::string message = run_broken_epoch(1, [&] { d1->Signal(SIGSTOP); });
    CHECK_THAT(message, Catch::Contains(absl::StrCat("within ", timeout_ms, " ms")));
    WaitPeer(*c, false);
    d1->Signal(SIGCONT);
    WaitPeer(*c, true);
    CHECK(Epoch(*c, channel, 2).size() == full.size());
  }
}

}  // namespace
}  // namespace graphstore
