// Engine: where a run's sandbox comes from (docs/engine.md). Every engine gives each run a
// sandbox no other run has used, with every invariant of docs/security.md; they differ only in
// how much of the sandbox's life happens before the request.
//   cold  the sandbox is made and the interpreter started for the request (`mcp-exec run`)
//   pool  sandboxes are made ahead with the interpreter started and MCP_EXEC_PRELOAD imported;
//         each is used once, and refilled in the background
//   zygote  the same pool, of sandboxes forked from one interpreter with MCP_EXEC_PRELOAD
//         imported (sandbox/zygote.h), which is replaced after a number of forks or an age
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/plan.h"
#include "sandbox/run_result.h"
#include "sandbox/sandbox.h"

namespace mcpexec::engine {

// What an engine holds now, for /metrics and /readyz.
struct EngineState {
  const char* name = "cold";  // Engine::Name()
  size_t ready = 0;           // sandboxes prepared and waiting for a run (pool, zygote)
  size_t target = 0;          // how many it keeps ready now (ReadyTarget); 0 for cold
  bool zygote = false;        // the zygote engine: the two fields below mean something
  bool zygote_alive = false;  // a zygote is running and waiting for forks
  uint64_t zygote_forks = 0;  // sandboxes forked from every zygote since start
};

// A package layer a run mounts (docs/packages.md): its key in the package cache, its directory
// there, and what keeps it there (a lock on it) while the run uses it. A sandbox prepared with the
// layer mounted holds no lock, so that eviction may remove the layer under it: a run takes it only
// while the directory is still the one it mounted.
struct LayerUse {
  std::string key;
  std::string dir;
  std::shared_ptr<const void> lease;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // The name MCP_EXEC_ENGINE gives it.
  virtual const char* Name() const = 0;
  // Runs `program` to its end in a fresh sandbox. Thread-safe.
  virtual Result<sandbox::RunResult> Run(const sandbox::Program& program,
                                         const sandbox::RunLimits& limits,
                                         const sandbox::RunHooks& hooks) = 0;
  // A warm sandbox that waits for its program, for a session (sandbox::Session::Start): one the
  // engine has ready, or else one made now, on the calling thread, which it dies with (a
  // worker's, which lives as long as the server). Thread-safe.
  virtual Result<sandbox::Sandbox> TakeWarm() = 0;
  // The cold plan: what every run's sandbox is (rootfs, limits backend, seccomp, figures).
  virtual const sandbox::LaunchPlan& Plan() const = 0;
  // A snapshot of what it holds. Thread-safe; cheap (no system call but a poll for the zygote).
  virtual EngineState State() const = 0;
  // Host pids of the inits of what it holds between runs: its zygote's, then each prepared
  // sandbox's (none for cold). For MemoryOf. Thread-safe; no system call.
  virtual std::vector<pid_t> HeldInits() const { return {}; }
  // What whoever holds a sandbox this engine gave (TakeWarm: a session) keeps for as long as it
  // holds it. The sandboxes an engine prepared die with it (PR_SET_PDEATHSIG of its threads, a
  // zygote's forks with the zygote), and an engine an owner may release while it is idle
  // (exec::EnvironmentEngines) counts this as a use. Null for an engine whose owner keeps it for
  // its whole life.
  virtual std::shared_ptr<const void> KeepAlive() { return nullptr; }

  // Run and TakeWarm with the package layer `layer` mounted, in a sandbox of this engine's kind:
  // the zygote's, whose zygote has the package cache's layers (SandboxSpec::zygote_layers). It
  // keeps one ready for each of the last layers used. nullopt when this engine cannot (cold,
  // pool): the caller runs the program in a plan that binds the layer (MakeLayeredEngine).
  virtual std::optional<Result<sandbox::RunResult>> RunWithLayer(
      const LayerUse& /*layer*/, const sandbox::Program& /*program*/,
      const sandbox::RunLimits& /*limits*/, const sandbox::RunHooks& /*hooks*/) {
    return std::nullopt;
  }
  virtual std::optional<Result<sandbox::Sandbox>> TakeWarmWithLayer(const LayerUse& /*layer*/) {
    return std::nullopt;
  }
};

// Memory of processes, from /proc/PID/smaps_rollup.
struct ProcessMemory {
  uint64_t rss_bytes = 0;  // resident, each process's pages counted in full
  uint64_t pss_bytes = 0;  // proportional: a page shared by N processes counts 1/N in each
  size_t processes = 0;    // processes read
};

// The memory of each of `inits` and its descendants in its own PID namespace: a sandbox's init
// and its interpreter; a zygote's init and the zygote, not the runs it forked, which are in PID
// namespaces of their own and listed apart when prepared (Engine::HeldInits). A process that is
// gone, or whose smaps_rollup cannot be read, counts nothing: a rootless server may not read a
// sandbox's init, a copy of itself that holds about 2 MB and shares nearly all of it (PSS near
// 0); it reads the interpreters, which execve made its sandbox's. Reads /proc: some
// milliseconds for a few processes of 100 MB, not for every run.
ProcessMemory MemoryOf(const std::vector<pid_t>& inits);

std::unique_ptr<Engine> MakeColdEngine(std::shared_ptr<const sandbox::LaunchPlan> plan);

// An engine that runs as `engine` does and holds `hold` for as long as it, or a KeepAlive() it
// gave (a session's), lives: what its user's use must keep alive (a count of an environment's
// uses, a lock on a package layer). `engine` is let go of before `hold`.
std::shared_ptr<Engine> MakeHoldingEngine(std::shared_ptr<Engine> engine,
                                          std::shared_ptr<const void> hold);

// An engine whose runs and sessions mount `layer`: in `engine`'s sandboxes where it can prepare
// them (Engine::RunWithLayer), else in `bound`'s, whose plan binds the layer (a cold engine).
// Holds `layer`'s lease, `engine` and `bound` as long as it, or a KeepAlive() it gave, lives.
std::shared_ptr<Engine> MakeLayeredEngine(std::shared_ptr<Engine> engine, LayerUse layer,
                                          std::shared_ptr<Engine> bound);

struct PoolOptions {
  size_t size = 2;      // sandboxes kept ready, at least (MCP_EXEC_POOL_SIZE)
  size_t max_size = 8;  // kept ready after a burst of that many runs, at most (MCP_EXEC_POOL_MAX)
  std::chrono::seconds peak_window{30};  // how long after a burst (ReadyTarget)
  bool refill = true;  // false: the first `size` only (a one-shot `mcp-exec run`)
  // zygote: when it is replaced (MCP_EXEC_ZYGOTE_MAX_FORKS, MCP_EXEC_ZYGOTE_MAX_AGE_S)
  uint64_t zygote_max_forks = 10000;
  std::chrono::seconds zygote_max_age{600};
};

// `warm` is `cold` with SandboxSpec::warm set. Waits until the first sandbox is ready, so that a
// preload that cannot be imported is an error here, at start. A run that finds no sandbox
// ready does not wait for one: it runs cold.
Result<std::unique_ptr<Engine>> MakePoolEngine(std::shared_ptr<const sandbox::LaunchPlan> cold,
                                               std::shared_ptr<const sandbox::LaunchPlan> warm,
                                               const PoolOptions& options);

// `zygote` is `cold` with SandboxSpec::warm and ::zygote set. The pool's sandboxes are forked
// from a zygote; a run that finds none ready forks one, and runs cold only when the zygote is
// gone (until the refill thread has started a new one). Waits for the first, as the pool does.
Result<std::unique_ptr<Engine>> MakeZygoteEngine(std::shared_ptr<const sandbox::LaunchPlan> cold,
                                                 std::shared_ptr<const sandbox::LaunchPlan> zygote,
                                                 const PoolOptions& options);

}  // namespace mcpexec::engine
