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
#include "config/settings.h"

namespace mcpexec::config {
namespace {

constexpr uint64_t kMaxBytes = 1ull << 40;

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

const char* TransportName(Transport transport) {
  switch (transport) {
    case Transport::kStdio: return "stdio";
    case Transport::kHttp: return "http";
    case Transport::kSse: return "sse";
  }
  return "unknown";
}

const char* MetricsAuthName(MetricsAuth auth) {
  switch (auth) {
    case MetricsAuth::kToken: return "token";
    case MetricsAuth::kNone: return "none";
  }
  return "unknown";
}

const char* EngineName(EngineKind engine) {
  switch (engine) {
    case EngineKind::kAuto: return "auto";
    case EngineKind::kCold: return "cold";
    case EngineKind::kPool: return "pool";
    case EngineKind::kZygote: return "zygote";
  }
  return "unknown";
}

std::optional<EngineKind> EngineFromName(std::string_view name) {
  // The table's choices, parsed as the table parses MCP_EXEC_ENGINE: a choice is its index.
  const std::vector<std::string> names = SettingChoices(*FindSetting("MCP_EXEC_ENGINE"));
  for (size_t i = 0; i < names.size(); ++i) {
    if (name == names[i]) return static_cast<EngineKind>(i);
  }
  return std::nullopt;
}

Config Defaults(const std::string& default_rootfs) {
  Config c;
  for (const Setting& s : Settings()) {
    // An empty default is the member's own empty value; the table's defaults parse (a unit
    // test holds them to it), so this cannot fail.
    if (s.default_text.empty() && s.type != SettingType::kSwitch) continue;
    (void)ApplySetting(s, std::string(s.default_text), c);
  }
  c.rootfs = default_rootfs;
  const unsigned cpus = std::thread::hardware_concurrency();
  c.max_concurrency = cpus == 0 ? 1 : static_cast<int>(cpus);
  return c;
}

namespace {

// The items of a comma-separated list, each without its surrounding blanks ("" for an empty one).
std::vector<std::string> CommaItems(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const size_t first = item.find_first_not_of(" \t");
    items.push_back(first == std::string::npos
                        ? ""
                        : item.substr(first, item.find_last_not_of(" \t") - first + 1));
    start = comma + 1;
  }
  return items;
}

}  // namespace

Result<std::vector<std::string>> ParseModuleList(const std::string& text) {
  std::vector<std::string> modules;
  if (text.find_first_not_of(" \t") == std::string::npos) return modules;  // none
  for (const std::string& name : CommaItems(text)) {
    if (name.empty()) {
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

bool IsEnvironmentName(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char ch = name[i];
    const bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (!alnum && (i == 0 || (ch != '_' && ch != '-'))) return false;
  }
  return true;
}

Result<std::vector<std::string>> ParseEnvironmentList(const std::string& text) {
  std::vector<std::string> names;
  if (text.find_first_not_of(" \t") == std::string::npos) return names;
  for (std::string& name : CommaItems(text)) {
    if (!IsEnvironmentName(name)) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "\"" + name + "\" is not an environment name (1 to 32 of a-z, 0-9, _ and "
                       "-, starting with a letter or digit)");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return MakeError(ErrorCode::kInvalidArgument, "\"" + name + "\" is named twice");
    }
    names.push_back(std::move(name));
  }
  return names;
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

Result<void> ApplyEnv(const EnvLookup& env, Config& c) {
  for (const Setting& s : Settings()) {
    if (auto value = env(std::string(s.env))) MCPEXEC_RETURN_IF_ERROR(ApplySetting(s, *value, c));
  }
  return Ok();
}

int PoolMax(const Config& c) { return c.pool_max != 0 ? c.pool_max : std::max(8, c.pool_size); }

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
  if (c.http_read_timeout_s > c.http_request_timeout_s) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the HTTP read timeout (" + std::to_string(c.http_read_timeout_s) +
                         " s, MCP_EXEC_HTTP_READ_TIMEOUT_S) exceeds the request timeout (" +
                         std::to_string(c.http_request_timeout_s) +
                         " s, MCP_EXEC_HTTP_REQUEST_TIMEOUT_S)");
  }
  if (c.pool_max != 0 && c.pool_max < c.pool_size) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "MCP_EXEC_POOL_MAX (" + std::to_string(c.pool_max) +
                         ") is below MCP_EXEC_POOL_SIZE (" + std::to_string(c.pool_size) +
                         "): the most sandboxes kept ready cannot be fewer than the least");
  }
  if (c.workspace_bytes < (64u << 10)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the workspace (MCP_EXEC_WORKSPACE_BYTES) must be at least 64k");
  }
  if (c.max_output_file_bytes > (1ull << 30)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "MCP_EXEC_MAX_OUTPUT_FILE_BYTES is at most 1g: files are read into memory");
  }
  if (!IsEnvironmentName(c.default_environment)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "MCP_EXEC_DEFAULT_ENVIRONMENT: \"" + c.default_environment +
                         "\" is not an environment name (1 to 32 of a-z, 0-9, _ and -, starting "
                         "with a letter or digit)");
  }
  if (!c.environments.empty() &&
      std::find(c.environments.begin(), c.environments.end(), c.default_environment) ==
          c.environments.end()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the default environment \"" + c.default_environment +
                         "\" (MCP_EXEC_DEFAULT_ENVIRONMENT) is not one of MCP_EXEC_ENVIRONMENTS: "
                         "add it there, or choose one of those as the default");
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
