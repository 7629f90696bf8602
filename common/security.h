#ifndef GRAPHSTORE_COMMON_SECURITY_H_
#define GRAPHSTORE_COMMON_SECURITY_H_

// How a connection to a graphstored proves whom it talks to and who it is: TLS with the CA
// that signed the server's certificate, a client certificate for mutual TLS, and a bearer
// token sent with every call. No gRPC types here; common/channel.h opens the channel.

#include <string>

#include "absl/status/status.h"

namespace graphstore {

/// Transport security and credentials of a connection. The default is plaintext with no
/// credentials (a server on loopback without authentication).
struct ChannelSecurity {
  /// Use TLS. Implied by any of the files below.
  bool tls = false;
  /// PEM file of the CA that signed the server's certificate; empty with tls: the system's roots.
  std::string ca_file;
  /// PEM files of the client certificate (chain) and its key, for servers that require mutual
  /// TLS; both or neither.
  std::string cert_file;
  std::string key_file;
  /// The name the server's certificate must carry when it is not the host of the address
  /// (e.g. connecting to 127.0.0.1 with a certificate for "graphstore.internal").
  std::string server_name;
  /// Bearer token sent as `authorization: Bearer TOKEN` with every call; empty: none.
  std::string token;

  bool uses_tls() const { return tls || !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
  /// InvalidArgument for a half-given client certificate, a token with whitespace or a server
  /// name without TLS; the files are read when the channel opens.
  absl::Status Check() const;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_COMMON_SECURITY_H_
