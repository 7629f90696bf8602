// OwnerRows against fake owners in process (no daemon, no gRPC): the rows and labels other
// partitions own are asked of each owner at once and written in node order, the sender's left
// as they came, labels kept aside until the batch is whole; every answer that does not fit and
// every failed call is reported with its code and what it concerns.

#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/owner_rows.h"
#include "tests/client/unused_client.h"

namespace graphstore::client {
namespace {

v1::Tensor TensorOf(v1::DType dtype, std::vector<int64_t> shape, const void* data, size_t bytes) {
  v1::Tensor t;
  t.set_dtype(dtype);
  for (int64_t d : shape) t.add_shape(d);
  t.set_data(std::string(static_cast<const char*>(data), bytes));
  return t;
}

// Partition p's answer for node `id`: its feature row and its label.
float Row(int64_t id, int column) { return static_cast<float>(id * 10 + column); }
int64_t Label(int64_t id) { return 1000 + id; }

// An owner whose answers a test can shape. Calls are answered on a thread of their own, as
// gRPC's would be.
class FakeOwner : public testing::UnusedClient {
 public:
  explicit FakeOwner(int partition) : UnusedClient(absl::StrCat("owner:", partition)) {}
  ~FakeOwner() override {
    for (std::thread& t : threads_) t.join();
  }

  // What GetNodeFeatures answers: an error, or the response (built from the request by default).
  std::function<absl::StatusOr<std::string>(const v1::GetNodeFeaturesRequest&)> features = [](const auto& req) {
    return absl::StatusOr<std::string>(Answer(req, 2, v1::DTYPE_FLOAT32).SerializeAsString());
  };
  std::function<absl::StatusOr<v1::GetNodeLabelsResponse>(const v1::GetNodeLabelsRequest&)> labels =
      [](const v1::GetNodeLabelsRequest& req) {
        std::vector<int64_t> y;
        for (int64_t id : req.ids()) y.push_back(Label(id));
        v1::GetNodeLabelsResponse r;
        *r.mutable_labels() = TensorOf(v1::DTYPE_INT64, {static_cast<int64_t>(y.size())}, y.data(), y.size() * 8);
        return absl::StatusOr<v1::GetNodeLabelsResponse>(r);
      };

  static v1::GetNodeFeaturesResponse Answer(const v1::GetNodeFeaturesRequest& req, int dim, v1::DType dtype) {
    std::vector<float> x;
    std::vector<int64_t> y;
    for (int64_t id : req.ids()) {
      for (int c = 0; c < dim; ++c) x.push_back(Row(id, c));
      y.push_back(Label(id));
    }
    v1::GetNodeFeaturesResponse r;
    const int64_t n = req.ids_size();
    if (dtype == v1::DTYPE_FLOAT16) {
      // Values here are small integers: float16 holds them exactly.
      std::vector<uint16_t> h;
      for (float f : x) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
        h.push_back(f == 0 ? 0 : static_cast<uint16_t>((exponent << 10) | ((bits >> 13) & 0x3ff)));
      }
      *r.mutable_features() = TensorOf(dtype, {n, dim}, h.data(), h.size() * 2);
    } else {
      *r.mutable_features() = TensorOf(dtype, {n, dim}, x.data(), x.size() * 4);
    }
    if (req.with_labels()) *r.mutable_labels() = TensorOf(v1::DTYPE_INT64, {n}, y.data(), y.size() * 8);
    return r;
  }

  int feature_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return feature_calls_;
  }
  int label_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return label_calls_;
  }
  std::vector<int64_t> asked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_;
  }

  void ReadNodeFeaturesAsync(const v1::GetNodeFeaturesRequest& req,
                             std::function<absl::Status(const std::vector<Span>&)> read,
                             std::function<void(absl::Status)> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++feature_calls_;
    asked_.insert(asked_.end(), req.ids().begin(), req.ids().end());
    threads_.emplace_back([this, req, read = std::move(read), done = std::move(done)] {
      absl::StatusOr<std::string> answer = features(req);
      if (!answer.ok()) return done(answer.status());
      done(read({Span{answer->data(), answer->size()}}));
    });
  }
  void GetNodeLabelsAsync(const v1::GetNodeLabelsRequest& req,
                          std::function<void(absl::StatusOr<v1::GetNodeLabelsResponse>)> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++label_calls_;
    threads_.emplace_back([this, req, done = std::move(done)] { done(labels(req)); });
  }

  mutable std::mutex mu_;
  int feature_calls_ = 0, label_calls_ = 0;
  std::vector<int64_t> asked_;
  std::vector<std::thread> threads_;
};

// A decoded node type of `ids` owned by `owners`, with `dim` float32 columns and labels; the
// sender's rows and labels filled in as its server sent them (-1 rows, label 7), the others
// zero, as the decoder leaves them.
struct Nodes {
  std::shared_ptr<BufferPool> pool = BufferPool::Create();
  DecodedBatch batch;

  Nodes(const std::vector<int64_t>& ids, const std::vector<int32_t>& owners, int dim, int sender) {
    DecodedNodes& n = batch.nodes.emplace_back();
    n.node_type = "paper";
    const int64_t count = static_cast<int64_t>(ids.size());
    auto make = [this](DecodedTensor* t, v1::DType dtype, std::vector<int64_t> shape, size_t bytes) {
      t->dtype = dtype;
      t->shape = std::move(shape);
      t->bytes = bytes;
      t->buffer = pool->Acquire(std::max<size_t>(bytes, 1));
      t->data = t->buffer->data();
      std::memset(t->data, 0, bytes);
    };
    make(&n.n_id, v1::DTYPE_INT64, {count}, ids.size() * 8);
    std::memcpy(n.n_id.data, ids.data(), ids.size() * 8);
    make(&n.owners, v1::DTYPE_INT32, {count}, owners.size() * 4);
    std::memcpy(n.owners.data, owners.data(), owners.size() * 4);
    make(&n.x, v1::DTYPE_FLOAT32, {count, dim}, ids.size() * dim * 4);
    make(&n.y, v1::DTYPE_INT64, {count}, ids.size() * 8);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (owners[i] != sender) continue;
      for (int c = 0; c < dim; ++c) x()[i * dim + c] = -1;
      y()[i] = 7;
    }
  }
  DecodedNodes& n() { return batch.nodes[0]; }
  float* x() { return reinterpret_cast<float*>(n().x.data); }
  int64_t* y() { return reinterpret_cast<int64_t*>(n().y.data); }
};

struct Owners {
  std::vector<std::unique_ptr<FakeOwner>> owners;
  OwnerRowsOptions options;
  explicit Owners(int n) {
    for (int p = 0; p < n; ++p) owners.push_back(std::make_unique<FakeOwner>(p));
    options.owner = [this](int p) { return p >= 0 && p < static_cast<int>(owners.size()) ? owners[p].get() : nullptr; };
  }
};

const std::vector<int64_t> kIds = {40, 41, 42, 43, 44, 45};
const std::vector<int32_t> kOwners = {0, 1, 2, 1, 0, 2};

TEST_CASE("each owner's rows and labels are written at their nodes, the sender's left as sent", "[owner_rows]") {
  Owners cluster(3);
  Nodes nodes(kIds, kOwners, 2, /*sender=*/0);
  OwnerRows rows(cluster.options, 0);
  SECTION("asked while the batch arrives, whose own labels come after") {
    rows.Start(nodes.n());
    // The stream's labels tensor arrives whole after the start: the owners' answers must not
    // be written over by it, nor write over it.
    for (size_t i = 0; i < kIds.size(); ++i) nodes.y()[i] = kOwners[i] == 0 ? 7 : 0;
  }
  SECTION("asked once the batch is whole") {}
  REQUIRE(rows.Finish(&nodes.batch).ok());
  for (size_t i = 0; i < kIds.size(); ++i) {
    INFO("node " << i);
    if (kOwners[i] == 0) {
      CHECK(nodes.x()[i * 2] == -1);
      CHECK(nodes.y()[i] == 7);
    } else {
      CHECK(nodes.x()[i * 2] == Row(kIds[i], 0));
      CHECK(nodes.x()[i * 2 + 1] == Row(kIds[i], 1));
      CHECK(nodes.y()[i] == Label(kIds[i]));
    }
  }
  // One call per owner, each for its own nodes only; the sender is not asked.
  CHECK(cluster.owners[0]->feature_calls() == 0);
  CHECK(cluster.owners[1]->asked() == std::vector<int64_t>{41, 43});
  CHECK(cluster.owners[2]->asked() == std::vector<int64_t>{42, 45});
  CHECK(rows.calls() == 2);
  CHECK(rows.rows_asked() == 4);
}

TEST_CASE("rows the trainer caches cost a label call only", "[owner_rows]") {
  Owners cluster(2);
  FeatureCache cache;
  cache.types["paper"].slot_of.assign(100, -1);
  cache.types["paper"].slot_of[41] = 0;  // cached: the decoder filled its row
  cluster.options.cache = &cache;
  Nodes nodes({40, 41, 43}, {0, 1, 1}, 2, 0);
  OwnerRows rows(cluster.options, 0);
  REQUIRE(rows.Finish(&nodes.batch).ok());
  CHECK(cluster.owners[1]->asked() == std::vector<int64_t>{43});
  CHECK(cluster.owners[1]->label_calls() == 1);
  CHECK(nodes.y()[1] == Label(41));
  CHECK(nodes.y()[2] == Label(43));
  CHECK(nodes.x()[2 * 2] == Row(43, 0));
  CHECK(nodes.x()[1 * 2] == 0);  // the cache's row is the decoder's to fill
}

TEST_CASE("more ids than one call carries are asked in several calls", "[owner_rows]") {
  Owners cluster(2);
  const size_t n = (size_t{1} << 16) + 10;
  std::vector<int64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int64_t>(i);
  Nodes nodes(ids, std::vector<int32_t>(n, 1), 1, 0);
  cluster.owners[1]->features = [](const v1::GetNodeFeaturesRequest& req) {
    return absl::StatusOr<std::string>(FakeOwner::Answer(req, 1, v1::DTYPE_FLOAT32).SerializeAsString());
  };
  OwnerRows rows(cluster.options, 0);
  REQUIRE(rows.Finish(&nodes.batch).ok());
  CHECK(cluster.owners[1]->feature_calls() == 2);
  CHECK(nodes.x()[n - 1] == Row(static_cast<int64_t>(n - 1), 0));
  CHECK(nodes.y()[n - 1] == Label(static_cast<int64_t>(n - 1)));
}

TEST_CASE("rows answered in float16 are decoded to the batch's float32", "[owner_rows]") {
  Owners cluster(2);
  cluster.options.encoding = v1::FEATURE_ENCODING_FLOAT16;
  cluster.owners[1]->features = [](const v1::GetNodeFeaturesRequest& req) {
    return absl::StatusOr<std::string>(FakeOwner::Answer(req, 2, v1::DTYPE_FLOAT16).SerializeAsString());
  };
  Nodes nodes({3, 4}, {1, 0}, 2, 0);
  OwnerRows rows(cluster.options, 0);
  REQUIRE(rows.Finish(&nodes.batch).ok());
  CHECK(nodes.x()[0] == Row(3, 0));
  CHECK(nodes.x()[1] == Row(3, 1));
}

// A batch of kIds whose owner 1 answers `answer`; the status Finish returns.
absl::Status FinishWith(std::function<absl::StatusOr<std::string>(const v1::GetNodeFeaturesRequest&)> answer,
                        int dim = 2, bool decode = true) {
  Owners cluster(3);
  cluster.options.decode_features = decode;
  cluster.owners[1]->features = std::move(answer);
  Nodes nodes(kIds, kOwners, dim, 0);
  OwnerRows rows(cluster.options, 0);
  return rows.Finish(&nodes.batch);
}

void CheckError(const absl::Status& s, absl::StatusCode code, const std::string& text) {
  INFO(s.ToString());
  CHECK(s.code() == code);
  CHECK_THAT(std::string(s.message()), Catch::Contains(text));
}

TEST_CASE("an answer that does not fit the batch is DataLoss naming what does not fit", "[owner_rows]") {
  using Code = absl::StatusCode;
  auto with = [](std::function<void(v1::GetNodeFeaturesResponse*)> edit) {
    return [edit](const v1::GetNodeFeaturesRequest& req) {
      v1::GetNodeFeaturesResponse r = FakeOwner::Answer(req, 2, v1::DTYPE_FLOAT32);
      edit(&r);
      return absl::StatusOr<std::string>(r.SerializeAsString());
    };
  };
  CheckError(FinishWith([](const auto&) { return absl::StatusOr<std::string>(std::string("\x0a\xff\xff", 3)); }),
             Code::kDataLoss, "an owner's answer for 'paper' is malformed");
  CheckError(FinishWith(with([](auto* r) { r->mutable_features()->set_shape(0, 5); })), Code::kDataLoss,
             "an owner answered 5 rows of 'paper' for 2 nodes");
  CheckError(FinishWith(with([](auto* r) {
               v1::Tensor* f = r->mutable_features();
               f->set_shape(1, 3);
               f->set_data(std::string(2 * 3 * 4, '\0'));
             }),
                        2, /*decode=*/false),
             Code::kDataLoss, "an owner answered rows of 12 bytes for 'paper', whose batch rows have 8");
  CheckError(FinishWith(with([](auto* r) {
               v1::Tensor* f = r->mutable_features();
               f->set_dtype(v1::DTYPE_FLOAT16);
               f->set_shape(1, 3);
               f->set_data(std::string(2 * 3 * 2, '\0'));
             })),
             Code::kDataLoss, "an owner answered rows of 3 columns for 'paper'");
  CheckError(FinishWith(with([](auto* r) {
               v1::Tensor* f = r->mutable_features();
               f->set_dtype(v1::DTYPE_UINT8);
               f->set_data(std::string(2 * 2, '\0'));
             })),
             Code::kDataLoss, "an owner answered codes for 'paper' without their scales");
  CheckError(FinishWith(with([](auto* r) {
               v1::Tensor* f = r->mutable_features();
               f->set_dtype(v1::DTYPE_UINT8);
               f->set_data(std::string(2 * 2, '\0'));
               const float three[3] = {1, 1, 1};
               *r->mutable_feature_scale() = TensorOf(v1::DTYPE_FLOAT32, {3}, three, 12);
               *r->mutable_feature_offset() = TensorOf(v1::DTYPE_FLOAT32, {3}, three, 12);
             })),
             Code::kDataLoss, "an owner answered 3 column scales for 'paper', whose rows have 2 columns");
  CheckError(FinishWith(with([](auto* r) {
               const int64_t one = 1;
               *r->mutable_labels() = TensorOf(v1::DTYPE_INT64, {1}, &one, 8);
             })),
             Code::kDataLoss, "an owner answered 1 labels of 'paper' for 2 nodes");
}

TEST_CASE("a failed call names the owner's partition and keeps its code", "[owner_rows]") {
  CheckError(FinishWith([](const auto&) { return absl::StatusOr<std::string>(absl::UnavailableError("owner:1 is down")); }),
             absl::StatusCode::kUnavailable, "the rows of 'paper' nodes that partition 1 owns: owner:1 is down");
  // Labels alone, for rows the trainer caches.
  Owners cluster(2);
  FeatureCache cache;
  cache.types["paper"].slot_of.assign(10, 0);
  cluster.options.cache = &cache;
  cluster.owners[1]->labels = [](const auto&) {
    return absl::StatusOr<v1::GetNodeLabelsResponse>(absl::DeadlineExceededError("slow"));
  };
  Nodes nodes({1, 2}, {0, 1}, 2, 0);
  OwnerRows rows(cluster.options, 0);
  CheckError(rows.Finish(&nodes.batch), absl::StatusCode::kDeadlineExceeded,
             "the rows of 'paper' nodes that partition 1 owns: slow");
}

TEST_CASE("a batch that does not say whose its nodes are is refused", "[owner_rows]") {
  Owners cluster(2);
  SECTION("owners of another dtype than int32") {
    Nodes nodes({1, 2}, {0, 1}, 2, 0);
    nodes.n().owners.dtype = v1::DTYPE_INT64;
    OwnerRows rows(cluster.options, 0);
    CheckError(rows.Finish(&nodes.batch), absl::StatusCode::kDataLoss, "node type 'paper': owners do not match ids");
  }
  SECTION("an owner that is no partition") {
    Nodes nodes({1, 2}, {0, -3}, 2, 0);
    OwnerRows rows(cluster.options, 0);
    CheckError(rows.Finish(&nodes.batch), absl::StatusCode::kDataLoss, "node type 'paper': node 2 has owner -3");
  }
  SECTION("a partition this loader has no server for") {
    Nodes nodes({1, 2}, {0, 5}, 2, 0);
    OwnerRows rows(cluster.options, 0);
    CheckError(rows.Finish(&nodes.batch), absl::StatusCode::kFailedPrecondition,
               "nodes of 'paper' that partition 5 owns, and this loader has no server for it");
  }
}

TEST_CASE("a node type whose tensors changed since its rows were asked is refused", "[owner_rows]") {
  Owners cluster(2);
  Nodes asked({1, 2}, {0, 1}, 2, 0);
  Nodes other({1, 2}, {0, 1}, 2, 0);
  OwnerRows rows(cluster.options, 0);
  rows.Start(asked.n());
  CheckError(rows.Finish(&other.batch), absl::StatusCode::kFailedPrecondition,
             "node type 'paper' changed while its rows were asked");
}

TEST_CASE("a batch whose nodes are all the sender's asks no owner", "[owner_rows]") {
  Owners cluster(2);
  Nodes nodes({1, 2}, {0, 0}, 2, 0);
  OwnerRows rows(cluster.options, 0);
  REQUIRE(rows.Finish(&nodes.batch).ok());
  CHECK(rows.calls() == 0);
  CHECK(nodes.y()[1] == 7);
}

}  // namespace
}  // namespace graphstore::client
