// MCP protocol revisions this server speaks.
#pragma once

#include <array>
#include <string_view>

namespace mcpexec::mcp {

// Newest first. 2025-11-25 is the newest handshake-based revision (the one the TypeScript SDK
// 1.x speaks); the server answers a client's version when it is in this list, else the first.
inline constexpr std::array<std::string_view, 4> kProtocolVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
inline constexpr std::string_view kLatestProtocolVersion = kProtocolVersions[0];
// What Streamable HTTP assumes when a request carries no MCP-Protocol-Version header.
inline constexpr std::string_view kDefaultHttpProtocolVersion = "2025-03-26";

inline bool IsSupportedProtocolVersion(std::string_view version) {
  for (std::string_view v : kProtocolVersions) {
    if (v == version) return true;
  }
  return false;
}

}  // namespace mcpexec::mcp
