// MCP protocol revisions this server speaks, in two eras: the handshake-based revisions
// (initialize, then requests in a session) and the stateless one (2026-07-28), where every
// request names its revision in params._meta and no handshake comes first.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace mcpexec::mcp {

// Newest first. 2025-11-25 is the newest handshake-based revision (the one the TypeScript SDK
// 1.x speaks); the server answers a client's version when it is in this list, else the first.
inline constexpr std::array<std::string_view, 4> kProtocolVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
inline constexpr std::string_view kLatestProtocolVersion = kProtocolVersions[0];
// What Streamable HTTP assumes when a request carries no MCP-Protocol-Version header.
inline constexpr std::string_view kDefaultHttpProtocolVersion = "2025-03-26";

// The stateless revisions: a request in one of them is answered on its own.
inline constexpr std::array<std::string_view, 1> kStatelessProtocolVersions = {"2026-07-28"};

// The params._meta keys of the stateless era.
inline constexpr std::string_view kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view kMetaClientCapabilities =
    "io.modelcontextprotocol/clientCapabilities";

// Tasks: the handshake revision that has them in its core (params.task on tools/call), and the
// extension that replaces them in the stateless era (the server decides which calls are tasks).
inline constexpr std::string_view kTasksProtocolVersion = "2025-11-25";
inline constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";
// The _meta key of a message that belongs to a task (2025-11-25).
inline constexpr std::string_view kMetaRelatedTask = "io.modelcontextprotocol/related-task";
// The _meta key of every message of a subscriptions/listen stream: the request's id (2026-07-28).
inline constexpr std::string_view kMetaSubscriptionId = "io.modelcontextprotocol/subscriptionId";

// The error codes the stateless revision reserves (-32020 to -32099).
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingRequiredClientCapability = -32021;
inline constexpr int kUnsupportedProtocolVersion = -32022;
// Implementation-defined: a subscription whose client did not read what it was sent.
inline constexpr int kSubscriptionFellBehind = -32000;

inline bool IsSupportedProtocolVersion(std::string_view version) {
  for (std::string_view v : kProtocolVersions) {
    if (v == version) return true;
  }
  return false;
}

// Every revision this server speaks, the stateless ones first: the "supported" list of
// UnsupportedProtocolVersionError and server/discover's supportedVersions.
inline nlohmann::json AllProtocolVersions() {
  nlohmann::json versions = nlohmann::json::array();
  for (std::string_view v : kStatelessProtocolVersions) versions.push_back(v);
  for (std::string_view v : kProtocolVersions) versions.push_back(v);
  return versions;
}

// params._meta[key] of a request, or nullptr when params, _meta or the key is absent.
inline const nlohmann::json* MetaField(const nlohmann::json& params, std::string_view key) {
  if (!params.is_object()) return nullptr;
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return nullptr;
  auto field = meta->find(std::string(key));
  return field == meta->end() ? nullptr : &*field;
}

// A progress token is a string or an integer.
inline bool IsProgressToken(const nlohmann::json& token) {
  return token.is_string() || token.is_number_integer() || token.is_number_unsigned();
}

inline bool IsStatelessProtocolVersion(std::string_view version) {
  for (std::string_view v : kStatelessProtocolVersions) {
    if (v == version) return true;
  }
  return false;
}

}  // namespace mcpexec::mcp
