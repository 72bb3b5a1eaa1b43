// The session tools: session_list and session_close, beside exec's `session` argument
// (docs/sessions.md). Each acts on the caller's own sessions only.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/sessions.h"
#include "mcp/tool.h"

namespace mcpexec::exec {

// What session_list shows of a session: session, environment, created, last_used, expires_at, calls, busy,
// memory_bytes.
nlohmann::json SessionJson(const engine::SessionInfo& info);

class SessionListTool : public mcp::Tool {
 public:
  explicit SessionListTool(std::shared_ptr<engine::SessionStore> sessions)
      : sessions_(std::move(sessions)) {}
  std::string Name() const override { return "session_list"; }
  nlohmann::json Definition() const override;
  nlohmann::json Call(const nlohmann::json& arguments,
                      const mcp::ToolCallContext& context) override;

 private:
  const std::shared_ptr<engine::SessionStore> sessions_;
};

class SessionCloseTool : public mcp::Tool {
 public:
  explicit SessionCloseTool(std::shared_ptr<engine::SessionStore> sessions)
      : sessions_(std::move(sessions)) {}
  std::string Name() const override { return "session_close"; }
  nlohmann::json Definition() const override;
  nlohmann::json Call(const nlohmann::json& arguments,
                      const mcp::ToolCallContext& context) override;

 private:
  const std::shared_ptr<engine::SessionStore> sessions_;
};

}  // namespace mcpexec::exec
