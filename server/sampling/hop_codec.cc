#include "server/sampling/hop_codec.h"

#include <algorithm>

namespace graphstore {

TemporalStrategy TemporalStrategyOf(v1::TemporalStrategy strategy) {
  switch (strategy) {
    case v1::TEMPORAL_STRATEGY_UNIFORM: return TemporalStrategy::kUniform;
    case v1::TEMPORAL_STRATEGY_LAST: return TemporalStrategy::kLast;
    default: return TemporalStrategy::kNone;
  }
}

v1::TemporalStrategy ToProtoTemporal(TemporalStrategy strategy) {
  switch (strategy) {
    case TemporalStrategy::kUniform: return v1::TEMPORAL_STRATEGY_UNIFORM;
    case TemporalStrategy::kLast: return v1::TEMPORAL_STRATEGY_LAST;
    case TemporalStrategy::kNone: break;
  }
  return v1::TEMPORAL_STRATEGY_NONE;
}

PeerSampling::Hop HopOf(const std::string& edge_type, const DrawSpec& spec, bool with_edge_features,
                        const SeedBatch& batch, int hop, int fanout) {
  PeerSampling::Hop h;
  h.edge_type = edge_type;
  h.fanout = fanout;
  h.replace = spec.replace;
  h.weighted = spec.weighted;
  h.temporal = spec.temporal;
  h.with_edge_ids = spec.with_edge_ids;
  h.with_edge_features = with_edge_features;
  h.seed = batch.seed;
  h.epoch = batch.epoch;
  h.batch = batch.batch_index;
  h.hop = hop;
  return h;
}

void EncodeHop(const PeerSampling::Hop& hop, const PeerSampling::NeighborCall& call, v1::SampleNeighborsRequest* out) {
  out->set_edge_type(hop.edge_type);
  out->mutable_ids()->Add(call.ids.begin(), call.ids.end());
  out->set_fanout(hop.fanout);
  out->set_replace(hop.replace);
  out->set_weighted(hop.weighted);
  if (hop.temporal != TemporalStrategy::kNone) {
    out->set_temporal_strategy(ToProtoTemporal(hop.temporal));
    out->mutable_times()->Add(call.times.begin(), call.times.end());
  }
  out->set_with_edge_ids(hop.with_edge_ids);
  out->set_with_edge_features(hop.with_edge_features);
  out->set_compact(true);  // int32 answers where they fit: half the bytes between servers
  out->set_narrow_counts(true);  // and a byte a count
  out->mutable_excluded()->Add(call.excluded.begin(), call.excluded.end());
  v1::DrawContext* c = out->mutable_context();
  c->set_seed(hop.seed);
  c->set_epoch(hop.epoch);
  c->set_batch(hop.batch);
  c->set_hop(hop.hop);
}

DrawSpec DecodeHop(const v1::SampleNeighborsRequest& req, const std::string& edge_type,
                   std::vector<std::pair<int64_t, int64_t>>* excluded) {
  excluded->clear();
  for (int i = 0; i + 1 < req.excluded_size(); i += 2) excluded->emplace_back(req.excluded(i), req.excluded(i + 1));
  std::sort(excluded->begin(), excluded->end());
  const v1::DrawContext& c = req.context();
  DrawSpec spec;
  spec.fanout = req.fanout();
  spec.replace = req.replace();
  spec.weighted = req.weighted();
  spec.with_edge_ids = req.with_edge_ids();
  spec.with_edge_features = req.with_edge_features();
  spec.hop_key = HopKey(c.seed(), c.epoch(), c.batch(), c.hop(), HashString(edge_type));
  spec.excluded = excluded;
  spec.temporal = TemporalStrategyOf(req.temporal_strategy());
  if (spec.temporal != TemporalStrategy::kNone) spec.times = req.times().data();
  return spec;
}

}  // namespace graphstore
