// Engine: where a run's sandbox comes from (docs/engine.md). Every engine gives each run a
// sandbox no other run has used, with every invariant of docs/security.md; they differ only in
// how much of the sandbox's life happens before the request.
//   cold  the sandbox is made and the interpreter started for the request (`mcp-exec run`)
//   pool  sandboxes are made ahead with the interpreter started and MCP_EXEC_PRELOAD imported;
//         each is used once, and refilled in the background
#pragma once

#include <memory>

#include "base/result.h"
#include "sandbox/plan.h"
#include "sandbox/run_result.h"

namespace mcpexec::engine {

class Engine {
 public:
  virtual ~Engine() = default;
  // The name MCP_EXEC_ENGINE gives it.
  virtual const char* Name() const = 0;
  // Runs `program` to its end in a fresh sandbox. Thread-safe.
  virtual Result<sandbox::RunResult> Run(const sandbox::Program& program,
                                         const sandbox::RunLimits& limits,
                                         const sandbox::RunHooks& hooks) = 0;
  // The cold plan: what every run's sandbox is (rootfs, limits backend, seccomp, figures).
  virtual const sandbox::LaunchPlan& Plan() const = 0;
};

std::unique_ptr<Engine> MakeColdEngine(std::shared_ptr<const sandbox::LaunchPlan> plan);

struct PoolOptions {
  size_t size = 2;     // sandboxes kept ready
  bool refill = true;  // false: the first `size` only (a one-shot `mcp-exec run`)
};

// `warm` is `cold` with SandboxSpec::warm set. Waits until the first sandbox is ready, so that a
// preload that cannot be imported is an error here, at start. A run that finds no sandbox
// ready does not wait for one: it runs cold.
Result<std::unique_ptr<Engine>> MakePoolEngine(std::shared_ptr<const sandbox::LaunchPlan> cold,
                                               std::shared_ptr<const sandbox::LaunchPlan> warm,
                                               const PoolOptions& options);

}  // namespace mcpexec::engine
