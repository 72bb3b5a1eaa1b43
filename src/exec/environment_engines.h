// The engines of the offered environments: each environment's sandboxes come from its own image
// (environments.h), with its own preloads and variables, through an engine of the kind
// MCP_EXEC_ENGINE names. The default environment's engine starts with the server; another's
// starts in the background at its first call, whose runs go cold in its image until it is ready.
#pragma once

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
  // engine in its image, the first such call starting its own in the background. nullptr when
  // `name` is not offered. Thread-safe; never waits for a start.
  std::shared_ptr<engine::Engine> EngineFor(const std::string& name);

 private:
  struct Slot {
    const Environment* env = nullptr;
    std::shared_ptr<const sandbox::LaunchPlan> plan;  // cold, in its image
    std::shared_ptr<engine::Engine> cold;     // in its image, until `started` is set
    std::shared_ptr<engine::Engine> started;  // its own engine
    bool starting = false;
    // Starts the engine, then waits for the end: sandboxes made on it die with their thread
    // (PR_SET_PDEATHSIG), so it lives as long as the engine.
    std::thread starter;
  };

  EnvironmentEngines() = default;
  void StartInBackground(Slot& slot);

  config::Config config_;
  Offer offer_;
  std::vector<std::unique_ptr<Slot>> slots_;  // in offer_'s order
  size_t default_slot_ = 0;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
};

}  // namespace mcpexec::exec
