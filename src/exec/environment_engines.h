// The engines of the offered environments: each environment's sandboxes come from its own image
// (environments.h), with its own preloads and variables, through an engine of the kind
// MCP_EXEC_ENGINE names. The default environment's engine starts with the server and lives as
// long as it; another's starts in the background at its first call, whose runs go cold in its
// image until it is ready, and is released once no run or session has used it for
// MCP_EXEC_ENVIRONMENT_IDLE_S (then the next call starts it again, as the first did).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "config/config.h"
#include "engine/engine.h"
#include "exec/engine_choice.h"
#include "exec/environments.h"
#include "limits/limits.h"
#include "sandbox/plan.h"
#include "sandbox/spec.h"

namespace mcpexec::exec {

// The sandbox of environment `env` under this configuration: SpecFromConfig's, with the
// environment's image, preloads and variables.
sandbox::SandboxSpec SpecForEnvironment(const config::Config& config, const Environment& env);

class EnvironmentEngines {
 public:
  // Compiles every offered environment's cold plan over `backend`; an error names the
  // environment whose plan does not compile. Nothing is started: StartDefault.
  static Result<std::shared_ptr<EnvironmentEngines>> Prepare(
      const config::Config& config, Offer offer, std::shared_ptr<limits::LimitsBackend> backend);
  // Starts the default environment's engine (StartEngine, with the engines auto passed over in
  // `passed_over`). Call once, before any other method but Offered.
  Result<void> StartDefault(std::vector<PassedOver>* passed_over = nullptr);
  // One environment, "default", served by `engine` (tests, and tools with one engine).
  static std::shared_ptr<EnvironmentEngines> Single(std::shared_ptr<engine::Engine> engine);

  // Stops the background starts, waiting for one under way; the engines end with the object.
  ~EnvironmentEngines();
  EnvironmentEngines(const EnvironmentEngines&) = delete;
  EnvironmentEngines& operator=(const EnvironmentEngines&) = delete;

  const Offer& Offered() const { return offer_; }
  // The engine of the default environment, started: /metrics, /readyz and the plan's facts.
  const std::shared_ptr<engine::Engine>& DefaultEngine() const;
  // The engine a run in `name` uses now: the environment's own once it started, or else a cold
  // engine in its image, the first such call (the first after a release) starting its own in
  // the background. While the returned engine, or its KeepAlive() (a session's), is held, the
  // environment's engine is in use and is not released. nullptr when `name` is not offered.
  // Thread-safe; never waits for a start or a release.
  std::shared_ptr<engine::Engine> EngineFor(const std::string& name);

  // One environment's engine now, for /metrics.
  struct EnvironmentState {
    std::string name;
    // Its own engine runs: always for the default environment; for another, from its first
    // call's start until its release (false meanwhile: its runs are cold).
    bool started = false;
    engine::ProcessMemory memory;  // what that engine holds between runs (engine::MemoryOf)
  };
  // Every offered environment's, in the offer's order. Reads /proc (engine::MemoryOf): for a
  // scrape, not for every run. Thread-safe.
  std::vector<EnvironmentState> States() const;

 private:
  using Clock = std::chrono::steady_clock;
  // How an environment's engine is used: the engines EngineFor handed out (and their
  // KeepAlive) that are still held, and when the last of them was let go.
  struct Usage {
    std::atomic<uint64_t> in_use{0};
    std::atomic<Clock::rep> last_end{0};  // Clock ticks since its epoch
  };
  struct Slot {
    const Environment* env = nullptr;
    std::shared_ptr<const sandbox::LaunchPlan> plan;  // cold, in its image
    std::shared_ptr<engine::Engine> cold;     // in its image, while `started` is not set
    std::shared_ptr<engine::Engine> started;  // its own engine
    const std::shared_ptr<Usage> usage = std::make_shared<Usage>();
    bool starting = false;  // a start is asked for or under way
    bool released = false;  // it ran once and was released
    // The keeper (Keep), from the first call to the end: starts the engine, holds it, and
    // releases it when idle. Sandboxes made on a thread die with it (PR_SET_PDEATHSIG), and an
    // engine is destroyed here, never on a request's thread.
    std::thread keeper;
  };

  EnvironmentEngines() = default;
  void Keep(Slot& slot);
  // Waits under `lock` until `slot`'s engine has been unused for idle_ (true), or until the
  // object ends (false).
  bool WaitUntilIdle(std::unique_lock<std::mutex>& lock, Slot& slot);

  config::Config config_;
  Offer offer_;
  std::vector<std::unique_ptr<Slot>> slots_;  // in offer_'s order
  size_t default_slot_ = 0;
  std::chrono::seconds idle_{0};  // MCP_EXEC_ENVIRONMENT_IDLE_S; 0: never release
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a start asked for, or stopping_
  bool stopping_ = false;
};

}  // namespace mcpexec::exec
