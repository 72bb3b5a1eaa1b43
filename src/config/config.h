// Config: one struct filled from defaults, then the seed's environment variables, then flags;
// validated once at start-up.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/limits_mode.h"
#include "base/result.h"

namespace mcpexec::config {

// MCP_EXEC_TRANSPORT. The order is that of the setting's choices (settings.cc).
enum class Transport { kStdio, kHttp, kSse };
// MCP_EXEC_METRICS_AUTH: whether /metrics needs the token (when one is set).
enum class MetricsAuth { kToken, kNone };
// MCP_EXEC_ENGINE: where a run's sandbox comes from (docs/engine.md).
enum class EngineKind { kAuto, kCold, kPool, kZygote };
// MCP_EXEC_LOG_LEVEL: the least severe log lines written, in the order of the setting's choices.
enum class LogLevel { kDebug, kInfo, kWarn, kError };

// The names the environment, the flags, logs and results use: "stdio", "token" (and
// LimitsModeName, base/limits_mode.h: "cgroup1").
const char* TransportName(Transport transport);
const char* MetricsAuthName(MetricsAuth auth);
const char* EngineName(EngineKind engine);
// The engine of a name ("pool"), parsed as the table parses MCP_EXEC_ENGINE; nullopt for a
// name that is none.
std::optional<EngineKind> EngineFromName(std::string_view name);

// The defaults are the table's (settings.cc); a unit test holds these initializers to it.
struct Config {
  std::string rootfs;                       // MCP_EXEC_ROOTFS (default: the built one)
  std::string python = "python3";           // MCP_EXEC_PYTHON, inside the rootfs
  // MCP_EXEC_SECCOMP_PROFILE: "default" (built in), a profile file, or "unconfined".
  std::string seccomp_profile = "default";
  int default_timeout_s = 30;               // MCP_EXEC_DEFAULT_TIMEOUT_S
  int max_timeout_s = 300;                  // MCP_EXEC_MAX_TIMEOUT_S
  uint64_t max_output_bytes = 1 << 20;      // MCP_EXEC_MAX_OUTPUT_BYTES
  uint64_t max_stdin_bytes = 1 << 20;       // MCP_EXEC_MAX_STDIN_BYTES
  uint64_t workspace_bytes = 64ull << 20;   // MCP_EXEC_WORKSPACE_BYTES
  // Files in (the `files` argument, `run --input`) and out (/tmp/outputs).
  uint64_t max_input_files = 64;                  // MCP_EXEC_MAX_INPUT_FILES
  uint64_t max_input_file_bytes = 16ull << 20;    // MCP_EXEC_MAX_INPUT_FILE_BYTES
  uint64_t max_output_files = 16;                 // MCP_EXEC_MAX_OUTPUT_FILES; 0: none, no walk
  uint64_t max_output_file_bytes = 1ull << 20;    // MCP_EXEC_MAX_OUTPUT_FILE_BYTES
  // MCP_EXEC_MAX_RESULT_BYTES: files are returned while the serialized tool result stays within
  // it. Claude Desktop refuses results over about 1 MiB.
  uint64_t max_result_bytes = 1'000'000;
  uint64_t memory_max = 256ull << 20;       // MCP_EXEC_MEMORY_MAX: per run, no swap
  uint64_t pids_max = 128;                  // MCP_EXEC_PIDS_MAX: per run
  double cpus = 1.0;                        // MCP_EXEC_CPUS: CPU bandwidth per run
  LimitsMode limits = LimitsMode::kAuto;    // MCP_EXEC_LIMITS (base/limits_mode.h)
  std::string cgroup;                       // MCP_EXEC_CGROUP: delegated cgroup v2 to manage
  uid_t host_uid = 65532;                   // MCP_EXEC_HOST_UID: host uid of the sandbox, as root
  gid_t host_gid = 65532;                   // MCP_EXEC_HOST_GID
  // MCP_EXEC_FIGURE_MAX_PX: the long edge of the figures captured from matplotlib.
  int figure_max_px = 1568;

  // Engines (docs/engine.md). MCP_EXEC_ENGINE: auto | cold | pool | zygote, where auto is the
  // fastest that starts (exec/engine_choice.h); `mcp-exec run` is cold unless given --engine.
  EngineKind engine = EngineKind::kAuto;
  int pool_size = 2;                 // MCP_EXEC_POOL_SIZE: sandboxes kept ready (pool, zygote)
  int pool_max = 0;                  // MCP_EXEC_POOL_MAX: ... after a burst; 0 unset (PoolMax)
  int zygote_max_forks = 10000;      // MCP_EXEC_ZYGOTE_MAX_FORKS: forks before it is replaced
  int zygote_max_age_s = 600;        // MCP_EXEC_ZYGOTE_MAX_AGE_S: its age when it is replaced
  int max_sessions = 8;              // MCP_EXEC_MAX_SESSIONS: open at once; 0: none
  int session_idle_s = 600;          // MCP_EXEC_SESSION_IDLE_S: idle expiry
  int session_max_age_s = 3600;      // MCP_EXEC_SESSION_MAX_AGE_S: the longest a session lasts
  // MCP_EXEC_PRELOAD: modules a warm interpreter imports before its program, comma-separated.
  std::vector<std::string> preload = {"numpy", "pandas", "matplotlib.pyplot"};

  // Environments (docs/environments.md): read-only images a call chooses among.
  // MCP_EXEC_ENVIRONMENTS: the names offered; empty: "default" and every image built in the
  // environments directory.
  std::vector<std::string> environments;
  std::string default_environment = "default";  // MCP_EXEC_DEFAULT_ENVIRONMENT
  // MCP_EXEC_ENVIRONMENTS_DIR: where the images other than "default" are; empty: the directory
  // `environments` beside the rootfs as configured (EnvironmentsDir, exec/environments.h).
  std::string environments_dir;
  // MCP_EXEC_ENVIRONMENT_IDLE_S: an environment other than the default whose engine no run or
  // session has used for this long releases it (its zygote and prepared sandboxes); 0: never.
  int environment_idle_s = 600;

  // Packages on demand (docs/packages.md): the `packages` argument, off while neither source is
  // set. MCP_EXEC_WHEELHOUSE: a directory of wheels they come from.
  std::string wheelhouse;
  // Or MCP_EXEC_PACKAGE_INDEX: a PEP 503/691 simple index over HTTPS, its certificate checked
  // against MCP_EXEC_PACKAGE_INDEX_CA (empty: the system's store), with the basic-auth
  // credentials of the file MCP_EXEC_PACKAGE_INDEX_CREDENTIALS (empty: none).
  std::string package_index;
  std::string package_index_ca;
  std::string package_index_credentials;
  // MCP_EXEC_PACKAGE_CACHE: where installed layers are kept; empty: PackageCacheDefault().
  std::string package_cache;
  // MCP_EXEC_PACKAGE_ALLOW: the project names that may be installed, comma-separated; empty: any.
  std::string package_allow;
  int max_packages = 32;  // MCP_EXEC_MAX_PACKAGES: requirements a call names, and a set's size
  uint64_t package_max_bytes = 128ull << 20;  // MCP_EXEC_PACKAGE_MAX_BYTES: a layer, unpacked
  // MCP_EXEC_PACKAGE_CACHE_MAX_BYTES: the layers together; the least recently used go past it.
  uint64_t package_cache_max_bytes = 2ull << 30;
  int package_install_timeout_s = 120;        // MCP_EXEC_PACKAGE_INSTALL_TIMEOUT_S

  // The server (mcp-exec serve).
  Transport transport = Transport::kStdio;  // MCP_EXEC_TRANSPORT
  std::string addr = ":8080";               // MCP_EXEC_ADDR: listen address for http/sse
  std::string auth_token;                   // MCP_EXEC_AUTH_TOKEN: empty = no auth
  // MCP_EXEC_AUTH_TOKEN_FILE: a file holding the token, read once by `serve` (LoadAuthToken).
  std::string auth_token_file;
  // MCP_EXEC_ALLOW_UNAUTHENTICATED=1: serve HTTP off loopback without a token, by choice.
  bool allow_unauthenticated = false;
  // MCP_EXEC_METRICS_AUTH: kNone leaves /metrics open, for a scraper inside the cluster.
  MetricsAuth metrics_auth = MetricsAuth::kToken;
  // HTTP deadlines and the minimum transfer rate: a slow or stalled client loses its connection.
  int http_read_timeout_s = 5;       // MCP_EXEC_HTTP_READ_TIMEOUT_S: a head or body stalls
  int http_request_timeout_s = 60;   // MCP_EXEC_HTTP_REQUEST_TIMEOUT_S: a whole request
  int http_write_timeout_s = 5;      // MCP_EXEC_HTTP_WRITE_TIMEOUT_S: a write makes no progress
  uint64_t http_min_rate = 1024;     // MCP_EXEC_HTTP_MIN_RATE: bytes/s each way; 0: none
  // MCP_EXEC_TRUSTED_PROXIES: addresses and CIDRs whose forwarding headers are believed
  // (parsed and checked by `serve`, http::TrustedProxies).
  std::string trusted_proxies;
  int max_concurrency = 0;                  // MCP_EXEC_MAX_CONCURRENCY: runs at once (CPUs)
  int max_queue = 64;                       // MCP_EXEC_MAX_QUEUE: runs waiting for a slot
  // Tasks (docs/protocol.md#tasks): calls answered with a handle and polled for their result.
  int max_tasks = 1000;                     // MCP_EXEC_MAX_TASKS: kept at once; 0: none
  int max_tasks_per_caller = 16;            // MCP_EXEC_MAX_TASKS_PER_CALLER: running, per client
  int task_ttl_s = 3600;                    // MCP_EXEC_TASK_TTL_S: kept after the start, at most
  uint64_t task_results_bytes = 256ull << 20;  // MCP_EXEC_TASK_RESULTS_BYTES: results kept

  LogLevel log_level = LogLevel::kInfo;  // MCP_EXEC_LOG_LEVEL: every command's

  bool operator==(const Config&) const = default;
};


// Returns the value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

// The table's defaults (settings.h) with `default_rootfs` as the rootfs and the machine's CPU
// count as MCP_EXEC_MAX_CONCURRENCY.
Config Defaults(const std::string& default_rootfs);

// Overlays every MCP_EXEC_* variable that is set onto `config`. A malformed value is an error
// that names the variable and what it accepts.
Result<void> ApplyEnv(const EnvLookup& env, Config& config);

// Checks the ranges and the relations between values (default timeout within the maximum).
Result<void> Validate(const Config& config);

// The most sandboxes a warm engine keeps ready after a burst: MCP_EXEC_POOL_MAX, or when it is
// unset 8, or MCP_EXEC_POOL_SIZE if that is larger.
int PoolMax(const Config& config);

// Reads the token from `config.auth_token_file` into `config.auth_token`, once, for `serve`;
// nothing to do when no file is set. kInvalidArgument when a token is also given directly
// (MCP_EXEC_AUTH_TOKEN), and when the file cannot be used as a token: missing or unreadable,
// not a regular file or a pipe, usable by others or its group (TokenFileModeProblem), larger
// than kMaxAuthTokenBytes, empty, or holding a control character once one trailing newline
// ("\n" or "\r\n") is stripped. Messages name the file, never its content.
Result<void> LoadAuthToken(Config& config);
inline constexpr size_t kMaxAuthTokenBytes = 4096;

// Why a token file of this mode and owner must not be used ("has mode 0644: others may use
// it; ..."), or "" when it may: no permission for others, and for the group at most read, and
// that only when root owns the file.
std::string TokenFileModeProblem(mode_t mode, uid_t owner);

// The range of MCP_EXEC_FIGURE_MAX_PX: below 64 px a plot is unreadable, and 8192 px is
// 256 MiB of RGBA for Agg to draw a square figure in.
inline constexpr int kFigureMaxPxMin = 64;
inline constexpr int kFigureMaxPxMax = 8192;

// Parses MCP_EXEC_PRELOAD: dotted module names ("numpy", "matplotlib.pyplot") separated by
// commas, blanks around them ignored; empty for none.
Result<std::vector<std::string>> ParseModuleList(const std::string& text);

// An environment's name: [a-z0-9][a-z0-9_-]{0,31}.
bool IsEnvironmentName(std::string_view name);
// Parses MCP_EXEC_ENVIRONMENTS: environment names separated by commas, blanks around them
// ignored, none twice; empty for none.
Result<std::vector<std::string>> ParseEnvironmentList(const std::string& text);

// Parses a byte count: digits with an optional binary suffix k, m or g ("64m" = 64 MiB).
Result<uint64_t> ParseBytes(const std::string& text);
// Parses a decimal number such as "1", "0.5" or "2.25" within [min, max].
Result<double> ParseDecimal(const std::string& text, double min, double max);
// Parses a whole decimal number within [min, max].
Result<long long> ParseInt(const std::string& text, long long min, long long max);

// The timeout a run gets: `requested` (or the default) clamped to [1, max_timeout_s].
int EffectiveTimeoutSeconds(const Config& config, std::optional<long long> requested);

}  // namespace mcpexec::config

namespace mcpexec::config {

// The largest JSON-RPC message the server reads: room for MCP_EXEC_MAX_STDIN_BYTES of stdin
// and 4 MiB of code, both JSON-escaped (at most 6 bytes per byte, for \u00XX), and for input
// files up to the workspace's size in base64 (4/3) or in text that needs few escapes (2).
uint64_t MaxMessageBytes(const Config& config);

}  // namespace mcpexec::config
