#include "base/result.h"

#include <string.h>

namespace mcpexec {

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "errno " + std::to_string(err);
}

std::string ErrnoText(int err) { return ErrnoName(err) + " (" + strerror(err) + ")"; }

Error Errno(ErrorCode code, const std::string& what) {
  const int saved = errno;
  return Error{code, saved, what + ": " + ErrnoText(saved)};
}

Error MakeError(ErrorCode code, std::string message) {
  return Error{code, 0, std::move(message)};
}

}  // namespace mcpexec
