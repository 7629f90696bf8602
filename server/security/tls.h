#ifndef GRAPHSTORE_SERVER_SECURITY_TLS_H_
#define GRAPHSTORE_SERVER_SECURITY_TLS_H_

// The daemon's TLS: its certificate and key, and the CA whose client certificates it accepts
// (mutual TLS). The files are checked with OpenSSL at start-up, so that a wrong file is an
// error naming it rather than a listener that fails every handshake. gRPC's own credentials do
// the rest.

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"

namespace graphstore {

/// --tls_cert, --tls_key, --tls_client_ca.
struct ServerTlsOptions {
  /// PEM certificate chain of the server and its private key; empty: plaintext.
  std::string cert_file;
  std::string key_file;
  /// PEM CA certificates; when set, clients must present a certificate one of them signed.
  std::string client_ca_file;

  bool enabled() const { return !cert_file.empty(); }
  bool mutual() const { return !client_ca_file.empty(); }
};

/// The listener's credentials: insecure without TLS, else TLS (requiring and verifying client
/// certificates with a client CA). InvalidArgument naming the flag for a missing, unreadable,
/// mismatched or expired file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const ServerTlsOptions& options);

/// Whether `host` (as given to --host) only reaches this machine.
bool IsLoopbackHost(const std::string& host);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SECURITY_TLS_H_
