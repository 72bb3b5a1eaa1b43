// A stdio MCP client for integration tests: `mcp-exec serve` as a mode's user, with the
// handshake done, and tools/call requests whose results (or errors) it waits for.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "sandbox_runner.h"

namespace mcpexec::testing {

class McpStdioServer {
 public:
  // Starts `mcp-exec serve --transport stdio --rootfs ROOTFS` with `env` added, and initializes.
  McpStdioServer(const SandboxRunner& runner, std::vector<std::string> env = {});

  // Empty when the server started and answered initialize; what went wrong otherwise.
  const std::string& Problem() const { return problem_; }

  // Sends tools/call `name` and returns its id; Wait() collects its response.
  int Send(const std::string& name, const nlohmann::json& arguments);
  // The response to request `id` (its "result", or {"rpc_error": error}); notifications and
  // other responses that arrive first are kept for their own Wait. A discarded value on timeout.
  nlohmann::json Wait(int id, std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Send() and Wait().
  nlohmann::json Call(const std::string& name, const nlohmann::json& arguments,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // Closes stdin and waits for the server to end.
  Outcome Stop();

 private:
  InteractiveProcess process_;
  std::string problem_;
  int next_id_ = 1;
  std::vector<nlohmann::json> early_;  // responses read while waiting for another
};

// A call result's structured content; a discarded value for a tool error.
nlohmann::json Structured(const nlohmann::json& result);
// A tool error's text; "" when the result is not an error.
std::string ToolErrorText(const nlohmann::json& result);

}  // namespace mcpexec::testing
