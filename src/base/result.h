// Result<T>: a value or an Error, for every fallible parent-side function.
// g++ 12 has no std::expected in C++20 mode, so this is the small subset we need.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mcpexec {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kPermissionDenied,
  kUnavailable,
  kResourceExhausted,
  kDeadlineExceeded,
  kFailedPrecondition,  // the request is fine, the state it meets is not (a busy session)
  kInternal,
};

// What went wrong, in words a user can act on. `sys_errno` is 0 when no syscall is involved.
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  int sys_errno = 0;
  std::string message;
  // What a user can do about it, each a command or a step; a step may span lines. Kept apart
  // from the message so that `doctor` lists them and other reports append them (ErrorText).
  std::vector<std::string> fixes = {};

  Error&& WithFixes(std::vector<std::string> steps) && {
    fixes = std::move(steps);
    return std::move(*this);
  }

  // Prefixes the message with what the caller was doing: "mount rootfs: openat(/x): EACCES".
  Error&& WithContext(const std::string& context) && {
    message = context + ": " + message;
    return std::move(*this);
  }
};

// Builds an Error from the current errno: "<what>: <strerror name>". Call right after the
// failing syscall, before anything else can change errno.
Error Errno(ErrorCode code, const std::string& what);

// The errno's name, "EACCES", or "errno 4095" for a number without one.
std::string ErrnoName(int err);
// The name and the description: "EACCES (Permission denied)". Errno's and every message's
// spelling of an errno.
std::string ErrnoText(int err);
Error MakeError(ErrorCode code, std::string message);

// The message with its fixes after it, for reports that are one text (logs, stderr):
// "<message>\nFix: <step>", or "\nFix one of:" and one "  - <step>" line each, a step's further
// lines indented under its first.
std::string ErrorText(const Error& error);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_;
  bool ok_ = true;
};

inline Result<void> Ok() { return {}; }

}  // namespace mcpexec

#define MCPEXEC_CONCAT_INNER(a, b) a##b
#define MCPEXEC_CONCAT(a, b) MCPEXEC_CONCAT_INNER(a, b)

#define MCPEXEC_RETURN_IF_ERROR(expr)                    \
  do {                                                   \
    auto mcpexec_status_ = (expr);                       \
    if (!mcpexec_status_.ok()) {                         \
      return std::move(mcpexec_status_).error();         \
    }                                                    \
  } while (0)

#define MCPEXEC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).error();       \
  lhs = std::move(tmp).value()

#define MCPEXEC_ASSIGN_OR_RETURN(lhs, expr) \
  MCPEXEC_ASSIGN_OR_RETURN_IMPL(MCPEXEC_CONCAT(mcpexec_result_, __LINE__), lhs, expr)
