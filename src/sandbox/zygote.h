// Zygote: the zygote engine's interpreter (docs/engine.md). A sandbox made as a pool's is, from a
// plan with SandboxSpec::zygote, whose agent never runs a program: with the preloads imported,
// it forks each run's sandbox. The run makes its own user, mount, pid, net, ipc, uts and cgroup
// namespaces, mounts a cold sandbox's /proc, /dev/shm and workspace, drops every capability and
// applies the rlimits and seccomp filter before its program; it is in the run's cgroup before it
// makes any of that (on cgroup v1 it joins through descriptors the supervisor passes, on v2 the
// supervisor moves it). To its caller a forked sandbox is an ordinary one.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "base/result.h"
#include "sandbox/plan.h"
#include "sandbox/sandbox.h"

namespace mcpexec::sandbox {

class Zygote : public std::enable_shared_from_this<Zygote> {
 public:
  // Starts a zygote from `plan` and waits until its preloads are imported (errors as
  // Sandbox::Create's). It dies with the calling thread, as a sandbox does.
  static Result<std::shared_ptr<Zygote>> Start(std::shared_ptr<const LaunchPlan> plan,
                                                std::chrono::milliseconds timeout);

  // Forks a sandbox ready for its program, in a cgroup of its own with the plan's limits, and
  // with the package layer `layer` (its key in the plan's SandboxSpec::zygote_layers) mounted
  // when it is not empty. The zygote lives as long as the sandboxes it forked. Thread-safe.
  Result<Sandbox> Fork(std::chrono::milliseconds timeout, std::string_view layer = {}) const;
  // Whether its runs can take a package layer (SandboxSpec::zygote_layers).
  bool HasLayers() const { return !box_.plan_->Spec().zygote_layers.empty(); }

  // True while its interpreter waits for forks.
  bool Alive() const { return box_.Waiting(); }
  uint64_t Forks() const;
  // Host pid of the zygote's sandbox's init.
  pid_t InitPid() const { return box_.InitPid(); }
  std::chrono::steady_clock::time_point Started() const { return started_; }

 private:
  explicit Zygote(Sandbox box) : box_(std::move(box)) {}

  Sandbox box_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  mutable std::mutex mutex_;  // one "F" message at a time on the zygote's start socket
  mutable uint64_t forks_ = 0;
};

}  // namespace mcpexec::sandbox
