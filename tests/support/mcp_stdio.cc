#include "mcp_stdio.h"

namespace mcpexec::testing {

using nlohmann::json;

namespace {

std::vector<std::string> ServeArgv(const SandboxRunner& runner) {
  return {runner.Binary(), "serve", "--transport", "stdio", "--rootfs", runner.Rootfs()};
}

}  // namespace

McpStdioServer::McpStdioServer(const SandboxRunner& runner, std::vector<std::string> env)
    : process_(runner.StartInteractive(ServeArgv(runner), WithEnv(std::move(env)))) {
  const int id = next_id_++;
  process_.WriteLine(json{{"jsonrpc", "2.0"},
                          {"id", id},
                          {"method", "initialize"},
                          {"params",
                           {{"protocolVersion", "2025-06-18"},
                            {"capabilities", json::object()},
                            {"clientInfo", {{"name", "session-test"}, {"version", "1"}}}}}}
                         .dump());
  const json reply = Wait(id, std::chrono::seconds(120));
  if (reply.is_discarded() || !reply.contains("protocolVersion")) {
    problem_ = "no answer to initialize: " + (reply.is_discarded() ? "none" : reply.dump()) +
               "; stderr: " + Stop().err;
    return;
  }
  process_.WriteLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
}

int McpStdioServer::Send(const std::string& name, const json& arguments) {
  const int id = next_id_++;
  process_.WriteLine(json{{"jsonrpc", "2.0"},
                          {"id", id},
                          {"method", "tools/call"},
                          {"params", {{"name", name}, {"arguments", arguments}}}}
                         .dump());
  return id;
}

json McpStdioServer::Wait(int id, std::chrono::milliseconds timeout) {
  auto answer = [](const json& message) {
    return message.contains("result") ? message["result"] : json{{"rpc_error", message["error"]}};
  };
  for (auto it = early_.begin(); it != early_.end(); ++it) {
    if ((*it)["id"] == id) {
      json found = answer(*it);
      early_.erase(it);
      return found;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return json::value_t::discarded;
    std::optional<std::string> line = process_.ReadLine(left);
    if (!line) return json::value_t::discarded;
    json message = json::parse(*line, nullptr, false);
    if (message.is_discarded() || !message.contains("id")) continue;  // a notification
    if (message["id"] == id) return answer(message);
    early_.push_back(std::move(message));
  }
}

json McpStdioServer::Call(const std::string& name, const json& arguments,
                          std::chrono::milliseconds timeout) {
  return Wait(Send(name, arguments), timeout);
}

Outcome McpStdioServer::Stop() { return process_.Finish(); }

json Structured(const json& result) {
  if (!result.is_object() || result.value("isError", false) || !result.contains("structuredContent")) {
    return json::value_t::discarded;
  }
  return result["structuredContent"];
}

std::string ToolErrorText(const json& result) {
  if (!result.is_object() || !result.value("isError", false)) return "";
  return result["content"][0].value("text", "");
}

}  // namespace mcpexec::testing
