#ifndef GRAPHSTORE_COMMON_CHANNEL_H_
#define GRAPHSTORE_COMMON_CHANNEL_H_

// Opens a gRPC channel to a graphstored with the given security: TLS credentials from PEM
// files, and an interceptor that adds the bearer token to every call (unary, streaming and
// the raw stream of decoded batches alike). Used by the client and by servers calling their
// cluster's peers.

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "common/security.h"

namespace graphstore {

/// The text of a PEM file; errors name `what` (e.g. "--tls_ca") and the path.
absl::StatusOr<std::string> ReadPemFile(const std::string& path, const std::string& what);

/// A channel to `address` with `security` and `args`. Errors: a file that cannot be read, an
/// invalid combination of options. The channel connects lazily.
absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(const std::string& address, const ChannelSecurity& security,
                                                           grpc::ChannelArguments args);

}  // namespace graphstore

#endif  // GRAPHSTORE_COMMON_CHANNEL_H_
