// The client's decoder on its own: a batch arriving in pieces of any size decodes the same as
// in one piece, int32 and int64 indices both become int64 edge_index in message-passing
// direction, a batch split into parts by the server's encoder reassembles exactly, packed
// quantized codes decode or stay packed, and malformed input is DATA_LOSS, never a crash.

#include "client/wire_decoder.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "server/service/wire_encoder.h"

namespace graphstore::client {
namespace {

template <typename T>
v1::Tensor Make(v1::DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  v1::Tensor t;
  t.set_dtype(dtype);
  for (int64_t s : shape) t.add_shape(s);
  t.set_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  return t;
}

template <typename T>
std::vector<T> Values(const DecodedTensor& t) {
  std::vector<T> v(t.bytes / sizeof(T));
  std::memcpy(v.data(), t.data, t.bytes);
  return v;
}

// A batch of 40 nodes with 3 features and 60 edges, indices of `index_dtype`.
v1::SampledMessage Message(v1::DType index_dtype) {
  v1::SampledMessage m;
  m.set_channel_id(3);
  m.set_epoch(2);
  m.set_batch_index(5);
  m.set_num_batches(9);
  auto* n = m.add_nodes();
  n->set_node_type("paper");
  std::vector<int64_t> ids(40), labels(40);
  std::vector<float> x(40 * 3);
  for (int i = 0; i < 40; ++i) {
    ids[i] = 1000 + 7 * i;
    labels[i] = i % 4;
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i);
  *n->mutable_ids() = Make(v1::DTYPE_INT64, {40}, ids);
  *n->mutable_labels() = Make(v1::DTYPE_INT64, {40}, labels);
  *n->mutable_features() = Make(v1::DTYPE_FLOAT32, {40, 3}, x);
  auto* e = m.add_edges();
  e->set_edge_type("paper__cites__paper");
  std::vector<int64_t> rows(60), cols(60);
  for (int i = 0; i < 60; ++i) {
    rows[i] = i % 10;
    cols[i] = 10 + i % 30;
  }
  if (index_dtype == v1::DTYPE_INT64) {
    *e->mutable_rows() = Make(v1::DTYPE_INT64, {60}, rows);
    *e->mutable_cols() = Make(v1::DTYPE_INT64, {60}, cols);
  } else {
    *e->mutable_rows() = Make(v1::DTYPE_INT32, {60}, std::vector<int32_t>(rows.begin(), rows.end()));
    *e->mutable_cols() = Make(v1::DTYPE_INT32, {60}, std::vector<int32_t>(cols.begin(), cols.end()));
  }
  return m;
}

std::vector<Span> Pieces(const std::string& bytes, std::mt19937* rng, int max_piece) {
  std::vector<Span> out;
  for (size_t at = 0; at < bytes.size();) {
    const size_t k = std::min<size_t>(bytes.size() - at, std::uniform_int_distribution<int>(1, max_piece)(*rng));
    out.push_back({bytes.data() + at, k});
    at += k;
  }
  return out;
}

// A tensor of a MessageEntry for the server's encoder.
TensorField TensorOf(int number, const void* data, size_t bytes, v1::DType dtype, std::vector<int64_t> shape) {
  TensorField f;
  f.number = number;
  f.data = static_cast<const char*>(data);
  f.bytes = bytes;
  f.dtype = dtype;
  f.shape = std::move(shape);
  return f;
}

DecodeOptions Options() {
  DecodeOptions o;
  o.pool = BufferPool::Create();
  return o;
}

TEST_CASE("pieces of any size decode like one piece; indices widen to edge_index", "[decoder]") {
  std::mt19937 rng(1);
  for (const v1::DType index : {v1::DTYPE_INT64, v1::DTYPE_INT32}) {
    const v1::SampledMessage m = Message(index);
    const std::string bytes = m.SerializeAsString();
    for (int max_piece : {1, 3, 17, 1 << 20}) {
      INFO("pieces of up to " << max_piece << " bytes, index dtype " << index);
      BatchDecoder decoder(Options());
      auto b = decoder.Add(Pieces(bytes, &rng, max_piece));
      REQUIRE(b.ok());
      REQUIRE(*b != nullptr);
      const DecodedBatch& d = **b;
      CHECK(d.epoch == 2);
      CHECK(d.batch_index == 5);
      CHECK(d.num_batches == 9);
      REQUIRE(d.nodes.size() == 1);
      CHECK(d.nodes[0].node_type == "paper");
      CHECK(Values<int64_t>(d.nodes[0].n_id)[39] == 1000 + 7 * 39);
      CHECK(Values<int64_t>(d.nodes[0].y)[5] == 1);
      CHECK(d.nodes[0].x.shape == std::vector<int64_t>{40, 3});
      CHECK(Values<float>(d.nodes[0].x)[119] == 0.25f * 119);
      REQUIRE(d.edges.size() == 1);
      const DecodedTensor& ei = d.edges[0].edge_index;
      REQUIRE(ei.dtype == v1::DTYPE_INT64);
      REQUIRE(ei.shape == std::vector<int64_t>{2, 60});
      const auto v = Values<int64_t>(ei);
      // rows are the nodes that sampled (sources of the stored edges): messages flow from cols.
      for (int i = 0; i < 60; ++i) {
        REQUIRE(v[i] == 10 + i % 30);
        REQUIRE(v[60 + i] == i % 10);
      }
    }
  }
}

TEST_CASE("a batch the server's encoder splits into parts reassembles exactly", "[decoder]") {
  // Encode the same tensors through the server's encoder with tiny parts.
  std::vector<int64_t> ids(500);
  std::vector<float> x(500 * 8);
  std::vector<int32_t> rows(900), cols(900);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 7.5f;
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i] = static_cast<int32_t>(i % 100);
    cols[i] = static_cast<int32_t>(100 + i % 400);
  }
  MessageEntry nodes;
  nodes.number = v1::SampledMessage::kNodesFieldNumber;
  nodes.strings = {{v1::NodeTensors::kNodeTypeFieldNumber, "n"}};
  nodes.tensors = {TensorOf(v1::NodeTensors::kIdsFieldNumber, ids.data(), ids.size() * 8, v1::DTYPE_INT64, {500}),
                   TensorOf(v1::NodeTensors::kFeaturesFieldNumber, x.data(), x.size() * 4, v1::DTYPE_FLOAT32, {500, 8})};
  MessageEntry edges;
  edges.number = v1::SampledMessage::kEdgesFieldNumber;
  edges.strings = {{v1::EdgeTensors::kEdgeTypeFieldNumber, "n__to__n"}};
  edges.tensors = {TensorOf(v1::EdgeTensors::kRowsFieldNumber, rows.data(), rows.size() * 4, v1::DTYPE_INT32, {900}),
                   TensorOf(v1::EdgeTensors::kColsFieldNumber, cols.data(), cols.size() * 4, v1::DTYPE_INT32, {900})};
  const std::vector<MessageEntry> entries = {nodes, edges};
  WireHeader h;
  h.channel_id = 1;
  h.batch_index = 4;
  h.num_batches = 10;
  auto encoded = EncodeParts(h, entries, 1024, 64, nullptr);
  REQUIRE(encoded->parts.size() > 10);

  std::mt19937 rng(2);
  BatchDecoder decoder(Options());
  std::shared_ptr<DecodedBatch> batch;
  for (size_t p = 0; p < encoded->parts.size(); ++p) {
    std::string part;
    for (const auto& s : encoded->parts[p]) part.append(s.data, s.size);
    // Any protobuf parser reads each part on its own.
    v1::SampledMessage generic;
    REQUIRE(generic.ParseFromString(part));
    CHECK(generic.part() == p);
    CHECK(generic.num_parts() == encoded->parts.size());
    auto b = decoder.Add(Pieces(part, &rng, 50));
    REQUIRE(b.ok());
    CHECK((*b != nullptr) == (p + 1 == encoded->parts.size()));
    if (*b != nullptr) batch = *b;
  }
  REQUIRE(batch != nullptr);
  CHECK(Values<int64_t>(batch->nodes[0].n_id) == ids);
  CHECK(Values<float>(batch->nodes[0].x) == x);
  const auto ei = Values<int64_t>(batch->edges[0].edge_index);
  CHECK(std::vector<int64_t>(ei.begin(), ei.begin() + 900) == std::vector<int64_t>(cols.begin(), cols.end()));
  CHECK(std::vector<int64_t>(ei.begin() + 900, ei.end()) == std::vector<int64_t>(rows.begin(), rows.end()));

  // A later part without part 0 is out of order.
  BatchDecoder fresh(Options());
  std::string second;
  for (const auto& s : encoded->parts[1]) second.append(s.data, s.size);
  auto out_of_order = fresh.Add({{second.data(), second.size()}});
  REQUIRE(!out_of_order.ok());
  CHECK(out_of_order.status().code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("rows after their cached mask are placed as they arrive; a mask after them is DATA_LOSS", "[decoder]") {
  // 300 nodes, every third left out (its owner sends it); rows of 8 floats; tiny parts.
  std::vector<int64_t> ids(300);
  std::vector<uint8_t> cached(300);
  std::vector<int32_t> owners(300);
  std::vector<float> sent;
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int64_t>(i);
    cached[i] = i % 3 == 0;
    owners[i] = cached[i] ? 1 : 0;
    for (int c = 0; c < 8 && !cached[i]; ++c) sent.push_back(static_cast<float>(i * 8 + c));
  }
  const int64_t rows = static_cast<int64_t>(sent.size() / 8);
  const TensorField id_field = TensorOf(v1::NodeTensors::kIdsFieldNumber, ids.data(), 2400, v1::DTYPE_INT64, {300});
  const TensorField mask = TensorOf(v1::NodeTensors::kCachedFieldNumber, cached.data(), 300, v1::DTYPE_BOOL, {300});
  const TensorField owner = TensorOf(v1::NodeTensors::kOwnersFieldNumber, owners.data(), 1200, v1::DTYPE_INT32, {300});
  const TensorField x = TensorOf(v1::NodeTensors::kFeaturesFieldNumber, sent.data(), sent.size() * 4,
                               v1::DTYPE_FLOAT32, {rows, 8});
  for (const bool mask_first : {true, false}) {
    MessageEntry nodes;
    nodes.number = v1::SampledMessage::kNodesFieldNumber;
    nodes.strings = {{v1::NodeTensors::kNodeTypeFieldNumber, "n"}};
    nodes.tensors = mask_first ? std::vector<TensorField>{id_field, owner, mask, x}
                              : std::vector<TensorField>{id_field, owner, x, mask};
    auto encoded = EncodeParts(WireHeader(), {nodes}, 512, 64, nullptr);
    REQUIRE(encoded->parts.size() > 5);
    // The nodes are announced once, as soon as their ids and owners are whole.
    DecodeOptions options = Options();
    options.sender = 0;
    std::vector<size_t> announced;
    size_t part = 0;
    options.owners_known = [&](const DecodedNodes& n) {
      announced.push_back(part);
      CHECK(n.node_type == "n");
      CHECK(Values<int64_t>(n.n_id) == ids);
      CHECK(Values<int32_t>(n.owners) == owners);
    };
    BatchDecoder decoder(options);
    std::shared_ptr<DecodedBatch> batch;
    absl::Status status;
    for (size_t p = 0; p < encoded->parts.size() && status.ok(); ++p) {
      part = p;
      std::vector<Span> spans;
      for (const auto& piece : encoded->parts[p]) spans.push_back({piece.data, piece.size});
      auto b = decoder.Add(spans);
      status = b.status();
      if (b.ok() && *b != nullptr) batch = *b;
    }
    if (!mask_first) {
      // The matrix was sized before the mask said how many nodes it covers.
      CHECK(status.code() == absl::StatusCode::kDataLoss);
      continue;
    }
    REQUIRE(status.ok());
    REQUIRE(batch != nullptr);
    // Ids (2400 bytes) and owners (1200) in parts of 512: whole in part 8 of 12 or so.
    REQUIRE(announced.size() == 1);
    CHECK(announced[0] + 2 < encoded->parts.size());
    const auto out = Values<float>(batch->nodes[0].x);
    REQUIRE(out.size() == 300 * 8);
    size_t k = 0;
    for (size_t i = 0; i < 300; ++i) {
      if (cached[i]) continue;
      for (int c = 0; c < 8; ++c) REQUIRE(out[i * 8 + c] == sent[k * 8 + c]);
      ++k;
    }
    CHECK(batch->staged_bytes == 0);
  }
}

// Decodes `entries` sent in parts of `part_bytes`, by a server of partition `sender`.
absl::StatusOr<std::shared_ptr<DecodedBatch>> DecodeParts(const std::vector<MessageEntry>& entries, size_t part_bytes,
                                                          int sender) {
  auto encoded = EncodeParts(WireHeader(), entries, part_bytes, 64, nullptr);
  DecodeOptions options = Options();
  options.sender = sender;
  BatchDecoder decoder(options);
  for (size_t p = 0; p < encoded->parts.size(); ++p) {
    std::vector<Span> spans;
    for (const auto& piece : encoded->parts[p]) spans.push_back({piece.data, piece.size});
    auto b = decoder.Add(spans);
    if (!b.ok() || *b != nullptr) return b;
  }
  return absl::DataLossError("no batch");
}

TEST_CASE("with owners and no mask, the sender's rows and labels alone arrive and go to their nodes", "[decoder]") {
  // 500 nodes in 3 partitions, sent by partition 1: its nodes' rows of 4 floats and their
  // labels, no mask; the others' labels are -1 until their owners answer.
  std::vector<int64_t> ids(500), own_labels, want_labels(500);
  std::vector<uint8_t> owners(500);
  std::vector<float> sent;
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int64_t>(3 * i + 1);
    owners[i] = static_cast<uint8_t>((i * 7) % 3);
    want_labels[i] = owners[i] == 1 ? static_cast<int64_t>(i % 11) : -1;
    if (owners[i] != 1) continue;
    own_labels.push_back(want_labels[i]);
    for (int c = 0; c < 4; ++c) sent.push_back(static_cast<float>(i * 4 + c));
  }
  const auto own = static_cast<int64_t>(own_labels.size());
  MessageEntry nodes;
  nodes.number = v1::SampledMessage::kNodesFieldNumber;
  nodes.strings = {{v1::NodeTensors::kNodeTypeFieldNumber, "n"}};
  nodes.tensors = {TensorOf(v1::NodeTensors::kIdsFieldNumber, ids.data(), 4000, v1::DTYPE_INT64, {500}),
                   TensorOf(v1::NodeTensors::kOwnersFieldNumber, owners.data(), 500, v1::DTYPE_UINT8, {500}),
                   TensorOf(v1::NodeTensors::kFeaturesFieldNumber, sent.data(), sent.size() * 4, v1::DTYPE_FLOAT32,
                            {own, 4}),
                   TensorOf(v1::NodeTensors::kLabelsFieldNumber, own_labels.data(), own_labels.size() * 8,
                            v1::DTYPE_INT64, {own})};
  for (const size_t part_bytes : {size_t{0}, size_t{300}}) {
    auto batch = DecodeParts({nodes}, part_bytes, 1);
    REQUIRE(batch.ok());
    const DecodedNodes& n = (*batch)->nodes[0];
    CHECK(Values<int64_t>(n.y) == want_labels);
    const auto x = Values<float>(n.x);
    REQUIRE(x.size() == 500 * 4);
    size_t placed = 0;
    for (size_t i = 0; i < 500; ++i) {
      if (owners[i] != 1) continue;
      for (int c = 0; c < 4; ++c) placed += x[i * 4 + c] == static_cast<float>(i * 4 + c);
    }
    CHECK(placed == sent.size());
  }
  // A reader that does not know the sender, or labels that fit neither form, are DATA_LOSS.
  CHECK(DecodeParts({nodes}, 0, -1).status().code() == absl::StatusCode::kDataLoss);
  own_labels.push_back(5);
  nodes.tensors[3] = TensorOf(v1::NodeTensors::kLabelsFieldNumber, own_labels.data(), own_labels.size() * 8,
                              v1::DTYPE_INT64, {own + 1});
  auto more = DecodeParts({nodes}, 0, 1);
  REQUIRE(!more.ok());
  CHECK(more.status().code() == absl::StatusCode::kDataLoss);
  CHECK(more.status().message().find("labels") != std::string::npos);
}

TEST_CASE("packed codes decode to float32, or stay as their rows' bytes with their width", "[decoder]") {
  // 5 nodes, 3 columns of 4-bit codes (2 bytes a row), scale and offset after the rows: the rows
  // wait for them.
  const std::vector<uint8_t> codes = {1, 2, 3, 15, 0, 7, 8, 9, 10, 11, 12, 13, 14, 0, 5};
  std::vector<uint8_t> packed;
  for (size_t r = 0; r < 5; ++r) {
    packed.push_back(static_cast<uint8_t>(codes[3 * r] | codes[3 * r + 1] << 4));
    packed.push_back(codes[3 * r + 2]);
  }
  const std::vector<float> scale = {0.5f, 2.0f, 1.0f}, offset = {-1.0f, 0.0f, 10.0f};
  v1::SampledMessage m;
  m.set_num_batches(1);
  auto* n = m.add_nodes();
  n->set_node_type("item");
  *n->mutable_ids() = Make(v1::DTYPE_INT64, {5}, std::vector<int64_t>{4, 3, 2, 1, 0});
  *n->mutable_features() = Make(v1::DTYPE_UINT4, {5, 3}, packed);
  *n->mutable_feature_scale() = Make(v1::DTYPE_FLOAT32, {3}, scale);
  *n->mutable_feature_offset() = Make(v1::DTYPE_FLOAT32, {3}, offset);
  const std::string bytes = m.SerializeAsString();
  for (bool decode : {true, false}) {
    INFO("decode " << decode);
    DecodeOptions o = Options();
    o.decode_features = decode;
    BatchDecoder decoder(o);
    auto b = decoder.Add({{bytes.data(), bytes.size()}});
    REQUIRE(b.ok());
    REQUIRE(*b != nullptr);
    const DecodedNodes& got = (*b)->nodes[0];
    if (decode) {
      CHECK(got.x.dtype == v1::DTYPE_FLOAT32);
      CHECK(got.x.shape == std::vector<int64_t>{5, 3});
      CHECK(got.feature_bits == 0);
      std::vector<float> want;
      for (size_t i = 0; i < codes.size(); ++i) want.push_back(offset[i % 3] + scale[i % 3] * codes[i]);
      CHECK(Values<float>(got.x) == want);
    } else {
      CHECK(got.x.dtype == v1::DTYPE_UINT8);
      CHECK(got.x.shape == std::vector<int64_t>{5, 2});
      CHECK(got.feature_bits == 4);
      CHECK(Values<uint8_t>(got.x) == packed);
      CHECK(Values<float>(got.x_scale) == scale);
    }
  }
  // Rows that are not whole rows of the packed width, or a type the decoder does not know.
  for (const auto& [dtype, bytes_per_row] : {std::pair<v1::DType, size_t>{v1::DTYPE_UINT4, 1},
                                            std::pair<v1::DType, size_t>{static_cast<v1::DType>(99), 2}}) {
    v1::SampledMessage bad = m;
    *bad.mutable_nodes(0)->mutable_features() =
        Make(dtype, {5, 3}, std::vector<uint8_t>(5 * bytes_per_row, 0));
    const std::string b = bad.SerializeAsString();
    BatchDecoder decoder(Options());
    auto r = decoder.Add({{b.data(), b.size()}});
    REQUIRE(!r.ok());
    CHECK(r.status().code() == absl::StatusCode::kDataLoss);
  }
}

TEST_CASE("malformed bytes are DATA_LOSS", "[decoder]") {
  const std::string bytes = Message(v1::DTYPE_INT32).SerializeAsString();
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = bytes;
    if (trial % 3 == 0) {
      bad.resize(std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng));
    } else {
      for (int k = 0; k < 1 + trial % 5; ++k) {
        bad[std::uniform_int_distribution<size_t>(0, bad.size() - 1)(rng)] = static_cast<char>(rng());
      }
    }
    BatchDecoder decoder(Options());
    auto b = decoder.Add({{bad.data(), bad.size()}});
    // Corruption that keeps a valid message decodes; anything else is DATA_LOSS.
    if (!b.ok()) CHECK(b.status().code() == absl::StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace graphstore::client
