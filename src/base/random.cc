#include "base/random.h"

#include <sys/random.h>

#include <cerrno>
#include <vector>

namespace mcpexec {

Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> random(bytes);
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(random.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(ErrorCode::kUnavailable, "getrandom");
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes);
  for (const unsigned char b : random) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xF]);
  }
  return hex;
}

}  // namespace mcpexec
