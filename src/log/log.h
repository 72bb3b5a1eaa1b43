// Structured logging: one JSON object per line on stderr (stdout belongs to the stdio
// transport). Metadata only: never code, stdin or program output.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
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
// Whether lines of `level` are written: lets a hot path skip building a line's fields.
bool Enabled(Level level);

// "2026-12-02T13:45:07.250Z": UTC with milliseconds, as log lines (and results) give times.
std::string IsoTime(std::chrono::system_clock::time_point t);

// Lets one line of a kind through per interval and counts those held back, for lines that
// clients can cause at will (refused connections, foreign origins): a flood of requests must not
// become a flood of the log. Thread-safe.
class Throttle {
 public:
  explicit Throttle(std::chrono::milliseconds interval = std::chrono::seconds(10))
      : interval_ms_(interval.count()) {}

  // nullopt: hold this line back. Otherwise write it, with the number of lines held back since
  // the last one written.
  std::optional<uint64_t> Allow();

 private:
  const int64_t interval_ms_;
  std::atomic<int64_t> last_ms_{INT64_MIN / 2};
  std::atomic<uint64_t> held_{0};
};

}  // namespace mcpexec::log
