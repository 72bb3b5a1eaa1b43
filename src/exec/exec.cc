#include "exec/exec.h"

#include "base/utf8.h"
#include "exec/packages_config.h"

namespace mcpexec::exec {

sandbox::SandboxSpec SpecFromConfig(const config::Config& config) {
  sandbox::SandboxSpec spec;
  spec.rootfs = config.rootfs;
  spec.python = config.python;
  spec.workspace_bytes = config.workspace_bytes;
  spec.seccomp_profile = config.seccomp_profile;
  spec.figure_max_px = static_cast<uint32_t>(config.figure_max_px);
  spec.preload = config.preload;
  const sandbox::HostIds ids = sandbox::ResolveHostIds(config.host_uid, config.host_gid);
  spec.outside_uid = ids.uid;
  spec.outside_gid = ids.gid;
  spec.privileged_id_mapping = ids.privileged;
  return spec;
}

limits::BackendOptions BackendOptionsFor(const config::Config& config) {
  limits::BackendOptions options;
  options.mode = config.limits;
  options.limits.memory_max = config.memory_max;
  options.limits.pids_max = config.pids_max;
  options.limits.cpus = config.cpus;
  options.limits.max_timeout_s = config.max_timeout_s;
  options.cgroup = config.cgroup;
  return options;
}

Result<std::shared_ptr<const sandbox::LaunchPlan>> PrepareSandboxes(const config::Config& config) {
  MCPEXEC_ASSIGN_OR_RETURN(std::shared_ptr<limits::LimitsBackend> backend,
                           limits::OpenBackend(BackendOptionsFor(config)));
  return PrepareSandboxes(config, std::move(backend));
}

Result<std::shared_ptr<const sandbox::LaunchPlan>> PrepareSandboxes(
    const config::Config& config, std::shared_ptr<limits::LimitsBackend> backend) {
  return PrepareSandboxes(SpecFromConfig(config), std::move(backend));
}

Result<std::shared_ptr<const sandbox::LaunchPlan>> PrepareSandboxes(
    const sandbox::SandboxSpec& spec, std::shared_ptr<limits::LimitsBackend> backend) {
  if (spec.privileged_id_mapping) MCPEXEC_RETURN_IF_ERROR(sandbox::DropSupplementaryGroups());
  return sandbox::Compile(spec, std::move(backend));
}

sandbox::RunLimits LimitsFor(const config::Config& config, const ExecRequest& request) {
  sandbox::RunLimits limits;
  limits.timeout = std::chrono::seconds(config::EffectiveTimeoutSeconds(config, request.timeout_s));
  limits.max_output_bytes = config.max_output_bytes;
  limits.outputs = OutputLimitsFor(config);
  return limits;
}

engine::SessionOptions SessionOptionsFor(const config::Config& config) {
  engine::SessionOptions options;
  options.max_sessions = static_cast<size_t>(config.max_sessions);
  options.idle = std::chrono::seconds(config.session_idle_s);
  options.max_age = std::chrono::seconds(config.session_max_age_s);
  return options;
}

namespace {

Result<std::shared_ptr<engine::Engine>> StartNamedEngine(
    const config::Config& config, const std::string& name,
    std::shared_ptr<const sandbox::LaunchPlan> plan, EngineUse use) {
  if (name == "cold") return std::shared_ptr<engine::Engine>(engine::MakeColdEngine(plan));
  sandbox::SandboxSpec spec = plan->Spec();
  spec.warm = true;
  spec.zygote = name == "zygote";
  if (spec.zygote) spec.zygote_layers = PackageLayersDir(config);
  MCPEXEC_ASSIGN_OR_RETURN(std::shared_ptr<const sandbox::LaunchPlan> warm,
                           sandbox::Compile(spec, plan->LimitsBackend()));
  engine::PoolOptions options;
  options.size = use == EngineUse::kOneShot ? 1 : static_cast<size_t>(config.pool_size);
  options.max_size = use == EngineUse::kOneShot ? 1 : static_cast<size_t>(config::PoolMax(config));
  options.refill = use == EngineUse::kServe;
  options.zygote_max_forks = static_cast<uint64_t>(config.zygote_max_forks);
  options.zygote_max_age = std::chrono::seconds(config.zygote_max_age_s);
  MCPEXEC_ASSIGN_OR_RETURN(
      std::unique_ptr<engine::Engine> engine,
      spec.zygote ? engine::MakeZygoteEngine(std::move(plan), std::move(warm), options)
                  : engine::MakePoolEngine(std::move(plan), std::move(warm), options));
  return std::shared_ptr<engine::Engine>(std::move(engine));
}

}  // namespace

Result<std::shared_ptr<engine::Engine>> StartEngine(const config::Config& config,
                                                    std::shared_ptr<const sandbox::LaunchPlan> plan,
                                                    EngineUse use,
                                                    std::vector<PassedOver>* passed_over) {
  if (config.engine != config::EngineKind::kAuto) {
    return StartNamedEngine(config, config::EngineName(config.engine), std::move(plan), use);
  }
  std::vector<PassedOver> ignored;
  return ChooseAuto<std::shared_ptr<engine::Engine>>(
      [&](const char* name) { return StartNamedEngine(config, name, plan, use); },
      passed_over != nullptr ? *passed_over : ignored);
}

sandbox::Program ProgramFor(const ValidRequest& request) {
  return sandbox::Program{request->code, request->stdin_data, request->files};
}

Result<sandbox::RunResult> Execute(engine::Engine& engine, const config::Config& config,
                                   const ValidRequest& request, const sandbox::RunHooks& hooks) {
  return engine.Run(ProgramFor(request),
                    LimitsFor(config, request.Get()), hooks);
}

Result<sandbox::RunResult> ExecuteInSession(engine::Engine& engine, const config::Config& config,
                                            const ValidRequest& request) {
  MCPEXEC_ASSIGN_OR_RETURN(sandbox::Sandbox box, engine.TakeWarm());
  MCPEXEC_ASSIGN_OR_RETURN(sandbox::Session session, sandbox::Session::Start(std::move(box)));
  MCPEXEC_ASSIGN_OR_RETURN(
      sandbox::CallResult call,
      session.Call(ProgramFor(request),
               LimitsFor(config, request.Get()), {}, SessionOptionsFor(config).grace));
  return std::move(call.run);
}

nlohmann::json ResultToJson(const sandbox::RunResult& result,
                            const std::vector<FileReport>& files) {
  nlohmann::json j = {
      {"stdout", RepairUtf8(result.stdout_data)},
      {"stderr", RepairUtf8(result.stderr_data)},
      {"exit_code", result.exit_code},
      {"duration_ms", result.duration.count()},
      {"truncated", result.truncated},
      {"timed_out", result.outcome == sandbox::Outcome::kTimedOut},
  };
  if (result.signal) j["signal"] = sandbox::SignalName(*result.signal);
  j["oom_killed"] = result.oom_killed;
  j["memory_peak_bytes"] =
      result.memory_peak_bytes ? nlohmann::json(*result.memory_peak_bytes) : nlohmann::json();
  j["cpu_time_ms"] = result.cpu_time_ms ? nlohmann::json(*result.cpu_time_ms) : nlohmann::json();
  j["limits_backend"] = result.limits_backend;
  AddFilesJson(files, result.outputs, j);
  return j;
}

}  // namespace mcpexec::exec
