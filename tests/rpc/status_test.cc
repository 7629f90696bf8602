// The one conversion from the core's statuses to what a gRPC call answers.

#include <catch2/catch.hpp>

#include <string>

#include "server/rpc/status.h"

namespace graphstore {
namespace {

TEST_CASE("a core status keeps its canonical code and its message", "[rpc]") {
  for (absl::StatusCode code : {absl::StatusCode::kInvalidArgument, absl::StatusCode::kNotFound,
                                absl::StatusCode::kResourceExhausted, absl::StatusCode::kFailedPrecondition,
                                absl::StatusCode::kUnavailable, absl::StatusCode::kDataLoss}) {
    const grpc::Status s = ToGrpcStatus(absl::Status(code, "channel_id 7 does not exist"));
    CHECK(static_cast<int>(s.error_code()) == static_cast<int>(code));
    CHECK(s.error_message() == "channel_id 7 does not exist");
  }
  CHECK(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST_CASE("a long message is cut to 1024 bytes", "[rpc]") {
  const grpc::Status s = ToGrpcStatus(absl::InvalidArgumentError(std::string(5000, 'x')));
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message().size() == 1024);
}

}  // namespace
}  // namespace graphstore
