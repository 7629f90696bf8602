// A stand-in for grpcurl (github.com/fullstorydev/grpcurl, not packaged for Debian 12) that runs
// the commands docs/operations.md shows, so that a test can run them as written. Like grpcurl it
// knows no .proto file: it learns the service from the server's reflection, converts the -d
// JSON to the request with the protobuf JSON mapping, and prints each response as JSON with
// lowerCamelCase names (int64 as strings). The subset it takes:
//
//   grpcurl -plaintext [-H 'name: value']... [-d JSON] ADDR SERVICE/METHOD
//   grpcurl -plaintext ADDR list
//   grpcurl -plaintext ADDR describe SYMBOL
//
// A failed call prints "ERROR:", its code (by its Go name, as grpcurl prints it) and message to
// stderr and exits non-zero (64 + the code).

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/sync_stream.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/descriptor_database.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/util/json_util.h"
#include "grpc_probe/reflection_probe.grpc.pb.h"

namespace {

namespace pb = google::protobuf;
namespace reflection = grpc::reflection::v1alpha;

// Every call is bounded, so a command of the docs that would hang fails instead.
constexpr auto kDeadline = std::chrono::seconds(60);

int Usage(const std::string& why) {
  std::cerr << "grpcurl (stand-in): " << why << "\n"
            << "usage: grpcurl -plaintext [-H 'name: value']... [-d JSON] ADDR (list | describe SYMBOL | "
               "SERVICE/METHOD)\n";
  return 2;
}

// grpcurl prints codes by their Go names.
const char* CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  const int c = static_cast<int>(code);
  return c >= 0 && c < static_cast<int>(std::size(kNames)) ? kNames[c] : "Unknown";
}

int Failed(const grpc::Status& status) {
  std::cerr << "ERROR:\n  Code: " << CodeName(status.error_code()) << "\n  Message: " << status.error_message() << "\n";
  return 64 + static_cast<int>(status.error_code());
}

std::unique_ptr<grpc::ClientContext> Context(const std::vector<std::pair<std::string, std::string>>& headers) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + kDeadline);
  for (const auto& [name, value] : headers) ctx->AddMetadata(name, value);
  return ctx;
}

// The server's reflection: the services it lists and the files that define its symbols, with
// every file they import, gathered into a database a descriptor pool builds from.
class Reflection {
 public:
  Reflection(std::shared_ptr<grpc::Channel> channel, const std::vector<std::pair<std::string, std::string>>& headers)
      : stub_(reflection::ServerReflection::NewStub(std::move(channel))), ctx_(Context(headers)) {
    stream_ = stub_->ServerReflectionInfo(ctx_.get());
  }

  ~Reflection() {
    if (finished_) return;
    stream_->WritesDone();
    stream_->Finish();
  }

  // The services the server lists, or the failure.
  grpc::Status List(std::vector<std::string>* services) {
    reflection::ServerReflectionRequest req;
    req.set_list_services("*");
    reflection::ServerReflectionResponse resp;
    grpc::Status s = Ask(req, &resp);
    if (!s.ok()) return s;
    for (const auto& service : resp.list_services_response().service()) services->push_back(service.name());
    return grpc::Status::OK;
  }

  // Loads the file that defines `symbol` and its imports.
  grpc::Status LoadSymbol(const std::string& symbol) {
    reflection::ServerReflectionRequest req;
    req.set_file_containing_symbol(symbol);
    return Load(req);
  }

  const pb::DescriptorPool& pool() const { return pool_; }

 private:
  grpc::Status Ask(const reflection::ServerReflectionRequest& req, reflection::ServerReflectionResponse* resp) {
    if (finished_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the reflection stream ended");
    if (!stream_->Write(req) || !stream_->Read(resp)) {
      stream_->WritesDone();
      finished_ = true;
      grpc::Status s = stream_->Finish();
      return s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the reflection stream ended") : s;
    }
    if (resp->has_error_response()) {
      return grpc::Status(static_cast<grpc::StatusCode>(resp->error_response().error_code()),
                          resp->error_response().error_message());
    }
    return grpc::Status::OK;
  }

  grpc::Status Load(const reflection::ServerReflectionRequest& req) {
    reflection::ServerReflectionResponse resp;
    grpc::Status s = Ask(req, &resp);
    if (!s.ok()) return s;
    std::vector<std::string> imports;
    for (const auto& bytes : resp.file_descriptor_response().file_descriptor_proto()) {
      pb::FileDescriptorProto file;
      if (!file.ParseFromString(bytes)) {
        return grpc::Status(grpc::StatusCode::INTERNAL, "reflection sent a file descriptor that does not parse");
      }
      if (!files_.insert(file.name()).second) continue;
      for (const auto& dep : file.dependency()) imports.push_back(dep);
      database_.Add(file);
    }
    for (const auto& name : imports) {
      if (files_.count(name) != 0) continue;
      reflection::ServerReflectionRequest by_name;
      by_name.set_file_by_filename(name);
      s = Load(by_name);
      if (!s.ok()) return s;
    }
    return grpc::Status::OK;
  }

  std::unique_ptr<reflection::ServerReflection::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<reflection::ServerReflectionRequest, reflection::ServerReflectionResponse>>
      stream_;
  bool finished_ = false;
  std::set<std::string> files_;
  pb::SimpleDescriptorDatabase database_;
  pb::DescriptorPool pool_{&database_};
};

int Print(const pb::Message& message) {
  pb::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string json;
  const auto s = pb::util::MessageToJsonString(message, &json, options);
  if (!s.ok()) {
    std::cerr << "ERROR: cannot print the response as JSON: " << s.ToString() << "\n";
    return 1;
  }
  std::cout << json;
  return 0;
}

int Invoke(const std::shared_ptr<grpc::Channel>& channel, Reflection& reflection,
           const std::vector<std::pair<std::string, std::string>>& headers, const std::string& target,
           const std::string& data) {
  const auto slash = target.rfind('/');
  if (slash == std::string::npos) return Usage("expected SERVICE/METHOD, got '" + target + "'");
  const std::string service_name = target.substr(0, slash);
  grpc::Status s = reflection.LoadSymbol(service_name);
  if (!s.ok()) return Failed(s);
  const pb::ServiceDescriptor* service = reflection.pool().FindServiceByName(service_name);
  const pb::MethodDescriptor* method =
      service != nullptr ? service->FindMethodByName(target.substr(slash + 1)) : nullptr;
  if (method == nullptr) {
    std::cerr << "ERROR: the server has no method " << target << "\n";
    return 1;
  }
  if (method->client_streaming()) return Usage(target + " takes a stream of requests; the stand-in sends one");

  pb::DynamicMessageFactory factory(&reflection.pool());
  std::unique_ptr<pb::Message> request(factory.GetPrototype(method->input_type())->New());
  if (!data.empty()) {
    const auto parsed = pb::util::JsonStringToMessage(data, request.get());
    if (!parsed.ok()) {
      std::cerr << "ERROR: -d does not fit " << method->input_type()->full_name() << ": " << parsed.ToString() << "\n";
      return 1;
    }
  }
  std::unique_ptr<pb::Message> response(factory.GetPrototype(method->output_type())->New());
  const std::string path = "/" + service_name + "/" + method->name();
  auto ctx = Context(headers);
  if (!method->server_streaming()) {
    grpc::internal::RpcMethod rpc(path.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, channel);
    s = grpc::internal::BlockingUnaryCall<pb::Message, pb::Message>(channel.get(), rpc, ctx.get(), *request,
                                                                    response.get());
    if (!s.ok()) return Failed(s);
    const int printed = Print(*response);
    std::cout << "\n";
    return printed;
  }
  grpc::internal::RpcMethod rpc(path.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING, channel);
  std::unique_ptr<grpc::ClientReader<pb::Message>> reader(
      grpc::internal::ClientReaderFactory<pb::Message>::Create(channel.get(), rpc, ctx.get(), *request));
  for (bool first = true; reader->Read(response.get()); first = false) {
    if (!first) std::cout << "\n";
    if (Print(*response) != 0) {
      ctx->TryCancel();
      reader->Finish();
      return 1;
    }
    std::cout << "\n";
    response->Clear();
  }
  s = reader->Finish();
  return s.ok() ? 0 : Failed(s);
}

}  // namespace

int main(int argc, char** argv) {
  bool plaintext = false;
  std::string data;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-plaintext") {
      plaintext = true;
    } else if (arg == "-d" || arg == "-H") {
      if (i + 1 == argc) return Usage(arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "-d") {
        data = value;
        continue;
      }
      const auto colon = value.find(':');
      if (colon == std::string::npos) return Usage("-H takes 'name: value', got '" + value + "'");
      std::string name = value.substr(0, colon), header = value.substr(colon + 1);
      while (!header.empty() && header.front() == ' ') header.erase(0, 1);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      headers.emplace_back(name, header);
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage("the stand-in does not take " + arg);
    } else {
      positional.push_back(arg);
    }
  }
  if (!plaintext) return Usage("the stand-in only speaks plaintext: pass -plaintext");
  if (positional.size() < 2) return Usage("missing the address or what to do");
  auto channel = grpc::CreateChannel(positional[0], grpc::InsecureChannelCredentials());
  Reflection reflection(channel, headers);

  const std::string& verb = positional[1];
  if (verb == "list") {
    if (positional.size() != 2) return Usage("list of one service is not supported");
    std::vector<std::string> services;
    grpc::Status s = reflection.List(&services);
    if (!s.ok()) return Failed(s);
    std::sort(services.begin(), services.end());
    for (const auto& name : services) std::cout << name << "\n";
    return 0;
  }
  if (verb == "describe") {
    if (positional.size() != 3) return Usage("describe takes one symbol");
    const std::string& symbol = positional[2];
    grpc::Status s = reflection.LoadSymbol(symbol);
    if (!s.ok()) return Failed(s);
    const pb::DescriptorPool& pool = reflection.pool();
    if (const auto* service = pool.FindServiceByName(symbol)) {
      std::cout << symbol << " is a service:\n" << service->DebugString();
    } else if (const auto* message = pool.FindMessageTypeByName(symbol)) {
      std::cout << symbol << " is a message:\n" << message->DebugString();
    } else if (const auto* e = pool.FindEnumTypeByName(symbol)) {
      std::cout << symbol << " is an enum:\n" << e->DebugString();
    } else {
      std::cerr << "ERROR: the server's reflection does not define " << symbol << "\n";
      return 1;
    }
    return 0;
  }
  if (positional.size() != 2) return Usage("one method at a time");
  return Invoke(channel, reflection, headers, verb, data);
}
