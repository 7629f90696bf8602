#ifndef GRAPHSTORE_SERVER_UTIL_MIX_H_
#define GRAPHSTORE_SERVER_UTIL_MIX_H_

#include <cstdint>

namespace graphstore {

/// splitmix64's finaliser: a bijective 64-bit mix with full avalanche. Mix64(s) is splitmix64's
/// next output from state s (which then advances by kGolden64).
inline constexpr uint64_t kGolden64 = 0x9e3779b97f4a7c15ULL;

inline uint64_t Mix64(uint64_t x) {
  x += kGolden64;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_MIX_H_
