#ifndef GRAPHSTORE_PROTO_PPR_DEFAULTS_H_
#define GRAPHSTORE_PROTO_PPR_DEFAULTS_H_

// The defaults of personalized-PageRank sampling (graphstore.v1.PprOptions), in one place for
// every side that fills one in: the sampler's own options (server/sampling/ppr_sampler.h), the
// Python Loader's option checks (python/loader_schema.cc) and, through the extension, its
// `PprOptions` dataclass. A request states every field: the server fills in nothing.

namespace graphstore {

/// Restart probability, in (0, 1).
inline constexpr double kPprAlpha = 0.15;
/// Residual threshold of forward push per unit of degree, > 0.
inline constexpr double kPprEps = 1e-4;
/// Nodes kept per seed, highest weight first.
inline constexpr int kPprMaxNodesPerSeed = 32;

}  // namespace graphstore

#endif  // GRAPHSTORE_PROTO_PPR_DEFAULTS_H_
