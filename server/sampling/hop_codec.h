#ifndef GRAPHSTORE_SERVER_SAMPLING_HOP_CODEC_H_
#define GRAPHSTORE_SERVER_SAMPLING_HOP_CODEC_H_

// One hop's draw as it travels between servers, in one place: the sampler's DrawSpec becomes the
// PeerSampling::Hop it asks the owners for (HopOf), each owner's share of that hop becomes a
// graphstore.v1.SampleNeighborsRequest (EncodeHop, in the peer client), and the owner turns the
// request back into the DrawSpec it draws with (DecodeHop, in the service). The key of a draw
// travels as its coordinates (seed, epoch, batch, hop) and the edge type's name, so the owner
// derives the same hop_key the asking sampler did. Tests that answer peers in process go through
// the same two functions.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graphstore/v1/graphstore.pb.h"
#include "server/sampling/draw.h"
#include "server/sampling/neighbor_draw.h"
#include "server/sampling/peer_sampling.h"
#include "server/sampling/sampler.h"

namespace graphstore {

/// A temporal strategy in the samplers' terms (an unknown value, refused by the callers' checks,
/// is kNone), and back.
TemporalStrategy TemporalStrategyOf(v1::TemporalStrategy strategy);
v1::TemporalStrategy ToProtoTemporal(TemporalStrategy strategy);

/// What the owners of other partitions' nodes are asked to draw: `spec` along `edge_type` (its
/// stored name) at `batch`'s coordinates and `hop`, at `fanout` in place of spec's (-1 asks for
/// whole neighbour lists); edge features only when `with_edge_features`.
PeerSampling::Hop HopOf(const std::string& edge_type, const DrawSpec& spec, bool with_edge_features,
                        const SeedBatch& batch, int hop, int fanout);

/// Writes one owner's share of `hop` — the call's ids, their times (temporal hops) and the
/// excluded pairs among them — into `out`.
void EncodeHop(const PeerSampling::Hop& hop, const PeerSampling::NeighborCall& call, v1::SampleNeighborsRequest* out);

/// The draw `req` asks for along `edge_type`, the stored name its edge_type resolved to (it may
/// be empty on a graph of one edge type), as the owner makes it. `excluded` receives the request's excluded
/// pairs, sorted, and the returned spec points into it and into `req`'s times: both must
/// outlive the spec. Trusts `req`: the service checks it first (an odd `excluded` drops its
/// last entry, and an unknown temporal strategy draws from whole rows).
DrawSpec DecodeHop(const v1::SampleNeighborsRequest& req, const std::string& edge_type,
                   std::vector<std::pair<int64_t, int64_t>>* excluded);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SAMPLING_HOP_CODEC_H_
