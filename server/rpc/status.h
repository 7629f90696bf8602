#ifndef GRAPHSTORE_SERVER_RPC_STATUS_H_
#define GRAPHSTORE_SERVER_RPC_STATUS_H_

// The one conversion from the core's absl::Status to what a gRPC call answers: every unary RPC
// and every stream ends through it.

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace graphstore {

/// Converts a core status to gRPC, keeping the canonical code and bounding the message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_RPC_STATUS_H_
