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

std::string ErrorText(const Error& error) {
  if (error.fixes.empty()) return error.message;
  if (error.fixes.size() == 1) return error.message + "\nFix: " + error.fixes[0];
  std::string text = error.message + "\nFix one of:";
  for (const std::string& fix : error.fixes) {
    text += "\n  - ";
    for (const char c : fix) text += c == '\n' ? std::string("\n    ") : std::string(1, c);
  }
  return text;
}

}  // namespace mcpexec
