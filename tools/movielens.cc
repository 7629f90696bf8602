#include "tools/movielens.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/validate.h"

namespace graphstore {
namespace {

constexpr int kGenres = 19;

absl::Status Bad(const std::string& file, int line, const std::string& what) {
  return absl::DataLossError(absl::StrCat(file, ":", line, ": ", what));
}

// Reads every non-empty line of `file` split on `sep`, each with at least `min_fields` fields.
absl::StatusOr<std::vector<std::vector<std::string>>> ReadRows(const std::string& file, char sep, size_t min_fields) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(file, ": cannot open (is this the ml-100k directory?)"));
  std::vector<std::vector<std::string>> rows;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> fields = absl::StrSplit(line, sep);
    if (fields.size() < min_fields) {
      return Bad(file, number, absl::StrCat("expected ", min_fields, " fields separated by '", std::string(1, sep),
                                            "', found ", fields.size()));
    }
    rows.push_back(std::move(fields));
  }
  if (rows.empty()) return absl::DataLossError(absl::StrCat(file, ": file is empty"));
  return rows;
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

// A 1-based id column of `file` line `line`, checked against [1, n].
absl::StatusOr<int64_t> Id(const std::string& file, int line, const std::string& field, int64_t n,
                           const std::string& what) {
  int64_t v;
  if (!ParseInt(field, &v) || v < 1 || v > n) {
    return Bad(file, line, absl::StrCat(what, " '", field, "' is not in [1, ", n, "]"));
  }
  return v;
}

// Users (u.user): age / 100, gender one-hot, occupation one-hot over u.occupation's list.
absl::StatusOr<NodeTypeData> ReadUsers(const std::string& dir) {
  const std::string occupation_file = dir + "/u.occupation";
  const std::string user_file = dir + "/u.user";
  auto occupations = ReadRows(occupation_file, '|', 1);
  if (!occupations.ok()) return occupations.status();
  std::map<std::string, int> occupation_index;
  for (const auto& r : *occupations) occupation_index.emplace(r[0], static_cast<int>(occupation_index.size()));
  auto users = ReadRows(user_file, '|', 5);
  if (!users.ok()) return users.status();
  NodeTypeData user;
  user.name = "user";
  user.num_nodes = static_cast<int64_t>(users->size());
  user.feature_dim = 3 + static_cast<int64_t>(occupation_index.size());
  user.features.assign(user.num_nodes * user.feature_dim, 0.0f);
  user.raw_ids.resize(user.num_nodes);
  for (size_t i = 0; i < users->size(); ++i) {
    const auto& r = (*users)[i];
    const int line = static_cast<int>(i) + 1;
    auto id = Id(user_file, line, r[0], user.num_nodes, "user id");
    if (!id.ok()) return id.status();
    int64_t age;
    if (!ParseInt(r[1], &age)) return Bad(user_file, line, absl::StrCat("age '", r[1], "' is not a number"));
    if (r[2] != "M" && r[2] != "F") return Bad(user_file, line, absl::StrCat("gender '", r[2], "' is not M or F"));
    auto occ = occupation_index.find(r[3]);
    if (occ == occupation_index.end()) {
      return Bad(user_file, line, absl::StrCat("occupation '", r[3], "' is not listed in ", occupation_file));
    }
    float* f = &user.features[(*id - 1) * user.feature_dim];
    f[0] = static_cast<float>(age) / 100.0f;
    f[r[2] == "M" ? 1 : 2] = 1.0f;
    f[3 + occ->second] = 1.0f;
    user.raw_ids[*id - 1] = *id;
  }
  return user;
}

// Movies (u.item): 19 genre flags and (release year - 1900) / 100.
absl::StatusOr<NodeTypeData> ReadMovies(const std::string& dir) {
  const std::string item_file = dir + "/u.item";
  auto items = ReadRows(item_file, '|', 5 + kGenres);
  if (!items.ok()) return items.status();
  NodeTypeData movie;
  movie.name = "movie";
  movie.num_nodes = static_cast<int64_t>(items->size());
  movie.feature_dim = kGenres + 1;
  movie.features.assign(movie.num_nodes * movie.feature_dim, 0.0f);
  movie.raw_ids.resize(movie.num_nodes);
  for (size_t i = 0; i < items->size(); ++i) {
    const auto& r = (*items)[i];
    const int line = static_cast<int>(i) + 1;
    auto id = Id(item_file, line, r[0], movie.num_nodes, "movie id");
    if (!id.ok()) return id.status();
    float* f = &movie.features[(*id - 1) * movie.feature_dim];
    // The genre flags are the last 19 fields (titles never contain '|').
    const size_t first = r.size() - kGenres;
    for (int k = 0; k < kGenres; ++k) {
      const std::string& flag = r[first + k];
      if (flag != "0" && flag != "1") {
        return Bad(item_file, line, absl::StrCat("genre flag ", k, " is '", flag, "', not 0 or 1"));
      }
      f[k] = flag == "1" ? 1.0f : 0.0f;
    }
    // Release date "01-Jan-1995"; some are missing.
    int64_t year;
    if (r[2].size() >= 4 && ParseInt(r[2].substr(r[2].size() - 4), &year)) {
      f[kGenres] = static_cast<float>(year - 1900) / 100.0f;
    }
    movie.raw_ids[*id - 1] = *id;
  }
  return movie;
}

struct Rating {
  int64_t user, time, movie, rating;
};

// Ratings (u.data) with 0-based ids, ordered by (user, time, movie).
absl::StatusOr<std::vector<Rating>> ReadRatings(const std::string& dir, int64_t num_users, int64_t num_movies) {
  const std::string data_file = dir + "/u.data";
  auto ratings = ReadRows(data_file, '\t', 4);
  if (!ratings.ok()) return ratings.status();
  std::vector<Rating> all;
  all.reserve(ratings->size());
  for (size_t i = 0; i < ratings->size(); ++i) {
    const auto& r = (*ratings)[i];
    const int line = static_cast<int>(i) + 1;
    auto u = Id(data_file, line, r[0], num_users, "user id");
    if (!u.ok()) return u.status();
    auto m = Id(data_file, line, r[1], num_movies, "movie id");
    if (!m.ok()) return m.status();
    int64_t rating, time;
    if (!ParseInt(r[2], &rating) || rating < 1 || rating > 5) {
      return Bad(data_file, line, absl::StrCat("rating '", r[2], "' is not in [1, 5]"));
    }
    if (!ParseInt(r[3], &time)) return Bad(data_file, line, absl::StrCat("timestamp '", r[3], "' is not a number"));
    all.push_back({*u - 1, time, *m - 1, rating});
  }
  std::sort(all.begin(), all.end(), [](const Rating& a, const Rating& b) {
    return std::tie(a.user, a.time, a.movie) < std::tie(b.user, b.time, b.movie);
  });
  return all;
}

// user__rates__movie: each user's ratings in time order split train / val / test; the train
// part are the graph's edges (feature rating / 5), and the good ratings of each part are its
// label split.
EdgeTypeData RatesEdges(const std::vector<Rating>& all, const MovieLensOptions& options) {
  EdgeTypeData rates;
  rates.src_type = "user";
  rates.relation = "rates";
  rates.dst_type = "movie";
  rates.feature_dim = 1;
  LabelEdges& train = rates.label_splits["train"];
  LabelEdges& val = rates.label_splits["val"];
  LabelEdges& test = rates.label_splits["test"];
  for (size_t begin = 0; begin < all.size();) {
    size_t end = begin;
    while (end < all.size() && all[end].user == all[begin].user) ++end;
    const size_t n = end - begin;
    const size_t n_train = static_cast<size_t>(static_cast<double>(n) * options.train);
    const size_t n_val = static_cast<size_t>(static_cast<double>(n) * options.val);
    for (size_t k = 0; k < n; ++k) {
      const Rating& r = all[begin + k];
      LabelEdges* labels = k < n_train ? &train : k < n_train + n_val ? &val : &test;
      if (k < n_train) {
        rates.src.push_back(r.user);
        rates.dst.push_back(r.movie);
        rates.features.push_back(static_cast<float>(r.rating) / 5.0f);
        if (options.times) rates.times.push_back(r.time);
      }
      if (r.rating >= options.min_positive_rating) {
        labels->src.push_back(r.user);
        labels->dst.push_back(r.movie);
      }
    }
    begin = end;
  }
  return rates;
}

}  // namespace

absl::StatusOr<GraphData> ReadMovieLens(const std::string& dir, const MovieLensOptions& options) {
  auto user = ReadUsers(dir);
  if (!user.ok()) return user.status();
  auto movie = ReadMovies(dir);
  if (!movie.ok()) return movie.status();
  auto ratings = ReadRatings(dir, user->num_nodes, movie->num_nodes);
  if (!ratings.ok()) return ratings.status();
  if (options.times) {
    // Each node enters the data at its first rating (every user and movie of ml-100k has one; a
    // node without any would take the earliest rating's time).
    int64_t earliest = INT64_MAX;
    user->times.assign(static_cast<size_t>(user->num_nodes), INT64_MAX);
    movie->times.assign(static_cast<size_t>(movie->num_nodes), INT64_MAX);
    for (const Rating& r : *ratings) {
      earliest = std::min(earliest, r.time);
      user->times[r.user] = std::min(user->times[r.user], r.time);
      movie->times[r.movie] = std::min(movie->times[r.movie], r.time);
    }
    for (auto* t : {&user->times, &movie->times}) {
      for (int64_t& v : *t) v = v == INT64_MAX ? earliest : v;
    }
  }
  GraphData g;
  g.name = "ml-100k";
  g.node_types.push_back(*std::move(user));
  g.node_types.push_back(*std::move(movie));
  g.edge_types.push_back(RatesEdges(*ratings, options));
  AddReverseEdgeTypes(&g);
  if (auto s = ValidateGraph(g); !s.ok()) return s;
  return g;
}

}  // namespace graphstore
