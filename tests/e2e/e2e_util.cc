#include "tests/e2e/e2e_util.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>

#include "server/graph/partition.h"
#include "tests/fixtures.h"

namespace graphstore::testing {

using client::Client;

const std::string& Dataset() { return GeneratedDataset(3000, 16, 8); }

std::unique_ptr<Client> Connect(const Daemon& d, int window_bytes) {
  client::ClientOptions o;
  o.address = d.address();
  o.stream_window_bytes = window_bytes;
  auto c = Client::Connect(o);
  REQUIRE(c.ok());
  return *std::move(c);
}

uint64_t InitBackend(Client& c, const std::string& key, int batch_size, bool shuffle) {
  v1::InitSamplingBackendRequest req;
  req.set_backend_key(key);
  req.mutable_config()->set_batch_size(batch_size);
  req.mutable_config()->set_shuffle(shuffle);
  req.mutable_config()->add_num_neighbors(5);
  req.mutable_config()->add_num_neighbors(3);
  req.mutable_config()->set_with_node_features(true);
  req.mutable_config()->set_with_labels(true);
  auto r = c.InitSamplingBackend(req);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return r->backend_id();
}

uint64_t RegisterSplit(Client& c, uint64_t backend, const std::string& split, int max_messages) {
  v1::RegisterSamplingInputRequest req;
  req.set_backend_id(backend);
  req.set_worker_key("test");
  req.mutable_split()->set_split(split);
  req.set_seed(17);
  req.mutable_buffer()->set_max_messages(max_messages);
  auto r = c.RegisterSamplingInput(req);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return r->channel_id();
}

v1::StartEpochResponse::Outcome Start(Client& c, uint64_t channel, int64_t epoch) {
  v1::StartEpochRequest req;
  req.set_channel_id(channel);
  req.set_epoch(epoch);
  auto r = c.StartEpoch(req);
  REQUIRE(r.ok());
  return r->outcome();
}

std::vector<int64_t> Int64s(const v1::Tensor& t) {
  REQUIRE(t.dtype() == v1::DTYPE_INT64);
  std::vector<int64_t> v(t.data().size() / 8);
  std::memcpy(v.data(), t.data().data(), t.data().size());
  return v;
}

std::unique_ptr<client::MessageStream> Open(Client& c, uint64_t channel, int64_t epoch) {
  v1::StreamSampledMessagesRequest req;
  req.set_channel_id(channel);
  req.set_epoch(epoch);
  return c.Stream(req);
}

std::vector<int64_t> ReadEpoch(Client& c, uint64_t channel, int64_t epoch, int64_t* batches) {
  auto stream = Open(c, channel, epoch);
  std::vector<int64_t> seeds;
  std::set<int64_t> indices;
  while (true) {
    auto m = stream->Next();
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    if (*m == nullptr) break;
    REQUIRE((*m)->epoch() == epoch);
    REQUIRE(indices.insert((*m)->batch_index()).second);
    const auto b = Int64s((*m)->nodes(0).batch());
    seeds.insert(seeds.end(), b.begin(), b.end());
    // Features and labels travel with every message, row-aligned with ids.
    const auto ids = Int64s((*m)->nodes(0).ids());
    REQUIRE((*m)->nodes(0).features().shape(0) == static_cast<int64_t>(ids.size()));
    REQUIRE((*m)->nodes(0).labels().data().size() == ids.size() * 8);
  }
  if (batches != nullptr) *batches = static_cast<int64_t>(indices.size());
  return seeds;
}

void RunWitnessEpoch(Client& c, uint64_t backend) {
  const uint64_t witness = RegisterSplit(c, backend, "val");
  REQUIRE(Start(c, witness, 0) == v1::StartEpochResponse::STARTED);
  REQUIRE(!ReadEpoch(c, witness, 0).empty());
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(witness);
  REQUIRE(c.DestroySamplingInput(destroy).ok());
}

std::vector<int64_t> SplitIds(const std::string& split) {
  auto p = Partition::Load(Dataset());
  REQUIRE(p.ok());
  const MappedNpy& f = (*p)->node_type(0).splits.at(split);
  return std::vector<int64_t>(f.data<int64_t>(), f.data<int64_t>() + f.num_elements());
}

}  // namespace graphstore::testing
