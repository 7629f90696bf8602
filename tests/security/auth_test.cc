// The token file and the authentication of a call, without gRPC.

#include <catch2/catch.hpp>

#include "server/security/auth.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

const char kFile[] =
    "# comment\n"
    "\n"
    "aaaaaaaaaaaaaaaaaaaa trainer-a trainer\n"
    "bbbbbbbbbbbbbbbbbbbb ops operator\n"
    "cccccccccccccccccccc server-0 peer,trainer\n"
    "cert graphstore-server peer\n";

TEST_CASE("the token file parses tokens, certificate lines and comments", "[auth]") {
  auto t = TokenTable::Parse(kFile, "tokens.txt");
  REQUIRE(t.ok());
  CHECK(t->num_tokens() == 3);
  CHECK(t->num_certificates() == 1);
  REQUIRE(t->FindToken("aaaaaaaaaaaaaaaaaaaa") != nullptr);
  CHECK(t->FindToken("aaaaaaaaaaaaaaaaaaaa")->identity == "trainer-a");
  CHECK(t->FindToken("cccccccccccccccccccc")->roles == (kRolePeer | kRoleTrainer));
  CHECK(t->FindToken("aaaaaaaaaaaaaaaaaaab") == nullptr);
  CHECK(t->FindCertificate("graphstore-server")->roles == kRolePeer);
  CHECK(t->FindCertificate("trainer-a") == nullptr);
}

TEST_CASE("a bad token file is refused naming the file and the line", "[auth]") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"aaaaaaaaaaaaaaaaaaaa trainer-a\n", "tokens.txt:1: expected 'TOKEN IDENTITY ROLE[,ROLE...]', got 2 words"},
      {"# x\naaaaaaaaaaaaaaaaaaaa a trainer extra\n", "tokens.txt:2: expected"},
      {"aaaaaaaaaaaaaaaaaaaa a admin\n", "tokens.txt:1: unknown role 'admin'"},
      {"aaaaaaaaaaaaaaaaaaaa a trainer,\n", "tokens.txt:1: unknown role ''"},
      {"short a trainer\n", "tokens.txt:1: the token of 'a' is shorter than 16 characters"},
      {"aaaaaaaaaaaaaaaaaaaa a trainer\naaaaaaaaaaaaaaaaaaaa b trainer\n", "tokens.txt:2: a token is listed twice"},
      {"cert x peer\ncert x trainer\n", "tokens.txt:2: certificate 'x' is listed twice"},
  };
  for (const Case& c : cases) {
    auto t = TokenTable::Parse(c.text, "tokens.txt");
    INFO(c.text);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(t.status().message()), Catch::Contains(c.message));
  }
  auto missing = TokenTable::Load("/nonexistent/tokens.txt");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("/nonexistent/tokens.txt"));
}

TEST_CASE("without tokens or client certificates every call is the anonymous caller", "[auth]") {
  auto a = Authenticator::Create({});
  REQUIRE(a.ok());
  CHECK_FALSE((*a)->enabled());
  auto p = (*a)->Authenticate({});
  REQUIRE(p.ok());
  CHECK(p->caller.identity.empty());
  CHECK(p->roles == kAllRoles);
}

TEST_CASE("calls are authenticated by bearer token or certificate, and authorised by role", "[auth]") {
  testing::TempDir dir;
  testing::WriteFile(dir / "tokens", kFile);
  auto created = Authenticator::Create({dir / "tokens", /*client_certificates=*/true});
  REQUIRE(created.ok());
  const Authenticator& a = **created;

  auto none = a.Authenticate({});
  CHECK(none.status().code() == absl::StatusCode::kUnauthenticated);
  CHECK_THAT(std::string(none.status().message()), Catch::Contains("no credentials"));
  CHECK(a.Authenticate({std::string("Bearer nope-nope-nope-nope"), ""}).status().code() ==
        absl::StatusCode::kUnauthenticated);
  CHECK(a.Authenticate({std::string("Basic aaaaaaaaaaaaaaaaaaaa"), ""}).status().code() ==
        absl::StatusCode::kUnauthenticated);

  auto trainer = a.Authenticate({std::string("Bearer aaaaaaaaaaaaaaaaaaaa"), ""});
  REQUIRE(trainer.ok());
  CHECK(trainer->caller.identity == "trainer-a");
  CHECK_FALSE(trainer->caller.sees_everything);
  CHECK(Authenticator::Authorize(*trainer, kRoleTrainer, "StartEpoch").ok());
  auto denied = Authenticator::Authorize(*trainer, kRoleOperator, "Exit");
  CHECK(denied.code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(denied.message()),
             Catch::Contains("identity 'trainer-a' (role trainer) may not call Exit; it needs operator"));

  auto ops = a.Authenticate({std::string("bearer bbbbbbbbbbbbbbbbbbbb"), ""});  // the scheme is case-insensitive
  REQUIRE(ops.ok());
  CHECK(ops->caller.sees_everything);

  auto peer = a.Authenticate({std::nullopt, "graphstore-server"});
  REQUIRE(peer.ok());
  CHECK(peer->roles == kRolePeer);
  auto unlisted = a.Authenticate({std::nullopt, "trainer-b"});
  CHECK(unlisted.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(unlisted.status().message()), Catch::Contains("client certificate 'trainer-b' has no role"));
}

TEST_CASE("a reload takes new tokens; a broken file keeps the tokens in use", "[auth]") {
  testing::TempDir dir;
  testing::WriteFile(dir / "tokens", "aaaaaaaaaaaaaaaaaaaa trainer-a trainer\n");
  auto created = Authenticator::Create({dir / "tokens", false});
  REQUIRE(created.ok());
  Authenticator& a = **created;
  const std::optional<std::string> old_token = "Bearer aaaaaaaaaaaaaaaaaaaa";
  const std::optional<std::string> new_token = "Bearer dddddddddddddddddddd";
  CHECK(a.Authenticate({old_token, ""}).ok());
  CHECK_FALSE(a.Authenticate({new_token, ""}).ok());

  testing::WriteFile(dir / "tokens", "dddddddddddddddddddd trainer-d trainer\n");
  REQUIRE(a.Reload().ok());
  CHECK_FALSE(a.Authenticate({old_token, ""}).ok());
  CHECK(a.Authenticate({new_token, ""})->caller.identity == "trainer-d");

  testing::WriteFile(dir / "tokens", "broken\n");
  CHECK_FALSE(a.Reload().ok());
  CHECK(a.Authenticate({new_token, ""}).ok());
}

}  // namespace
}  // namespace graphstore
