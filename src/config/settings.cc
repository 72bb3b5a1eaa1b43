#include "config/settings.h"

#include <limits>
#include <sstream>

#include "config/config.h"

namespace mcpexec::config {
namespace {

using T = SettingType;
using S = SettingScope;
using V = SettingValue;

constexpr double kIdMax = static_cast<double>(std::numeric_limits<uid_t>::max() - 1);

// The README's and --help's order: the server's settings, then a run's, then the engines'.
constexpr Setting kSettings[] = {
    {.env = "MCP_EXEC_TRANSPORT",
     .flag = "--transport",
     .type = T::kChoice,
     .default_text = "stdio",
     .help = "stdio | http | sse (http and sse serve both)",
     .doc = "`stdio`, `http` or `sse` (`http` and `sse` start the same HTTP server)",
     .scope = S::kServe,
     .choices = "stdio|http|sse",
     .store = [](Config& c, const V& v) { c.transport = static_cast<Transport>(v.choice); }},
    {.env = "MCP_EXEC_ADDR",
     .flag = "--addr",
     .type = T::kNonEmpty,
     .default_text = ":8080",
     .help = "Listen address for http/sse, e.g. :8080 or 127.0.0.1:8080",
     .doc = "listen address: `:8080` (all IPv4), `127.0.0.1:8080`, `[::1]:8080`, `[::]:8080`",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.addr = v.text; }},
    {.env = "MCP_EXEC_AUTH_TOKEN",
     .flag = "--auth-token",
     .type = T::kText,
     .default_text = "",
     .help = "Require X-MCP-AUTH or Authorization: Bearer with this token on http/sse. Every "
             "local user can read a command line: prefer --auth-token-file",
     .doc = "if set, HTTP/SSE requests need `X-MCP-AUTH` or `Authorization: Bearer` with it; "
            "empty = off. The flag is readable by every local user (`serve` warns): prefer the "
            "file",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.auth_token = v.text; }},
    {.env = "MCP_EXEC_AUTH_TOKEN_FILE",
     .flag = "--auth-token-file",
     .type = T::kText,
     .default_text = "",
     .help = "Read the token from this file, of mode 600 (640 if root owns it); one trailing "
             "newline is ignored",
     .doc = "the token from a file of mode 600 (640 when root owns it), read once at start (see "
            "[departures](#connecting-an-mcp-client)); not together with `MCP_EXEC_AUTH_TOKEN`",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.auth_token_file = v.text; }},
    {.env = "MCP_EXEC_ALLOW_UNAUTHENTICATED",
     .flag = "--allow-unauthenticated",
     .type = T::kSwitch,
     .default_text = "0",
     .help = "Serve http/sse on a non-loopback address without a token (anyone who reaches it "
             "can run code)",
     .doc = "`1`: serve HTTP/SSE on a non-loopback address without a token, which is otherwise "
            "refused",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.allow_unauthenticated = v.on; }},
    {.env = "MCP_EXEC_METRICS_AUTH",
     .flag = "--metrics-auth",
     .type = T::kChoice,
     .default_text = "token",
     .help = "token | none: whether /metrics needs the token like /mcp (when one is set), or is "
             "open to any scraper",
     .doc = "`token`: `/metrics` needs the token like `/mcp` (when one is set); `none`: "
            "`/metrics` is open, for a scraper inside the cluster (see "
            "[Observability](#observability))",
     .scope = S::kServe,
     .choices = "token|none",
     .store = [](Config& c, const V& v) { c.metrics_auth = static_cast<MetricsAuth>(v.choice); }},
    {.env = "MCP_EXEC_TRUSTED_PROXIES",
     .flag = "--trusted-proxies",
     .default_text = "",
     .help = "Reverse proxies (addresses, CIDRs, comma-separated) whose X-Forwarded-For or "
             "Forwarded names the client; none by default",
     .doc = "reverse proxies (IP addresses and CIDR networks, comma-separated) whose "
            "`X-Forwarded-For` or `Forwarded` header is believed: for a connection from one, the "
            "client is the rightmost address there that is not itself one of them, for the "
            "per-address caps and the logs. Empty: none, the headers are ignored",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.trusted_proxies = v.text; }},
    {.env = "MCP_EXEC_HTTP_READ_TIMEOUT_S",
     .flag = "--http-read-timeout",
     .type = T::kInt,
     .default_text = "5",
     .help = "Seconds an HTTP request's head or body may stall before its connection is closed "
             "(408), 1 to 3600",
     .doc = "seconds an HTTP request's head or body may stall (no byte arrives) before its "
            "connection is closed, with 408 where one can still be sent; 1 to 3600",
     .scope = S::kServe,
     .min = 1,
     .max = 3600,
     .store = [](Config& c, const V& v) { c.http_read_timeout_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_HTTP_REQUEST_TIMEOUT_S",
     .flag = "--http-request-timeout",
     .type = T::kInt,
     .default_text = "60",
     .help = "Seconds to receive a whole HTTP request, body included, 1 to 86400",
     .doc = "seconds to receive a whole HTTP request, body included; at least "
            "`MCP_EXEC_HTTP_READ_TIMEOUT_S`, at most 86400",
     .scope = S::kServe,
     .min = 1,
     .max = 86400,
     .store = [](Config& c,
                 const V& v) { c.http_request_timeout_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_HTTP_WRITE_TIMEOUT_S",
     .flag = "--http-write-timeout",
     .type = T::kInt,
     .default_text = "5",
     .help = "Seconds a write of an HTTP response or event stream may make no progress before "
             "the connection is closed, 1 to 3600",
     .doc = "seconds a write of an HTTP response (or of an event stream's block) may make no "
            "progress, the client not reading, before the connection is closed; 1 to 3600",
     .scope = S::kServe,
     .min = 1,
     .max = 3600,
     .store = [](Config& c, const V& v) { c.http_write_timeout_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_HTTP_MIN_RATE",
     .flag = "--http-min-rate",
     .type = T::kInt,
     .default_text = "1024",
     .help = "Bytes per second below which an HTTP body or response write loses its connection, "
             "after its timeout as a grace; 0 for no minimum",
     .doc = "bytes per second, each way: a request body, or a write of a response, must finish "
            "within its read (or write) timeout plus its size at this rate, or the connection is "
            "closed; `0` for no minimum, at most 1073741824",
     .scope = S::kServe,
     .min = 0,
     .max = 1073741824,
     .store = [](Config& c, const V& v) { c.http_min_rate = static_cast<uint64_t>(v.integer); }},
    {.env = "MCP_EXEC_DEFAULT_TIMEOUT_S",
     .flag = "--default-timeout-s",
     .type = T::kInt,
     .default_text = "30",
     .help = "Timeout when a call gives none",
     .doc = "wall-clock timeout when the request gives none",
     .min = 1,
     .max = 86400,
     .store = [](Config& c, const V& v) { c.default_timeout_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_MAX_TIMEOUT_S",
     .flag = "--max-timeout-s",
     .type = T::kInt,
     .default_text = "300",
     .help = "Timeout ceiling",
     .doc = "timeout ceiling; requests are clamped to `[1, max]`",
     .min = 1,
     .max = 86400,
     .store = [](Config& c, const V& v) { c.max_timeout_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_MAX_OUTPUT_BYTES",
     .flag = "--max-output-bytes",
     .type = T::kBytes,
     .default_text = "1m",
     .help = "Cap on combined stdout+stderr",
     .doc = "combined stdout+stderr cap",
     .store = [](Config& c, const V& v) { c.max_output_bytes = v.bytes; }},
    {.env = "MCP_EXEC_MAX_STDIN_BYTES",
     .flag = "--max-stdin-bytes",
     .type = T::kBytes,
     .default_text = "1m",
     .help = "Cap on stdin",
     .doc = "stdin cap; more is invalid input. Request bodies are capped at 6 × (this + 4 MiB of "
            "code) + 2 × the input files' room",
     .store = [](Config& c, const V& v) { c.max_stdin_bytes = v.bytes; }},
    {.env = "MCP_EXEC_PYTHON",
     .flag = "--python",
     .type = T::kNonEmpty,
     .default_text = "python3",
     .help = "Interpreter inside the rootfs",
     .doc = "interpreter, looked up in the rootfs's `/usr/local/bin:/usr/bin:/bin`, or an "
            "absolute path inside the rootfs",
     .store = [](Config& c, const V& v) { c.python = v.text; }},
    {.env = "MCP_EXEC_ROOTFS",
     .flag = "--rootfs",
     .type = T::kNonEmpty,
     .default_text = "",
     .computed_default = "`build/rootfs` (compiled in); installed: "
                         "`<localstatedir>/lib/mcp-exec/rootfs` ([Installing](#installing))",
     .help = "Python rootfs directory (default: the one compiled in)",
     .doc = "the Python root filesystem",
     .store = [](Config& c, const V& v) { c.rootfs = v.text; }},
    {.env = "MCP_EXEC_SECCOMP_PROFILE",
     .flag = "--seccomp-profile",
     .type = T::kNonEmpty,
     .default_text = "default",
     .help = "Docker-format seccomp profile for the program, or 'unconfined' (no filter); "
             "'default' is the one built in",
     .doc = "a Docker-format seccomp profile file, `default` (built in), or `unconfined` (no "
            "filter; `serve` warns)",
     .store = [](Config& c, const V& v) { c.seccomp_profile = v.text; }},
    {.env = "MCP_EXEC_WORKSPACE_BYTES",
     .flag = "--workspace-bytes",
     .type = T::kBytes,
     .default_text = "64m",
     .help = "Size of the /tmp workspace tmpfs",
     .doc = "size of the `/tmp` workspace tmpfs, and the largest file a run may write (at least "
            "`64k`)",
     .store = [](Config& c, const V& v) { c.workspace_bytes = v.bytes; }},
    {.env = "MCP_EXEC_MAX_INPUT_FILES",
     .flag = "--max-input-files",
     .type = T::kInt,
     .default_text = "64",
     .help = "Input files per run",
     .doc = "input files per run (`files`, `run --input`)",
     .min = 0,
     .max = 100000,
     .store = [](Config& c, const V& v) { c.max_input_files = static_cast<uint64_t>(v.integer); }},
    {.env = "MCP_EXEC_MAX_INPUT_FILE_BYTES",
     .flag = "--max-input-file-bytes",
     .type = T::kBytes,
     .default_text = "16m",
     .help = "Size of one input file",
     .doc = "size of one input file; all of them together must fit the workspace",
     .store = [](Config& c, const V& v) { c.max_input_file_bytes = v.bytes; }},
    {.env = "MCP_EXEC_MAX_OUTPUT_FILES",
     .flag = "--max-output-files",
     .type = T::kInt,
     .default_text = "16",
     .help = "Files read back from /tmp/outputs",
     .doc = "files read back from `/tmp/outputs`; `0` turns reading back off",
     .min = 0,
     .max = 100000,
     .store = [](Config& c, const V& v) { c.max_output_files = static_cast<uint64_t>(v.integer); }},
    {.env = "MCP_EXEC_MAX_OUTPUT_FILE_BYTES",
     .flag = "--max-output-file-bytes",
     .type = T::kBytes,
     .default_text = "1m",
     .help = "Size of one file read back",
     .doc = "size of one file read back (at most `1g`)",
     .store = [](Config& c, const V& v) { c.max_output_file_bytes = v.bytes; }},
    {.env = "MCP_EXEC_MAX_RESULT_BYTES",
     .flag = "--max-result-bytes",
     .type = T::kBytes,
     .default_text = "1000000",
     .help = "Files are returned while the tool result stays within this",
     .doc = "files are returned over MCP while the whole tool result stays within this",
     .store = [](Config& c, const V& v) { c.max_result_bytes = v.bytes; }},
    {.env = "MCP_EXEC_MEMORY_MAX",
     .flag = "--memory-max",
     .type = T::kBytes,
     .default_text = "256m",
     .help = "Memory per run, no swap",
     .doc = "memory per run, no swap (at least `16m`)",
     .min = 16 << 20,
     .min_reason = "at least 16m, or Python cannot start",
     .store = [](Config& c, const V& v) { c.memory_max = v.bytes; }},
    {.env = "MCP_EXEC_PIDS_MAX",
     .flag = "--pids-max",
     .type = T::kInt,
     .default_text = "128",
     .help = "Processes and threads per run",
     .doc = "processes and threads per run, the sandbox's init included",
     .min = 4,
     .max = 1 << 22,
     .store = [](Config& c, const V& v) { c.pids_max = static_cast<uint64_t>(v.integer); }},
    {.env = "MCP_EXEC_CPUS",
     .flag = "--cpus",
     .type = T::kDecimal,
     .default_text = "1",
     .help = "CPU bandwidth per run, e.g. 1 or 0.5",
     .doc = "CPU bandwidth per run, e.g. `0.5` or `2`",
     .min = 0.01,
     .max = 1024,
     .store = [](Config& c, const V& v) { c.cpus = v.decimal; }},
    {.env = "MCP_EXEC_LIMITS",
     .flag = "--limits",
     .type = T::kChoice,
     .default_text = "auto",
     .help = "auto | cgroup2 | cgroup1 | rlimit (rlimit: degraded, no memory limit)",
     .doc = "limits backend: `auto`, `cgroup2`, `cgroup1`, or `rlimit` (degraded, only by "
            "choice)",
     .choices = "auto|cgroup2|cgroup1|rlimit",
     .store = [](Config& c, const V& v) { c.limits = static_cast<LimitsMode>(v.choice); }},
    {.env = "MCP_EXEC_CGROUP",
     .flag = "--cgroup",
     .type = T::kNonEmpty,
     .default_text = "",
     .help = "A delegated cgroup v2 directory for the runs (default: mcp-exec's own cgroup)",
     .doc = "a delegated cgroup v2 directory for the runs; empty: mcp-exec's own cgroup",
     .store = [](Config& c, const V& v) { c.cgroup = v.text; }},
    {.env = "MCP_EXEC_HOST_UID",
     .flag = "--host-uid",
     .type = T::kInt,
     .default_text = "65532",
     .help = "As root: the unprivileged host uid the sandbox user maps to",
     .doc = "as root: the host uid the sandbox user maps to",
     .min = 1,
     .max = kIdMax,
     .store = [](Config& c, const V& v) { c.host_uid = static_cast<uid_t>(v.integer); }},
    {.env = "MCP_EXEC_HOST_GID",
     .flag = "--host-gid",
     .type = T::kInt,
     .default_text = "65532",
     .help = "As root: likewise for the gid",
     .doc = "as root: the host gid the sandbox user maps to",
     .min = 1,
     .max = kIdMax,
     .store = [](Config& c, const V& v) { c.host_gid = static_cast<gid_t>(v.integer); }},
    {.env = "MCP_EXEC_FIGURE_MAX_PX",
     .flag = "--figure-max-px",
     .type = T::kInt,
     .default_text = "1568",
     .help = "Longest edge in pixels of the matplotlib figures saved to /tmp/outputs, 64 to 8192",
     .doc = "the long edge, in pixels, of the matplotlib figures saved into `/tmp/outputs` "
            "([Figures](#figures)), 64 to 8192",
     .min = kFigureMaxPxMin,
     .max = kFigureMaxPxMax,
     .store = [](Config& c, const V& v) { c.figure_max_px = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_ENGINE",
     .flag = "--engine",
     .type = T::kChoice,
     .default_text = "auto",
     .help = "auto | cold | pool | zygote: pool keeps sandboxes ready with MCP_EXEC_PRELOAD "
             "imported, zygote forks them from one interpreter that has; auto is the first of "
             "zygote, pool and cold that starts here",
     .doc = "where a run's sandbox comes from: `cold` (made for the run), `pool` (prepared ahead "
            "with the preloads imported), `zygote` (forked ahead from one interpreter that "
            "imported them), or `auto`, the first of zygote, pool and cold that starts; see "
            "[Engines](#engines-cold-pool-and-zygote)",
     .scope = S::kServeAndRunEngine,
     .choices = "auto|cold|pool|zygote",
     .store = [](Config& c, const V& v) { c.engine = static_cast<EngineKind>(v.choice); }},
    {.env = "MCP_EXEC_POOL_SIZE",
     .flag = "--pool-size",
     .type = T::kInt,
     .default_text = "2",
     .help = "Sandboxes the pool (or zygote) keeps ready at least, 1 to 64",
     .doc = "sandboxes the pool or the zygote keeps ready at least, 1 to 64; each pool sandbox "
            "holds an interpreter with the preloads (about 85 MB with the default ones), a "
            "zygote's share the zygote's",
     .scope = S::kServe,
     .min = 1,
     .max = 64,
     .store = [](Config& c, const V& v) { c.pool_size = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_POOL_MAX",
     .flag = "--pool-max",
     .type = T::kInt,
     .default_text = "",
     .computed_default = "8, or `MCP_EXEC_POOL_SIZE` if larger",
     .help = "Sandboxes kept ready for 30 s after that many runs at once, 1 to 64, not below "
             "MCP_EXEC_POOL_SIZE (default: 8, or MCP_EXEC_POOL_SIZE if larger)",
     .doc = "sandboxes the pool or the zygote keeps ready for 30 s after that many runs were in "
            "flight at once (at most `MCP_EXEC_MAX_CONCURRENCY` are), 1 to 64, not below "
            "`MCP_EXEC_POOL_SIZE`; each pool sandbox holds its own interpreter",
     .scope = S::kServe,
     .min = 1,
     .max = 64,
     .store = [](Config& c, const V& v) { c.pool_max = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_ZYGOTE_MAX_FORKS",
     .flag = "--zygote-max-forks",
     .type = T::kInt,
     .default_text = "10000",
     .help = "Runs a zygote forks before a new one replaces it, 1 to 1000000",
     .doc = "runs a zygote forks before a new one replaces it, 1 to 1000000",
     .scope = S::kServe,
     .min = 1,
     .max = 1000000,
     .store = [](Config& c, const V& v) { c.zygote_max_forks = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_ZYGOTE_MAX_AGE_S",
     .flag = "--zygote-max-age",
     .type = T::kInt,
     .default_text = "600",
     .help = "Seconds after which a new zygote replaces the old, 1 to 86400",
     .doc = "seconds after which a new zygote replaces the old, 1 to 86400",
     .scope = S::kServe,
     .min = 1,
     .max = 86400,
     .store = [](Config& c, const V& v) { c.zygote_max_age_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_MAX_SESSIONS",
     .flag = "--max-sessions",
     .type = T::kInt,
     .default_text = "8",
     .help = "Sessions (exec with session: \"new\") open at once, 0 to 1024; 0 turns them off",
     .doc = "sessions (`exec` with `session: \"new\"`) open at once in the server, 0 to 1024; "
            "0 turns sessions off",
     .scope = S::kServe,
     .min = 0,
     .max = 1024,
     .store = [](Config& c, const V& v) { c.max_sessions = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_SESSION_IDLE_S",
     .flag = "--session-idle",
     .type = T::kInt,
     .default_text = "600",
     .help = "Seconds without a call after which a session ends, 1 to 86400",
     .doc = "seconds without a call after which a session ends, 1 to 86400",
     .scope = S::kServe,
     .min = 1,
     .max = 86400,
     .store = [](Config& c, const V& v) { c.session_idle_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_SESSION_MAX_AGE_S",
     .flag = "--session-max-age",
     .type = T::kInt,
     .default_text = "3600",
     .help = "Seconds after which a session ends however busy, 1 to 604800",
     .doc = "seconds after which a session ends however busy, 1 to 604800",
     .scope = S::kServe,
     .min = 1,
     .max = 604800,
     .store = [](Config& c, const V& v) { c.session_max_age_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_PRELOAD",
     .flag = "--preload",
     .type = T::kModuleList,
     .default_text = "numpy,pandas,matplotlib.pyplot",
     .help = "Modules a warm interpreter imports before its program, comma-separated",
     .doc = "modules a pool sandbox's interpreter imports before its program, comma-separated; "
            "empty for none. One that does not import stops `serve` with the import's error",
     .store = [](Config& c, const V& v) { c.preload = v.list; }},
    {.env = "MCP_EXEC_ENVIRONMENTS",
     .flag = "--environments",
     .type = T::kNameList,
     .default_text = "",
     .computed_default = "`default` and every built image",
     .help = "Environments offered, comma-separated (default: default and every image built in "
             "the environments directory)",
     .doc = "the environments (images) offered, comma-separated: a call chooses one with the "
            "`environment` argument. Empty: `default` and every image built in the environments "
            "directory; a named one that is not built is not offered, with a warning "
            "([Environments](docs/environments.md#choosing-an-environment))",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.environments = v.list; }},
    {.env = "MCP_EXEC_DEFAULT_ENVIRONMENT",
     .flag = "--default-environment",
     .type = T::kNonEmpty,
     .default_text = "default",
     .help = "The environment of a call that names none; one of those offered",
     .doc = "the environment of a call that names none; `serve` refuses to start when it is not "
            "offered",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.default_environment = v.text; }},
    {.env = "MCP_EXEC_ENVIRONMENTS_DIR",
     .flag = "--environments-dir",
     .type = T::kText,
     .default_text = "",
     .computed_default = "`environments` beside the rootfs",
     .help = "Directory of the environment images other than default (default: environments "
             "beside the rootfs as configured)",
     .doc = "the directory of the environment images other than `default`, one directory per "
            "name; empty: `environments` beside `MCP_EXEC_ROOTFS` as configured "
            "(`build/environments`, `/var/lib/mcp-exec/environments`)",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.environments_dir = v.text; }},
    {.env = "MCP_EXEC_WHEELHOUSE",
     .flag = "--wheelhouse",
     .type = T::kText,
     .default_text = "",
     .help = "Directory of wheels the packages argument installs from (default: packages off)",
     .doc = "a directory of wheels (`.whl`) that the `packages` argument installs from, "
            "resolved with pip in an installer sandbox; empty: `packages` is refused "
            "([Packages](docs/packages.md))",
     .store = [](Config& c, const V& v) { c.wheelhouse = v.text; }},
    {.env = "MCP_EXEC_PACKAGE_INDEX",
     .flag = "--package-index",
     .type = T::kText,
     .default_text = "",
     .help = "HTTPS URL of a simple package index the packages argument installs from, instead "
             "of a wheelhouse (default: none)",
     .doc = "the https URL of a simple index (PEP 503 or 691) that `packages` installs from, "
            "instead of `MCP_EXEC_WHEELHOUSE`: fetched by the server, checked against the "
            "index's sha256, and handed to the installer sandbox through a channel "
            "([Packages](docs/packages.md)). `HTTPS_PROXY` and `NO_PROXY` apply",
     .store = [](Config& c, const V& v) { c.package_index = v.text; }},
    {.env = "MCP_EXEC_PACKAGE_INDEX_CA",
     .flag = "--package-index-ca",
     .type = T::kText,
     .default_text = "",
     .computed_default = "the system's CA store",
     .help = "CA certificates (PEM) that the package index's certificate is checked against",
     .doc = "a PEM file of the CA certificates that the package index's certificate is checked "
            "against",
     .store = [](Config& c, const V& v) { c.package_index_ca = v.text; }},
    {.env = "MCP_EXEC_PACKAGE_INDEX_CREDENTIALS",
     .flag = "--package-index-credentials",
     .type = T::kText,
     .default_text = "",
     .help = "A file (mode 600) with one line user:password for the package index",
     .doc = "a file of mode 600 or 400 holding one line `user:password`, sent to the package "
            "index as basic auth; never logged",
     .store = [](Config& c, const V& v) { c.package_index_credentials = v.text; }},
    {.env = "MCP_EXEC_PACKAGE_CACHE",
     .flag = "--package-cache",
     .type = T::kText,
     .default_text = "",
     .computed_default = "`/var/cache/mcp-exec/packages` as root, else "
                         "`~/.cache/mcp-exec/packages`",
     .help = "Directory of installed package layers (default: /var/cache/mcp-exec/packages as "
             "root, else ~/.cache/mcp-exec/packages)",
     .doc = "where installed package layers are kept, one read-only directory per resolved set "
            "([Packages](docs/packages.md))",
     .store = [](Config& c, const V& v) { c.package_cache = v.text; }},
    {.env = "MCP_EXEC_PACKAGE_ALLOW",
     .flag = "--package-allow",
     .type = T::kText,
     .default_text = "",
     .help = "Project names packages may install, comma-separated, dependencies included "
             "(default: any in the wheelhouse)",
     .doc = "the project names `packages` may install, comma-separated, dependencies included; "
            "empty: any the wheelhouse has",
     .store = [](Config& c, const V& v) { c.package_allow = v.text; }},
    {.env = "MCP_EXEC_MAX_PACKAGES",
     .flag = "--max-packages",
     .type = T::kInt,
     .default_text = "32",
     .help = "Requirements a call may name, and distributions a resolved set may hold",
     .doc = "requirements a call's `packages` may name, and distributions the set they resolve "
            "to may hold, dependencies included",
     .min = 1,
     .max = 1000,
     .store = [](Config& c, const V& v) { c.max_packages = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_PACKAGE_MAX_BYTES",
     .flag = "--package-max-bytes",
     .type = T::kBytes,
     .default_text = "128m",
     .help = "Largest package layer, unpacked",
     .doc = "the largest a package layer may be unpacked, all its wheels together (at least "
            "`1m`). The installer sandbox holds it in its workspace under `MCP_EXEC_MEMORY_MAX` "
            "with pip beside it: raise both together",
     .min = 1 << 20,
     .min_reason = "at least 1m",
     .store = [](Config& c, const V& v) { c.package_max_bytes = v.bytes; }},
    {.env = "MCP_EXEC_PACKAGE_CACHE_MAX_BYTES",
     .flag = "--package-cache-max-bytes",
     .type = T::kBytes,
     .default_text = "2g",
     .help = "Package layers kept, all together; the least recently used go past it",
     .doc = "the size of the package layers kept, all together: after an installation the "
            "least recently used layers that no run or session holds are removed down to it "
            "(`mcp-exec packages prune` does it by hand)",
     .store = [](Config& c, const V& v) { c.package_cache_max_bytes = v.bytes; }},
    {.env = "MCP_EXEC_PACKAGE_INSTALL_TIMEOUT_S",
     .flag = "--package-install-timeout",
     .type = T::kInt,
     .default_text = "120",
     .help = "Seconds an installation of packages may take",
     .doc = "seconds the installer sandbox may take to resolve and install a call's packages",
     .min = 1,
     .max = 3600,
     .store = [](Config& c, const V& v) {
       c.package_install_timeout_s = static_cast<int>(v.integer);
     }},
    {.env = "MCP_EXEC_ENVIRONMENT_IDLE_S",
     .flag = "--environment-idle",
     .type = T::kInt,
     .default_text = "600",
     .help = "Seconds without a run after which an environment other than the default releases "
             "its engine (zygote, prepared sandboxes), 0 to 86400; 0 never",
     .doc = "seconds without a run or an open session after which an environment other than the "
            "default releases its engine (its zygote and prepared sandboxes, and their memory), "
            "0 to 86400; 0: never. Its next call runs cold and starts the engine again in the "
            "background; the default environment's engine is never released "
            "([Engines](docs/environments.md#choosing-an-environment))",
     .scope = S::kServe,
     .min = 0,
     .max = 86400,
     .store = [](Config& c, const V& v) { c.environment_idle_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_MAX_CONCURRENCY",
     .flag = "--max-concurrency",
     .type = T::kInt,
     .default_text = "",
     .computed_default = "CPUs",
     .help = "Runs at once",
     .doc = "runs at once",
     .scope = S::kServe,
     .min = 1,
     .max = 1024,
     .store = [](Config& c, const V& v) { c.max_concurrency = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_MAX_QUEUE",
     .flag = "--max-queue",
     .type = T::kInt,
     .default_text = "64",
     .help = "Runs waiting for a slot before calls get 'busy'",
     .doc = "runs waiting for a slot; beyond it calls are refused as busy",
     .scope = S::kServe,
     .min = 0,
     .max = 100000,
     .store = [](Config& c, const V& v) { c.max_queue = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_MAX_TASKS",
     .flag = "--max-tasks",
     .type = T::kInt,
     .default_text = "1000",
     .help = "Tasks (calls run as MCP tasks) kept at once, running or finished; 0 turns tasks off",
     .doc = "tasks (calls run as MCP tasks, [protocol](docs/protocol.md#tasks)) kept at once, "
            "running or finished, 0 to 100000; the oldest finished go first; 0 turns tasks off",
     .scope = S::kServe,
     .min = 0,
     .max = 100000,
     .store = [](Config& c, const V& v) { c.max_tasks = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_MAX_TASKS_PER_CALLER",
     .flag = "--max-tasks-per-caller",
     .type = T::kInt,
     .default_text = "16",
     .help = "Tasks of one client running at once, 1 to 10000",
     .doc = "tasks of one client (connection, HTTP session, or the stateless credential) "
            "running at once, 1 to 10000",
     .scope = S::kServe,
     .min = 1,
     .max = 10000,
     .store = [](Config& c, const V& v) { c.max_tasks_per_caller = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_TASK_TTL_S",
     .flag = "--task-ttl",
     .type = T::kInt,
     .default_text = "3600",
     .help = "Seconds a task and its result are kept after it starts, at most; 10 to 604800",
     .doc = "seconds a task and its result are kept after it starts: the default and the cap of "
            "the TTL a client asks for, 10 to 604800",
     .scope = S::kServe,
     .min = 10,
     .max = 604800,
     .store = [](Config& c, const V& v) { c.task_ttl_s = static_cast<int>(v.integer); }},
    {.env = "MCP_EXEC_TASK_RESULTS_BYTES",
     .flag = "--task-results-bytes",
     .type = T::kBytes,
     .default_text = "256m",
     .help = "Bytes of finished tasks' results kept in all; the oldest go first",
     .doc = "bytes of finished tasks' results kept in all; past it the oldest go first",
     .scope = S::kServe,
     .store = [](Config& c, const V& v) { c.task_results_bytes = v.bytes; }},
    {.env = "MCP_EXEC_LOG_LEVEL",
     .flag = "--log-level",
     .type = T::kChoice,
     .default_text = "info",
     .help = "debug | info | warn | error: the least severe log lines written to stderr; debug "
             "adds a line per tool call with the time each of its steps took",
     .doc = "`debug`, `info`, `warn` or `error`: the least severe log lines written to stderr "
            "([operations](docs/operations.md#logs)); `debug` adds a `call steps` line per tool "
            "call with the time each of its steps took "
            "([engine.md](docs/engine.md#where-a-call-spends-its-time))",
     .scope = S::kAll,
     .choices = "debug|info|warn|error",
     .store = [](Config& c, const V& v) { c.log_level = static_cast<LogLevel>(v.choice); }},
};

Result<void> Invalid(const Setting& s, const std::string& why) {
  return MakeError(ErrorCode::kInvalidArgument, std::string(s.env) + ": " + why);
}

Result<void> Parse(const Setting& s, const std::string& text, SettingValue& v) {
  v.text = text;
  switch (s.type) {
    case T::kBytes: {
      auto bytes = ParseBytes(text);
      if (!bytes.ok()) return Invalid(s, bytes.error().message);
      if (static_cast<double>(*bytes) < s.min) return Invalid(s, std::string(s.min_reason));
      v.bytes = *bytes;
      return Ok();
    }
    case T::kInt: {
      auto n = ParseInt(text, static_cast<long long>(s.min), static_cast<long long>(s.max));
      if (!n.ok()) return Invalid(s, n.error().message);
      v.integer = *n;
      return Ok();
    }
    case T::kDecimal: {
      auto d = ParseDecimal(text, s.min, s.max);
      if (!d.ok()) return Invalid(s, d.error().message);
      v.decimal = *d;
      return Ok();
    }
    case T::kSwitch:
      // "1" turns a switch on; "0" and "" (a line `NAME=` in an environment file) leave it off.
      if (text != "1" && text != "0" && !text.empty()) {
        return Invalid(s, "'" + text + "' is not 1 or 0");
      }
      v.on = text == "1";
      return Ok();
    case T::kChoice: {
      const std::vector<std::string> choices = SettingChoices(s);
      std::string list;
      for (size_t i = 0; i < choices.size(); ++i) {
        if (text == choices[i]) {
          v.choice = i;
          return Ok();
        }
        list += (i == 0 ? "" : ", ") + choices[i];
      }
      return Invalid(s, "'" + text + "' is not one of " + list);
    }
    case T::kText:
      return Ok();
    case T::kNonEmpty:
      if (text.empty()) return Invalid(s, "must not be empty");
      return Ok();
    case T::kModuleList: {
      auto modules = ParseModuleList(text);
      if (!modules.ok()) return Invalid(s, modules.error().message);
      v.list = std::move(*modules);
      return Ok();
    }
    case T::kNameList: {
      auto names = ParseEnvironmentList(text);
      if (!names.ok()) return Invalid(s, names.error().message);
      v.list = std::move(*names);
      return Ok();
    }
  }
  return Invalid(s, "has no parser");
}

std::string Code(std::string_view text) { return "`" + std::string(text) + "`"; }

std::string FlagCell(const Setting& s) {
  switch (s.scope) {
    case S::kAll:
      return Code(s.flag);
    case S::kServe:
      return Code(s.flag) + " (serve)";
    case S::kServeAndRunEngine:
      return Code(s.flag) + " (serve; `run " + std::string(s.flag) + "` for a one-shot comparison)";
  }
  return Code(s.flag);
}

std::string DefaultCell(const Setting& s) {
  if (!s.computed_default.empty()) {
    // A phrase ("CPUs") reads as words; markdown (the rootfs's) is kept as written.
    return s.computed_default == "CPUs" ? "CPU count" : std::string(s.computed_default);
  }
  if (s.default_text.empty()) return "empty";
  return Code(s.default_text);
}

}  // namespace

std::span<const Setting> Settings() { return kSettings; }

const Setting* FindSetting(std::string_view env) {
  for (const Setting& s : kSettings) {
    if (s.env == env) return &s;
  }
  return nullptr;
}

Result<void> ApplySetting(const Setting& setting, const std::string& text, Config& config) {
  SettingValue value;
  MCPEXEC_RETURN_IF_ERROR(Parse(setting, text, value));
  setting.store(config, value);
  return Ok();
}

std::vector<std::string> SettingChoices(const Setting& setting) {
  std::vector<std::string> choices;
  std::string_view rest = setting.choices;
  while (!rest.empty()) {
    const size_t bar = rest.find('|');
    choices.emplace_back(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  return choices;
}

std::string ShownDefault(const Setting& setting) {
  if (!setting.computed_default.empty()) return std::string(setting.computed_default);
  if (setting.type == T::kSwitch) return "";
  return std::string(setting.default_text);
}

std::string FlagHelp(const Setting& setting) {
  std::string help(setting.help);
  // A computed default that is markdown (the rootfs's) is the README's; the help says it itself.
  const bool markdown = setting.computed_default.find('`') != std::string_view::npos;
  if (const std::string shown = ShownDefault(setting); !shown.empty() && !markdown) {
    help += " (default " + shown + ")";
  }
  help += " (" + std::string(setting.env) + (setting.type == T::kSwitch ? "=1)" : ")");
  return help;
}

std::string SettingsMarkdownTable() {
  std::ostringstream out;
  out << "| variable | flag | default | meaning |\n|---|---|---|---|\n";
  for (const Setting& s : kSettings) {
    out << "| " << Code(s.env) << " | " << FlagCell(s) << " | " << DefaultCell(s) << " | " << s.doc
        << " |\n";
  }
  return out.str();
}

}  // namespace mcpexec::config
