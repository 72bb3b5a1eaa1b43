#include "config/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <thread>

#include "base/unique_fd.h"

namespace mcpexec::config {
namespace {

constexpr uint64_t kMaxBytes = 1ull << 40;

template <class T>
Result<void> SetInt(const std::string& name, const std::string& text, long long min, long long max,
                    T& out) {
  auto v = ParseInt(text, min, max);
  if (!v.ok()) return MakeError(ErrorCode::kInvalidArgument, name + ": " + v.error().message);
  out = static_cast<T>(*v);
  return Ok();
}

Result<void> SetBytes(const std::string& name, const std::string& text, uint64_t& out) {
  auto v = ParseBytes(text);
  if (!v.ok()) return MakeError(ErrorCode::kInvalidArgument, name + ": " + v.error().message);
  out = *v;
  return Ok();
}

Result<void> SetPath(const std::string& name, const std::string& text, std::string& out) {
  if (text.empty()) return MakeError(ErrorCode::kInvalidArgument, name + ": must not be empty");
  out = text;
  return Ok();
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Config Defaults(const std::string& default_rootfs) {
  Config c;
  c.rootfs = default_rootfs;
  const unsigned cpus = std::thread::hardware_concurrency();
  c.max_concurrency = cpus == 0 ? 1 : static_cast<int>(cpus);
  return c;
}

Result<std::vector<std::string>> ParseModuleList(const std::string& text) {
  std::vector<std::string> modules;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string name = text.substr(start, comma - start);
    const size_t first = name.find_first_not_of(" \t");
    name = first == std::string::npos ? "" : name.substr(first, name.find_last_not_of(" \t") - first + 1);
    start = comma + 1;
    if (name.empty()) {
      if (comma == text.size() && modules.empty()) break;  // "" or only blanks: none
      return MakeError(ErrorCode::kInvalidArgument, "an empty module name in \"" + text + "\"");
    }
    bool valid = true;
    bool at_start = true;
    for (const char ch : name) {
      const bool letter = std::isalpha(static_cast<unsigned char>(ch)) || ch == '_';
      const bool digit = std::isdigit(static_cast<unsigned char>(ch));
      if (ch == '.') {
        valid = valid && !at_start;
        at_start = true;
      } else {
        valid = valid && (letter || (digit && !at_start));
        at_start = false;
      }
    }
    if (!valid || at_start) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "\"" + name + "\" is not a module name (letters, digits, _ and dots)");
    }
    modules.push_back(name);
  }
  return modules;
}

Result<long long> ParseInt(const std::string& text, long long min, long long max) {
  if (text.empty() || text.find_first_not_of("0123456789-") != std::string::npos) {
    return MakeError(ErrorCode::kInvalidArgument, "'" + text + "' is not a whole number");
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') {
    return MakeError(ErrorCode::kInvalidArgument, "'" + text + "' is not a whole number");
  }
  if (v < min || v > max) {
    return MakeError(ErrorCode::kInvalidArgument, "'" + text + "' is outside [" +
                                                      std::to_string(min) + ", " +
                                                      std::to_string(max) + "]");
  }
  return v;
}

Result<double> ParseDecimal(const std::string& text, double min, double max) {
  const size_t dot = text.find('.');
  const bool well_formed =
      !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos &&
      dot != 0 && dot != text.size() - 1 &&
      (dot == std::string::npos || text.find('.', dot + 1) == std::string::npos);
  double v = 0;
  if (well_formed) {
    errno = 0;
    char* end = nullptr;
    v = std::strtod(text.c_str(), &end);
    if (errno != 0 || *end != '\0') v = -1;
  }
  if (!well_formed || v < min || v > max) {
    std::ostringstream range;
    range << "[" << min << ", " << max << "]";
    return MakeError(ErrorCode::kInvalidArgument,
                     "'" + text + "' is not a decimal number in " + range.str());
  }
  return v;
}

Result<uint64_t> ParseBytes(const std::string& text) {
  std::string digits = text;
  uint64_t unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k': case 'K': unit = 1ull << 10; break;
      case 'm': case 'M': unit = 1ull << 20; break;
      case 'g': case 'G': unit = 1ull << 30; break;
      default: break;
    }
    if (unit != 1) digits.pop_back();
  }
  auto v = ParseInt(digits, 1, static_cast<long long>(kMaxBytes));
  if (!v.ok() || static_cast<uint64_t>(*v) > kMaxBytes / unit) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "'" + text + "' is not a byte count from 1 to 1T (digits, optionally "
                     "followed by k, m or g)");
  }
  return static_cast<uint64_t>(*v) * unit;
}

namespace {

Result<void> SetOneOf(const std::string& name, const std::string& text,
                      std::initializer_list<const char*> allowed, std::string& out) {
  std::string list;
  for (const char* a : allowed) {
    if (text == a) {
      out = text;
      return Ok();
    }
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  return MakeError(ErrorCode::kInvalidArgument,
                   name + ": '" + text + "' is not one of " + list);
}

// "1" turns a switch on; "0" and "" (a line `NAME=` in an environment file) leave it off.
Result<void> SetSwitch(const std::string& name, const std::string& text, bool& out) {
  if (text != "1" && text != "0" && !text.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, name + ": '" + text + "' is not 1 or 0");
  }
  out = text == "1";
  return Ok();
}

Result<void> SetTransport(const std::string& name, const std::string& text, std::string& out) {
  return SetOneOf(name, text, {"stdio", "http", "sse"}, out);
}

}  // namespace

Result<void> ApplyEnv(const EnvLookup& env, Config& c) {
  struct Var {
    const char* name;
    std::function<Result<void>(const std::string&, const std::string&)> set;
  };
  constexpr long long kIdMax = std::numeric_limits<uid_t>::max() - 1;
  const Var vars[] = {
      {"MCP_EXEC_TRANSPORT", [&](auto& n, auto& v) { return SetTransport(n, v, c.transport); }},
      {"MCP_EXEC_ADDR", [&](auto& n, auto& v) { return SetPath(n, v, c.addr); }},
      {"MCP_EXEC_AUTH_TOKEN",
       [&](auto&, auto& v) {
         c.auth_token = v;  // empty disables auth, as in the seed
         return Ok();
       }},
      {"MCP_EXEC_AUTH_TOKEN_FILE",
       [&](auto&, auto& v) {
         c.auth_token_file = v;  // empty: none, like an empty token
         return Ok();
       }},
      {"MCP_EXEC_ALLOW_UNAUTHENTICATED",
       [&](auto& n, auto& v) { return SetSwitch(n, v, c.allow_unauthenticated); }},
      {"MCP_EXEC_METRICS_AUTH",
       [&](auto& n, auto& v) { return SetOneOf(n, v, {"token", "none"}, c.metrics_auth); }},
      {"MCP_EXEC_MAX_CONCURRENCY",
       [&](auto& n, auto& v) { return SetInt(n, v, 1, 1024, c.max_concurrency); }},
      {"MCP_EXEC_MAX_QUEUE", [&](auto& n, auto& v) { return SetInt(n, v, 0, 100000, c.max_queue); }},
      {"MCP_EXEC_ROOTFS", [&](auto& n, auto& v) { return SetPath(n, v, c.rootfs); }},
      {"MCP_EXEC_SECCOMP_PROFILE",
       [&](auto& n, auto& v) { return SetPath(n, v, c.seccomp_profile); }},
      {"MCP_EXEC_PYTHON", [&](auto& n, auto& v) { return SetPath(n, v, c.python); }},
      {"MCP_EXEC_DEFAULT_TIMEOUT_S",
       [&](auto& n, auto& v) { return SetInt(n, v, 1, 86400, c.default_timeout_s); }},
      {"MCP_EXEC_MAX_TIMEOUT_S",
       [&](auto& n, auto& v) { return SetInt(n, v, 1, 86400, c.max_timeout_s); }},
      {"MCP_EXEC_MAX_OUTPUT_BYTES",
       [&](auto& n, auto& v) { return SetBytes(n, v, c.max_output_bytes); }},
      {"MCP_EXEC_MAX_STDIN_BYTES",
       [&](auto& n, auto& v) { return SetBytes(n, v, c.max_stdin_bytes); }},
      {"MCP_EXEC_WORKSPACE_BYTES",
       [&](auto& n, auto& v) { return SetBytes(n, v, c.workspace_bytes); }},
      {"MCP_EXEC_MAX_INPUT_FILES",
       [&](auto& n, auto& v) { return SetInt(n, v, 0, 100000, c.max_input_files); }},
      {"MCP_EXEC_MAX_INPUT_FILE_BYTES",
       [&](auto& n, auto& v) { return SetBytes(n, v, c.max_input_file_bytes); }},
      {"MCP_EXEC_MAX_OUTPUT_FILES",
       [&](auto& n, auto& v) { return SetInt(n, v, 0, 100000, c.max_output_files); }},
      {"MCP_EXEC_MAX_OUTPUT_FILE_BYTES",
       [&](auto& n, auto& v) { return SetBytes(n, v, c.max_output_file_bytes); }},
      {"MCP_EXEC_MAX_RESULT_BYTES",
       [&](auto& n, auto& v) { return SetBytes(n, v, c.max_result_bytes); }},
      {"MCP_EXEC_MEMORY_MAX",
       [&](auto& n, auto& v) -> Result<void> {
         MCPEXEC_RETURN_IF_ERROR(SetBytes(n, v, c.memory_max));
         if (c.memory_max < (16u << 20)) {
           return MakeError(ErrorCode::kInvalidArgument,
                            n + ": at least 16m, or Python cannot start");
         }
         return Ok();
       }},
      {"MCP_EXEC_PIDS_MAX", [&](auto& n, auto& v) { return SetInt(n, v, 4, 1 << 22, c.pids_max); }},
      {"MCP_EXEC_CPUS",
       [&](auto& n, auto& v) -> Result<void> {
         auto cpus = ParseDecimal(v, 0.01, 1024);
         if (!cpus.ok()) return MakeError(ErrorCode::kInvalidArgument, n + ": " + cpus.error().message);
         c.cpus = *cpus;
         return Ok();
       }},
      {"MCP_EXEC_LIMITS",
       [&](auto& n, auto& v) {
         return SetOneOf(n, v, {"auto", "cgroup2", "cgroup1", "rlimit"}, c.limits);
       }},
      {"MCP_EXEC_CGROUP", [&](auto& n, auto& v) { return SetPath(n, v, c.cgroup); }},
      {"MCP_EXEC_HOST_UID", [&](auto& n, auto& v) { return SetInt(n, v, 1, kIdMax, c.host_uid); }},
      {"MCP_EXEC_HOST_GID", [&](auto& n, auto& v) { return SetInt(n, v, 1, kIdMax, c.host_gid); }},
      {"MCP_EXEC_ENGINE", [&](auto& n, auto& v) { return SetOneOf(n, v, {"auto", "cold", "pool", "zygote"}, c.engine); }},
      {"MCP_EXEC_POOL_SIZE", [&](auto& n, auto& v) { return SetInt(n, v, 1, 64, c.pool_size); }},
      {"MCP_EXEC_ZYGOTE_MAX_FORKS",
       [&](auto& n, auto& v) { return SetInt(n, v, 1, 1000000, c.zygote_max_forks); }},
      {"MCP_EXEC_ZYGOTE_MAX_AGE_S",
       [&](auto& n, auto& v) { return SetInt(n, v, 1, 86400, c.zygote_max_age_s); }},
      {"MCP_EXEC_PRELOAD",
       [&](auto& n, auto& v) -> Result<void> {
         auto modules = ParseModuleList(v);
         if (!modules.ok()) {
           return MakeError(ErrorCode::kInvalidArgument, n + ": " + modules.error().message);
         }
         c.preload = std::move(*modules);
         return Ok();
       }},
      {"MCP_EXEC_FIGURE_MAX_PX",
       [&](auto& n, auto& v) {
         return SetInt(n, v, kFigureMaxPxMin, kFigureMaxPxMax, c.figure_max_px);
       }},
  };
  for (const Var& var : vars) {
    if (auto value = env(var.name)) MCPEXEC_RETURN_IF_ERROR(var.set(var.name, *value));
  }
  return Ok();
}

Result<void> Validate(const Config& c) {
  if (c.default_timeout_s < 1 || c.max_timeout_s < 1) {
    return MakeError(ErrorCode::kInvalidArgument, "timeouts must be at least 1 second");
  }
  if (c.default_timeout_s > c.max_timeout_s) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the default timeout (" + std::to_string(c.default_timeout_s) +
                         " s, MCP_EXEC_DEFAULT_TIMEOUT_S) exceeds the maximum (" +
                         std::to_string(c.max_timeout_s) + " s, MCP_EXEC_MAX_TIMEOUT_S)");
  }
  if (c.workspace_bytes < (64u << 10)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the workspace (MCP_EXEC_WORKSPACE_BYTES) must be at least 64k");
  }
  if (c.max_output_file_bytes > (1ull << 30)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "MCP_EXEC_MAX_OUTPUT_FILE_BYTES is at most 1g: files are read into memory");
  }
  if (c.host_uid == 0 || c.host_gid == 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the sandbox's host uid/gid (MCP_EXEC_HOST_UID/GID) must not be 0");
  }
  return Ok();
}

std::string TokenFileModeProblem(mode_t mode, uid_t owner) {
  // PostgreSQL's rule for its key files: a secret others can read is no longer one, and one
  // others can write lets them choose it; a group may read it only when root owns it, which is
  // how a root-provisioned secret reaches an unprivileged service (Kubernetes' fsGroup).
  const mode_t allowed_group = owner == 0 ? S_IRGRP : 0;
  if ((mode & (S_IRWXO | (S_IRWXG & ~allowed_group))) == 0) return "";
  char octal[8];
  snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode & 07777));
  return "has mode " + std::string(octal) + ": " +
         ((mode & S_IRWXO) != 0 ? "others" : "its group") +
         " may use it; chmod 600 it (or 640 when root owns it)";
}

Result<void> LoadAuthToken(Config& c) {
  if (c.auth_token_file.empty()) return Ok();
  const std::string& path = c.auth_token_file;
  if (!c.auth_token.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the auth token is given twice, directly (MCP_EXEC_AUTH_TOKEN or "
                     "--auth-token) and as a file (MCP_EXEC_AUTH_TOKEN_FILE or "
                     "--auth-token-file): give only the file");
  }
  auto invalid = [&path](const std::string& why) {
    return MakeError(ErrorCode::kInvalidArgument, "the auth token file " + path +
                                                      " (MCP_EXEC_AUTH_TOKEN_FILE) " + why);
  };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.Valid()) {
    return Errno(ErrorCode::kInvalidArgument, "open(" + path + ")")
        .WithContext("cannot read the auth token file (MCP_EXEC_AUTH_TOKEN_FILE)");
  }
  struct stat st {};
  if (::fstat(fd.Get(), &st) != 0) return Errno(ErrorCode::kInternal, "fstat(" + path + ")");
  // A pipe allows `--auth-token-file <(secret-tool lookup ...)`: the token never touches a disk.
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    return invalid("is not a regular file or a pipe");
  }
  if (std::string problem = TokenFileModeProblem(st.st_mode, st.st_uid); !problem.empty()) {
    return invalid(problem);
  }
  std::string token;
  char buf[1024];
  for (;;) {
    const ssize_t n = ::read(fd.Get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(ErrorCode::kInvalidArgument, "read(" + path + ")");
    if (n == 0) break;
    token.append(buf, static_cast<size_t>(n));
    if (token.size() > kMaxAuthTokenBytes + 2) break;
  }
  if (!token.empty() && token.back() == '\n') {
    token.pop_back();
    if (!token.empty() && token.back() == '\r') token.pop_back();
  }
  if (token.size() > kMaxAuthTokenBytes) {
    return invalid("is larger than " + std::to_string(kMaxAuthTokenBytes) +
                   " bytes: is it the right file?");
  }
  if (token.empty()) return invalid("is empty");
  for (const char ch : token) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) {
      return invalid("holds a control character or a line break before its end, which no "
                     "client could send in a header");
    }
  }
  c.auth_token = std::move(token);
  return Ok();
}

int EffectiveTimeoutSeconds(const Config& c, std::optional<long long> requested) {
  const long long t = requested.value_or(c.default_timeout_s);
  if (t < 1) return 1;
  if (t > c.max_timeout_s) return c.max_timeout_s;
  return static_cast<int>(t);
}

}  // namespace mcpexec::config

namespace mcpexec::config {

uint64_t MaxMessageBytes(const Config& config) {
  constexpr uint64_t kCodeRoom = 4ull << 20;
  constexpr uint64_t kEnvelope = 64ull << 10;
  const uint64_t files = std::min(config.workspace_bytes,
                                  config.max_input_files * config.max_input_file_bytes);
  return 6 * (config.max_stdin_bytes + kCodeRoom) + 2 * files + kEnvelope;
}

}  // namespace mcpexec::config
