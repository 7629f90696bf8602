// Weighted neighbour sampling: frequencies follow the weights (with replacement) and the exact
// inclusion probabilities of successive sampling (without); zero-weight edges are never drawn;
// exact answers on a hand-built graph; the sampler refuses types without weights; a partition
// with bad weights is refused naming weights.npy.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>
#include <vector>

#include "tools/dataset/writer.h"
#include "server/graph/npy.h"
#include "server/graph/partition.h"
#include "server/sampling/draw.h"
#include "server/sampling/medium_rows.h"
#include "server/sampling/short_rows.h"
#include "server/sampling/neighbor_draw.h"
#include "server/sampling/neighbor_sampler.h"
#include "tests/fixtures.h"
#include "tests/sampling/sampling_fixtures.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::TempDir;

// Probability that candidate i is among the first k of a successive weighted sample without
// replacement (each pick proportional to weight among those left), by enumeration.
double InclusionProbability(const std::vector<double>& w, int k, int i) {
  std::vector<bool> taken(w.size(), false);
  // Sum over the ordered sequences of picks of their probabilities; count those including i.
  std::function<double(int, double)> walk = [&](int left, double prob) -> double {
    if (left == 0) return taken[i] ? prob : 0.0;
    double rest = 0;
    for (size_t j = 0; j < w.size(); ++j) rest += taken[j] ? 0 : w[j];
    if (rest <= 0) return taken[i] ? prob : 0.0;
    double sum = 0;
    for (size_t j = 0; j < w.size(); ++j) {
      if (taken[j] || w[j] <= 0) continue;
      taken[j] = true;
      sum += walk(left - 1, prob * w[j] / rest);
      taken[j] = false;
    }
    return sum;
  };
  return walk(k, 1.0);
}

// Draws `fanout` of `weights` without replacement `trials` times and checks each candidate's
// count against its exact inclusion probability (within 5 sigma); returns the counts.
std::vector<int> CheckInclusion(const std::vector<float>& weights, int fanout, int trials, uint64_t key) {
  const std::vector<double> wd(weights.begin(), weights.end());
  const auto n = static_cast<int64_t>(weights.size());
  std::vector<int> count(weights.size(), 0);
  std::vector<int64_t> out;
  std::vector<double> keys;
  for (int t = 0; t < trials; ++t) {
    REQUIRE(DrawWeightedPositions(HashCombine(key, t), weights.data(), n, fanout, false, &out, &keys) == fanout);
    REQUIRE(std::is_sorted(out.begin(), out.end()));
    REQUIRE(std::set<int64_t>(out.begin(), out.end()).size() == static_cast<size_t>(fanout));
    for (int64_t k : out) ++count[k];
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    const double p = InclusionProbability(wd, fanout, static_cast<int>(i));
    const double sigma = std::sqrt(trials * p * (1 - p));
    INFO("candidate " << i << " weight " << weights[i] << " expected " << p * trials << " got " << count[i]);
    CHECK(std::abs(count[i] - p * trials) <= 5 * sigma + 1);
  }
  return count;
}

TEST_CASE("weighted draws without replacement match the exact inclusion probabilities", "[weighted][statistics]") {
  const std::vector<int> count = CheckInclusion({1, 2, 3, 4, 0, 6, 0.5f}, 3, 40000, 99);
  CHECK(count[4] == 0);  // zero weight: never
}

TEST_CASE("rows of many vectors of candidates match the exact inclusion probabilities", "[weighted][statistics]") {
  // 37 candidates: ten vectors of four, the last part-filled, some of weight 0.
  std::vector<float> weights(37);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = i % 7 == 3 ? 0.0f : 1.0f + static_cast<float>((i * 13) % 11);
  const std::vector<int> count = CheckInclusion(weights, 3, 30000, 7);
  CHECK(count[3] == 0);
}

// A row of weights `w` at CSR position `offset` of an edge type whose other positions (other
// rows') weigh 1e6 each, with the type's block sums as WeightIndex builds them: block draws of
// the row must never reach past its ends.
struct BlockRow {
  BlockRow(const std::vector<float>& w, int64_t offset) : offset(offset), n(static_cast<int64_t>(w.size())) {
    all.assign(static_cast<size_t>(offset), 1e6f);
    all.insert(all.end(), w.begin(), w.end());
    all.insert(all.end(), 21, 1e6f);
    const auto& b = index.GetBlocks(static_cast<int64_t>(all.size()), all.data());
    blocks.assign(b.begin(), b.end());
  }
  int64_t Draw(uint64_t key, int fanout, bool replace, std::vector<int64_t>* out) const {
    WeightedScratch scratch;
    return DrawWeightedFromBlocks(key, all.data(), blocks.data(), offset, n, fanout, replace, out, &scratch);
  }
  WeightIndex index;
  std::vector<float> all;
  std::vector<double> blocks;
  int64_t offset, n;
};

TEST_CASE("weights of every magnitude still give distinct positive-weight picks", "[weighted]") {
  // Weights 30 orders of magnitude apart leave rounding in the running sums; a pick must still
  // be a candidate not taken, of positive weight, for rows up to 64 and past it (by a scan, and
  // from block sums).
  for (int64_t n : {5, 33, 64, 65, 150}) {
    std::vector<float> weights(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) weights[i] = i % 5 == 0 ? 1e30f : (i % 5 == 1 ? 0.0f : 1e-30f);
    const int64_t positive = n - (n + 3) / 5;
    const BlockRow row(weights, 3);
    for (int fanout : {1, 7, static_cast<int>(positive) - 1}) {
      std::vector<int64_t> out;
      std::vector<double> keys;
      for (int t = 0; t < 200; ++t) {
        for (bool blocks : {false, true}) {
          if (blocks && n <= kWeightBlockMinDegree) continue;
          const int64_t got = blocks ? row.Draw(HashCombine(n, t), fanout, false, &out)
                                     : DrawWeightedPositions(HashCombine(n, t), weights.data(), n, fanout, false,
                                                             &out, &keys);
          INFO("n " << n << " fanout " << fanout << " trial " << t << " blocks " << blocks);
          REQUIRE(got == std::min<int64_t>(fanout, positive));
          REQUIRE(static_cast<int64_t>(out.size()) == got);
          REQUIRE(std::set<int64_t>(out.begin(), out.end()).size() == out.size());
          for (int64_t k : out) REQUIRE(weights[k] > 0);
        }
      }
    }
  }
}

// Short rows of every kind: weights of one scale, of many (so picks sum afresh and rounding
// leaves slivers), with zeros, negatives, NaN, infinities and subnormals among them.
std::vector<std::vector<float>> ShortRowsOfEveryKind() {
  std::vector<std::vector<float>> rows;
  DrawStream rng(2024);
  for (int64_t n = 1; n <= 64; ++n) {
    for (int kind = 0; kind < 6; ++kind) {
      std::vector<float> w(static_cast<size_t>(n));
      for (auto& x : w) {
        const double u = rng.Uniform();
        switch (kind) {
          case 0: x = static_cast<float>(u); break;
          case 1: x = static_cast<float>(std::ldexp(u + 0.5, static_cast<int>(rng.Below(200)) - 100)); break;
          case 2: x = rng.Below(3) == 0 ? 0.0f : static_cast<float>(u); break;
          case 3: {
            const float odd[] = {-1.0f, NAN, INFINITY, 1e-42f, 0.0f, 3.0f, 1e30f, 1e-30f};
            x = odd[rng.Below(8)];
            break;
          }
          case 4: x = rng.Below(8) == 0 ? 1e6f : 1.0f; break;  // a few dominate
          default: x = static_cast<float>(1 + rng.Below(4)); break;  // ties and exact sums
        }
      }
      rows.push_back(std::move(w));
    }
  }
  return rows;
}

TEST_CASE("short rows draw the same bits four lanes at a time, sixteen at a time, and many rows at once",
          "[weighted]") {
  // Every server must draw alike whatever its processor: the AVX-512 picks (where this machine
  // has them) and the rows drawn together must give what the portable picks give.
  const auto rows = ShortRowsOfEveryKind();
  const bool vector = HaveVectorShortRows();
  if (!vector) WARN("no AVX-512 here: only the rows drawn together are compared");
  for (int fanout : {-1, 0, 1, 2, 5, 10, 15, 31, 63}) {
    std::vector<uint64_t> keys, masks(rows.size());
    std::vector<const float*> weights;
    std::vector<int64_t> n;
    for (size_t j = 0; j < rows.size(); ++j) {
      keys.push_back(HashCombine(fanout + 7, j));
      weights.push_back(rows[j].data());
      n.push_back(static_cast<int64_t>(rows[j].size()));
    }
    DrawWeightedShortRows(keys.data(), weights.data(), n.data(), rows.size(), fanout, masks.data());
    for (size_t j = 0; j < rows.size(); ++j) {
      INFO("row " << j << " of " << n[j] << " candidates, fanout " << fanout);
      const uint64_t portable = DrawWeightedShortRowPortable(keys[j], weights[j], n[j], fanout);
      int usable = 0;
      for (float x : rows[j]) usable += x > 0 && std::isfinite(x);
      CHECK(__builtin_popcountll(portable) == (fanout < 0 ? usable : std::min(fanout, usable)));
      CHECK(masks[j] == portable);
      if (vector) CHECK(DrawWeightedShortRowVector(keys[j], weights[j], n[j], fanout) == portable);
      CHECK(DrawWeightedShortRow(keys[j], weights[j], n[j], fanout) == portable);
    }
  }
}

// Rows of 65 to 256 candidates of every kind: the short rows' kinds side by side, and rows with
// a group of 64 that has no usable weight.
std::vector<std::vector<float>> MediumRowsOfEveryKind() {
  const auto shorts = ShortRowsOfEveryKind();
  std::vector<std::vector<float>> rows;
  DrawStream rng(77);
  for (int r = 0; r < 120; ++r) {
    const auto n = static_cast<int64_t>(65 + rng.Below(192));
    std::vector<float> w;
    while (static_cast<int64_t>(w.size()) < n) {
      const auto& part = shorts[rng.Below(shorts.size())];
      w.insert(w.end(), part.begin(), part.end());
    }
    w.resize(static_cast<size_t>(n));
    if (r % 5 == 0) std::fill(w.begin() + 64, w.begin() + std::min<int64_t>(n, 128), 0.0f);
    rows.push_back(std::move(w));
  }
  return rows;
}

TEST_CASE("rows drawn in groups of 64 draw the same bits with and without AVX-512", "[weighted]") {
  const auto rows = MediumRowsOfEveryKind();
  const bool vector = HaveVectorShortRows();
  if (!vector) WARN("no AVX-512 here: only the dispatch is compared with the portable draw");
  for (int fanout : {-1, 0, 1, 2, 5, 10, 15, 31, 63, 100, 200}) {
    for (size_t j = 0; j < rows.size(); ++j) {
      const auto n = static_cast<int64_t>(rows[j].size());
      INFO("row " << j << " of " << n << " candidates, fanout " << fanout);
      const uint64_t key = HashCombine(fanout + 11, j);
      uint64_t portable[kMediumRowMasks], vector_masks[kMediumRowMasks], dispatched[kMediumRowMasks];
      DrawWeightedMediumRowPortable(key, rows[j].data(), n, fanout, portable);
      DrawWeightedMediumRow(key, rows[j].data(), n, fanout, dispatched);
      int usable = 0, picked = 0;
      for (int64_t k = 0; k < n; ++k) {
        const bool ok = rows[j][k] > 0 && std::isfinite(rows[j][k]);
        usable += ok;
        const bool in = (portable[k / 64] >> (k % 64) & 1) != 0;
        picked += in;
        if (in) CHECK(ok);
      }
      CHECK(picked == (fanout < 0 ? usable : std::min(fanout, usable)));
      for (int g = 0; g < kMediumRowMasks; ++g) {
        if (64 * g >= n) CHECK(portable[g] == 0);
        CHECK(dispatched[g] == portable[g]);
      }
      if (vector) {
        DrawWeightedMediumRowVector(key, rows[j].data(), n, fanout, vector_masks);
        for (int g = 0; g < kMediumRowMasks; ++g) CHECK(vector_masks[g] == portable[g]);
      }
    }
  }
}

TEST_CASE("rows of 65 to 256 drawn together draw what each draws alone", "[weighted]") {
  // Every count of rows, so that the last rows of a call draw in a smaller group than the rest.
  const auto rows = MediumRowsOfEveryKind();
  for (int fanout : {-1, 0, 1, 5, 15, 63, 200}) {
    for (size_t count : {size_t{1}, size_t{3}, size_t{4}, size_t{9}, rows.size()}) {
      std::vector<uint64_t> keys, masks(count * kMediumRowMasks, ~uint64_t{0});
      std::vector<const float*> weights;
      std::vector<int64_t> n;
      for (size_t j = 0; j < count; ++j) {
        keys.push_back(HashCombine(fanout + 13, j));
        weights.push_back(rows[j].data());
        n.push_back(static_cast<int64_t>(rows[j].size()));
      }
      DrawWeightedMediumRows(keys.data(), weights.data(), n.data(), count, fanout, masks.data());
      for (size_t j = 0; j < count; ++j) {
        INFO("row " << j << " of " << count << ", " << n[j] << " candidates, fanout " << fanout);
        uint64_t alone[kMediumRowMasks];
        DrawWeightedMediumRowPortable(keys[j], weights[j], n[j], fanout, alone);
        for (int g = 0; g < kMediumRowMasks; ++g) CHECK(masks[kMediumRowMasks * j + g] == alone[g]);
      }
    }
  }
}

TEST_CASE("rows of 65 to 256 candidates match successive sampling's exact probabilities", "[weighted][statistics]") {
  // First picks in proportion to the weights; pairs by the exact inclusion probability of two
  // successive picks, p_i + sum over j != i of p_j w_i / (W - w_j). Rows across two to four
  // groups of 64, with zeros, and one whose second group has no weight at all.
  for (int64_t n : {65, 130, 200, 256}) {
    std::vector<float> weights(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      weights[i] = i % 9 == 4 ? 0.0f : static_cast<float>(1 + (i * 7) % 13) * (i % 31 == 0 ? 20.0f : 1.0f);
    }
    if (n == 200) std::fill(weights.begin() + 64, weights.begin() + 128, 0.0f);
    double total = 0;
    for (float w : weights) total += w;
    std::vector<double> first(static_cast<size_t>(n)), pair(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      first[i] = weights[i] / total;
      pair[i] = first[i];
      for (int64_t j = 0; j < n; ++j) {
        if (j != i && weights[j] > 0) pair[i] += (weights[j] / total) * weights[i] / (total - weights[j]);
      }
    }
    for (int fanout : {1, 2}) {
      const int trials = 40000;
      std::vector<int> count(static_cast<size_t>(n), 0);
      std::vector<int64_t> out;
      std::vector<double> keys;
      for (int t = 0; t < trials; ++t) {
        REQUIRE(DrawWeightedPositions(HashCombine(n * 3 + fanout, t), weights.data(), n, fanout, false, &out,
                                      &keys) == fanout);
        for (int64_t k : out) ++count[k];
      }
      for (int64_t i = 0; i < n; ++i) {
        const double p = fanout == 1 ? first[i] : pair[i];
        const double sigma = std::sqrt(trials * p * (1 - p));
        INFO("n " << n << " fanout " << fanout << " candidate " << i << " expected " << p * trials << " got "
                  << count[i]);
        CHECK(std::abs(count[i] - p * trials) <= 5 * sigma + 1);
        if (weights[i] == 0) CHECK(count[i] == 0);
      }
    }
  }
}

TEST_CASE("once the heavy candidates are taken, the light ones are drawn by their own weights",
          "[weighted][statistics]") {
  // Every 13th candidate of weight 1e30 and the rest between 1e-30 and 3e-30: the pick after
  // the heavy ones is one of the light ones, in proportion to its weight, in a short row
  // (running sums), in a row drawn in groups of 64 (running sums per group, groups by their
  // sums) and from block sums (whose running total loses the light weights).
  for (const auto& [n, by_blocks] : {std::pair<int64_t, bool>{40, false}, {100, false}, {100, true}, {250, false}}) {
    std::vector<float> weights(static_cast<size_t>(n));
    double light = 0;
    for (int64_t i = 0; i < n; ++i) {
      weights[i] = i % 13 == 0 ? 1e30f : 1e-30f * static_cast<float>(1 + i % 3);
      if (i % 13 != 0) light += weights[i];
    }
    const int heavy = static_cast<int>((n + 12) / 13);
    const BlockRow row(weights, 5);
    std::vector<int64_t> out;
    std::vector<double> keys;
    const int trials = 20000;
    std::vector<int> count(weights.size(), 0);
    for (int t = 0; t < trials; ++t) {
      const int64_t got = by_blocks ? row.Draw(HashCombine(5, t), heavy + 1, false, &out)
                                    : DrawWeightedPositions(HashCombine(5, t), weights.data(), n, heavy + 1, false,
                                                            &out, &keys);
      REQUIRE(got == heavy + 1);
      for (int64_t k : out) ++count[k];
    }
    for (int64_t i = 0; i < n; ++i) {
      INFO("n " << n << (by_blocks ? " from block sums" : "") << " candidate " << i);
      if (i % 13 == 0) {
        CHECK(count[i] == trials);
        continue;
      }
      const double p = weights[i] / light;
      const double sigma = std::sqrt(trials * p * (1 - p));
      CHECK(std::abs(count[i] - p * trials) <= 5 * sigma + 1);
    }
  }
}

TEST_CASE("weighted draws with replacement are proportional to the weights", "[weighted][statistics]") {
  const std::vector<float> weights = {0, 1, 2, 3, 4, 0, 10};
  const double total = 20;
  const int fanout = 4;
  const int trials = 25000;
  std::vector<int> count(weights.size(), 0);
  std::vector<int64_t> out;
  std::vector<double> keys;
  for (int t = 0; t < trials; ++t) {
    REQUIRE(DrawWeightedPositions(HashCombine(5, t), weights.data(), 7, fanout, true, &out, &keys) == fanout);
    for (int64_t k : out) ++count[k];
  }
  const double draws = static_cast<double>(trials) * fanout;
  CHECK(count[0] == 0);
  CHECK(count[5] == 0);
  for (size_t i = 0; i < weights.size(); ++i) {
    const double p = weights[i] / total;
    const double sigma = std::sqrt(draws * p * (1 - p));
    INFO("candidate " << i << " expected " << p * draws << " got " << count[i]);
    CHECK(std::abs(count[i] - p * draws) <= 5 * sigma + 1);
  }
}

// A long row's draw of `fanout` of the 100 weights 0..6 repeating (every seventh is zero)
// under `key`, with or without replacement, into `out`; returns how many.
using RowDraw = std::function<int64_t(uint64_t key, int fanout, bool replace, std::vector<int64_t>* out)>;

// Checks `draw` against the exact distributions: 2 without replacement against each candidate's
// inclusion probability, 3 with replacement in proportion to the weights, and 30 without
// replacement (every pick past up to 29 taken) against the exact successive sampling of
// DrawWeightedPositions (a scan of what is left per pick, for rows this long).
void CheckLongRowDraw(const std::vector<float>& weights, const RowDraw& draw) {
  const std::vector<double> wd(weights.begin(), weights.end());
  const double total = std::accumulate(wd.begin(), wd.end(), 0.0);
  std::vector<int64_t> out;
  std::vector<double> keys;
  const int trials = 40000;
  const int many_trials = 6000;
  std::vector<int> two(weights.size(), 0), three(weights.size(), 0), many(weights.size(), 0),
      by_scan(weights.size(), 0);
  for (int t = 0; t < trials; ++t) {
    REQUIRE(draw(HashCombine(17, t), 2, false, &out) == 2);
    REQUIRE(out[0] < out[1]);
    for (int64_t k : out) ++two[k];
    REQUIRE(draw(HashCombine(3, t), 3, true, &out) == 3);
    for (int64_t k : out) ++three[k];
    if (t >= many_trials) continue;
    REQUIRE(draw(HashCombine(23, t), 30, false, &out) == 30);
    REQUIRE(std::set<int64_t>(out.begin(), out.end()).size() == 30u);
    for (int64_t k : out) ++many[k];
    REQUIRE(DrawWeightedPositions(HashCombine(29, t), weights.data(), 100, 30, false, &out, &keys) == 30);
    for (int64_t k : out) ++by_scan[k];
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    INFO("candidate " << i << ": " << two[i] << " of 2, " << three[i] << " of 3, " << many[i] << " of 30 (scan "
                      << by_scan[i] << ")");
    if (weights[i] == 0) {
      CHECK(two[i] + three[i] + many[i] == 0);
      continue;
    }
    double p = wd[i] / total;  // P(i among 2) = w_i/W + sum_{j != i} w_j/W * w_i/(W - w_j)
    for (size_t j = 0; j < wd.size(); ++j) {
      if (j != i) p += wd[j] / total * wd[i] / (total - wd[j]);
    }
    CHECK(std::abs(two[i] - p * trials) <= 5 * std::sqrt(trials * p * (1 - p)) + 1);
    const double q = wd[i] / total;
    CHECK(std::abs(three[i] - q * 3 * trials) <= 5 * std::sqrt(3.0 * trials * q * (1 - q)) + 1);
    const double r = (many[i] + by_scan[i]) / (2.0 * many_trials);
    CHECK(std::abs(many[i] - by_scan[i]) <= 5 * std::sqrt(2 * many_trials * r * (1 - r)) + 1);
  }
}

std::vector<float> RepeatingWeights() {
  std::vector<float> weights(100);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 7);
  return weights;
}

TEST_CASE("long rows draw from their block sums with the same distributions", "[weighted][statistics]") {
  // From CSR position 5 (the row's first and last blocks hold other rows' weights too) and from
  // 16 (whole blocks).
  const std::vector<float> weights = RepeatingWeights();
  for (int64_t offset : {5, 16}) {
    INFO("row at " << offset);
    const BlockRow row(weights, offset);
    CheckLongRowDraw(weights, [&](uint64_t key, int fanout, bool replace, std::vector<int64_t>* out) {
      return row.Draw(key, fanout, replace, out);
    });
  }
  // A row with fewer positive weights than the fanout takes them all.
  std::vector<int64_t> out;
  std::vector<float> sparse(100, 0.0f);
  sparse[10] = 1;
  sparse[70] = 2;
  REQUIRE(BlockRow(sparse, 5).Draw(5, 5, false, &out) == 2);
  CHECK(out == std::vector<int64_t>{10, 70});
}

TEST_CASE("the longest rows draw from their Fenwick tree with the same distributions", "[weighted][statistics]") {
  const std::vector<float> weights = RepeatingWeights();
  std::vector<double> tree(weights.size());
  WeightIndex::BuildTree(weights.data(), 100, tree.data());
  WeightedScratch scratch;
  CheckLongRowDraw(weights, [&](uint64_t key, int fanout, bool replace, std::vector<int64_t>* out) {
    return DrawWeightedFromTree(key, weights.data(), tree.data(), 100, fanout, replace, out, &scratch);
  });
}

TEST_CASE("independent draws from an alias table are proportional to the weights", "[weighted][statistics]") {
  const std::vector<float> weights = RepeatingWeights();
  const std::vector<double> wd(weights.begin(), weights.end());
  const double total = std::accumulate(wd.begin(), wd.end(), 0.0);
  const std::vector<int64_t> indptr = {0, 100};
  WeightIndex t;
  const WeightIndex::Alias& alias = t.GetAlias(indptr.data(), 1, weights.data());
  const int trials = 40000;
  std::vector<int> count(weights.size(), 0);
  std::vector<int64_t> out;
  for (int t2 = 0; t2 < trials; ++t2) {
    REQUIRE(DrawWeightedFromAlias(HashCombine(8, t2), alias.cells.data(), 100, 3, &out) == 3);
    for (int64_t k : out) ++count[k];
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    const double p = wd[i] / total;
    const double sigma = std::sqrt(3.0 * trials * p * (1 - p));
    INFO("alias candidate " << i << " expected " << p * 3 * trials << " got " << count[i]);
    CHECK(std::abs(count[i] - p * 3 * trials) <= 5 * sigma + 1);
  }
  // A row without a positive weight draws nothing from its alias table.
  const std::vector<float> none(80, 0.0f);
  const std::vector<int64_t> none_ptr = {0, 80};
  WeightIndex nt;
  const WeightIndex::Alias& none_alias = nt.GetAlias(none_ptr.data(), 1, none.data());
  CHECK(DrawWeightedFromAlias(1, none_alias.cells.data(), 80, 3, &out) == 0);
}

TEST_CASE("an alias table's 32-bit cells keep each weight's share to their threshold bits", "[weighted]") {
  // Rows of 1 to 65,535 edges with weights of many magnitudes and zeros: the chance each cell
  // gives a position (its threshold's share of the cell to it, the rest to its alias) is the
  // position's share of the row's weight to within the thresholds' rounding, and exactly 0 for
  // a weight of 0.
  uint64_t state = 5;
  for (int64_t d : {1, 2, 3, 7, 64, 255, 256, 1000, 4097, 65535}) {
    std::vector<float> w(static_cast<size_t>(d));
    for (auto& x : w) {
      state = Mix64(state);
      x = state % 7 == 0 ? 0.0f : std::ldexp(1.0f + static_cast<float>(state % 1000), static_cast<int>(state >> 60) - 8);
    }
    w[0] = 1;  // at least one positive weight
    const std::vector<int64_t> indptr = {0, d};
    WeightIndex index;
    const WeightIndex::Alias& alias = index.GetAlias(indptr.data(), 1, w.data());
    REQUIRE(alias.cells.size() == static_cast<size_t>(d));
    const int bits = AliasBits(d);
    const double one = std::ldexp(1.0, 32 - bits);
    std::vector<double> chance(static_cast<size_t>(d), 0.0);
    std::vector<int> aliased(static_cast<size_t>(d), 0);
    for (int64_t k = 0; k < d; ++k) {
      const uint32_t c = alias.cells[k];
      const uint32_t to = c & ((1u << bits) - 1);
      REQUIRE(to < static_cast<uint32_t>(d));
      const double keep = static_cast<double>(c >> bits) / one;
      chance[k] += keep / d;
      chance[to] += (1 - keep) / d;
      ++aliased[to];
    }
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    for (int64_t k = 0; k < d; ++k) {
      INFO(d << " edges, position " << k << " weight " << w[k]);
      if (w[k] == 0) {
        CHECK(chance[k] == 0);
      } else {
        CHECK(std::abs(chance[k] - w[k] / total) <= (1 + aliased[k]) / one / d + 1e-12);
      }
    }
  }
  // Past kAliasMaxDegree a row has no table.
  std::vector<float> w(kAliasMaxDegree + 1, 1.0f);
  const std::vector<int64_t> indptr = {0, kAliasMaxDegree + 1};
  WeightIndex index;
  CHECK(index.GetAlias(indptr.data(), 1, w.data()).longest_row == kAliasMaxDegree + 1);
}

TEST_CASE("zero weights: never drawn; all zero draws nothing; a full fanout takes the positive ones",
          "[weighted]") {
  std::vector<int64_t> out;
  std::vector<double> keys;
  const std::vector<float> zeros(5, 0.0f);
  for (bool replace : {false, true}) {
    CHECK(DrawWeightedPositions(1, zeros.data(), 5, 3, replace, &out, &keys) == 0);
    CHECK(DrawWeightedPositions(1, zeros.data(), 5, -1, replace, &out, &keys) == 0);
  }
  const std::vector<float> some = {0, 2, 0, 1, 3};
  REQUIRE(DrawWeightedPositions(1, some.data(), 5, -1, false, &out, &keys) == 3);
  CHECK(out == std::vector<int64_t>{1, 3, 4});
  // A fanout above the positive count takes them all, without replacement.
  REQUIRE(DrawWeightedPositions(1, some.data(), 5, 4, false, &out, &keys) == 3);
  CHECK(out == std::vector<int64_t>{1, 3, 4});
  // NaN, infinity and negative weights (an unverified partition) count as zero.
  const std::vector<float> odd = {NAN, -1, INFINITY, 2};
  REQUIRE(DrawWeightedPositions(1, odd.data(), 4, 2, false, &out, &keys) == 1);
  CHECK(out == std::vector<int64_t>{3});
  // The same key draws the same.
  std::vector<int64_t> again;
  const std::vector<float> w = {1, 1, 1, 1, 1, 1};
  DrawWeightedPositions(77, w.data(), 6, 3, false, &out, &keys);
  DrawWeightedPositions(77, w.data(), 6, 3, false, &again, &keys);
  CHECK(out == again);
}

// `nodes` nodes of type "node" and an edge type node__to__node without edges yet.
GraphData Nodes(int64_t nodes) {
  GraphData g;
  g.node_types.push_back(NodeTypeData{"node", nodes});
  EdgeTypeData e;
  e.src_type = e.dst_type = "node";
  e.relation = "to";
  g.edge_types.push_back(e);
  return g;
}

// Node 0 -> 1 (weight 0), 2 (weight 5), 3 (weight 0); node 1 -> 3 (weight 1); 2, 3: none.
GraphData Weighted() {
  GraphData g = Nodes(4);
  EdgeTypeData& e = g.edge_types[0];
  e.src = {0, 0, 0, 1};
  e.dst = {1, 2, 3, 3};
  e.weights = {0, 5, 0, 1};
  return g;
}

TEST_CASE("the weighted sampler draws only edges of positive weight, exactly", "[weighted]") {
  TempDir dir;
  auto p = testing::WritePartition(Weighted(), dir.path());
  REQUIRE(p->edge_type(0).weights_data() != nullptr);
  for (bool replace : {false, true}) {
    INFO("replace " << replace);
    NeighborSamplerOptions o;
    o.fanouts = {2};
    o.replace = replace;
    o.weighted_edge_types = {"*"};
    auto s = NeighborSampler::Create(p.get(), o);
    REQUIRE(s.ok());
    for (int64_t batch = 0; batch < 20; ++batch) {
      testing::SampleAt at;
      at.batch = batch;
      const SampledSubgraph g = testing::RunSampler(**s, {0}, at);
      const auto pairs = testing::EdgePairs(*p, g, 0);
      // Only 0 -> 2 has weight: drawn once, or twice with replacement.
      CHECK(pairs == std::set<std::pair<int64_t, int64_t>>{{0, 2}});
      CHECK(g.edges[0].rows.size() == (replace ? 2u : 1u));
    }
  }
  // Uniform sampling of the same graph reaches the zero-weight edges.
  NeighborSamplerOptions uniform;
  uniform.fanouts = {-1};
  auto s = NeighborSampler::Create(p.get(), uniform);
  REQUIRE(s.ok());
  CHECK(testing::EdgePairs(*p, testing::RunSampler(**s, {0}), 0).size() == 3);
}

TEST_CASE("weighted sampling of a type without weights, or of an unknown type, is refused", "[weighted]") {
  TempDir dir;
  auto p = testing::WritePartition(testing::TinyGraph(), dir.path());
  NeighborSamplerOptions o;
  o.fanouts = {2};
  o.weighted_edge_types = {"*"};
  auto s = NeighborSampler::Create(p.get(), o);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("stores no edge weights"));
  o.weighted_edge_types = {"node__likes__node"};
  s = NeighborSampler::Create(p.get(), o);
  REQUIRE(!s.ok());
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("weighted_edge_types: edge type 'node__likes__node'"));
}

TEST_CASE("a partition whose weights are negative, not finite or of the wrong length is refused naming the file",
          "[weighted]") {
  TempDir dir;
  REQUIRE(testing::WritePartition(Weighted(), dir.path()) != nullptr);
  const std::string file = EdgeDir(dir.path(), "node__to__node") + "/weights.npy";
  for (const std::vector<float>& bad : {std::vector<float>{0, 5, -1, 1}, std::vector<float>{0, NAN, 0, 1},
                                        std::vector<float>{0, 5, INFINITY, 1}, std::vector<float>{1, 2, 3}}) {
    REQUIRE(WriteNpyVector(file, bad).ok());
    auto loaded = Partition::Load(dir.path());
    REQUIRE(!loaded.ok());
    CHECK_THAT(std::string(loaded.status().message()), Catch::Contains("weights.npy"));
  }
  // A graph given weights that are not finite and >= 0 is refused before anything is written.
  GraphData g = Weighted();
  g.edge_types[0].weights[1] = -2;
  TempDir out;
  const absl::Status s = WritePartitions(g, Assignment{std::vector<int32_t>(4, 0)}, WriteOptions(), out.path());
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Catch::Contains("edge weight 1"));
}

// 41 nodes: 40 with rows of 65 to 214 edges (long rows: drawn from block sums) and node 40 with
// 70,000 (past kWeightTreeMinDegree: drawn from its tree; past kAliasMaxDegree: with
// replacement too), at edge times 0, 1, ...: every fifth
// row weighs nothing, the next has only three positive weights, the others weigh 1 to 11 with
// a zero every ninth edge.
GraphData LongRows() {
  GraphData g = Nodes(41);
  EdgeTypeData& e = g.edge_types[0];
  for (int64_t v = 0; v <= 40; ++v) {
    const int64_t degree = v == 40 ? 70000 : 65 + (v * 37) % 250;
    for (int64_t k = 0; k < degree; ++k) {
      e.src.push_back(v);
      e.dst.push_back((v + 7 * k) % 40);
      e.times.push_back(k);
      float w = 1.0f + static_cast<float>((k * 13) % 11);
      if (v % 5 == 0 || k % 9 == 4 || (v % 5 == 1 && k % 30 != 2)) w = 0;
      e.weights.push_back(w);
    }
  }
  return g;
}

TEST_CASE("a hop's long rows draw in groups of 64, from their block sums, trees or alias tables, whole or cut",
          "[weighted]") {
  TempDir dir;
  auto p = testing::WritePartition(LongRows(), dir.path());
  const EdgeTypeStore& et = p->edge_type(0);
  const int64_t* indptr = et.indptr_data();
  const double* blocks = et.weight_index->GetBlocks(et.num_local, et.weights_data()).data();
  const WeightIndex::Trees& trees = et.weight_index->GetTrees(indptr, 41, et.weights_data());
  const WeightIndex::Alias& alias = et.weight_index->GetAlias(indptr, 41, et.weights_data());
  CHECK(alias.longest_row == 70000);
  REQUIRE(trees.starts == std::vector<int64_t>{indptr[40]});  // the one row past the tree threshold
  // Every node, in an order unlike the rows', some twice.
  std::vector<int64_t> ids;
  for (int64_t k = 0; k < 50; ++k) ids.push_back((k * 17) % 41);
  // Times cutting each row after 64 + (id % 50) edges, so the cut rows are long too, or every
  // third after 281 (past the rows drawn in groups); node 40's after 4501, so its cut row still
  // takes its tree.
  std::vector<int64_t> times;
  for (int64_t v : ids) times.push_back(v == 40 ? 4500 : v % 3 == 0 ? 280 : 63 + v % 50);
  for (bool temporal : {false, true}) {
    for (bool replace : {false, true}) {
      INFO("temporal " << temporal << " replace " << replace);
      DrawSpec spec;
      spec.fanout = 5;
      spec.replace = replace;
      spec.weighted = true;
      spec.hop_key = 1234;
      if (temporal) {
        spec.temporal = TemporalStrategy::kUniform;
        spec.times = times.data();
      }
      NeighborDraw draw;
      DrawOwnedNeighbors(*p, 0, ids.data(), ids.size(), spec, &draw);
      REQUIRE(draw.counts.size() == ids.size());
      size_t at = 0;
      int64_t short_rows = 0, by_tree = 0, by_groups = 0, by_blocks = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        const int64_t begin = indptr[ids[i]];
        const int64_t degree = indptr[ids[i] + 1] - begin;
        const int64_t n = temporal ? std::min<int64_t>(degree, times[i] + 1) : degree;
        std::vector<int64_t> alone;
        WeightedScratch scratch;
        const uint64_t key = HashCombine(1234, static_cast<uint64_t>(ids[i]));
        if (replace && n == degree && n <= kAliasMaxDegree) {
          // Independent draws from a whole row are its alias table's.
          DrawWeightedFromAlias(key, alias.cells.data() + begin, n, 5, &alone);
        } else if (n > kWeightTreeMinDegree) {
          ++by_tree;
          DrawWeightedFromTree(key, et.weights_data() + begin, trees.Of(begin), n, 5, replace, &alone, &scratch);
        } else if (!replace && n <= kMediumWeightedRow) {
          ++by_groups;
          std::vector<double> keys;
          DrawWeightedPositions(key, et.weights_data() + begin, n, 5, false, &alone, &keys);
        } else {
          ++by_blocks;
          DrawWeightedFromBlocks(key, et.weights_data(), blocks, begin, n, 5, replace, &alone, &scratch);
        }
        INFO("node " << ids[i]);
        REQUIRE(draw.counts[i] == static_cast<int64_t>(alone.size()));
        if (alone.size() < 5) ++short_rows;
        for (int64_t k : alone) {
          CHECK(et.weights_data()[begin + k] > 0);
          CHECK(draw.neighbors[at++] == et.indices_data()[begin + k]);
        }
      }
      CHECK(at == draw.neighbors.size());
      CHECK(short_rows >= 5);  // rows of no or few positive weights draw what they have
      CHECK(by_tree == 1);  // node 40, whole (too long for an alias table) or cut after 4501 edges
      if (!replace) CHECK(by_groups >= 10);
      if (!replace || temporal) CHECK(by_blocks >= 3);
    }
  }
}

}  // namespace
}  // namespace graphstore
