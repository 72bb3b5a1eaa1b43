#include "cli/config_flags.h"

namespace mcpexec::cli {
namespace {

struct FlagSpec {
  const char* flag;
  const char* var;
  const char* help;
  bool server_only;
  // A switch takes no value: given, it sets its variable to "1".
  bool is_switch = false;
};

constexpr FlagSpec kFlags[] = {
    {"--transport", "MCP_EXEC_TRANSPORT", "stdio | http | sse (http and sse serve both)", true},
    {"--addr", "MCP_EXEC_ADDR", "Listen address for http/sse, e.g. :8080 or 127.0.0.1:8080",
     true},
    {"--auth-token", "MCP_EXEC_AUTH_TOKEN",
     "Require X-MCP-AUTH or Authorization: Bearer with this token on http/sse. Every local "
     "user can read a command line: prefer --auth-token-file",
     true},
    {"--auth-token-file", "MCP_EXEC_AUTH_TOKEN_FILE",
     "Read the token from this file, of mode 600 (640 if root owns it); one trailing newline is "
     "ignored", true},
    {"--allow-unauthenticated", "MCP_EXEC_ALLOW_UNAUTHENTICATED",
     "Serve http/sse on a non-loopback address without a token (anyone who reaches it can run "
     "code)",
     true, true},
    {"--metrics-auth", "MCP_EXEC_METRICS_AUTH",
     "token | none: whether /metrics needs the token like /mcp (when one is set), or is open to "
     "any scraper (default token)",
     true},
    {"--max-concurrency", "MCP_EXEC_MAX_CONCURRENCY", "Runs at once (default: CPUs)", true},
    {"--max-queue", "MCP_EXEC_MAX_QUEUE", "Runs waiting for a slot before calls get 'busy'",
     true},
    {"--default-timeout-s", "MCP_EXEC_DEFAULT_TIMEOUT_S", "Timeout when a call gives none",
     false},
    {"--max-timeout-s", "MCP_EXEC_MAX_TIMEOUT_S", "Timeout ceiling", false},
    {"--max-output-bytes", "MCP_EXEC_MAX_OUTPUT_BYTES", "Cap on combined stdout+stderr", false},
    {"--max-stdin-bytes", "MCP_EXEC_MAX_STDIN_BYTES", "Cap on stdin", false},
    {"--python", "MCP_EXEC_PYTHON", "Interpreter inside the rootfs", false},
    {"--rootfs", "MCP_EXEC_ROOTFS", "Python rootfs directory", false},
    {"--seccomp-profile", "MCP_EXEC_SECCOMP_PROFILE",
     "Docker-format seccomp profile for the program, or 'unconfined' (no filter)", false},
    {"--workspace-bytes", "MCP_EXEC_WORKSPACE_BYTES", "Size of the /tmp workspace tmpfs", false},
    {"--max-input-files", "MCP_EXEC_MAX_INPUT_FILES", "Input files per run (default 64)", false},
    {"--max-input-file-bytes", "MCP_EXEC_MAX_INPUT_FILE_BYTES",
     "Size of one input file (default 16m)", false},
    {"--max-output-files", "MCP_EXEC_MAX_OUTPUT_FILES",
     "Files read back from /tmp/outputs (default 16)", false},
    {"--max-output-file-bytes", "MCP_EXEC_MAX_OUTPUT_FILE_BYTES",
     "Size of one file read back (default 1m)", false},
    {"--max-result-bytes", "MCP_EXEC_MAX_RESULT_BYTES",
     "Files are returned while the tool result stays within this (default 1000000)", false},
    {"--memory-max", "MCP_EXEC_MEMORY_MAX", "Memory per run, no swap (default 256m)", false},
    {"--pids-max", "MCP_EXEC_PIDS_MAX", "Processes and threads per run (default 128)", false},
    {"--cpus", "MCP_EXEC_CPUS", "CPU bandwidth per run, e.g. 1 or 0.5 (default 1)", false},
    {"--limits", "MCP_EXEC_LIMITS",
     "auto | cgroup2 | cgroup1 | rlimit (rlimit: degraded, no memory limit; default auto)",
     false},
    {"--cgroup", "MCP_EXEC_CGROUP",
     "A delegated cgroup v2 directory for the runs (default: mcp-exec's own cgroup)", false},
    {"--host-uid", "MCP_EXEC_HOST_UID",
     "As root: the unprivileged host uid the sandbox user maps to (default 65532)", false},
    {"--host-gid", "MCP_EXEC_HOST_GID", "As root: likewise for the gid", false},
    {"--engine", "MCP_EXEC_ENGINE",
     "auto | cold | pool | zygote: pool keeps sandboxes ready with MCP_EXEC_PRELOAD imported, "
     "zygote forks them from one interpreter that has; auto is the first of zygote, pool and "
     "cold that starts here (default auto)",
     true},
    {"--pool-size", "MCP_EXEC_POOL_SIZE",
     "Sandboxes the pool (or zygote) keeps ready, 1 to 64 (default 2)", true},
    {"--zygote-max-forks", "MCP_EXEC_ZYGOTE_MAX_FORKS",
     "Runs a zygote forks before a new one replaces it, 1 to 1000000 (default 1000)", true},
    {"--zygote-max-age", "MCP_EXEC_ZYGOTE_MAX_AGE_S",
     "Seconds after which a new zygote replaces the old, 1 to 86400 (default 600)", true},
    {"--preload", "MCP_EXEC_PRELOAD",
     "Modules a warm interpreter imports before its program, comma-separated (default "
     "numpy,pandas,matplotlib.pyplot)",
     false},
    {"--figure-max-px", "MCP_EXEC_FIGURE_MAX_PX",
     "Longest edge in pixels of the matplotlib figures saved to /tmp/outputs, 64 to 8192 "
     "(default 1568)",
     false},
};

}  // namespace

void AddConfigFlags(CLI::App* app, Command command, ConfigFlags& flags) {
  for (const FlagSpec& spec : kFlags) {
    if (spec.server_only && command != Command::kServe) continue;
    const std::string var = spec.var;
    if (spec.is_switch) {
      app->add_flag_callback(
          spec.flag, [&flags, var] { flags.values[var] = "1"; },
          std::string(spec.help) + " (" + var + "=1)");
      continue;
    }
    app->add_option_function<std::string>(
        spec.flag, [&flags, var](const std::string& value) { flags.values[var] = value; },
        std::string(spec.help) + " (" + var + ")");
  }
}

Result<config::Config> ResolveConfig(const std::string& default_rootfs,
                                     const config::EnvLookup& env, const ConfigFlags& flags) {
  config::Config c = config::Defaults(default_rootfs);
  MCPEXEC_RETURN_IF_ERROR(config::ApplyEnv(env, c));
  auto from_flags = [&flags](const std::string& var) -> std::optional<std::string> {
    auto it = flags.values.find(var);
    if (it == flags.values.end()) return std::nullopt;
    return it->second;
  };
  MCPEXEC_RETURN_IF_ERROR(config::ApplyEnv(from_flags, c));
  MCPEXEC_RETURN_IF_ERROR(config::Validate(c));
  return c;
}

}  // namespace mcpexec::cli
