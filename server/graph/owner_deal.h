#ifndef GRAPHSTORE_SERVER_GRAPH_OWNER_DEAL_H_
#define GRAPHSTORE_SERVER_GRAPH_OWNER_DEAL_H_

// A random partition computed rather than stored. Node g of a type of n nodes has position
// Position(g) in a keyed shuffle of 0 .. n-1, and the partition that owns it is that position
// mod P: the nodes are dealt round P partitions like cards, so the partitions' sizes differ by at
// most one. The shuffle is a bijection of [0, 2^k), 2^k the least power of two >= n, built of
// steps that are each one (an xor with a key, a multiply by an odd number, an xor with the
// value's own high half shifted down), applied from g again until the value lands below n ("cycle
// walking": fewer than 2^k / n < 2 steps on average), which makes it a bijection of 0 .. n-1.
//
// The tools deal random partitions this way and record the key in the manifest (owner_deal), so
// a server computes an owner in a few multiplies and keeps nothing per node of the whole graph
// for it (NodeBook::Dealt). The draws' keyed permutation (PermutedPosition, a Feistel network of
// eight hashes) would do as a shuffle, but an owner is asked per node on the sampling path: it
// takes about 97 ns a node where these three steps take 8-9 (10^8 nodes, 200 partitions).

#include <cstdint>

#include "server/util/mix.h"

namespace graphstore {

class OwnerDeal {
 public:
  OwnerDeal() = default;
  OwnerDeal(int64_t num_nodes, int num_partitions, uint64_t key)
      : n_(static_cast<uint64_t>(num_nodes)), partitions_(static_cast<uint64_t>(num_partitions)) {
    int bits = 0;
    while (bits < 63 && (uint64_t{1} << bits) < n_) ++bits;
    mask_ = bits == 0 ? 0 : (uint64_t{1} << bits) - 1;
    shift_ = (bits + 1) / 2;
    uint64_t s = key;
    for (uint64_t& k : keys_) {
      k = Mix64(s);  // splitmix64's outputs from state `key`
      s += kGolden64;
    }
    // The reciprocal gives position / P exactly while position * P fits 64 bits (see Owner).
    exact_ = partitions_ > 1 && static_cast<unsigned __int128>(n_) * partitions_ <= ~uint64_t{0};
    inverse_ = partitions_ > 1 ? ~uint64_t{0} / partitions_ + 1 : 0;
  }

  /// The key of node type `type` (its index among the graph's node types) in a run seeded `seed`.
  static uint64_t TypeKey(uint64_t seed, int type) {
    return Mix64(seed ^ (kGolden64 * static_cast<uint64_t>(type + 1)));
  }

  int64_t num_nodes() const { return static_cast<int64_t>(n_); }
  int num_partitions() const { return static_cast<int>(partitions_); }

  /// Position of node `g` (in [0, num_nodes)) in the shuffle: a bijection of [0, num_nodes).
  int64_t Position(int64_t g) const {
    uint64_t x = static_cast<uint64_t>(g);
    if (n_ <= 1) return 0;
    do {
      x = Step(x);
    } while (x >= n_);
    return static_cast<int64_t>(x);
  }

  /// Partition that owns node `g`: its position mod num_partitions.
  int32_t Owner(int64_t g) const {
    if (partitions_ <= 1) return 0;
    const auto pos = static_cast<uint64_t>(Position(g));
    // pos / P as the high half of pos times 2^64 / P rounded up: exact while pos * P < 2^64.
    const uint64_t q = exact_ ? static_cast<uint64_t>((static_cast<unsigned __int128>(pos) * inverse_) >> 64)
                              : pos / partitions_;
    return static_cast<int32_t>(pos - q * partitions_);
  }

  /// Nodes partition `p` owns: the positions p, p + P, ... below num_nodes.
  int64_t OwnedCount(int p) const {
    const uint64_t base = n_ / partitions_;
    return static_cast<int64_t>(base + (static_cast<uint64_t>(p) < n_ % partitions_ ? 1 : 0));
  }

 private:
  // One bijection of [0, 2^k): each line maps k-bit values one to one.
  uint64_t Step(uint64_t x) const {
    x = ((x ^ keys_[0]) * 0xD6E8FEB86659FD93ULL) & mask_;
    x ^= x >> shift_;
    x = ((x + keys_[1]) * 0x9E3779B97F4A7C15ULL) & mask_;
    x ^= x >> shift_;
    x = ((x ^ keys_[2]) * 0xC2B2AE3D27D4EB4FULL) & mask_;
    x ^= x >> shift_;
    return x;
  }

  uint64_t n_ = 0;
  uint64_t partitions_ = 1;
  uint64_t mask_ = 0;
  int shift_ = 1;
  uint64_t keys_[3] = {};
  bool exact_ = false;
  uint64_t inverse_ = 0;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_OWNER_DEAL_H_
