// Proves that every system library the build wires in compiles and links from Bazel:
// LibTorch, spdlog, gRPC with health checking and reflection, and the generated contract.

// LibTorch comes first: Debian builds it with glog, whose CHECK macro Catch2 then redefines.
#include <torch/torch.h>
#undef CHECK
#include <catch2/catch.hpp>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "graphstore/v1/graphstore.grpc.pb.h"

TEST_CASE("LibTorch wraps raw bytes without copying and computes on them", "[toolchain]") {
  float data[6] = {1, 2, 3, 4, 5, 6};
  at::Tensor t = torch::from_blob(data, {2, 3}, torch::kFloat32);
  CHECK(t.data_ptr<float>() == data);
  CHECK(t.sum().item<float>() == 21.0f);
  CHECK(torch::matmul(t, t.t()).size(0) == 2);
}

TEST_CASE("spdlog writes through a named logger", "[toolchain]") {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("toolchain", sink);
  logger.info("listening on port {}", 1234);
  logger.flush();
  CHECK(out.str().find("listening on port 1234") != std::string::npos);
}

TEST_CASE("a gRPC server with health and reflection binds port 0", "[toolchain]") {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  graphstore::v1::GraphStore::CallbackService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  CHECK(port > 0);
  // The contract's unimplemented methods answer UNIMPLEMENTED rather than hanging.
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto stub = graphstore::v1::GraphStore::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  graphstore::v1::DatasetMeta meta;
  const grpc::Status st = stub->GetDatasetMeta(&ctx, graphstore::v1::GetDatasetMetaRequest(), &meta);
  CHECK(st.error_code() == grpc::StatusCode::UNIMPLEMENTED);
  server->Shutdown();
}
