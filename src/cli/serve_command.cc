#include "cli/serve_command.h"

#include <signal.h>
#include <unistd.h>

#include <memory>

#include "exec/exec.h"
#include "exec/exec_tool.h"
#include "log/log.h"
#include "mcp/server.h"
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

int ServeCommand(const std::string& default_rootfs, const std::string& version,
                 const ServeOptions& options) {
  auto config = ResolveConfig(default_rootfs, config::ProcessEnv(), options.config);
  if (!config.ok()) {
    log::Error("invalid configuration", {{"error", config.error().message}});
    return 1;
  }
  auto plan = sandbox::Compile(exec::SpecFromConfig(*config));
  if (!plan.ok()) {
    log::Error("cannot prepare sandboxes", {{"error", plan.error().message}});
    return 1;
  }
  // A client that goes away mid-write must not kill the server.
  signal(SIGPIPE, SIG_IGN);

  mcp::WorkerPool pool(static_cast<size_t>(config->max_concurrency),
                       static_cast<size_t>(config->max_queue));
  mcp::ServerInfo info;
  info.version = version;
  mcp::Server server(info, {std::make_shared<exec::ExecTool>(*config, *plan)}, pool);
  log::Info("starting", {{"version", version},
                         {"transport", config->transport},
                         {"rootfs", (*plan)->Spec().rootfs},
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
  log::Error("transport not available in this build", {{"transport", config->transport}});
  return 1;
}

}  // namespace mcpexec::cli
