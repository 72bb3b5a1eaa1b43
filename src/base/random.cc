#include "base/random.h"

#include <sys/random.h>

#include <cerrno>

namespace mcpexec {

Result<std::string> RandomBytes(size_t bytes) {
  std::string random(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(random.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(ErrorCode::kUnavailable, "getrandom");
    }
    got += static_cast<size_t>(n);
  }
  return random;
}

Result<std::string> RandomHex(size_t bytes) {
  MCPEXEC_ASSIGN_OR_RETURN(const std::string random, RandomBytes(bytes));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes);
  for (const char c : random) {
    const auto b = static_cast<unsigned char>(c);
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xF]);
  }
  return hex;
}

}  // namespace mcpexec
