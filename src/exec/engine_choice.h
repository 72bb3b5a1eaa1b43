// MCP_EXEC_ENGINE=auto, the default: `serve` gets the fastest engine that starts on this host
// (docs/engine.md, "Choosing an engine"). Every engine passes the whole adversarial suite in CI,
// as root and rootless, so the choice is one of speed only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/result.h"

namespace mcpexec::exec {

// What auto tries, fastest first (README, "Engines"); cold when none of them starts.
inline constexpr const char* kAutoOrder[] = {"zygote", "pool"};

// An engine auto tried and passed over, and why it did not start.
struct PassedOver {
  std::string engine;
  Error error;
};

// The choice itself, over `start` (an engine's name → that engine started, or why not): the
// first of kAutoOrder that starts, else start("cold"). A preload that cannot be imported
// (kInvalidArgument) is the configuration's fault, not the host's: it ends the choice with that
// error rather than hiding it behind a slower engine.
template <class T>
Result<T> ChooseAuto(const std::function<Result<T>(const char*)>& start,
                     std::vector<PassedOver>& passed_over) {
  for (const char* engine : kAutoOrder) {
    Result<T> started = start(engine);
    if (started.ok()) return started;
    if (started.error().code == ErrorCode::kInvalidArgument) return started.error();
    passed_over.push_back({engine, started.error()});
  }
  return start("cold");
}

}  // namespace mcpexec::exec
