// ExecTool: the MCP `exec` tool. The one place that knows both the MCP tool interface and the
// sandbox: it validates arguments, runs them in a fresh sandbox and shapes the seed's result.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "config/config.h"
#include "engine/engine.h"
#include "engine/sessions.h"
#include "exec/exec.h"
#include "exec/exec_metrics.h"
#include "limits/limits.h"
#include "mcp/tool.h"

namespace mcpexec::exec {

class ExecTool : public mcp::Tool {
 public:
  // `engine` (StartEngine) gives every call its sandbox; every call is counted in `metrics`
  // when it is set. `sessions` holds the sessions of the `session` argument; without it the
  // argument is refused (MCP_EXEC_MAX_SESSIONS=0).
  ExecTool(config::Config config, std::shared_ptr<engine::Engine> engine,
           std::shared_ptr<ExecMetrics> metrics = nullptr,
           std::shared_ptr<engine::SessionStore> sessions = nullptr);

  std::string Name() const override { return "exec"; }
  nlohmann::json Definition() const override;
  nlohmann::json Call(const nlohmann::json& arguments,
                      const mcp::ToolCallContext& context) override;
  void CallerGone(const std::string& caller) override;

  // The tool description, generated from the live configuration.
  // `figures`: the rootfs has the matplotlib backend that saves figures (CapturesFigures()).
  static std::string Describe(const config::Config& config, limits::Backend backend,
                              bool figures = true);

 private:
  // A call with the `session` argument: in the session `handle`, or in a new one when empty.
  nlohmann::json CallInSession(const std::string& handle, const ValidRequest& request,
                               const sandbox::RunHooks& hooks,
                               const mcp::ToolCallContext& context,
                               std::chrono::steady_clock::time_point started, nlohmann::json meta);

  const config::Config config_;
  const std::shared_ptr<engine::Engine> engine_;
  const std::shared_ptr<ExecMetrics> metrics_;
  const std::shared_ptr<engine::SessionStore> sessions_;
};

}  // namespace mcpexec::exec
