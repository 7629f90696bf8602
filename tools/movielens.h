#ifndef GRAPHSTORE_TOOLS_MOVIELENS_H_
#define GRAPHSTORE_TOOLS_MOVIELENS_H_

// Reads the MovieLens 100k files (u.data, u.user, u.item, u.occupation) as a heterogeneous
// link-prediction graph:
//
//   user  nodes  (943)   features: age / 100, gender one-hot (2), occupation one-hot (21)
//   movie nodes  (1682)  features: 19 genre flags, (release year - 1900) / 100
//   user__rates__movie   the ratings of each user's earlier part (see below), feature rating / 5
//   movie__rev_rates__user  its reverse
//
// Each user's ratings, in time order (ties by movie id), are split into the first 80 % (train),
// the next 10 % (val) and the rest (test). The graph holds the train part; the label splits of
// user__rates__movie are the ratings >= 4 of each part. So validation and test labels lie in
// each user's future, and training labels are edges of the graph (which sampling leaves out of
// each batch's own neighbourhood).
//
// Global ids are the file ids minus one; book/<type>.raw_ids.npy keeps the file ids.
//
// With `times`, the graph is also temporal: each rating edge (both directions) keeps its Unix
// timestamp as its edge time, and a user's or a movie's node time is its first rating in
// u.data, when it enters the data (so it never moves an edge's stored time, the later of the
// two).

#include <string>

#include "absl/status/statusor.h"
#include "tools/dataset/writer.h"

namespace graphstore {

struct MovieLensOptions {
  /// Fractions of each user's ratings (in time order) for train and val; test takes the rest.
  double train = 0.8;
  double val = 0.1;
  /// Ratings >= this are positive labels.
  int min_positive_rating = 4;
  /// Store rating timestamps as edge times and each node's first rating as its node time.
  bool times = false;
};

/// Reads `dir`. NotFound / DataLoss naming the file (and line) when a file is missing or malformed.
absl::StatusOr<GraphData> ReadMovieLens(const std::string& dir, const MovieLensOptions& options = {});

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_MOVIELENS_H_
