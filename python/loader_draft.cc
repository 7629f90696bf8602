#include "python/loader_draft.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "proto/ppr_defaults.h"

namespace graphstore::python {

Apply BoolInto(std::function<void(Draft*, bool)> set) {
  return [set](const std::string& n, const Value& v, Draft* d) {
    auto b = ReadBool(n, v);
    if (!b.ok()) return b.status();
    set(d, *b);
    return absl::OkStatus();
  };
}
Apply IntInto(int64_t minimum, std::function<void(Draft*, int64_t)> set) {
  return [minimum, set](const std::string& n, const Value& v, Draft* d) {
    auto i = ReadInt(n, v, minimum);
    if (!i.ok()) return i.status();
    set(d, *i);
    return absl::OkStatus();
  };
}
Apply StrInto(std::function<void(Draft*, std::string)> set, bool optional) {
  return [set, optional](const std::string& n, const Value& v, Draft* d) {
    auto s = optional ? ReadOptionalStr(n, v) : ReadStr(n, v);
    if (!s.ok()) return s.status();
    set(d, *std::move(s));
    return absl::OkStatus();
  };
}
Apply SecondsInto(double minimum, bool positive, std::function<void(Draft*, std::chrono::milliseconds)> set) {
  return [minimum, positive, set](const std::string& n, const Value& v, Draft* d) {
    auto s = ReadSeconds(n, v, minimum, positive);
    if (!s.ok()) return s.status();
    set(d, *s);
    return absl::OkStatus();
  };
}

absl::Status FinishSampler(Draft* d) {
  auto kind = ReadChoice<v1::SamplerKind>("sampler", Value::Str(d->sampler),
                                          {{"neighbor", v1::SAMPLER_KIND_NEIGHBOR},
                                           {"ppr", v1::SAMPLER_KIND_PPR},
                                           {"subgraph", v1::SAMPLER_KIND_SUBGRAPH}});
  if (!kind.ok()) return kind.status();
  d->config.set_kind(*kind);
  if (!d->has_num_neighbors && *kind != v1::SAMPLER_KIND_PPR) {
    return ValueError("num_neighbors is required for the neighbor and subgraph samplers");
  }
  if (d->ppr.has_value() || *kind == v1::SAMPLER_KIND_PPR) {
    v1::PprOptions* ppr = d->config.mutable_ppr();
    ppr->set_alpha(kPprAlpha);
    ppr->set_eps(kPprEps);
    ppr->set_max_nodes_per_seed(kPprMaxNodesPerSeed);
    if (d->ppr.has_value()) {
      for (const auto& [key, v] : d->ppr->dict) {
        const double x = v.type == Value::Type::kInt ? static_cast<double>(v.i) : v.f;
        if (v.type != Value::Type::kInt && v.type != Value::Type::kFloat) {
          return TypeError(absl::StrCat("ppr.", key, " must be a number, not ", v.TypeName()));
        }
        if (key == "alpha") ppr->set_alpha(x);
        if (key == "eps") ppr->set_eps(x);
        if (key == "max_nodes_per_seed") {
          auto m = ReadInt("ppr.max_nodes_per_seed", v, 1);
          if (!m.ok()) return m.status();
          ppr->set_max_nodes_per_seed(static_cast<int>(std::min<int64_t>(*m, 1 << 30)));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status FinishInputs(Draft* d) {
  auto negatives = ReadChoice<v1::NegativeSampling>("negative_sampling", Value::Str(d->negative_sampling),
                                                    {{"none", v1::NEGATIVE_SAMPLING_NONE},
                                                     {"uniform", v1::NEGATIVE_SAMPLING_UNIFORM},
                                                     {"degree", v1::NEGATIVE_SAMPLING_DEGREE}});
  if (!negatives.ok()) return negatives.status();
  d->config.set_negative_sampling(d->config.num_negatives() > 0 ? *negatives : v1::NEGATIVE_SAMPLING_NONE);
  if (!d->weight_attr.empty()) {
    if (d->weight_attr != "edge_weight" && d->weight_attr != "weight") {
      return ValueError(absl::StrCat("weight_attr must be 'edge_weight' or 'weight' (the weights the dataset stores) "
                                     "or None, got '", d->weight_attr, "'"));
    }
    if (d->weighted_given) return ValueError("give weight_attr or weighted, not both");
    d->config.add_weighted_edge_types("*");
  }
  auto strategy = ReadChoice<v1::TemporalStrategy>("temporal_strategy", Value::Str(d->temporal_strategy),
                                                   {{"uniform", v1::TEMPORAL_STRATEGY_UNIFORM},
                                                    {"last", v1::TEMPORAL_STRATEGY_LAST}});
  if (!strategy.ok()) return strategy.status();
  if (!d->time_attr.empty()) {
    if (d->time_attr != "time") {
      return ValueError(absl::StrCat("time_attr must be 'time' (the times the dataset stores) or None, got '",
                                     d->time_attr, "'"));
    }
    d->config.set_temporal_strategy(*strategy);
  }
  if (d->input_time.has_value()) {
    if (d->time_attr.empty()) return ValueError("input_time needs time_attr='time' (temporal sampling)");
    if (!d->has_ids) return ValueError("input_time needs the seeds' ids in input_nodes (one time per id)");
    if (d->input_time->size() != d->options.seeds.size()) {
      return ValueError(absl::StrCat("input_time has ", d->input_time->size(), " times for ", d->options.seeds.size(),
                                     " seeds in input_nodes; give one per seed"));
    }
    d->options.seed_times = *d->input_time;
  }
  if (d->options.ablp.has_value()) {
    if (d->has_ids) return ValueError("give either ablp or ids in input_nodes, not both");
    v1::GetAblpInputRequest& a = *d->options.ablp;
    a.set_node_type(!d->options.node_type.empty()
                        ? d->options.node_type
                        : std::string(a.supervision_edge_type().substr(0, a.supervision_edge_type().find("__"))));
  }
  return absl::OkStatus();
}

}  // namespace graphstore::python
