// SHA-256 (OpenSSL's libcrypto), as lower-case hex: the hashes that name package layers and
// that results report for each wheel.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace mcpexec::packages {

std::string Sha256Hex(std::string_view data);

// The digest of the regular file `name` in the directory `dirfd`, opened without following a
// link; an error for anything else.
Result<std::string> Sha256OfFile(int dirfd, const std::string& name);

}  // namespace mcpexec::packages
