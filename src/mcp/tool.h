// Tool: one entry of the server's tool registry. The server knows nothing of what a tool does.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

#include "mcp/log_level.h"

namespace mcpexec::mcp {

// What a running call may use. Lives as long as the call.
struct ToolCallContext {
  std::string session_id;
  // Who calls, for what a tool keeps per caller (the exec tool's sessions): one stdio
  // connection, one HTTP protocol session (Mcp-Session-Id, or an SSE stream's), or every
  // stateless HTTP request with the server's credential. Never empty in a server.
  std::string caller;
  std::string request_id;  // the JSON-RPC id, serialized: for logs
  // Becomes readable when the client cancels the call (notifications/cancelled) or goes away.
  int cancel_fd = -1;
  // Empty unless the request carried _meta.progressToken. `progress` must increase.
  std::function<void(double progress, const std::string& message)> report_progress;
  // Sends a notifications/message for this call, on the same channel as its progress, when the
  // client has asked for messages of `level` with logging/setLevel (checked at each call: the
  // client may change its level while the call runs); otherwise does nothing. `data` is sent
  // as a string. Empty when there is no client session (tests).
  std::function<void(LogLevel level, const std::string& logger, const std::string& data)> log;
  // The stateless era (SEP-2322): params.inputResponses of a tools/call retried with the input
  // InputNeeded asked for; null otherwise.
  nlohmann::json input_responses;
  // In a task of the stateless era: shows `requests` ({key: {method, params}}) to the client as
  // the task's input_required, and waits for its tasks/update answers; returns them by key, or
  // nullopt when the task is cancelled meanwhile. Empty elsewhere. exec never asks.
  std::function<std::optional<nlohmann::json>(const nlohmann::json& requests)> request_input;
  // The call was stopped by something other than its client (its exec session was closed): a
  // task of it ends cancelled, with `why` as its status message. Empty outside tasks.
  std::function<void(const std::string& why)> mark_cancelled;
  // Hands over work for after the call's response is sent (or not sent: the call was
  // cancelled): the worker runs it then, in the order given. For what would only delay the
  // answer (making ready what the caller's next call needs). Called only from the thread that
  // runs Tool::Call, before it returns. Empty where nothing follows a response (tasks, tests):
  // the tool does without.
  std::function<void(std::function<void()> work)> after_response;
};

// Whether a call of the tool may run as a task (tasks.h): 2025-11-25's execution.taskSupport.
enum class TaskSupport { kForbidden, kOptional, kRequired };

class Tool {
 public:
  virtual ~Tool() = default;
  virtual std::string Name() const = 0;
  // The tools/list entry: name, description, inputSchema, outputSchema, annotations.
  virtual nlohmann::json Definition() const = 0;
  virtual TaskSupport Tasks() const { return TaskSupport::kForbidden; }
  // The stateless era (SEP-2322): what the call needs from the client before it runs or becomes
  // a task, as an inputRequests map ({key: {method, params}}), given the answers it has
  // (`input_responses`, null on the first round); null when it needs nothing.
  virtual nlohmann::json InputNeeded(const nlohmann::json& /*arguments*/,
                                     const nlohmann::json& /*input_responses*/) const {
    return nullptr;
  }
  // Runs the call and returns a CallToolResult. Invalid arguments and failures to run are
  // results with isError: true, never exceptions. Called on a worker thread; may block.
  virtual nlohmann::json Call(const nlohmann::json& arguments, const ToolCallContext& context) = 0;
  // The caller (ToolCallContext::caller) is gone for good: its connection closed or its
  // protocol session ended. What the tool keeps for it can go.
  virtual void CallerGone(const std::string& /*caller*/) {}
};

// A CallToolResult with isError: true and `message` as its text.
nlohmann::json ToolError(const std::string& message);

}  // namespace mcpexec::mcp
