// Teardown: what is left of a sandbox once its run has its result, removed off the request path
// (docs/engine.md, "Answer first, clean up after").
//
// A run's result is ready once its init has killed and reaped every other process of the run
// (steps.cc, Reap). What remains then is slow and concerns nobody waiting for the result: init's
// own exit (the unmapping of its address space, a fork of the zygote's in a warm run), the
// teardown of its namespaces and workspace, and the removal of the run's cgroup (an RCU grace
// period on cgroup v1). A background thread waits for each init to be gone, reaps it, then
// removes its cgroup. The backlog is bounded: past kMaxPending, Add does the work itself, on
// the caller's thread, as before this queue existed. A server killed with a backlog leaves
// inits that die with their parent (PR_SET_PDEATHSIG) and cgroups that the next start removes
// (limits::RemoveStaleRuns).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/result.h"
#include "limits/limits.h"
#include "sandbox/child_process.h"

namespace mcpexec::sandbox {

class Zygote;

// One sandbox's remains. Destroyed in this order: init killed and reaped, then the cgroup
// removed, then the zygote released (a zygote's runs die with it).
struct SandboxRemains {
  std::shared_ptr<const Zygote> zygote;
  std::unique_ptr<limits::RunCgroup> cgroup;
  ChildProcess init;
};

class Teardown {
 public:
  static constexpr uint64_t kMaxPending = 64;

  struct Stats {
    uint64_t pending = 0;    // remains waiting for their init to end or their cgroup's removal
    uint64_t completed = 0;  // remains torn down, in the background or by Add itself
    uint64_t inline_ = 0;    // of those, torn down by Add because kMaxPending were pending
    uint64_t failed = 0;     // inits not reaped or cgroups not removed (OnFailure)
  };

  // The process's one queue; its thread starts at the first Add.
  static Teardown& Shared();

  Teardown();
  ~Teardown();  // tears down what is pending, then stops the thread
  Teardown(const Teardown&) = delete;
  Teardown& operator=(const Teardown&) = delete;

  // Takes the remains of a sandbox whose run is over: its init ends by itself (it has reported
  // the run's end, or it is reaped already); nothing else of the run may be alive. Thread-safe.
  void Add(SandboxRemains remains);
  // Blocks until nothing is pending: before a one-shot `run` exits, at a server's orderly stop,
  // and in tests that count cgroups.
  void Drain();
  Stats GetStats() const;
  // Called, on the thread that tore them down, for remains whose init could not be reaped or
  // whose cgroup could not be removed (a server logs them). Thread-safe.
  using FailureHandler = std::function<void(const Error&)>;
  void OnFailure(FailureHandler handler);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mcpexec::sandbox
