// Structured logging: one JSON object per line on stderr (stdout belongs to the stdio
// transport). Metadata only: never code, stdin or program output.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace mcpexec::log {

enum class Level { kDebug, kInfo, kWarn, kError };

// Writes {"ts": ..., "level": ..., "msg": msg, ...fields} as one line. Thread-safe; lines from
// concurrent callers never interleave.
void Write(Level level, std::string_view msg, const nlohmann::json& fields = nlohmann::json::object());

inline void Info(std::string_view msg, const nlohmann::json& fields = nlohmann::json::object()) {
  Write(Level::kInfo, msg, fields);
}
inline void Warn(std::string_view msg, const nlohmann::json& fields = nlohmann::json::object()) {
  Write(Level::kWarn, msg, fields);
}
inline void Error(std::string_view msg, const nlohmann::json& fields = nlohmann::json::object()) {
  Write(Level::kError, msg, fields);
}
inline void Debug(std::string_view msg, const nlohmann::json& fields = nlohmann::json::object()) {
  Write(Level::kDebug, msg, fields);
}

// Debug lines are dropped unless enabled (MCP_EXEC_LOG_LEVEL=debug).
void SetMinimumLevel(Level level);

}  // namespace mcpexec::log
