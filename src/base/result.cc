#include "base/result.h"

#include <string.h>

namespace mcpexec {

Error Errno(ErrorCode code, const std::string& what) {
  const int saved = errno;
  const char* name = strerrorname_np(saved);
  return Error{code, saved, what + ": " + (name ? name : "errno " + std::to_string(saved)) +
                                " (" + strerror(saved) + ")"};
}

Error MakeError(ErrorCode code, std::string message) {
  return Error{code, 0, std::move(message)};
}

}  // namespace mcpexec
