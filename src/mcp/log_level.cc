#include "mcp/log_level.h"

#include <array>

namespace mcpexec::mcp {
namespace {

// Indexed by LogLevel.
constexpr std::array<std::string_view, 8> kNames = {"debug", "info",     "notice", "warning",
                                                    "error", "critical", "alert",  "emergency"};

}  // namespace

std::string_view LogLevelName(LogLevel level) { return kNames[static_cast<size_t>(level)]; }

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

}  // namespace mcpexec::mcp
