// MCP_EXEC_LIMITS: which limits backend to use. It lives here, below both modules that use it,
// because neither may include the other (tools/check-layering): the settings table (config)
// parses it and the limits module (limits::OpenBackend) acts on it.
#pragma once

namespace mcpexec {

// auto takes the first backend that works here. The order is that of the setting's choices
// (config/settings.cc), which parses a choice into its index.
enum class LimitsMode { kAuto, kCgroup2, kCgroup1, kRlimit };

// "auto", "cgroup2", "cgroup1", "rlimit": the names the environment, the flags and logs use.
constexpr const char* LimitsModeName(LimitsMode mode) {
  switch (mode) {
    case LimitsMode::kAuto: return "auto";
    case LimitsMode::kCgroup2: return "cgroup2";
    case LimitsMode::kCgroup1: return "cgroup1";
    case LimitsMode::kRlimit: return "rlimit";
  }
  return "unknown";
}

}  // namespace mcpexec
