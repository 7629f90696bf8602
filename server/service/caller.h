#ifndef GRAPHSTORE_SERVER_SERVICE_CALLER_H_
#define GRAPHSTORE_SERVER_SERVICE_CALLER_H_

// Who makes a call, as far as the core cares: the identity that owns the channels it
// registers and is charged for them (quotas), and whether it may look at everything
// (operators). The gRPC adapter authenticates the call (server/security/auth.h) and builds it.

#include <string>

namespace graphstore {

/// The caller of a core method.
struct Caller {
  /// The authenticated identity; empty when the server runs without authentication, in which
  /// case every caller is the same anonymous one and owns every channel.
  std::string identity;
  /// Describes every channel and backend, whoever owns them (operators; everyone without
  /// authentication). Ending or driving another identity's channel is never allowed.
  bool sees_everything = true;

  /// The caller of a server without authentication.
  static Caller Anonymous() { return Caller(); }
  /// An authenticated caller.
  static Caller Named(std::string identity, bool sees_everything) {
    Caller c;
    c.identity = std::move(identity);
    c.sees_everything = sees_everything;
    return c;
  }
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_SERVICE_CALLER_H_
