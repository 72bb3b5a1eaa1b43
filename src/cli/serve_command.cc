#include "cli/serve_command.h"

#include <signal.h>
#include <unistd.h>

#include <memory>

#include "exec/exec.h"
#include "exec/exec_tool.h"
#include "log/log.h"
#include "mcp/server.h"
#include "mcp/transport/http_server.h"
#include "mcp/transport/stdio.h"
#include "mcp/worker_pool.h"
#include "sandbox/plan.h"

namespace mcpexec::cli {

CLI::App* AddServeCommand(CLI::App& app, ServeOptions& options) {
  CLI::App* serve = app.add_subcommand(
      "serve", "Serve the MCP tool `exec` over stdio (default), Streamable HTTP or SSE");
  AddConfigFlags(serve, Command::kServe, options.config);
  serve->footer("Every flag has an MCP_EXEC_* variable of the same meaning; flags win.");
  return serve;
}

namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Serves Streamable HTTP and legacy SSE until SIGINT or SIGTERM.
int ServeHttp(mcp::Server& server, mcp::WorkerPool& pool, const config::Config& config) {
  auto address = mcp::http::ParseListenAddress(config.addr);
  if (!address.ok()) {
    log::Error("invalid configuration", {{"error", address.error().message}});
    return 1;
  }
  mcp::HttpServerOptions options;
  options.listen = *address;
  options.auth_token = config.auth_token;
  options.max_body_bytes = config::MaxMessageBytes(config);
  mcp::HttpServer http(server, options);
  auto port = http.Start();
  if (!port.ok()) {
    log::Error("cannot start the http server", {{"error", port.error().message}});
    return 1;
  }
  int signal_number = 0;
  const sigset_t stop_signals = StopSignals();
  sigwait(&stop_signals, &signal_number);
  log::Info("stopping", {{"signal", signal_number}});
  http.Stop();
  pool.Drain();
  return 0;
}

}  // namespace

int ServeCommand(const std::string& default_rootfs, const std::string& version,
                 const ServeOptions& options) {
  auto config = ResolveConfig(default_rootfs, config::ProcessEnv(), options.config);
  if (!config.ok()) {
    log::Error("invalid configuration", {{"error", config.error().message}});
    return 1;
  }
  auto plan = exec::PrepareSandboxes(*config);
  if (!plan.ok()) {
    log::Error("cannot prepare sandboxes", {{"error", plan.error().message}});
    return 1;
  }
  // A client that goes away mid-write must not kill the server.
  signal(SIGPIPE, SIG_IGN);
  if (config->transport != "stdio") {
    // Blocked before any thread starts, so that only ServeHttp's sigwait() takes them.
    const sigset_t stop_signals = StopSignals();
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  }

  mcp::WorkerPool pool(static_cast<size_t>(config->max_concurrency),
                       static_cast<size_t>(config->max_queue));
  mcp::ServerInfo info;
  info.version = version;
  mcp::Server server(info, {std::make_shared<exec::ExecTool>(*config, *plan)}, pool);
  const sandbox::SeccompFilter* filter = (*plan)->Seccomp();
  if (filter == nullptr) {
    log::Warn("seccomp is off (MCP_EXEC_SECCOMP_PROFILE=unconfined): programs can use every "
              "system call the namespaces allow");
  } else {
    for (const auto& skipped : filter->Skipped()) {
      log::Debug("seccomp rule skipped", {{"syscall", skipped.name}, {"reason", skipped.reason}});
    }
  }
  if ((*plan)->Limits().Kind() == limits::Backend::kRlimit) {
    log::Warn("limits are degraded (MCP_EXEC_LIMITS=rlimit): no memory limit, only cpu time, "
              "process count and an address-space backstop; every result says "
              "limits_backend \"rlimit\"");
  }
  log::Info("starting", {{"version", version},
                         {"transport", config->transport},
                         {"rootfs", (*plan)->Spec().rootfs},
                         {"seccomp_profile", config->seccomp_profile},
                         {"limits_backend", limits::BackendName((*plan)->Limits().Kind())},
                         {"limits_location", (*plan)->Limits().Location()},
                         {"memory_max", config->memory_max},
                         {"pids_max", config->pids_max},
                         {"cpus", config->cpus},
                         {"max_concurrency", config->max_concurrency},
                         {"max_queue", config->max_queue}});

  if (config->transport == "stdio") {
    auto served = mcp::ServeStdio(server, STDIN_FILENO, STDOUT_FILENO,
                                  config::MaxMessageBytes(*config));
    pool.Drain();  // the cancelled calls end before the server they belong to
    if (!served.ok()) {
      log::Error("stdio transport failed", {{"error", served.error().message}});
      return 1;
    }
    log::Info("stdin closed: stopping");
    return 0;
  }
  return ServeHttp(server, pool, *config);
}

}  // namespace mcpexec::cli
