// The exec operation, shared by `mcp-exec run` and the MCP tool: validate a request against
// the configuration, map the configuration to a sandbox spec, run, and shape the result as the
// seed's JSON contract. The only module that knows both the configuration and the sandbox.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "config/config.h"
#include "engine/engine.h"
#include "engine/sessions.h"
#include "exec/arguments.h"
#include "exec/engine_choice.h"
#include "exec/files.h"
#include "limits/limits.h"
#include "sandbox/plan.h"
#include "sandbox/run_result.h"
#include "sandbox/spec.h"

namespace mcpexec::exec {

// The sandbox every run of this configuration gets. Host ids come from the process: the
// caller's own when rootless, config.host_uid/gid when root.
sandbox::SandboxSpec SpecFromConfig(const config::Config& config);

// The resource limits and backend choice of this configuration.
limits::BackendOptions BackendOptionsFor(const config::Config& config);

// Opens the limits backend (cgroups are prepared, stale runs removed) and compiles the plan
// every run of this configuration uses. Errors say what is missing and how to fix it.
Result<std::shared_ptr<const sandbox::LaunchPlan>> PrepareSandboxes(const config::Config& config);
// The same with a backend opened earlier by OpenBackend(BackendOptionsFor(config)): `doctor`
// reports on the backend and then runs under it, and opening it twice would move the process
// into a cgroup v2 "supervisor" leaf twice.
Result<std::shared_ptr<const sandbox::LaunchPlan>> PrepareSandboxes(
    const config::Config& config, std::shared_ptr<limits::LimitsBackend> backend);
// The plan of the sandbox `spec` (an environment's: SpecForEnvironment) over `backend`.
Result<std::shared_ptr<const sandbox::LaunchPlan>> PrepareSandboxes(
    const sandbox::SandboxSpec& spec, std::shared_ptr<limits::LimitsBackend> backend);

// How long an engine serves: a server's many runs, or the one run of `mcp-exec run` (a pool
// then prepares one sandbox and no more).
enum class EngineUse { kServe, kOneShot };

// Starts the engine config.engine names, over the sandboxes of `plan` (PrepareSandboxes), or
// for "auto" the one ChooseAuto chooses, with the engines it passed over in `passed_over`. A
// pool waits for its first sandbox, so that a preload that cannot be imported is an error now.
Result<std::shared_ptr<engine::Engine>> StartEngine(const config::Config& config,
                                                    std::shared_ptr<const sandbox::LaunchPlan> plan,
                                                    EngineUse use,
                                                    std::vector<PassedOver>* passed_over = nullptr);

sandbox::RunLimits LimitsFor(const config::Config& config, const ExecRequest& request);

// MCP_EXEC_MAX_SESSIONS, MCP_EXEC_SESSION_IDLE_S and MCP_EXEC_SESSION_MAX_AGE_S.
engine::SessionOptions SessionOptionsFor(const config::Config& config);

// The program a checked request runs.
sandbox::Program ProgramFor(const ValidRequest& request);

// Runs the request in a fresh sandbox from `engine`.
Result<sandbox::RunResult> Execute(engine::Engine& engine, const config::Config& config,
                                   const ValidRequest& request,
                                   const sandbox::RunHooks& hooks = {});

// Runs the request as the first call of a new session, which then ends: the session's sandbox
// and call path, for `run --session`.
Result<sandbox::RunResult> ExecuteInSession(engine::Engine& engine, const config::Config& config,
                                            const ValidRequest& request);

// {stdout, stderr, exit_code, duration_ms, truncated, timed_out} plus "signal" (e.g. "SIGKILL")
// when the program died of one, the accounting: oom_killed, memory_peak_bytes and
// cpu_time_ms (null when unknown), limits_backend, and `files` (AddFilesJson) from `files`.
// Output is made valid UTF-8 (U+FFFD for ill-formed bytes).
nlohmann::json ResultToJson(const sandbox::RunResult& result, const std::vector<FileReport>& files);

}  // namespace mcpexec::exec
