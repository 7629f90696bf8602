#include "common/channel.h"

#include <fstream>
#include <sstream>

#include <grpcpp/support/client_interceptor.h>

#include "absl/strings/str_cat.h"

namespace graphstore {
namespace {

using grpc::experimental::ClientInterceptorFactoryInterface;
using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::Interceptor;
using grpc::experimental::InterceptorBatchMethods;

// Adds the bearer token to the initial metadata of every call of the channel. Call
// credentials would do the same over TLS only; the interceptor also serves a plaintext
// loopback server with tokens (development).
class BearerToken final : public Interceptor {
 public:
  explicit BearerToken(const std::string* header) : header_(header) {}
  void Intercept(InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", *header_);
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

class BearerTokenFactory final : public ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenFactory(const std::string& token) : header_(absl::StrCat("Bearer ", token)) {}
  Interceptor* CreateClientInterceptor(ClientRpcInfo*) override { return new BearerToken(&header_); }

 private:
  const std::string header_;
};

}  // namespace

absl::Status ChannelSecurity::Check() const {
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert and tls_key go together: give both or neither");
  }
  if (!server_name.empty() && !uses_tls()) {
    return absl::InvalidArgumentError("tls_server_name needs TLS (tls_ca or tls)");
  }
  for (char c : token) {
    if (c <= ' ' || c == 0x7f) return absl::InvalidArgumentError("token contains whitespace or control characters");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(what, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", path, " is not a PEM file"));
  }
  return text.str();
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(const std::string& address, const ChannelSecurity& security,
                                                           grpc::ChannelArguments args) {
  if (auto s = security.Check(); !s.ok()) return s;
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (security.uses_tls()) {
    grpc::SslCredentialsOptions ssl;
    if (!security.ca_file.empty()) {
      auto ca = ReadPemFile(security.ca_file, "tls_ca");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *std::move(ca);
    }
    if (!security.cert_file.empty()) {
      auto cert = ReadPemFile(security.cert_file, "tls_cert");
      if (!cert.ok()) return cert.status();
      auto key = ReadPemFile(security.key_file, "tls_key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    credentials = grpc::SslCredentials(ssl);
    if (!security.server_name.empty()) args.SetSslTargetNameOverride(security.server_name);
  }
  if (security.token.empty()) return grpc::CreateCustomChannel(address, credentials, args);
  std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<BearerTokenFactory>(security.token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, credentials, args, std::move(interceptors));
}

}  // namespace graphstore
