// ExecTool: the MCP `exec` tool. The one place that knows both the MCP tool interface and the
// sandbox: it validates arguments, runs them in a fresh sandbox and shapes the seed's result.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "config/config.h"
#include "engine/engine.h"
#include "engine/sessions.h"
#include "exec/environment_engines.h"
#include "exec/environments.h"
#include "exec/exec.h"
#include "exec/exec_metrics.h"
#include "limits/limits.h"
#include "mcp/tool.h"
#include "packages/layers.h"

namespace mcpexec::exec {

class ExecTool : public mcp::Tool {
 public:
  // `environments` gives every call its sandbox, from the engine of the environment it names (or
  // the default one); every call is counted in `metrics` when it is set. `sessions` holds the
  // sessions of the `session` argument; without it the argument is refused
  // (MCP_EXEC_MAX_SESSIONS=0). `packages` installs the `packages` argument's layers; without
  // it the argument is refused (no MCP_EXEC_WHEELHOUSE).
  ExecTool(config::Config config, std::shared_ptr<EnvironmentEngines> environments,
           std::shared_ptr<ExecMetrics> metrics = nullptr,
           std::shared_ptr<engine::SessionStore> sessions = nullptr,
           std::shared_ptr<packages::PackageLayers> packages = nullptr);

  std::string Name() const override { return "exec"; }
  // A run may outlive a client's request timeout: as a task, it is polled instead.
  mcp::TaskSupport Tasks() const override { return mcp::TaskSupport::kOptional; }
  nlohmann::json Definition() const override;
  nlohmann::json Call(const nlohmann::json& arguments,
                      const mcp::ToolCallContext& context) override;
  void CallerGone(const std::string& caller) override;

  // The tool description, generated from the live configuration.
  // `figures`: the rootfs has the matplotlib backend that saves figures (CapturesFigures()).
  // `offer`: the environments, each with its packages; none: the seed's set, unnamed.
  static std::string Describe(const config::Config& config, limits::Backend backend,
                              bool figures = true, const Offer& offer = {});
  // What the description says of the environments: each one's name and importable packages with
  // their versions, and which is the default; the seed's set when only "default" is offered
  // and its image lists no packages.
  static std::string DescribeEnvironments(const Offer& offer);

 private:
  // A call with the `session` argument: in the session `handle`, or in a new one when empty.
  nlohmann::json CallInSession(const std::string& handle, const std::string& environment,
                               const ValidRequest& request,
                               const sandbox::RunHooks& hooks,
                               const mcp::ToolCallContext& context,
                               std::chrono::steady_clock::time_point started, nlohmann::json meta,
                               const packages::LayerRun* layer, const nlohmann::json& fields);
  // The layer of the call's `packages` in `environment`: from the cache, or installed now with
  // progress notifications (the installer's seconds, which the run's progress then follows).
  Result<packages::LayerRun> PreparePackages(const std::string& environment,
                                             const std::vector<std::string>& requested,
                                             const mcp::ToolCallContext& context);

  const config::Config config_;
  const std::shared_ptr<EnvironmentEngines> environments_;
  const std::shared_ptr<ExecMetrics> metrics_;
  const std::shared_ptr<engine::SessionStore> sessions_;
  const std::shared_ptr<packages::PackageLayers> packages_;
};

}  // namespace mcpexec::exec
