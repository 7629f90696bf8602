#include "server/security/tls.h"

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <grpcpp/security/server_credentials.h>

#include "absl/strings/str_cat.h"
#include "common/channel.h"

namespace graphstore {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

Bio MemoryBio(const std::string& pem) { return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

// The first certificate of a PEM text, checked to be within its validity period.
absl::StatusOr<Certificate> ReadCertificate(const std::string& pem, const std::string& flag,
                                            const std::string& path) {
  Bio bio = MemoryBio(pem);
  Certificate cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(flag, "=", path, " holds no PEM certificate"));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert.get())) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(flag, "=", path, ": the certificate has expired"));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert.get())) > 0) {
    return absl::InvalidArgumentError(absl::StrCat(flag, "=", path, ": the certificate is not valid yet"));
  }
  return cert;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const ServerTlsOptions& options) {
  if (!options.enabled()) {
    if (!options.key_file.empty()) return absl::InvalidArgumentError("--tls_key needs --tls_cert");
    if (options.mutual()) return absl::InvalidArgumentError("--tls_client_ca needs --tls_cert and --tls_key");
    return grpc::InsecureServerCredentials();
  }
  if (options.key_file.empty()) return absl::InvalidArgumentError("--tls_cert needs --tls_key");
  auto cert_pem = ReadPemFile(options.cert_file, "--tls_cert");
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadPemFile(options.key_file, "--tls_key");
  if (!key_pem.ok()) return key_pem.status();
  auto cert = ReadCertificate(*cert_pem, "--tls_cert", options.cert_file);
  if (!cert.ok()) return cert.status();
  Bio key_bio = MemoryBio(*key_pem);
  Key key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_key=", options.key_file, " holds no PEM private key"));
  }
  if (X509_check_private_key(cert->get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_key=", options.key_file,
                                                   " is not the key of the certificate in --tls_cert=",
                                                   options.cert_file));
  }
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
  if (options.mutual()) {
    auto ca_pem = ReadPemFile(options.client_ca_file, "--tls_client_ca");
    if (!ca_pem.ok()) return ca_pem.status();
    if (auto ca = ReadCertificate(*ca_pem, "--tls_client_ca", options.client_ca_file); !ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca_pem;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace graphstore
