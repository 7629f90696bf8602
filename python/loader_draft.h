#ifndef GRAPHSTORE_PYTHON_LOADER_DRAFT_H_
#define GRAPHSTORE_PYTHON_LOADER_DRAFT_H_

// The client options graphstore.Loader's arguments are being turned into (loader_schema.cc):
// what each option's apply function writes, the shorthands the option table uses, and the
// checks that span several options, run once every option is applied.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/loader_options.h"
#include "python/loader_values.h"

namespace graphstore::python {

/// What the table's apply functions write, and what the checks across options need.
struct Draft {
  client::LoaderOptions options;
  v1::SamplingConfig& config = options.config;
  bool has_num_neighbors = false;
  bool weighted_given = false;  // weighted= other than False
  std::string weight_attr, time_attr, temporal_strategy = "uniform", sampler = "neighbor";
  std::optional<std::vector<int64_t>> input_time;
  bool has_ids = false;
  std::string negative_sampling = "uniform";
  std::optional<Value> ppr;
  bool tls = false;
  std::string token;
  bool token_given = false;
  std::string backend_key;
};

/// Applies one option's value (named, for errors) to the draft.
using Apply = std::function<absl::Status(const std::string&, const Value&, Draft*)>;


/// Shorthands for the option table: a bool, int, str or seconds option written straight into a
/// field of the draft, after the value's check (loader_values.h).
Apply BoolInto(std::function<void(Draft*, bool)> set);
Apply IntInto(int64_t minimum, std::function<void(Draft*, int64_t)> set);
Apply StrInto(std::function<void(Draft*, std::string)> set, bool optional = false);
Apply SecondsInto(double minimum, bool positive, std::function<void(Draft*, std::chrono::milliseconds)> set);

/// The checks and settings that span the sampler's options (the kind, fanouts, PPR's options).
absl::Status FinishSampler(Draft* d);
/// The checks and settings that span the options of weights, times, negatives and seeds.
absl::Status FinishInputs(Draft* d);

}  // namespace graphstore::python

#endif  // GRAPHSTORE_PYTHON_LOADER_DRAFT_H_
