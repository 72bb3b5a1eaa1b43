#include "exec/session_tools.h"

#include "log/log.h"

namespace mcpexec::exec {

using nlohmann::json;

json SessionJson(const engine::SessionInfo& info) {
  return {{"session", info.handle},
          {"environment", info.environment},
          {"created", log::IsoTime(info.created)},
          {"last_used", log::IsoTime(info.last_used)},
          {"expires_at", log::IsoTime(info.expires_at)},
          {"calls", info.calls},
          {"busy", info.busy},
          {"memory_bytes", info.memory_bytes ? json(*info.memory_bytes) : json()}};
}

namespace {

json Result(json structured) {
  return {{"content", json::array({{{"type", "text"}, {"text", structured.dump()}}})},
          {"structuredContent", std::move(structured)},
          {"isError", false}};
}

json SessionItemSchema() {
  const json string = {{"type", "string"}};
  return {{"type", "object"},
          {"properties",
           {{"session", string},
            {"environment", string},
            {"created", {{"type", "string"}, {"format", "date-time"}}},
            {"last_used", {{"type", "string"}, {"format", "date-time"}}},
            {"expires_at", {{"type", "string"}, {"format", "date-time"}}},
            {"calls", {{"type", "integer"}}},
            {"busy", {{"type", "boolean"}}},
            {"memory_bytes", {{"type", {"integer", "null"}}}}}},
          {"required", {"session", "created", "last_used", "expires_at", "calls", "busy"}}};
}

}  // namespace

json SessionListTool::Definition() const {
  return {
      {"name", "session_list"},
      {"title", "List your Python sessions"},
      {"description",
       "List the sessions you opened with exec (session: \"new\") that are still open: each "
       "one's handle, when it was created and last used, when it expires, how many calls it "
       "ran, whether a call runs in it now, and the memory it holds."},
      {"inputSchema", {{"type", "object"}, {"properties", json::object()},
                       {"additionalProperties", false}}},
      {"outputSchema",
       {{"type", "object"},
        {"properties", {{"sessions", {{"type", "array"}, {"items", SessionItemSchema()}}}}},
        {"required", {"sessions"}}}},
      {"annotations",
       {{"title", "List your Python sessions"},
        {"readOnlyHint", true},
        {"destructiveHint", false},
        {"idempotentHint", true},
        {"openWorldHint", false}}},
  };
}

json SessionListTool::Call(const json& arguments, const mcp::ToolCallContext& context) {
  if (!arguments.is_object() || !arguments.empty()) {
    return mcp::ToolError("invalid arguments: session_list takes none");
  }
  json sessions = json::array();
  for (const engine::SessionInfo& info : sessions_->List(context.caller)) {
    sessions.push_back(SessionJson(info));
  }
  return Result({{"sessions", std::move(sessions)}});
}

json SessionCloseTool::Definition() const {
  return {
      {"name", "session_close"},
      {"title", "Close a Python session"},
      {"description",
       "End a session you opened with exec (session: \"new\"): its interpreter, its variables "
       "and its files are gone at once. Sessions also end by themselves when idle or old."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"session", {{"type", "string"}, {"description", "The handle exec returned"}}}}},
        {"required", {"session"}},
        {"additionalProperties", false}}},
      {"outputSchema",
       {{"type", "object"},
        {"properties", {{"session", {{"type", "string"}}}, {"closed", {{"type", "boolean"}}}}},
        {"required", {"session", "closed"}}}},
      {"annotations",
       {{"title", "Close a Python session"},
        {"readOnlyHint", false},
        {"destructiveHint", true},
        {"idempotentHint", false},
        {"openWorldHint", false}}},
  };
}

json SessionCloseTool::Call(const json& arguments, const mcp::ToolCallContext& context) {
  if (!arguments.is_object() || !arguments.contains("session") ||
      !arguments["session"].is_string() || arguments.size() != 1) {
    return mcp::ToolError("invalid arguments: session_close takes session, a handle exec "
                          "returned");
  }
  const std::string handle = arguments["session"].get<std::string>();
  if (auto closed = sessions_->Close(context.caller, handle); !closed.ok()) {
    return mcp::ToolError(closed.error().message);
  }
  log::Info("session closed", {{"session", context.session_id}});
  return Result({{"session", handle}, {"closed", true}});
}

}  // namespace mcpexec::exec
