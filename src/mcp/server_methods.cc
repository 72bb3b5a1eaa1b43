// The MCP methods as one table, for both protocol eras, and the handlers of the small ones.
// Session::Handle (the handshake era) and Session::HandleStateless read the same rows.
#include <array>
#include <span>

#include "log/log.h"
#include "mcp/protocol.h"
#include "mcp/server.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;

enum Era : unsigned {
  kHandshake = 1,  // after initialize, in a session
  kStateless = 2,  // each request names its revision in params._meta (2026-07-28)
};

// How long a client may cache the tool list or the discovery result of the stateless era. Both
// change only when the server restarts with another configuration (the exec tool's description
// names the limits), so a few minutes of staleness at most after such a restart.
constexpr int kCacheTtlMs = 5 * 60 * 1000;

// What each capability a method belongs to is announced as.
json CapabilityValue(std::string_view capability) {
  if (capability == "tools") return {{"listChanged", false}};
  return json::object();  // logging: a run's output as notifications/message
}

}  // namespace

// ping, initialize and logging/setLevel do not exist in the stateless revision; server/discover
// exists in it only.
std::span<const Session::Method> Session::Methods() {
  // The tasks rows announce no capability of their own: Capabilities() adds each era's shape.
  static const std::array<Method, 12> kMethods = {{
      {"initialize", kHandshake, false, &Session::Initialize, nullptr},
      {"ping", kHandshake, false, &Session::Ping, nullptr},
      {"server/discover", kStateless, false, &Session::Discover, nullptr},
      {"tools/list", kHandshake | kStateless, true, &Session::ToolsList, "tools"},
      {"tools/call", kHandshake | kStateless, true, &Session::CallTool, "tools"},
      {"logging/setLevel", kHandshake, true, &Session::SetLogLevel, "logging"},
      {"tasks/get", kHandshake | kStateless, true, &Session::TasksGet, nullptr},
      {"tasks/cancel", kHandshake | kStateless, true, &Session::TasksCancel, nullptr},
      {"tasks/result", kHandshake, true, &Session::TasksResult, nullptr},
      {"tasks/list", kHandshake, true, &Session::TasksList, nullptr},
      {"tasks/update", kStateless, true, &Session::TasksUpdate, nullptr},
      {"subscriptions/listen", kStateless, true, &Session::SubscriptionsListen, nullptr},
  }};
  return kMethods;
}

const Session::Method* Session::FindMethod(std::string_view name, bool stateless) {
  const unsigned era = stateless ? kStateless : kHandshake;
  for (const Method& m : Methods()) {
    if (name == m.name && (m.eras & era) != 0) return &m;
  }
  return nullptr;
}

Handled Session::Reply(const Sink& sink, const json& message) {
  sink->Send(message, true);
  return Handled::kResponding;
}

json Session::Capabilities(bool stateless, std::string_view version, bool tasks) {
  json capabilities = json::object();
  for (const Method& m : Methods()) {
    if (m.capability != nullptr) capabilities[m.capability] = CapabilityValue(m.capability);
  }
  if (!tasks) return capabilities;
  if (stateless) {
    capabilities["extensions"][std::string(kTasksExtension)] = json::object();
  } else if (version == kTasksProtocolVersion) {
    capabilities["tasks"] = {{"list", json::object()},
                             {"cancel", json::object()},
                             {"requests", {{"tools", {{"call", json::object()}}}}}};
  }
  return capabilities;
}

Handled Session::Run(const Method& method, const jsonrpc::Request& request, Sink sink,
                     const CallEra& era) {
  return (this->*method.handler)(request, std::move(sink), era);
}

Handled Session::Initialize(const jsonrpc::Request& request, Sink sink, const CallEra&) {
  const json& params = request.params;
  if (!params.is_object()) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                          "initialize needs params with a protocolVersion"));
  }
  if (initialized_.load()) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidRequest,
                                          "the session is already initialized"));
  }
  const json requested = params.value("protocolVersion", json());
  std::string version(kLatestProtocolVersion);
  if (requested.is_string() && IsSupportedProtocolVersion(requested.get<std::string>())) {
    version = requested.get<std::string>();
  }
  {
    std::lock_guard lock(mu_);
    protocol_version_ = version;
  }
  initialized_ = true;
  const json client = params.value("clientInfo", json::object());
  log::Info("session initialized",
            {{"session", id_},
             {"protocol_version", version},
             {"client", client.is_object() ? client.value("name", json("")) : json("")}});
  json result = {
      {"protocolVersion", version},
      {"capabilities", Capabilities(false, version, server_.Tasks().Enabled())},
      {"serverInfo", {{"name", server_.Info().name}, {"version", server_.Info().version}}},
  };
  if (!server_.Info().instructions.empty()) result["instructions"] = server_.Info().instructions;
  return Reply(sink, jsonrpc::MakeResult(request.id, std::move(result)));
}

Handled Session::Ping(const jsonrpc::Request& request, Sink sink, const CallEra&) {
  return Reply(sink, jsonrpc::MakeResult(request.id, json::object()));
}

Handled Session::Discover(const jsonrpc::Request& request, Sink sink, const CallEra&) {
  json result = {
      {"supportedVersions", AllProtocolVersions()},
      {"capabilities", Capabilities(true, "", server_.Tasks().Enabled())},
      {"ttlMs", kCacheTtlMs},
      {"cacheScope", "public"},
  };
  if (!server_.Info().instructions.empty()) result["instructions"] = server_.Info().instructions;
  return Reply(sink, jsonrpc::MakeResult(request.id, Stateless(std::move(result))));
}

Handled Session::ToolsList(const jsonrpc::Request& request, Sink sink, const CallEra& era) {
  json tools = json::array();
  // execution.taskSupport exists in 2025-11-25 only: in the stateless era the server decides.
  const bool task_support = !era.stateless && HandshakeTasks();
  for (const auto& tool : server_.Tools()) {
    json definition = tool->Definition();
    if (task_support && tool->Tasks() != TaskSupport::kForbidden) {
      definition["execution"]["taskSupport"] =
          tool->Tasks() == TaskSupport::kRequired ? "required" : "optional";
    }
    tools.push_back(std::move(definition));
  }
  json result = {{"tools", std::move(tools)}};
  if (era.stateless) {
    result["ttlMs"] = kCacheTtlMs;
    result["cacheScope"] = "public";
    result = Stateless(std::move(result));
  }
  return Reply(sink, jsonrpc::MakeResult(request.id, std::move(result)));
}

Handled Session::SetLogLevel(const jsonrpc::Request& request, Sink sink, const CallEra&) {
  const json level = request.params.is_object() ? request.params.value("level", json()) : json();
  const std::optional<LogLevel> parsed =
      level.is_string() ? ParseLogLevel(level.get<std::string>()) : std::nullopt;
  if (!parsed) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                          "logging/setLevel needs params.level: one of debug, "
                                          "info, notice, warning, error, critical, alert, "
                                          "emergency"));
  }
  min_log_level_ = static_cast<int>(*parsed);
  log::Debug("log level set", {{"session", id_}, {"level", LogLevelName(*parsed)}});
  return Reply(sink, jsonrpc::MakeResult(request.id, json::object()));
}

json Session::Stateless(json result) const {
  result["resultType"] = "complete";
  result["_meta"][std::string(kMetaServerInfo)] = {{"name", server_.Info().name},
                                                   {"version", server_.Info().version}};
  return result;
}

}  // namespace mcpexec::mcp
