// The assemble stage without a daemon: a decoded batch and the same batch as a message give the
// trainer the same tensors under the same names (batch_tensors.h's table drives both), edge
// types come keyed in message-passing direction, input_id is mapped to the loader's input, the
// memory a batch views is listed, and a message that leaves rows to their owners without places
// for them is refused.

#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "client/batch_assembly.h"

namespace graphstore::client {
namespace {

template <typename T>
v1::Tensor Wire(v1::DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  v1::Tensor t;
  t.set_dtype(dtype);
  for (int64_t d : shape) t.add_shape(d);
  t.set_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  return t;
}

template <typename T>
DecodedTensor Decoded(BufferPool* pool, v1::DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  DecodedTensor d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  d.bytes = values.size() * sizeof(T);
  d.buffer = pool->Acquire(d.bytes);
  d.data = d.buffer->data();
  std::memcpy(d.data, values.data(), d.bytes);
  return d;
}

template <typename T>
std::vector<T> Values(const HostTensor& t) {
  std::vector<T> out(t.bytes / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.data, t.bytes);
  return out;
}

const std::vector<int64_t> kIds = {10, 11, 12};
const std::vector<int64_t> kSeeds = {10};
const std::vector<float> kX = {1, 2, 3, 4, 5, 6};
const std::vector<int64_t> kY = {0, 1, 2};
const std::vector<int64_t> kInput = {1};
const std::vector<int64_t> kCounts = {1, 2};
// Two edges as stored (CSR row -> neighbour) and as local indices.
const std::vector<int32_t> kRows = {0, 0};
const std::vector<int32_t> kCols = {1, 2};

v1::SampledMessage Message() {
  v1::SampledMessage m;
  m.set_epoch(3);
  m.set_batch_index(5);
  v1::NodeTensors* n = m.add_nodes();
  n->set_node_type("paper");
  *n->mutable_ids() = Wire(v1::DTYPE_INT64, {3}, kIds);
  *n->mutable_batch() = Wire(v1::DTYPE_INT64, {1}, kSeeds);
  *n->mutable_features() = Wire(v1::DTYPE_FLOAT32, {3, 2}, kX);
  *n->mutable_labels() = Wire(v1::DTYPE_INT64, {3}, kY);
  *n->mutable_input_ids() = Wire(v1::DTYPE_INT64, {1}, kInput);
  *n->mutable_num_sampled_nodes() = Wire(v1::DTYPE_INT64, {2}, kCounts);
  v1::EdgeTensors* e = m.add_edges();
  e->set_edge_type("paper__cites__paper");
  *e->mutable_rows() = Wire(v1::DTYPE_INT32, {2}, kRows);
  *e->mutable_cols() = Wire(v1::DTYPE_INT32, {2}, kCols);
  *e->mutable_num_sampled_edges() = Wire(v1::DTYPE_INT64, {1}, std::vector<int64_t>{2});
  return m;
}

std::shared_ptr<DecodedBatch> Decode(BufferPool* pool, bool rows_are_sources) {
  auto d = std::make_shared<DecodedBatch>();
  d->epoch = 3;
  d->batch_index = 5;
  DecodedNodes& n = d->nodes.emplace_back();
  n.node_type = "paper";
  n.n_id = Decoded(pool, v1::DTYPE_INT64, {3}, kIds);
  n.seeds = Decoded(pool, v1::DTYPE_INT64, {1}, kSeeds);
  n.x = Decoded(pool, v1::DTYPE_FLOAT32, {3, 2}, kX);
  n.y = Decoded(pool, v1::DTYPE_INT64, {3}, kY);
  n.input_id = Decoded(pool, v1::DTYPE_INT64, {1}, kInput);
  n.num_sampled_nodes = Decoded(pool, v1::DTYPE_INT64, {2}, kCounts);
  DecodedEdges& e = d->edges.emplace_back();
  e.edge_type = "paper__cites__paper";
  // The decoder lays edge_index out in message-passing direction (wire_decoder.h).
  std::vector<int64_t> index = rows_are_sources ? std::vector<int64_t>{1, 2, 0, 0} : std::vector<int64_t>{0, 0, 1, 2};
  e.edge_index = Decoded(pool, v1::DTYPE_INT64, {2, 2}, index);
  e.num_sampled_edges = Decoded(pool, v1::DTYPE_INT64, {1}, std::vector<int64_t>{2});
  return d;
}

void CheckSame(const HostBatch& a, const HostBatch& b) {
  REQUIRE(a.nodes.size() == b.nodes.size());
  const HostNodes& x = a.nodes.at("paper");
  const HostNodes& y = b.nodes.at("paper");
  ZipNodeTensors(x, y, [](const auto& field, const HostTensor& s, const HostTensor& t) {
    INFO(field.name);
    CHECK(s.defined() == t.defined());
    CHECK(s.shape == t.shape);
    CHECK(Values<char>(s) == Values<char>(t));
  });
  CHECK(x.num_sampled_nodes == y.num_sampled_nodes);
  CHECK(x.batch_size == y.batch_size);
  REQUIRE(a.edges.size() == b.edges.size());
  for (const auto& [key, e] : a.edges) {
    INFO(key);
    REQUIRE(b.edges.count(key) == 1);
    ZipEdgeTensors(e, b.edges.at(key), [](const auto& field, const HostTensor& s, const HostTensor& t) {
      INFO(field.name);
      CHECK(s.shape == t.shape);
      CHECK(Values<char>(s) == Values<char>(t));
    });
    CHECK(e.stored_type == b.edges.at(key).stored_type);
  }
  CHECK(a.first_node_type == b.first_node_type);
  CHECK(a.first_edge_type == b.first_edge_type);
  CHECK(Values<int64_t>(a.input_id) == Values<int64_t>(b.input_id));
}

TEST_CASE("a decoded batch and its message assemble into the same batch", "[assembly]") {
  auto pool = BufferPool::Create();
  for (bool out_edges : {false, true}) {
    DYNAMIC_SECTION("edge_dir " << (out_edges ? "out" : "in")) {
      const std::vector<int64_t> index = {5, 9};  // explicit seeds: server position -> loader's
      AssemblyContext c;
      c.server = 1;
      c.out_edges = out_edges;
      c.pool = pool.get();
      c.input_ids_are_positions = true;
      c.input_index = &index;
      const HostBatch decoded = AssembleDecoded(c, Decode(pool.get(), out_edges));
      auto message = std::make_shared<const v1::SampledMessage>(Message());
      auto shared = AssembleShared(c, message, nullptr, nullptr);
      REQUIRE(shared.ok());
      CheckSame(decoded, *shared);
      // Keyed by the direction messages flow: the stored type, or its reverse for out-edges.
      const std::string key = out_edges ? "paper__rev_cites__paper" : "paper__cites__paper";
      REQUIRE(decoded.edges.count(key) == 1);
      CHECK(decoded.first_edge_type == key);
      CHECK(decoded.edges.at(key).stored_type == "paper__cites__paper");
      // The neighbour drawn first, the node that drew it second.
      CHECK(Values<int64_t>(shared->edges.at(key).edge_index) ==
            (out_edges ? std::vector<int64_t>{1, 2, 0, 0} : std::vector<int64_t>{0, 0, 1, 2}));
      CHECK(Values<int64_t>(decoded.input_id) == std::vector<int64_t>{9});
      CHECK(decoded.input_type == "paper");
      CHECK(decoded.server == 1);
      CHECK(decoded.nodes.at("paper").batch_size == 1);
      // Every buffer the tensors view is listed.
      std::set<const void*> listed;
      for (const auto& [data, size] : decoded.memory) listed.insert(data);
      CHECK(listed.count(decoded.nodes.at("paper").x.data) == 1);
      CHECK(listed.count(decoded.nodes.at("paper").n_id.data) == 1);
    }
  }
}

TEST_CASE("a message's quantized features keep their scales and bits, as a decoded batch's do", "[assembly]") {
  auto pool = BufferPool::Create();
  v1::SampledMessage m = Message();
  v1::NodeTensors* n = m.mutable_nodes(0);
  *n->mutable_features() = Wire(v1::DTYPE_UINT8, {3, 2}, std::vector<uint8_t>{1, 2, 3, 4, 5, 6});
  *n->mutable_feature_scale() = Wire(v1::DTYPE_FLOAT32, {2}, std::vector<float>{0.5f, 0.25f});
  *n->mutable_feature_offset() = Wire(v1::DTYPE_FLOAT32, {2}, std::vector<float>{1, 2});
  AssemblyContext c;
  c.pool = pool.get();
  auto b = AssembleShared(c, std::make_shared<const v1::SampledMessage>(m), nullptr, nullptr);
  REQUIRE(b.ok());
  const HostNodes& h = b->nodes.at("paper");
  CHECK(h.x_bits == 8);
  CHECK(Values<float>(h.x_scale) == std::vector<float>{0.5f, 0.25f});
  CHECK(Values<float>(h.x_offset) == std::vector<float>{1, 2});
  // input_ids that are the server's own positions are not the trainer's input_id.
  CHECK_FALSE(b->input_id.defined());
}

TEST_CASE("a message that leaves rows to their owners without places for them is DataLoss", "[assembly]") {
  auto pool = BufferPool::Create();
  v1::SampledMessage m = Message();
  *m.mutable_nodes(0)->mutable_owners() = Wire(v1::DTYPE_INT32, {3}, std::vector<int32_t>{0, 1, 1});
  AssemblyContext c;
  c.pool = pool.get();
  auto b = AssembleShared(c, std::make_shared<const v1::SampledMessage>(m), nullptr, nullptr);
  REQUIRE(b.ok());
  auto places = SharedRowsForOwners(m, nullptr, *b);
  REQUIRE_FALSE(places.ok());
  CHECK(places.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(places.status().message()),
             Catch::Contains("node type 'paper': rows left to their owners in a message without places for them"));
  // A message that leaves none has nothing for the owners.
  auto none = SharedRowsForOwners(Message(), nullptr, *b);
  REQUIRE(none.ok());
  CHECK(none->nodes.empty());
}

}  // namespace
}  // namespace graphstore::client
