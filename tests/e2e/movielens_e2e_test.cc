// MovieLens 100k (read from ../shared/data, never copied): the conversion, counted again from
// the raw files; link-prediction batches through real servers and the Loader (anchors first,
// labels right, negatives never true positives, no label edge in message passing; degree
// negatives drawn on a cluster as one partition holding every movie draws them); and ABLP, PPR
// and SUBGRAPH sampling giving the same answer on one server and on a 2-partition cluster.

#include "client/loader.h"  // LibTorch first (see loader.h)

#undef CHECK
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/graph/partition.h"
#include "server/sampling/ablp.h"
#include "server/server.h"
#include "tests/test_util.h"
#include "tools/movielens.h"

namespace graphstore {
namespace {

using testing::TempDir;

std::string MlDir() { return testing::SharedDataPath("ml-100k"); }

const GraphData& Ml() {
  static GraphData* g = [] {
    auto r = ReadMovieLens(MlDir());
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    return new GraphData(*std::move(r));
  }();
  return *g;
}

// The dataset written as 1 and as 2 partitions (random), once per binary.
std::string Written(int parts) {
  static TempDir* dir = new TempDir();
  static std::map<int, std::string> made;
  auto it = made.find(parts);
  if (it != made.end()) return it->second;
  WriteOptions o;
  o.num_partitions = parts;
  const std::string path = absl::StrCat(dir->path(), "/ml", parts);
  REQUIRE(WritePartitions(Ml(), RandomAssignment(Ml(), parts, 1), o, path).ok());
  return made.emplace(parts, path).first->second;
}

// Link prediction over the users' training ratings.
v1::GetAblpInputRequest TrainAnchors() {
  v1::GetAblpInputRequest ablp;
  ablp.set_split("train");
  ablp.set_node_type("user");
  ablp.set_supervision_edge_type("user__rates__movie");
  return ablp;
}

struct Servers {
  std::vector<std::unique_ptr<GraphStoreServer>> servers;
  std::vector<std::string> addresses;
  explicit Servers(int parts, int64_t whole_degree_index_bytes = CoreOptions().whole_degree_index_bytes) {
    std::vector<ServerOptions> options(parts);
    for (int k = 0; k < parts; ++k) {
      options[k].partition_dir = PartitionDir(Written(parts), parts, k);
      options[k].shared_memory_dir = "";
      options[k].core.state_log_interval_s = 0;
      options[k].core.whole_degree_index_bytes = whole_degree_index_bytes;
    }
    auto started = StartLocalCluster(options);
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    servers = *std::move(started);
    for (const auto& s : servers) addresses.push_back(s->address());
  }
};

TEST_CASE("ml-100k converts to users, movies, ratings and time-ordered label splits", "[movielens]") {
  // Counted again from u.data: per user, ratings in (time, movie) order.
  std::ifstream in(MlDir() + "/u.data");
  REQUIRE(in);
  std::map<int64_t, std::vector<std::tuple<int64_t, int64_t, int64_t>>> by_user;  // (time, movie, rating)
  int64_t u, m, r, t;
  int64_t lines = 0;
  while (in >> u >> m >> r >> t) {
    by_user[u - 1].emplace_back(t, m - 1, r);
    ++lines;
  }
  REQUIRE(lines == 100000);
  int64_t graph_edges = 0, positives = 0;
  std::map<std::string, std::set<std::pair<int64_t, int64_t>>> expected;
  for (auto& [user, list] : by_user) {
    std::sort(list.begin(), list.end());
    const size_t n = list.size();
    const size_t n_train = n * 8 / 10, n_val = n / 10;
    graph_edges += static_cast<int64_t>(n_train);
    for (size_t k = 0; k < n; ++k) {
      const auto [time, movie, rating] = list[k];
      if (rating < 4) continue;
      ++positives;
      expected[k < n_train ? "train" : k < n_train + n_val ? "val" : "test"].emplace(user, movie);
    }
  }

  const GraphData& g = Ml();
  REQUIRE(g.node_types.size() == 2);
  CHECK(g.node_types[0].name == "user");
  CHECK(g.node_types[0].num_nodes == 943);
  CHECK(g.node_types[0].feature_dim == 24);
  CHECK(g.node_types[1].name == "movie");
  CHECK(g.node_types[1].num_nodes == 1682);
  CHECK(g.node_types[1].feature_dim == 20);
  REQUIRE(g.edge_types.size() == 2);
  const EdgeTypeData& rates = g.edge_types[0];
  const EdgeTypeData& rev = g.edge_types[1];
  CHECK(rates.relation == "rates");
  CHECK(rev.relation == "rev_rates");
  CHECK(rev.src_type == "movie");
  CHECK(static_cast<int64_t>(rates.src.size()) == graph_edges);
  CHECK(rev.src == rates.dst);
  int64_t labels = 0;
  for (const auto& [split, l] : rates.label_splits) {
    labels += static_cast<int64_t>(l.src.size());
    std::set<std::pair<int64_t, int64_t>> got;
    for (size_t k = 0; k < l.src.size(); ++k) got.emplace(l.src[k], l.dst[k]);
    CHECK(got == expected[split]);
  }
  CHECK(labels == positives);
  CHECK(rates.label_splits.size() == 3);
  // Genres of Toy Story (movie 1): Animation, Children's, Comedy.
  const float* toy = &g.node_types[1].features[0];
  CHECK(toy[3] == 1.0f);
  CHECK(toy[4] == 1.0f);
  CHECK(toy[5] == 1.0f);
  CHECK(toy[1] == 0.0f);

  // A missing directory names the file.
  auto missing = ReadMovieLens("/nonexistent/ml-100k");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("/nonexistent/ml-100k/u.occupation") != std::string::npos);
}

std::vector<int64_t> Ints(const at::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST_CASE("link-prediction batches on a 2-server cluster: labels, negatives, no leakage, every anchor once",
          "[movielens][ablp]") {
  Servers cluster(2);
  // Every positive of every user in any split, and each split's train positives.
  std::set<std::pair<int64_t, int64_t>> known, train;
  for (const auto& [split, l] : Ml().edge_types[0].label_splits) {
    for (size_t k = 0; k < l.src.size(); ++k) {
      known.emplace(l.src[k], l.dst[k]);
      if (split == "train") train.emplace(l.src[k], l.dst[k]);
    }
  }
  client::LoaderOptions o;
  o.servers = cluster.addresses;
  o.config.set_batch_size(32);
  o.config.set_shuffle(true);
  (*o.config.mutable_num_neighbors_by_type())["user__rates__movie"].add_per_hop(8);
  (*o.config.mutable_num_neighbors_by_type())["user__rates__movie"].add_per_hop(4);
  (*o.config.mutable_num_neighbors_by_type())["movie__rev_rates__user"].add_per_hop(8);
  (*o.config.mutable_num_neighbors_by_type())["movie__rev_rates__user"].add_per_hop(4);
  o.config.set_with_node_features(true);
  o.config.set_num_negatives(4);
  o.config.set_negative_sampling(v1::NEGATIVE_SAMPLING_UNIFORM);
  o.ablp = TrainAnchors();
  client::Loader loader(o);
  CHECK(loader.num_seeds() == 942);
  loader.StartEpoch(0);
  std::multiset<int64_t> anchors_seen;
  int64_t checked_edges = 0;
  while (auto b = loader.Next()) {
    REQUIRE(b->ablp.has_value());
    const auto users = Ints(b->nodes.at("user").n_id);
    const auto movies = Ints(b->nodes.at("movie").n_id);
    const auto anchors = Ints(b->ablp->anchors);
    const int64_t a = static_cast<int64_t>(anchors.size());
    // Anchors come first, in batch order.
    for (int64_t i = 0; i < a; ++i) CHECK(anchors[i] == i);
    CHECK(Ints(b->nodes.at("user").seeds) == std::vector<int64_t>(users.begin(), users.begin() + a));
    std::set<std::pair<int64_t, int64_t>> label_edges;
    const auto pos = Ints(b->ablp->positive);
    const auto neg = Ints(b->ablp->negative);
    const int64_t pw = b->ablp->positive.size(1), nw = b->ablp->negative.size(1);
    for (int64_t i = 0; i < a; ++i) {
      const int64_t user = users[i];
      anchors_seen.insert(user);
      std::set<int64_t> want, got;
      for (const auto& [uu, mm] : train) {
        if (uu == user) want.insert(mm);
      }
      for (int64_t k = 0; k < pw; ++k) {
        if (pos[i * pw + k] < 0) continue;
        got.insert(movies[pos[i * pw + k]]);
        label_edges.emplace(user, movies[pos[i * pw + k]]);
      }
      CHECK(got == want);
      int negatives = 0;
      for (int64_t k = 0; k < nw; ++k) {
        if (neg[i * nw + k] < 0) continue;
        ++negatives;
        CHECK(known.count({user, movies[neg[i * nw + k]]}) == 0);
      }
      CHECK(negatives == 4);
    }
    // Message passing, both directions, never carries a label edge of the batch.
    for (const auto& [key, view] : b->edges) {
      const bool user_to_movie = key == "user__rates__movie";
      const auto src = Ints(view.edge_index[0]);
      const auto dst = Ints(view.edge_index[1]);
      for (size_t k = 0; k < src.size(); ++k) {
        const int64_t user = user_to_movie ? users[src[k]] : users[dst[k]];
        const int64_t movie = user_to_movie ? movies[dst[k]] : movies[src[k]];
        CHECK(label_edges.count({user, movie}) == 0);
        ++checked_edges;
      }
    }
  }
  CHECK(checked_edges > 10000);
  CHECK(anchors_seen.size() == 942);
  CHECK(std::set<int64_t>(anchors_seen.begin(), anchors_seen.end()).size() == 942);
}

TEST_CASE("degree negatives on a 2-server cluster are those of the whole graph, with the degree sums kept whole "
          "or each server keeping its half of the movies'", "[movielens][ablp][cluster]") {
  // What one partition holding every movie draws for the same anchors, seed, epoch and batch.
  auto whole = Partition::Load(PartitionDir(Written(1), 1, 0));
  REQUIRE(whole.ok());
  AblpRequest req;
  req.split = "train";
  req.node_type = "user";
  req.supervision_edge_type = "user__rates__movie";
  auto input = LoadAblpInput(**whole, req);
  REQUIRE(input.ok());
  NegativeOptions negatives;
  negatives.kind = NegativeOptions::Kind::kDegree;
  negatives.num = 6;
  auto labeler = AblpLabeler::Create(whole->get(), *std::move(input), negatives);
  REQUIRE(labeler.ok());
  const int64_t all = (*whole)->edge_type(*(*whole)->FindEdgeType("user__rates__movie")).dst_degree_index->bytes();
  REQUIRE(all >= 1682);  // a byte or two a movie

  for (const bool by_range : {true, false}) {
    INFO((by_range ? "each server its range" : "the sums kept whole"));
    Servers cluster(2, by_range ? 0 : CoreOptions().whole_degree_index_bytes);
    client::LoaderOptions o;
    o.servers = cluster.addresses;
    o.config.set_batch_size(16);
    (*o.config.mutable_num_neighbors_by_type())["user__rates__movie"].add_per_hop(2);
    (*o.config.mutable_num_neighbors_by_type())["movie__rev_rates__user"].add_per_hop(2);
    o.config.set_num_negatives(6);
    o.config.set_negative_sampling(v1::NEGATIVE_SAMPLING_DEGREE);
    o.seed = 17;
    o.shared_memory = false;
    o.ablp = TrainAnchors();
    client::Loader loader(o);
    loader.StartEpoch(0);
    int64_t anchors = 0;
    std::map<int64_t, int64_t> drawn;  // movie -> times drawn
    while (auto b = loader.Next()) {
      REQUIRE(b->ablp.has_value());
      const auto users = Ints(b->nodes.at("user").n_id), movies = Ints(b->nodes.at("movie").n_id);
      const auto neg = Ints(b->ablp->negative);
      const int64_t a = b->ablp->anchors.numel(), w = b->ablp->negative.size(1);
      const std::vector<int64_t> batch(users.begin(), users.begin() + a);
      AblpBatch want;
      REQUIRE((*labeler)->MakeBatch(batch.data(), batch.size(), o.seed, 0, b->batch_index, &want).ok());
      for (int64_t i = 0; i < a; ++i) {
        std::vector<int64_t> got;
        for (int64_t k = 0; k < w; ++k) {
          if (neg[i * w + k] >= 0) got.push_back(movies[neg[i * w + k]]);
        }
        INFO("user " << batch[i] << " of batch " << b->batch_index);
        CHECK(got == std::vector<int64_t>(want.negatives.begin() + want.neg_offsets[i],
                                          want.negatives.begin() + want.neg_offsets[i + 1]));
        for (int64_t m : got) ++drawn[m];
      }
      anchors += a;
    }
    CHECK(anchors == 942);
    // Drawn by degree: the most rated movie (Star Wars, 583 of 100,000 ratings) comes far more
    // often than a uniform draw over 1682 movies gives it (942 * 6 / 1682, about 3 times).
    int64_t most = 0;
    for (const auto& [movie, times] : drawn) most = std::max(most, times);
    CHECK(most > 20);
    // By range each server keeps the degree sums of its half of the movies' ids, not all of
    // them; kept whole, each keeps them all.
    int64_t kept = 0;
    for (const auto& address : cluster.addresses) {
      client::ClientOptions co;
      co.address = address;
      auto c = client::Client::Connect(co);
      REQUIRE(c.ok());
      auto stats = (*c)->GetServerStats();
      REQUIRE(stats.ok());
      if (by_range) {
        CHECK(stats->sampling_index_bytes() > 800);
        CHECK(stats->sampling_index_bytes() < all * 2 / 3);
      } else {
        CHECK(stats->sampling_index_bytes() == all);
      }
      kept += stats->sampling_index_bytes();
    }
    if (by_range) CHECK(kept <= all + 2 * 64);
  }
}

// A batch of one seed as comparable text: its labels, edges (global ids, edge ids, features) and
// PPR weights, sorted.
std::pair<int64_t, std::string> Canonical(const client::Batch& b) {
  const auto users = Ints(b.nodes.at("user").n_id);
  const auto movies = Ints(b.nodes.at("movie").n_id);
  auto gid = [&](const std::string& type, int64_t local) { return type == "user" ? users[local] : movies[local]; };
  std::vector<std::string> lines;
  for (const auto& [key, view] : b.edges) {
    const std::string src_type = key.substr(0, key.find("__"));
    const std::string dst_type = key.substr(key.rfind("__") + 2);
    const auto src = Ints(view.edge_index[0]);
    const auto dst = Ints(view.edge_index[1]);
    const auto eids = view.e_id.defined() ? Ints(view.e_id) : std::vector<int64_t>(src.size(), -1);
    for (size_t k = 0; k < src.size(); ++k) {
      const float f = view.edge_attr.defined() ? view.edge_attr[k][0].item<float>() : 0.0f;
      lines.push_back(absl::StrCat(key, " ", gid(src_type, src[k]), " ", gid(dst_type, dst[k]), " ", eids[k], " ", f));
    }
  }
  if (b.ablp.has_value()) {
    for (const auto* m : {&b.ablp->positive, &b.ablp->negative}) {
      for (int64_t l : Ints(*m)) lines.push_back(absl::StrCat("label ", l < 0 ? -1 : movies[l]));
    }
  }
  for (const auto& p : b.ppr) {
    const auto s = Ints(p.seed_index), n = Ints(p.node_index);
    for (size_t k = 0; k < s.size(); ++k) {
      lines.push_back(absl::StrCat("ppr ", gid(p.seed_type, s[k]), " ", p.node_type, " ", gid(p.node_type, n[k]), " ",
                                   p.weight[k].item<float>()));
    }
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) absl::StrAppend(&out, l, "\n");
  // Every batch here has one user seed (or anchor), the first user node.
  return {Ints(b.nodes.at("user").seeds).at(0), out};
}

// Per seed, what a setup of `parts` servers samples for it (batches of one seed).
std::map<int64_t, std::string> PerSeed(int parts, const v1::SamplingConfig& config, bool ablp, int world_size) {
  Servers s(parts);
  client::LoaderOptions o;
  o.servers = s.addresses;
  o.config = config;
  o.config.set_batch_size(1);
  o.shared_memory = false;
  if (ablp) {
    o.ablp = TrainAnchors();
    o.world_size = world_size;
  } else {
    o.node_type = "user";
    for (int64_t u = 0; u < 24; ++u) o.seeds.push_back(u * 37);
  }
  client::Loader loader(o);
  loader.StartEpoch(0);
  std::map<int64_t, std::string> out;
  while (auto b = loader.Next()) out.insert(Canonical(*b));
  return out;
}

// The seeds both setups sampled, and whether each gave the same text.
void ExpectSame(const std::map<int64_t, std::string>& one, const std::map<int64_t, std::string>& two, size_t least) {
  size_t common = 0;
  for (const auto& [seed, text] : one) {
    auto it = two.find(seed);
    if (it == two.end()) continue;
    ++common;
    INFO("seed " << seed);
    CHECK(it->second == text);
  }
  CHECK(common >= least);
}

TEST_CASE("ABLP, PPR and SUBGRAPH sampling answer the same on one server and on two", "[movielens][cluster]") {
  SECTION("ABLP with label edges left out on whichever server draws them") {
    v1::SamplingConfig c;
    (*c.mutable_num_neighbors_by_type())["user__rates__movie"].add_per_hop(-1);
    (*c.mutable_num_neighbors_by_type())["movie__rev_rates__user"].add_per_hop(-1);
    c.set_with_edge_ids(true);
    c.set_with_edge_features(true);
    // The first of 10 slices on one server overlaps the first of 5 on each of two.
    ExpectSame(PerSeed(1, c, true, 10), PerSeed(2, c, true, 5), 20);
  }
  SECTION("PPR") {
    v1::SamplingConfig c;
    c.set_kind(v1::SAMPLER_KIND_PPR);
    c.mutable_ppr()->set_alpha(0.25);
    c.mutable_ppr()->set_eps(1e-4);
    c.mutable_ppr()->set_max_nodes_per_seed(16);
    const auto one = PerSeed(1, c, false, 0);
    CHECK(one.size() == 24);
    CHECK(one.begin()->second.find("ppr ") != std::string::npos);
    ExpectSame(one, PerSeed(2, c, false, 0), 24);
  }
  SECTION("SUBGRAPH with edge features") {
    v1::SamplingConfig c;
    c.set_kind(v1::SAMPLER_KIND_SUBGRAPH);
    c.add_num_neighbors(-1);
    c.set_with_edge_ids(true);
    c.set_with_edge_features(true);
    const auto one = PerSeed(1, c, false, 0);
    // Induced: the user's movies, and both directions of every rating between them.
    CHECK(one.begin()->second.find("movie__rev_rates__user") != std::string::npos);
    ExpectSame(one, PerSeed(2, c, false, 0), 24);
  }
}

}  // namespace
}  // namespace graphstore
