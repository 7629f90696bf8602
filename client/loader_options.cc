#include "client/loader_options.h"

#include <cstdio>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace graphstore::client {

absl::StatusOr<v1::FeatureEncoding> ParseFeatureEncoding(const std::string& name) {
  v1::FeatureEncoding e = v1::FEATURE_ENCODING_UNSPECIFIED;
  if (name.empty()) return e;
  if (!v1::FeatureEncoding_Parse(absl::StrCat("FEATURE_ENCODING_", absl::AsciiStrToUpper(name)), &e)) {
    return absl::InvalidArgumentError(absl::StrCat("feature encoding '", name,
                                                   "' is not one of float32, float16, bfloat16, int8, int4, int2, int1"));
  }
  return e;
}

std::string DefaultBackendKey(const v1::SamplingConfig& config, const v1::SamplerOptions& options) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    config.SerializeToCodedStream(&coded);
    options.SerializeToCodedStream(&coded);
  }
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return absl::StrCat("auto/", hex);
}

absl::Status ValidateLoaderOptions(const LoaderOptions& o) {
  if (o.servers.empty()) return absl::InvalidArgumentError("LoaderOptions.servers is empty");
  if (o.prefetch < 1) return absl::InvalidArgumentError("LoaderOptions.prefetch must be >= 1");
  if (o.connections_per_server < 0 || o.connections_per_server > kMaxConnectionsPerServer) {
    return absl::InvalidArgumentError(absl::StrCat("LoaderOptions.connections_per_server must be in [0, ",
                                                   kMaxConnectionsPerServer, "], got ", o.connections_per_server));
  }
  if (o.feature_cache_rows < 0) return absl::InvalidArgumentError("LoaderOptions.feature_cache_rows must be >= 0");
  if (o.reconnect_deadline.count() < 0) {
    return absl::InvalidArgumentError("LoaderOptions.reconnect_deadline must be >= 0");
  }
  if (o.reconnect_backoff_max < kFirstBackoff) {
    return absl::InvalidArgumentError(
        absl::StrCat("LoaderOptions.reconnect_backoff_max must be >= ", kFirstBackoff.count(), " ms"));
  }
  if (!o.seed_times.empty() && o.seed_times.size() != o.seeds.size()) {
    return absl::InvalidArgumentError(absl::StrCat("LoaderOptions.seed_times has ", o.seed_times.size(),
                                                   " entries for ", o.seeds.size(), " seeds; give one time per seed"));
  }
  return o.security.Check();
}

int DefaultConnectionsPerServer() {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores >= 16 ? 4 : cores >= 8 ? 2 : 1;
}

}  // namespace graphstore::client
