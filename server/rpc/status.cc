#include "server/rpc/status.h"

#include <string>

namespace graphstore {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  constexpr size_t kMaxMessage = 1024;
  std::string message(status.message().substr(0, kMaxMessage));
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(status.code())), message);
}

}  // namespace graphstore
