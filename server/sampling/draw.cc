#include "server/sampling/draw.h"

#include <algorithm>
#include <cmath>

namespace graphstore {

int64_t DrawWeightedPositions(uint64_t key, const float* weights, int64_t n, int fanout, bool replace,
                              std::vector<int64_t>* out, std::vector<double>* keys) {
  out->clear();
  auto usable = [&](int64_t k) { return weights[k] > 0 && std::isfinite(weights[k]); };
  if (fanout < 0 || (!replace && fanout >= n)) {
    for (int64_t k = 0; k < n; ++k) {
      if (usable(k)) out->push_back(k);
    }
    if (fanout < 0 || static_cast<int64_t>(out->size()) <= fanout) return static_cast<int64_t>(out->size());
    out->clear();
  }
  if (fanout == 0) return 0;
  DrawStream draws(key);
  if (replace) {
    // Cumulative weights of the usable candidates; each draw finds its interval.
    keys->clear();
    double total = 0;
    for (int64_t k = 0; k < n; ++k) {
      total += usable(k) ? static_cast<double>(weights[k]) : 0.0;
      keys->push_back(total);
    }
    if (!(total > 0)) return 0;
    for (int d = 0; d < fanout; ++d) {
      const double x = draws.Uniform() * total;
      int64_t k = std::upper_bound(keys->begin(), keys->end(), x) - keys->begin();
      k = std::min(k, n - 1);
      while (!usable(k)) --k;  // x landed on the end of a run of zero weights: its owner is before
      out->push_back(k);
    }
    return fanout;
  }
  // Exponential keys: candidate k gets E_k / w_k with E_k ~ Exp(1); the fanout smallest keys
  // are a successive weighted sample without replacement (Efraimidis and Spirakis).
  keys->clear();
  for (int64_t k = 0; k < n; ++k) {
    const double u = draws.Uniform();  // one per candidate, usable or not: keys stay aligned
    if (usable(k)) {
      keys->push_back(-std::log1p(-u) / static_cast<double>(weights[k]));
      out->push_back(k);
    }
  }
  const auto m = static_cast<int64_t>(out->size());
  if (m > fanout) {
    std::vector<int64_t> order(static_cast<size_t>(m));
    for (int64_t j = 0; j < m; ++j) order[j] = j;
    std::nth_element(order.begin(), order.begin() + fanout, order.end(), [&](int64_t a, int64_t b) {
      return (*keys)[a] != (*keys)[b] ? (*keys)[a] < (*keys)[b] : a < b;
    });
    order.resize(static_cast<size_t>(fanout));
    std::sort(order.begin(), order.end());
    for (int64_t j = 0; j < fanout; ++j) order[j] = (*out)[order[j]];
    out->assign(order.begin(), order.end());
  }
  return static_cast<int64_t>(out->size());
}

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
