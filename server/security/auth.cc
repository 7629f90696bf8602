#include "server/security/auth.h"

#include <openssl/sha.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace graphstore {
namespace {

constexpr char kCertificateWord[] = "cert";

// Tokens are looked up by their SHA-256, so that the lookup's timing says nothing about how
// much of a guessed token matched.
std::string Digest(const std::string& token) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), md);
  return std::string(reinterpret_cast<const char*>(md), sizeof(md));
}

absl::StatusOr<uint32_t> ParseRoles(const std::string& text, const std::string& where) {
  uint32_t roles = 0;
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    if (name == "trainer") {
      roles |= kRoleTrainer;
    } else if (name == "operator") {
      roles |= kRoleOperator;
    } else if (name == "peer") {
      roles |= kRolePeer;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": unknown role '", name, "' (roles: trainer, operator, peer)"));
    }
  }
  return roles;
}

}  // namespace

std::string RoleNames(uint32_t roles) {
  std::vector<std::string> names;
  if (roles & kRoleTrainer) names.push_back("trainer");
  if (roles & kRoleOperator) names.push_back("operator");
  if (roles & kRolePeer) names.push_back("peer");
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

absl::StatusOr<TokenTable> TokenTable::Parse(const std::string& text, const std::string& path) {
  TokenTable table;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = absl::StrCat(path, ":", number);
    absl::string_view content = absl::StripAsciiWhitespace(line);
    if (content.empty() || content.front() == '#') continue;
    std::vector<std::string> words = absl::StrSplit(content, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected 'TOKEN IDENTITY ROLE[,ROLE...]', got ", words.size(), " words"));
    }
    auto roles = ParseRoles(words[2], where);
    if (!roles.ok()) return roles.status();
    Entry entry{words[1], *roles};
    if (words[0] == kCertificateWord) {
      if (!table.certificates_.emplace(words[1], entry).second) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": certificate '", words[1], "' is listed twice"));
      }
      continue;
    }
    if (words[0].size() < kMinTokenLength) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the token of '", words[1], "' is shorter than ",
                                                     kMinTokenLength, " characters"));
    }
    if (!table.tokens_.emplace(Digest(words[0]), entry).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": a token is listed twice"));
    }
  }
  return table;
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the token file ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read the token file ", path));
  return Parse(text.str(), path);
}

const TokenTable::Entry* TokenTable::FindToken(const std::string& token) const {
  auto it = tokens_.find(Digest(token));
  return it == tokens_.end() ? nullptr : &it->second;
}

const TokenTable::Entry* TokenTable::FindCertificate(const std::string& common_name) const {
  auto it = certificates_.find(common_name);
  return it == certificates_.end() ? nullptr : &it->second;
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(Options options) {
  std::unique_ptr<Authenticator> a(new Authenticator(std::move(options)));
  if (!a->options_.tokens_file.empty()) {
    if (auto s = a->Reload(); !s.ok()) return s;
  }
  return a;
}

absl::Status Authenticator::Reload() {
  if (options_.tokens_file.empty()) return absl::OkStatus();
  auto table = TokenTable::Load(options_.tokens_file);
  if (!table.ok()) return table.status();
  auto shared = std::make_shared<const TokenTable>(*std::move(table));
  absl::MutexLock lock(&mu_);
  table_ = std::move(shared);
  return absl::OkStatus();
}

absl::StatusOr<Principal> Authenticator::Authenticate(const Presented& presented) const {
  if (!enabled()) return Principal();
  std::shared_ptr<const TokenTable> table;
  {
    absl::MutexLock lock(&mu_);
    table = table_;
  }
  if (presented.authorization.has_value()) {
    const std::string& header = *presented.authorization;
    constexpr absl::string_view kScheme = "bearer ";
    if (header.size() <= kScheme.size() || !absl::StartsWithIgnoreCase(header, kScheme)) {
      return absl::UnauthenticatedError("the authorization metadata is not 'Bearer TOKEN'");
    }
    const TokenTable::Entry* entry = table == nullptr ? nullptr : table->FindToken(header.substr(kScheme.size()));
    if (entry == nullptr) return absl::UnauthenticatedError("the bearer token is not known to this server");
    return Principal{Caller::Named(entry->identity, (entry->roles & kRoleOperator) != 0), entry->roles};
  }
  if (!presented.certificate_name.empty()) {
    if (table == nullptr) return Principal{Caller::Named(presented.certificate_name, true), kAllRoles};
    const TokenTable::Entry* entry = table->FindCertificate(presented.certificate_name);
    if (entry == nullptr) {
      return absl::PermissionDeniedError(absl::StrCat("client certificate '", presented.certificate_name,
                                                      "' has no role on this server (no 'cert' line in --auth_tokens)"));
    }
    return Principal{Caller::Named(entry->identity, (entry->roles & kRoleOperator) != 0), entry->roles};
  }
  return absl::UnauthenticatedError(
      "the call carries no credentials: send 'authorization: Bearer TOKEN' metadata or a client certificate");
}

absl::Status Authenticator::Authorize(const Principal& principal, uint32_t allowed, const char* method) {
  if ((principal.roles & allowed) != 0) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("identity '", principal.caller.identity, "' (role ",
                                                  RoleNames(principal.roles), ") may not call ", method, "; it needs ",
                                                  RoleNames(allowed)));
}

}  // namespace graphstore
