// SHA-256 (OpenSSL's libcrypto), as lower-case hex: the hashes that name package layers, that
// results report for each wheel, and that an index's pages promise for its files.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace mcpexec::packages {

// A digest fed piece by piece.
class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // The digest of everything fed; call once.
  std::string HexDigest();

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

std::string Sha256Hex(std::string_view data);

// The digest of the regular file `name` in the directory `dirfd`, opened without following a
// link; an error for anything else.
Result<std::string> Sha256OfFile(int dirfd, const std::string& name);

}  // namespace mcpexec::packages
