#include "cli/serve_command.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "cli/descriptor_reserve.h"
#include "cli/open_file_limit.h"
#include "cli/readiness.h"
#include "cli/serve_metrics.h"
#include "exec/environment_engines.h"
#include "exec/environments.h"
#include "exec/exec.h"
#include "exec/exec_metrics.h"
#include "exec/exec_tool.h"
#include "exec/packages_config.h"
#include "exec/session_tools.h"
#include "http/client_address.h"
#include "log/log.h"
#include "mcp/server.h"
#include "mcp/transport/http_server.h"
#include "mcp/transport/stdio.h"
#include "mcp/worker_pool.h"
#include "sandbox/plan.h"
#include "sandbox/teardown.h"

namespace mcpexec::cli {

CLI::App* AddServeCommand(CLI::App& app, ServeOptions& options) {
  CLI::App* serve = app.add_subcommand(
      "serve", "Serve the MCP tool `exec` over stdio (default), Streamable HTTP or SSE");
  AddConfigFlags(serve, Command::kServe, options.config);
  serve->footer("Every flag has an MCP_EXEC_* variable of the same meaning; flags win.");
  return serve;
}

Result<Exposure> CheckExposure(const config::Config& config) {
  if (config.transport == config::Transport::kStdio) return Exposure::kStdio;
  auto address = mcp::transport::ParseListenAddress(config.addr);
  if (!address.ok()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "MCP_EXEC_ADDR: " + std::move(address).error().message);
  }
  if (address->IsLoopback()) return Exposure::kLoopback;
  if (!config.auth_token.empty()) return Exposure::kAuthenticated;
  if (config.allow_unauthenticated) return Exposure::kOpenByChoice;
  return MakeError(
      ErrorCode::kInvalidArgument,
      "refusing to serve " + std::string(config::TransportName(config.transport)) + " on " +
          address->ToString() +
          " (MCP_EXEC_ADDR, not loopback) without an auth token: anyone who can reach it could "
          "run code. Set a token with MCP_EXEC_AUTH_TOKEN_FILE (--auth-token-file) or "
          "MCP_EXEC_AUTH_TOKEN, listen on loopback (MCP_EXEC_ADDR=127.0.0.1:" +
          std::to_string(address->port) +
          "), or serve without one by choice with MCP_EXEC_ALLOW_UNAUTHENTICATED=1 "
          "(--allow-unauthenticated)");
}

Result<config::Config> ResolveServeConfig(const std::string& default_rootfs,
                                          const config::EnvLookup& env, const ConfigFlags& flags) {
  MCPEXEC_ASSIGN_OR_RETURN(config::Config c, ResolveConfig(default_rootfs, env, flags));
  MCPEXEC_RETURN_IF_ERROR(config::LoadAuthToken(c));
  MCPEXEC_RETURN_IF_ERROR(CheckExposure(c));
  return c;
}

namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Serves Streamable HTTP and legacy SSE until SIGINT or SIGTERM, with /metrics from `sources`
// and /readyz judged from the engine.
int ServeHttp(mcp::Server& server, mcp::WorkerPool& pool, const config::Config& config,
              const ServeMetricsSources& sources, size_t descriptor_reserve) {
  auto address = mcp::transport::ParseListenAddress(config.addr);
  if (!address.ok()) {
    log::Error("invalid configuration", {{"error", address.error().message}});
    return 1;
  }
  mcp::HttpServerOptions options;
  options.listen = *address;
  options.auth_token = config.auth_token;
  options.max_body_bytes = config::MaxMessageBytes(config);
  options.metrics_need_token = config.metrics_auth == config::MetricsAuth::kToken;
  options.read_timeout = std::chrono::seconds(config.http_read_timeout_s);
  options.request_timeout = std::chrono::seconds(config.http_request_timeout_s);
  options.write_timeout = std::chrono::seconds(config.http_write_timeout_s);
  options.min_transfer_rate = config.http_min_rate;
  options.descriptor_reserve = descriptor_reserve;
  auto proxies = http::TrustedProxies::Parse(config.trusted_proxies);
  if (!proxies.ok()) {
    log::Error("invalid configuration",
               {{"error", "MCP_EXEC_TRUSTED_PROXIES: " + proxies.error().message}});
    return 1;
  }
  options.trusted_proxies = std::move(*proxies);
  options.write_metrics = [&sources](metrics::TextWriter& out) { WriteServeMetrics(out, sources); };
  options.readiness = [engine = sources.engine] {
    return JudgeReadiness(GatherReadiness(engine->Plan(), *engine));
  };
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
  server.Tasks().CancelAll();  // the stateless credential's tasks belong to no session
  pool.Drain();
  return 0;
}

}  // namespace

int ServeCommand(const std::string& default_rootfs, const std::string& version,
                 const ServeOptions& options) {
  auto config = ResolveServeConfig(default_rootfs, config::ProcessEnv(), options.config);
  if (!config.ok()) {
    log::Error("invalid configuration", {{"error", config.error().message}});
    return 1;
  }
  if (auto flag = options.config.values.find("MCP_EXEC_AUTH_TOKEN");
      flag != options.config.values.end() && !flag->second.empty()) {
    log::Warn("the auth token was given with --auth-token, where every local user can read it "
              "(/proc/PID/cmdline, ps): use --auth-token-file or MCP_EXEC_AUTH_TOKEN_FILE");
  }
  if (CheckExposure(*config).value() == Exposure::kOpenByChoice) {
    log::Warn("serving without an auth token off loopback, by choice "
              "(MCP_EXEC_ALLOW_UNAUTHENTICATED=1): anyone who can reach the address can run code",
              {{"addr", config->addr}});
  }
  std::vector<std::string> environment_warnings;
  auto offer = exec::DiscoverEnvironments(*config, environment_warnings);
  for (const std::string& warning : environment_warnings) log::Warn(warning);
  if (!offer.ok()) {
    log::Error("cannot offer the environments", {{"error", ErrorText(offer.error())}});
    return 1;
  }
  auto backend = limits::OpenBackend(exec::BackendOptionsFor(*config));
  if (!backend.ok()) {
    log::Error("cannot prepare sandboxes", {{"error", ErrorText(backend.error())}});
    return 1;
  }
  auto environments = exec::EnvironmentEngines::Prepare(*config, std::move(*offer), *backend);
  if (!environments.ok()) {
    log::Error("cannot prepare sandboxes", {{"error", ErrorText(environments.error())}});
    return 1;
  }
  auto package_layers = exec::OpenPackageLayers(*config, *backend);
  if (!package_layers.ok()) {
    log::Error("cannot offer packages", {{"error", ErrorText(package_layers.error())}});
    return 1;
  }
  // Before the engines start, which open what the limit must hold.
  const size_t descriptor_reserve = DescriptorReserve(
      *config, (*environments)->Offered().environments.size(), (*backend)->Kind());
  RaiseOpenFileLimit(descriptor_reserve, config->transport == config::Transport::kStdio
                                             ? 0
                                             : mcp::kMinConnectionDescriptors);
  std::vector<exec::PassedOver> passed_over;
  auto started = (*environments)->StartDefault(&passed_over);
  for (const exec::PassedOver& p : passed_over) {
    log::Warn("an engine does not start here; runs take a slower one",
              {{"engine", p.engine}, {"error", p.error.message}});
  }
  if (!started.ok()) {
    log::Error("cannot start the engine", {{"engine", config::EngineName(config->engine)},
                                           {"error", started.error().message}});
    return 1;
  }
  const std::shared_ptr<engine::Engine>& engine = (*environments)->DefaultEngine();
  const sandbox::LaunchPlan& plan = engine->Plan();
  // A client that goes away mid-write must not kill the server.
  signal(SIGPIPE, SIG_IGN);
  if (config->transport != config::Transport::kStdio) {
    // Blocked before any thread starts, so that only ServeHttp's sigwait() takes them.
    const sigset_t stop_signals = StopSignals();
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  }

  mcp::WorkerPool pool(static_cast<size_t>(config->max_concurrency),
                       static_cast<size_t>(config->max_queue));
  mcp::ServerInfo info;
  info.version = version;
  auto exec_metrics = std::make_shared<exec::ExecMetrics>();
  std::shared_ptr<engine::SessionStore> sessions;
  if (config->max_sessions > 0) {
    sessions = std::make_shared<engine::SessionStore>(exec::SessionOptionsFor(*config));
  }
  std::vector<std::shared_ptr<mcp::Tool>> tools = {
      std::make_shared<exec::ExecTool>(*config, *environments, exec_metrics, sessions,
                                       *package_layers)};
  if (sessions) {
    tools.push_back(std::make_shared<exec::SessionListTool>(sessions));
    tools.push_back(std::make_shared<exec::SessionCloseTool>(sessions));
  }
  tools.insert(tools.end(), options.extra_tools.begin(), options.extra_tools.end());
  mcp::TaskLimits task_limits;
  task_limits.max_tasks = static_cast<size_t>(config->max_tasks);
  task_limits.max_running_per_caller = static_cast<size_t>(config->max_tasks_per_caller);
  task_limits.max_ttl_ms = int64_t{config->task_ttl_s} * 1000;
  task_limits.max_result_bytes = config->task_results_bytes;
  mcp::Server server(info, std::move(tools), pool, task_limits);
  const sandbox::SeccompFilter* filter = plan.Seccomp();
  if (filter == nullptr) {
    log::Warn("seccomp is off (MCP_EXEC_SECCOMP_PROFILE=unconfined): programs can use every "
              "system call the namespaces allow");
  } else {
    for (const auto& skipped : filter->Skipped()) {
      log::Debug("seccomp rule skipped", {{"syscall", skipped.name}, {"reason", skipped.reason}});
    }
  }
  if (plan.Limits().Kind() == limits::Backend::kRlimit) {
    log::Warn("limits are degraded (MCP_EXEC_LIMITS=rlimit): no memory limit, only cpu time, "
              "process count and an address-space backstop; every result says "
              "limits_backend \"rlimit\"");
  }
  log::Info("starting", {{"version", version},
                         {"transport", config::TransportName(config->transport)},
                         {"engine", engine->Name()},
                         {"engine_setting", config::EngineName(config->engine)},
                         {"rootfs", plan.Spec().rootfs},
                         {"environments", (*environments)->Offered().Names()},
                         {"default_environment", (*environments)->Offered().default_name},
                         {"seccomp_profile", config->seccomp_profile},
                         {"limits_backend", limits::BackendName(plan.Limits().Kind())},
                         {"limits_location", plan.Limits().Location()},
                         {"memory_max", config->memory_max},
                         {"pids_max", config->pids_max},
                         {"cpus", config->cpus},
                         {"max_concurrency", config->max_concurrency},
                         {"max_queue", config->max_queue}});

  sandbox::Teardown& teardown = sandbox::Teardown::Shared();
  teardown.OnFailure([](const Error& error) {
    log::Warn("a finished run's sandbox could not be torn down", {{"error", error.message}});
  });

  if (config->transport == config::Transport::kStdio) {
    auto served = mcp::ServeStdio(server, STDIN_FILENO, STDOUT_FILENO,
                                  config::MaxMessageBytes(*config));
    server.Tasks().CancelAll();
    pool.Drain();  // the cancelled calls end before the server they belong to
    if (!served.ok()) {
      log::Error("stdio transport failed", {{"error", served.error().message}});
      return 1;
    }
    log::Info("stdin closed: stopping");
    return 0;
  }
  const ServeMetricsSources sources{version,      exec_metrics.get(),    &pool,
                                    engine.get(), plan.Limits().Kind(), environments->get(),
                                    &teardown,    &server.Tasks(),       &server.Listening()};
  return ServeHttp(server, pool, *config, sources, descriptor_reserve);
}

}  // namespace mcpexec::cli
