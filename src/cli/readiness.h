// /readyz for `serve`: whether the server can run a program well right now. Gathering the facts
// (GatherReadiness) is kept apart from judging them (JudgeReadiness), so the judging is unit-
// tested without a host.
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "mcp/transport/http_server.h"
#include "sandbox/plan.h"

namespace mcpexec::cli {

struct ReadinessFacts {
  std::string rootfs_problem;  // empty: the rootfs and its interpreter are there
  std::string limits_problem;  // empty: the limits backend can make runs' cgroups
  engine::EngineState engine;
};

// What fails, each with its check ("rootfs", "limits", "engine") and why; empty when ready.
// The engine is warm when it is cold (nothing to warm), when a pool has a sandbox ready, and
// when a zygote engine has one ready or a live zygote to fork one from.
std::vector<mcp::NotReady> JudgeReadiness(const ReadinessFacts& facts);

// The facts now, from the plan every run uses and the running engine. Thread-safe.
ReadinessFacts GatherReadiness(const sandbox::LaunchPlan& plan, const engine::Engine& engine);

}  // namespace mcpexec::cli
