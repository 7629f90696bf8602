// The remote trainer's data path over real servers on loopback: every feature encoding stays
// within its documented bound while ids, edges and labels stay exact; a trainer-side feature
// cache rebuilds x bit for bit on one and two servers and survives a trainer restart; a
// generic protobuf client still reads every message, split into parts or not; bad options
// answer INVALID_ARGUMENT naming the field.

#include "client/loader.h"  // LibTorch first (see loader.h)

#undef CHECK
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "server/server.h"
#include "tests/test_util.h"
#include "tools/generator.h"

namespace graphstore {
namespace {

using testing::TempDir;

constexpr int kNodes = 2000;

// One generated graph as 1 and 2 partitions (the generator writes degrees and feature ranges).
const std::string& Dataset(int num_partitions) {
  static TempDir* dir = new TempDir();
  static std::map<int, std::string> made;
  auto it = made.find(num_partitions);
  if (it != made.end()) return it->second;
  GeneratorOptions g;
  g.num_nodes = kNodes;
  g.avg_degree = 8;
  g.feature_dim = 12;
  g.num_classes = 5;
  g.seed = 23;
  g.num_partitions = num_partitions;
  const std::string path = dir->path() + "/p" + std::to_string(num_partitions);
  REQUIRE(GenerateDataset(g, path).ok());
  return made.emplace(num_partitions, path).first->second;
}

struct LocalCluster {
  std::vector<std::unique_ptr<GraphStoreServer>> servers;
  std::vector<std::string> addresses;

  // `peer_cache_bytes` < 0: the servers' default (a cache that holds every other partition's
  // rows here, so the servers send them; at 0 their owners do).
  explicit LocalCluster(int n, size_t part_bytes = 8 << 20, int64_t peer_cache_bytes = -1) {
    std::vector<ServerOptions> options(n);
    for (int k = 0; k < n; ++k) {
      if (peer_cache_bytes >= 0) options[k].core.peer_cache_bytes = peer_cache_bytes;
      options[k].partition_dir = n == 1 ? Dataset(1) : Dataset(n) + "/part-" + std::to_string(k);
      options[k].shared_memory_dir = "";
      options[k].core.state_log_interval_s = 0;
      options[k].core.stream_part_bytes = part_bytes;
      options[k].core.stream_split_bytes = part_bytes;
    }
    auto started = StartLocalCluster(options);
    REQUIRE(started.ok());
    servers = *std::move(started);
    for (const auto& s : servers) addresses.push_back(s->address());
  }
};

v1::SamplingConfig Config() {
  v1::SamplingConfig c;
  c.set_batch_size(64);
  c.add_num_neighbors(5);
  c.add_num_neighbors(3);
  c.set_shuffle(true);
  c.set_with_edge_ids(true);
  c.set_with_node_features(true);
  c.set_with_labels(true);
  return c;
}

client::LoaderOptions Options(const LocalCluster& cluster, v1::FeatureEncoding encoding, int64_t cache_rows,
                              bool decode = true) {
  client::LoaderOptions o;
  o.servers = cluster.addresses;
  o.backend_key = "remote-path-test";
  o.config = Config();
  o.seed = 9;
  o.shared_memory = false;
  o.feature_encoding = encoding;
  o.feature_cache_rows = cache_rows;
  o.decode_features = decode;
  return o;
}

// One epoch's batches by (server, batch index).
using Epoch = std::map<std::pair<int, int64_t>, client::Batch>;

Epoch ReadEpoch(client::Loader& loader, int64_t epoch) {
  loader.StartEpoch(epoch);
  Epoch out;
  while (auto b = loader.Next()) {
    const auto key = std::make_pair(b->server, b->batch_index);
    REQUIRE(out.count(key) == 0);
    out.emplace(key, *std::move(b));
  }
  REQUIRE(static_cast<int64_t>(out.size()) == loader.num_batches());
  return out;
}

// The codes of a batch's x kept encoded: one byte each, or unpacked from `bits`-bit fields
// (code j of a row at bits (j * bits) % 8 of byte j * bits / 8), as uint8 [n, dim].
at::Tensor Codes(const at::Tensor& x, int bits, int64_t dim) {
  if (bits == 8) return x;
  at::Tensor out = torch::empty({x.size(0), dim}, torch::kUInt8);
  const at::Tensor in = x.contiguous();
  for (int64_t r = 0; r < x.size(0); ++r) {
    const uint8_t* row = in.data_ptr<uint8_t>() + r * in.size(1);
    for (int64_t j = 0; j < dim; ++j) {
      out[r][j] = static_cast<uint8_t>((row[j * bits / 8] >> (j * bits % 8)) & ((1 << bits) - 1));
    }
  }
  return out;
}

// Everything but the features is the same, bit for bit.
void CheckExactParts(const client::Batch& got, const client::Batch& want) {
  CHECK(torch::equal(got.n_id, want.n_id));
  CHECK(torch::equal(got.y, want.y));
  CHECK(torch::equal(got.edge_index, want.edge_index));
  CHECK(torch::equal(got.e_id, want.e_id));
  CHECK(torch::equal(got.seeds, want.seeds));
  CHECK(got.num_sampled_nodes == want.num_sampled_nodes);
  CHECK(got.num_sampled_edges == want.num_sampled_edges);
}

TEST_CASE("each feature encoding stays within its bound; ids, edges and labels stay exact", "[remote]") {
  LocalCluster cluster(1);
  client::Loader reference(Options(cluster, v1::FEATURE_ENCODING_FLOAT32, 0));
  const Epoch want = ReadEpoch(reference, 0);

  for (const auto encoding : {v1::FEATURE_ENCODING_FLOAT16, v1::FEATURE_ENCODING_BFLOAT16, v1::FEATURE_ENCODING_INT8,
                              v1::FEATURE_ENCODING_INT4, v1::FEATURE_ENCODING_INT2, v1::FEATURE_ENCODING_INT1}) {
    INFO(v1::FeatureEncoding_Name(encoding));
    client::Loader decoded(Options(cluster, encoding, 0));
    client::Loader kept(Options(cluster, encoding, 0, /*decode=*/false));
    const Epoch got = ReadEpoch(decoded, 0);
    const Epoch raw = ReadEpoch(kept, 0);
    REQUIRE(got.size() == want.size());
    REQUIRE(raw.size() == want.size());
    double worst = 0;
    for (const auto& [key, w] : want) {
      const client::Batch& g = got.at(key);
      const client::Batch& r = raw.at(key);
      CheckExactParts(g, w);
      CheckExactParts(r, w);
      REQUIRE(g.x.scalar_type() == at::kFloat);
      REQUIRE(g.x.sizes() == w.x.sizes());
      const at::Tensor err = (g.x - w.x).abs();
      at::Tensor bound;
      switch (encoding) {
        case v1::FEATURE_ENCODING_FLOAT16:
          // Round to nearest: half a unit in the last of 11 significant bits, or half the
          // smallest subnormal.
          REQUIRE(r.x.scalar_type() == at::kHalf);
          CHECK(torch::equal(r.x.to(at::kFloat), g.x));
          bound = w.x.abs() * std::ldexp(1.0, -11) + std::ldexp(1.0, -25);
          break;
        case v1::FEATURE_ENCODING_BFLOAT16:
          REQUIRE(r.x.scalar_type() == at::kBFloat16);
          CHECK(torch::equal(r.x.to(at::kFloat), g.x));
          bound = w.x.abs() * std::ldexp(1.0, -8);
          break;
        default: {
          // |x - decoded| <= scale / 2 per column (float rounding of the decode aside).
          const int bits = encoding == v1::FEATURE_ENCODING_INT8   ? 8
                           : encoding == v1::FEATURE_ENCODING_INT4 ? 4
                           : encoding == v1::FEATURE_ENCODING_INT2 ? 2
                                                                   : 1;
          REQUIRE(r.x.scalar_type() == at::kByte);
          REQUIRE(r.x_bits == bits);
          REQUIRE(g.x_bits == 0);
          REQUIRE(r.x_scale.numel() == w.x.size(1));
          REQUIRE(r.x.size(1) == (w.x.size(1) * bits + 7) / 8);
          const at::Tensor dequantized = r.x_offset + r.x_scale * Codes(r.x, bits, w.x.size(1)).to(at::kFloat);
          CHECK(torch::allclose(dequantized, g.x, 1e-6, 1e-6));
          bound = (r.x_scale / 2).expand_as(w.x) * (1 + 1e-5) + 1e-6;
          CHECK((r.x_scale > 0).all().item<bool>());
          break;
        }
      }
      CHECK((err <= bound).all().item<bool>());
      worst = std::max(worst, (err - bound).max().item<double>());
    }
    INFO("largest excess over the bound " << worst);
    CHECK(worst <= 0);
  }
}

// An epoch read from `split` (batches cut into parts) holds the tensors of the same epoch read
// from `whole`, with the same feature options.
void CheckPartsDecodeAsWhole(const LocalCluster& whole, const LocalCluster& split, v1::FeatureEncoding encoding,
                             int64_t cache_rows, bool decode) {
  client::Loader a(Options(whole, encoding, cache_rows, decode));
  client::Loader b(Options(split, encoding, cache_rows, decode));
  const Epoch want = ReadEpoch(a, 0);
  const Epoch got = ReadEpoch(b, 0);
  REQUIRE(got.size() == want.size());
  for (const auto& [key, w] : want) {
    const client::Batch& g = got.at(key);
    CheckExactParts(g, w);
    CHECK(torch::equal(g.x, w.x));
    CHECK(g.x_bits == w.x_bits);
    if (w.x_scale.defined()) {
      REQUIRE(g.x_scale.defined());
      CHECK(torch::equal(g.x_scale, w.x_scale));
      CHECK(torch::equal(g.x_offset, w.x_offset));
    }
  }
}

TEST_CASE("batches cut into small parts decode to the tensors of whole batches, with every option", "[remote]") {
  LocalCluster whole(1);
  LocalCluster split(1, 4096);
  for (const auto encoding : {v1::FEATURE_ENCODING_FLOAT32, v1::FEATURE_ENCODING_FLOAT16, v1::FEATURE_ENCODING_INT8,
                              v1::FEATURE_ENCODING_INT4, v1::FEATURE_ENCODING_INT1}) {
    for (int64_t cache_rows : {int64_t{0}, int64_t{300}}) {
      for (bool decode : {true, false}) {
        INFO(v1::FeatureEncoding_Name(encoding) << ", cache " << cache_rows << ", decode " << decode);
        CheckPartsDecodeAsWhole(whole, split, encoding, cache_rows, decode);
      }
    }
  }
}

TEST_CASE("a cluster's batches cut into small parts, their rows from owners, decode as whole ones", "[remote]") {
  // No peer cache, so rows come from their owners: without a feature cache, each server's
  // matrix holds its own nodes' rows alone, and parts must cut it at whole rows of those.
  LocalCluster whole(2, 8 << 20, 0);
  LocalCluster split(2, 4096, 0);
  for (const auto encoding : {v1::FEATURE_ENCODING_FLOAT32, v1::FEATURE_ENCODING_FLOAT16, v1::FEATURE_ENCODING_INT4}) {
    for (int64_t cache_rows : {int64_t{0}, int64_t{300}}) {
      INFO(v1::FeatureEncoding_Name(encoding) << ", cache " << cache_rows);
      CheckPartsDecodeAsWhole(whole, split, encoding, cache_rows, /*decode=*/true);
    }
  }
}

TEST_CASE("a feature cache rebuilds x bit for bit on 1 and 2 servers, and reports its hit rate", "[remote]") {
  const int64_t rows = kNodes / 10;
  for (int n : {1, 2}) {
    for (const auto encoding : {v1::FEATURE_ENCODING_FLOAT32, v1::FEATURE_ENCODING_INT8, v1::FEATURE_ENCODING_INT4}) {
      INFO(n << " server(s), " << v1::FeatureEncoding_Name(encoding));
      LocalCluster cluster(n);
      client::Loader plain(Options(cluster, encoding, 0, /*decode=*/false));
      client::Loader cached(Options(cluster, encoding, rows, /*decode=*/false));
      CHECK(plain.num_cached_rows() == 0);
      CHECK(cached.num_cached_rows() == rows);
      for (int64_t epoch = 0; epoch < 2; ++epoch) {
        const Epoch want = ReadEpoch(plain, epoch);
        const Epoch got = ReadEpoch(cached, epoch);
        REQUIRE(got.size() == want.size());
        for (const auto& [key, w] : want) {
          const client::Batch& g = got.at(key);
          CheckExactParts(g, w);
          CHECK(torch::equal(g.x, w.x));
        }
      }
      // The cache is the hottest nodes: fewer bytes cross, and every server counts its hits.
      CHECK(cached.bytes_received() < plain.bytes_received());
      int64_t sent = 0, hits = 0;
      for (int s = 0; s < n; ++s) {
        auto c = client::Client::Connect({cluster.addresses[s]});
        REQUIRE(c.ok());
        v1::DescribeChannelRequest req;
        req.set_channel_id(cached.channel_id(s));
        auto stats = (*c)->DescribeChannel(req);
        REQUIRE(stats.ok());
        CHECK(stats->feature_cache_rows() == rows);
        CHECK(stats->feature_encoding() == encoding);
        const int64_t total = stats->feature_rows_sent() + stats->feature_rows_cached();
        REQUIRE(total > 0);
        CHECK(stats->feature_cache_hit_rate() ==
              Approx(static_cast<double>(stats->feature_rows_cached()) / static_cast<double>(total)));
        sent += stats->feature_rows_sent();
        hits += stats->feature_rows_cached();
        req.set_channel_id(plain.channel_id(s));
        auto plain_stats = (*c)->DescribeChannel(req);
        REQUIRE(plain_stats.ok());
        CHECK(plain_stats->feature_rows_cached() == 0);
        CHECK(plain_stats->feature_cache_hit_rate() == 0);
      }
      // A tenth of the nodes, chosen by degree, serves well over a tenth of the sampled rows.
      CHECK(hits > 0);
      CHECK(static_cast<double>(hits) / static_cast<double>(sent + hits) > 0.1);
    }
  }
}

TEST_CASE("the feature row counters count what the client received, not what was sampled ahead", "[remote]") {
  // The server samples the next epoch's first batches while the stream is idle; those must
  // not count until they are sent. Small parts: several messages per batch.
  LocalCluster cluster(1, /*part_bytes=*/4096);
  auto c = client::Client::Connect({cluster.addresses[0]});
  REQUIRE(c.ok());
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("counters");
  *init.mutable_config() = Config();
  auto b = (*c)->InitSamplingBackend(init);
  REQUIRE(b.ok());
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(b->backend_id());
  reg.mutable_split()->set_split("train");
  reg.set_feature_cache_rows(kNodes / 10);
  auto r = (*c)->RegisterSamplingInput(reg);
  REQUIRE(r.ok());
  v1::StartEpochRequest start;
  start.set_channel_id(r->channel_id());
  REQUIRE((*c)->StartEpoch(start).ok());
  v1::StreamSampledMessagesRequest req;
  req.set_channel_id(r->channel_id());
  auto stream = (*c)->Stream(req);
  int64_t rows = 0, cached = 0, messages = 0;
  while (true) {
    auto m = stream->Next();
    REQUIRE(m.ok());
    if (*m == nullptr) break;
    ++messages;
    if ((*m)->part() != 0) continue;  // part 0 carries every tensor's full shape
    for (const v1::NodeTensors& n : (*m)->nodes()) {
      // The rows in the message, and the nodes whose rows the trainer caches.
      rows += n.features().shape(0);
      cached += n.ids().shape(0) - n.features().shape(0);
    }
  }
  REQUIRE(messages > r->num_batches_per_epoch());  // batches did come in parts
  REQUIRE(cached > 0);
  v1::DescribeChannelRequest d;
  d.set_channel_id(r->channel_id());
  // Once the next epoch's first batches are sampled ahead (and not sent):
  v1::ChannelStats stats;
  REQUIRE(testing::PollUntil([&] {
    auto got = (*c)->DescribeChannel(d);
    if (got.ok()) stats = *got;
    return got.ok() && stats.sampled_ahead() > 0;
  }));
  CHECK(stats.feature_rows_sent() == rows);
  CHECK(stats.feature_rows_cached() == cached);
}

TEST_CASE("every server of a cluster reports the same feature ranges, the ones INT8 encodes with", "[remote]") {
  LocalCluster cluster(2);
  std::vector<std::string> mins, maxs;
  for (const auto& address : cluster.addresses) {
    auto c = client::Client::Connect({address});
    REQUIRE(c.ok());
    v1::GetDatasetMetaRequest req;
    CHECK((*c)->GetDatasetMeta(req)->feature_ranges_size() == 0);
    req.set_with_feature_ranges(true);
    auto meta = (*c)->GetDatasetMeta(req);
    REQUIRE(meta.ok());
    REQUIRE(meta->feature_ranges_size() == 1);
    const auto& r = meta->feature_ranges(0);
    CHECK(r.num_rows() == kNodes);
    REQUIRE(r.min().shape(0) == 12);
    const auto* lo = reinterpret_cast<const float*>(r.min().data().data());
    const auto* hi = reinterpret_cast<const float*>(r.max().data().data());
    for (int k = 0; k < 12; ++k) CHECK(lo[k] < hi[k]);
    mins.push_back(r.min().data());
    maxs.push_back(r.max().data());
  }
  CHECK(mins[0] == mins[1]);
  CHECK(maxs[0] == maxs[1]);
}

TEST_CASE("a trainer restarted mid-epoch rebuilds its cache and gets correct features", "[remote]") {
  LocalCluster cluster(2);
  client::Loader reference(Options(cluster, v1::FEATURE_ENCODING_FLOAT32, 0));
  const Epoch want = ReadEpoch(reference, 0);
  {
    // The first trainer holds one cache and dies halfway through the epoch.
    client::Loader first(Options(cluster, v1::FEATURE_ENCODING_FLOAT32, kNodes / 5));
    first.StartEpoch(0);
    for (size_t i = 0; i < want.size() / 2; ++i) REQUIRE(first.Next().has_value());
  }
  // Its replacement asks for a different cache; nothing of the old one may be trusted.
  client::Loader second(Options(cluster, v1::FEATURE_ENCODING_FLOAT32, kNodes / 20));
  CHECK(second.num_cached_rows() == kNodes / 20);
  const Epoch got = ReadEpoch(second, 0);
  REQUIRE(got.size() == want.size());
  for (const auto& [key, w] : want) {
    CheckExactParts(got.at(key), w);
    CHECK(torch::equal(got.at(key).x, w.x));
  }
}

// ----- a generic client ------------------------------------------------------------------

// A tensor put together from the pieces of a batch's parts.
struct Assembled {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  std::string bytes;
  size_t covered = 0;
};

size_t ElementSize(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT64:
    case v1::DTYPE_FLOAT64:
      return 8;
    case v1::DTYPE_INT32:
    case v1::DTYPE_FLOAT32:
      return 4;
    case v1::DTYPE_FLOAT16:
    case v1::DTYPE_BFLOAT16:
      return 2;
    default:
      return 1;
  }
}

// Adds every Tensor field of `entry` (a NodeTensors or EdgeTensors) under "<type>/<field>".
void AddTensors(const google::protobuf::Message& entry, const std::string& type, bool first_part,
                std::map<std::string, Assembled>* out) {
  const auto* d = entry.GetDescriptor();
  const auto* r = entry.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    if (f->message_type() != v1::Tensor::descriptor() || !r->HasField(entry, f)) continue;
    const auto& t = static_cast<const v1::Tensor&>(r->GetMessage(entry, f));
    const std::string key = type + "/" + f->name();
    Assembled& a = (*out)[key];
    if (first_part) {
      INFO(key);
      REQUIRE(a.dtype == v1::DTYPE_UNSPECIFIED);
      a.dtype = t.dtype();
      a.shape.assign(t.shape().begin(), t.shape().end());
      // The last dimension's bytes per row (packed types round up to a byte), times the rest.
      const int bits = t.dtype() == v1::DTYPE_UINT4 ? 4 : t.dtype() == v1::DTYPE_UINT2 ? 2 : t.dtype() == v1::DTYPE_UINT1 ? 1 : 0;
      size_t n = 1;
      for (size_t k = 0; k + 1 < a.shape.size(); ++k) n *= static_cast<size_t>(a.shape[k]);
      const size_t last = a.shape.empty() ? 1 : static_cast<size_t>(a.shape.back());
      n *= bits > 0 ? (last * bits + 7) / 8 : last * ElementSize(t.dtype());
      a.bytes.assign(n, '\0');
    }
    INFO(key << " at " << t.byte_offset());
    REQUIRE(a.dtype != v1::DTYPE_UNSPECIFIED);  // every tensor is named in part 0
    // Every piece repeats the tensor's dtype and full shape, and holds whole rows.
    CHECK(t.dtype() == a.dtype);
    CHECK(std::vector<int64_t>(t.shape().begin(), t.shape().end()) == a.shape);
    const size_t row = a.shape.empty() || a.shape[0] == 0 ? 1 : a.bytes.size() / static_cast<size_t>(a.shape[0]);
    CHECK(t.byte_offset() % row == 0);
    CHECK((t.data().size() % row == 0 || t.byte_offset() + t.data().size() == a.bytes.size()));
    REQUIRE(t.byte_offset() + t.data().size() <= a.bytes.size());
    a.bytes.replace(t.byte_offset(), t.data().size(), t.data());
    a.covered += t.data().size();
  }
}

TEST_CASE("a generic protobuf client reads every message, in parts or whole, with each option", "[remote]") {
  for (size_t part_bytes : {size_t{8} << 20, size_t{4096}}) {
    LocalCluster cluster(1, part_bytes);
    auto c = client::Client::Connect({cluster.addresses[0]});
    REQUIRE(c.ok());
    v1::InitSamplingBackendRequest init;
    init.set_backend_key("generic");
    *init.mutable_config() = Config();
    auto backend = (*c)->InitSamplingBackend(init);
    REQUIRE(backend.ok());
    v1::GetNodeIdsRequest ids_req;
    ids_req.set_split("train");
    auto train = (*c)->GetNodeIds(ids_req);
    REQUIRE(train.ok());

    for (const auto encoding : {v1::FEATURE_ENCODING_FLOAT32, v1::FEATURE_ENCODING_FLOAT16,
                                v1::FEATURE_ENCODING_BFLOAT16, v1::FEATURE_ENCODING_INT8, v1::FEATURE_ENCODING_INT4,
                                v1::FEATURE_ENCODING_INT1}) {
      for (int64_t cache_rows : {int64_t{0}, int64_t{300}}) {
        INFO("parts of " << part_bytes << " bytes, " << v1::FeatureEncoding_Name(encoding) << ", cache "
                         << cache_rows);
        v1::RegisterSamplingInputRequest reg;
        reg.set_backend_id(backend->backend_id());
        const auto* p = reinterpret_cast<const int64_t*>(train->ids().data().data());
        reg.mutable_nodes()->mutable_ids()->Add(p, p + train->ids().data().size() / 8);
        reg.set_seed(5);
        reg.set_feature_encoding(encoding);
        reg.set_feature_cache_rows(cache_rows);
        auto channel = (*c)->RegisterSamplingInput(reg);
        REQUIRE(channel.ok());
        CHECK(channel->feature_cache_size() == (cache_rows > 0 ? 1 : 0));
        v1::StartEpochRequest start;
        start.set_channel_id(channel->channel_id());
        REQUIRE((*c)->StartEpoch(start).ok());
        v1::StreamSampledMessagesRequest sreq;
        sreq.set_channel_id(channel->channel_id());
        auto stream = (*c)->Stream(sreq);

        int64_t batches = 0, num_batches = -1, multi_part = 0;
        std::map<std::string, Assembled> batch;
        std::string node_type, edge_type;
        uint32_t expect_part = 0;
        while (true) {
          auto m = stream->Next();
          REQUIRE(m.ok());  // every message parses as a SampledMessage
          if (*m == nullptr) break;
          const v1::SampledMessage& msg = **m;
          const uint32_t parts = std::max<uint32_t>(1, msg.num_parts());
          REQUIRE(msg.part() == expect_part);
          if (msg.part() == 0) {
            batch.clear();
            REQUIRE(msg.nodes_size() == 1);
            REQUIRE(msg.edges_size() == 1);
            node_type = msg.nodes(0).node_type();
            edge_type = msg.edges(0).edge_type();
          }
          for (const auto& nodes : msg.nodes()) AddTensors(nodes, nodes.node_type(), msg.part() == 0, &batch);
          for (const auto& edges : msg.edges()) AddTensors(edges, edges.edge_type(), msg.part() == 0, &batch);
          num_batches = msg.num_batches();
          if (msg.part() + 1 < parts) {
            ++expect_part;
            continue;
          }
          expect_part = 0;
          multi_part += parts > 1;
          ++batches;
          // Every byte of every tensor arrived exactly once.
          for (const auto& [key, a] : batch) {
            INFO(key);
            CHECK(a.covered == a.bytes.size());
          }
          // The features are the stored rows in the channel's encoding, one per uncached node.
          const std::string& type = node_type;
          const Assembled& ids = batch.at(type + "/ids");
          const Assembled& x = batch.at(type + "/features");
          REQUIRE(ids.dtype == v1::DTYPE_INT64);
          const size_t n = ids.bytes.size() / 8;
          size_t rows = n;
          if (cache_rows > 0) {
            const Assembled& cached = batch.at(type + "/cached");
            REQUIRE(cached.bytes.size() == n);
            rows = static_cast<size_t>(std::count(cached.bytes.begin(), cached.bytes.end(), '\0'));
            CHECK(rows < n);
          }
          REQUIRE(x.shape.size() == 2);
          CHECK(static_cast<size_t>(x.shape[0]) == rows);
          CHECK(x.shape[1] == 12);
          const v1::DType want_dtype = encoding == v1::FEATURE_ENCODING_FLOAT16    ? v1::DTYPE_FLOAT16
                                       : encoding == v1::FEATURE_ENCODING_BFLOAT16 ? v1::DTYPE_BFLOAT16
                                       : encoding == v1::FEATURE_ENCODING_INT8     ? v1::DTYPE_UINT8
                                       : encoding == v1::FEATURE_ENCODING_INT4     ? v1::DTYPE_UINT4
                                       : encoding == v1::FEATURE_ENCODING_INT1     ? v1::DTYPE_UINT1
                                                                                   : v1::DTYPE_FLOAT32;
          CHECK(x.dtype == want_dtype);
          // Packed codes: every row on whole bytes (12 values: 6 bytes of 4 bits, 2 of 1 bit).
          const size_t row_bytes = want_dtype == v1::DTYPE_UINT4 ? 6 : want_dtype == v1::DTYPE_UINT1 ? 2 : 12 * ElementSize(want_dtype);
          CHECK(x.bytes.size() == rows * row_bytes);
          const bool quantized = encoding == v1::FEATURE_ENCODING_INT8 || encoding == v1::FEATURE_ENCODING_INT4 ||
                                 encoding == v1::FEATURE_ENCODING_INT1;
          CHECK(batch.count(type + "/feature_scale") == (quantized ? 1u : 0u));
          const Assembled& rowsi = batch.at(edge_type + "/rows");
          CHECK(rowsi.dtype == v1::DTYPE_INT32);
          if (encoding == v1::FEATURE_ENCODING_FLOAT32 && cache_rows == 0) {
            // The rows the server stores for these ids.
            v1::GetNodeFeaturesRequest fr;
            fr.mutable_ids()->Add(reinterpret_cast<const int64_t*>(ids.bytes.data()),
                                  reinterpret_cast<const int64_t*>(ids.bytes.data()) + n);
            auto stored = (*c)->GetNodeFeatures(fr);
            REQUIRE(stored.ok());
            CHECK(stored->features().data() == x.bytes);
          }
        }
        CHECK(batches == num_batches);
        CHECK(expect_part == 0);
        if (part_bytes == 4096) {
          CHECK(multi_part == batches);
        } else {
          CHECK(multi_part == 0);
        }
      }
    }
  }
}

TEST_CASE("bad feature options answer INVALID_ARGUMENT naming the field", "[remote]") {
  LocalCluster cluster(1);
  auto c = client::Client::Connect({cluster.addresses[0]});
  REQUIRE(c.ok());
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("bad-options");
  *init.mutable_config() = Config();
  auto backend = (*c)->InitSamplingBackend(init);
  REQUIRE(backend.ok());

  auto reg = [&](int encoding, int64_t cache_rows) {
    v1::RegisterSamplingInputRequest r;
    r.set_backend_id(backend->backend_id());
    r.mutable_nodes()->add_ids(1);
    r.set_feature_encoding(static_cast<v1::FeatureEncoding>(encoding));
    r.set_feature_cache_rows(cache_rows);
    return (*c)->RegisterSamplingInput(r);
  };
  auto unknown = reg(77, 0);
  REQUIRE(unknown.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(unknown.status().message().find("feature_encoding") != absl::string_view::npos);
  auto negative = reg(v1::FEATURE_ENCODING_INT8, -1);
  REQUIRE(negative.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(negative.status().message().find("feature_cache_rows") != absl::string_view::npos);
  // More rows than nodes is a whole-graph cache, not an error.
  CHECK(reg(v1::FEATURE_ENCODING_FLOAT16, 10 * kNodes).ok());

  v1::GetNodeFeaturesRequest fr;
  fr.add_ids(1);
  fr.set_encoding(static_cast<v1::FeatureEncoding>(42));
  auto features = (*c)->GetNodeFeatures(fr);
  REQUIRE(features.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(features.status().message().find("encoding") != absl::string_view::npos);

  // The Loader's own parsing of a name.
  CHECK(client::ParseFeatureEncoding("int8").value() == v1::FEATURE_ENCODING_INT8);
  CHECK(client::ParseFeatureEncoding("FP16").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(client::ParseFeatureEncoding("int4").value() == v1::FEATURE_ENCODING_INT4);
  CHECK(client::ParseFeatureEncoding("INT1").value() == v1::FEATURE_ENCODING_INT1);
  auto bad = client::ParseFeatureEncoding("int3");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("float16") != absl::string_view::npos);
}

}  // namespace
}  // namespace graphstore
