#ifndef GRAPHSTORE_SERVER_SECURITY_AUTH_H_
#define GRAPHSTORE_SERVER_SECURITY_AUTH_H_

// Who may call what. Every call carries an identity: the bearer token of its
// `authorization: Bearer TOKEN` metadata, or the common name of the client certificate that
// mutual TLS verified. The token file (--auth_tokens) maps tokens to an identity and its
// roles, one `TOKEN IDENTITY ROLE[,ROLE...]` a line; a line whose first word is `cert` gives
// the roles to the client certificate whose common name is IDENTITY. Roles:
//
//   trainer   the sampling lifecycle of its own channels, and reads (features, labels, ids)
//   operator  server stats, describing every channel and backend, Exit
//   peer      what the servers of a cluster ask each other (SampleNeighbors, node data)
//
// Without a token file and without client certificates nothing is checked: every call is the
// one anonymous caller (single-user development). With client certificates but no token file,
// every certificate the CA signed has every role.
//
// No gRPC here: the service adapter extracts the metadata and the certificate's name.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/service/caller.h"

namespace graphstore {

/// Roles, as bits.
enum Role : uint32_t {
  kRoleTrainer = 1,
  kRoleOperator = 2,
  kRolePeer = 4,
  kAllRoles = 7,
};

/// "trainer,operator" for kRoleTrainer | kRoleOperator.
std::string RoleNames(uint32_t roles);

/// An authenticated call: the core's view of the caller, and its roles.
struct Principal {
  Caller caller;
  uint32_t roles = kAllRoles;
};

/// The parsed token file.
class TokenTable {
 public:
  /// Tokens shorter than this are refused: they could be guessed.
  static constexpr size_t kMinTokenLength = 16;

  /// Parses the file's text; errors name `path` and the line.
  static absl::StatusOr<TokenTable> Parse(const std::string& text, const std::string& path);
  /// Reads and parses the file at `path`.
  static absl::StatusOr<TokenTable> Load(const std::string& path);

  struct Entry {
    std::string identity;
    uint32_t roles = 0;
  };
  /// The entry of a bearer token, or null.
  const Entry* FindToken(const std::string& token) const;
  /// The entry of a client certificate's common name, or null.
  const Entry* FindCertificate(const std::string& common_name) const;
  size_t num_tokens() const { return tokens_.size(); }
  size_t num_certificates() const { return certificates_.size(); }

 private:
  std::map<std::string, Entry> tokens_;
  std::map<std::string, Entry> certificates_;
};

/// Authenticates calls. Thread-safe; Reload swaps the table atomically.
class Authenticator {
 public:
  struct Options {
    /// The token file; empty: no tokens.
    std::string tokens_file;
    /// Whether mutual TLS verifies client certificates.
    bool client_certificates = false;
  };
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(Options options);

  /// Whether calls are checked at all.
  bool enabled() const { return !options_.tokens_file.empty() || options_.client_certificates; }
  /// Reads the token file again (SIGHUP). On error the table in use is kept.
  absl::Status Reload();

  /// What a call presents: its `authorization` metadata, if any, and the common name of its
  /// verified client certificate (empty without one).
  struct Presented {
    std::optional<std::string> authorization;
    std::string certificate_name;
  };
  /// The caller, or UNAUTHENTICATED (no or unknown credentials) / PERMISSION_DENIED (a known
  /// identity without a role here).
  absl::StatusOr<Principal> Authenticate(const Presented& presented) const;
  /// PERMISSION_DENIED unless `principal` has one of `allowed` for `method`.
  static absl::Status Authorize(const Principal& principal, uint32_t allowed, const char* method);

 private:
  explicit Authenticator(Options options) : options_(std::move(options)) {}

  const Options options_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const TokenTable> table_ ABSL_GUARDED_BY(mu_);  // null without a token file
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SECURITY_AUTH_H_
