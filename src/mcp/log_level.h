// The MCP logging levels (RFC 5424 syslog severities), from least to most severe.
#pragma once

#include <optional>
#include <string_view>

namespace mcpexec::mcp {

enum class LogLevel { kDebug, kInfo, kNotice, kWarning, kError, kCritical, kAlert, kEmergency };

// "debug", "info", ... as in logging/setLevel and notifications/message.
std::string_view LogLevelName(LogLevel level);
// The level of a name; nullopt for anything that is not one of the eight names (case matters).
std::optional<LogLevel> ParseLogLevel(std::string_view name);

}  // namespace mcpexec::mcp
