#include "server/sampling/draw.h"

namespace graphstore {

int64_t DrawNeighborPositions(uint64_t key, int64_t degree, int fanout, bool replace, int64_t* out) {
  if (degree <= 0 || fanout == 0) return 0;
  if (fanout < 0 || (!replace && fanout >= degree)) {
    for (int64_t i = 0; i < degree; ++i) out[i] = i;
    return degree;
  }
  DrawStream rng(key);
  if (replace) {
    for (int i = 0; i < fanout; ++i) out[i] = static_cast<int64_t>(rng.Below(degree));
    return fanout;
  }
  const int64_t k = fanout;
  if (k <= 32) {
    // Floyd's algorithm: k draws, each checked against the few already chosen.
    int64_t n = 0;
    for (int64_t j = degree - k; j < degree; ++j) {
      const int64_t t = static_cast<int64_t>(rng.Below(j + 1));
      bool seen = false;
      for (int64_t i = 0; i < n; ++i) seen |= out[i] == t;
      out[n++] = seen ? j : t;
    }
    return n;
  }
  // Selection sampling (Knuth's algorithm S): one pass, already ascending.
  int64_t chosen = 0;
  for (int64_t i = 0; i < degree && chosen < k; ++i) {
    if (static_cast<double>(degree - i) * rng.Uniform() < static_cast<double>(k - chosen)) {
      out[chosen++] = i;
    }
  }
  return chosen;
}

}  // namespace graphstore
