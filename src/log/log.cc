#include "log/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>


namespace mcpexec::log {
namespace {

std::atomic<Level> min_level{Level::kInfo};
std::mutex write_mu;

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

}  // namespace

std::string IsoTime(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

void SetMinimumLevel(Level level) { min_level = level; }

bool Enabled(Level level) { return level >= min_level.load(); }

void Write(Level level, std::string_view msg, const nlohmann::json& fields) {
  if (!Enabled(level)) return;
  nlohmann::json line = {{"ts", IsoTime(std::chrono::system_clock::now())}, {"level", LevelName(level)}, {"msg", msg}};
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) line[key] = value;
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\n');
  std::lock_guard lock(write_mu);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;  // nowhere to log to: never let logging fail the caller
    done += static_cast<size_t>(n);
  }
}

std::optional<uint64_t> Throttle::Allow() {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  int64_t last = last_ms_.load();
  if (now_ms - last < interval_ms_ || !last_ms_.compare_exchange_strong(last, now_ms)) {
    held_.fetch_add(1);
    return std::nullopt;
  }
  return held_.exchange(0);
}

}  // namespace mcpexec::log
