// SHA-256 (OpenSSL's libcrypto), as lower-case hex: the hashes that name package layers, that
// results report for each wheel, and that an index's pages promise for its files.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace mcpexec::packages {

struct CryptoLibrary;

// A digest fed piece by piece. libcrypto (libraries.h) must load: PackageLayers::Open checks it
// before any digest is made, and a digest made without it aborts.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view data);
  // The digest of everything fed; call once.
  std::string HexDigest();

 private:
  const CryptoLibrary* lib_;
  EVP_MD_CTX* ctx_;
};

std::string Sha256Hex(std::string_view data);

// Whether `text` is a SHA-256 as this module writes it: 64 lower-case hex digits.
bool IsSha256Hex(std::string_view text);

// The digest of the regular file `name` in the directory `dirfd`, opened without following a
// link; an error for anything else.
Result<std::string> Sha256OfFile(int dirfd, const std::string& name);

}  // namespace mcpexec::packages
