// ChildProcess: owns a child by pid and pidfd. While armed, destruction kills it with SIGKILL
// and reaps it, so no code path leaves a sandbox running or a zombie behind.
#pragma once

#include <sys/types.h>

#include <optional>

#include "base/result.h"
#include "base/unique_fd.h"

namespace mcpexec::sandbox {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(pid_t pid, UniqueFd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  pid_t Pid() const { return pid_; }
  int PidFd() const { return pidfd_.Get(); }
  bool Reaped() const { return wait_status_.has_value(); }
  std::optional<int> WaitStatus() const { return wait_status_; }

  // SIGKILL through the pidfd (no pid-reuse race). Safe to call after the child exited.
  void Kill() const;
  // Blocks until the child exits, reaps it and returns its wait status. Idempotent.
  Result<int> Wait();

 private:
  void Release();  // kills and reaps a child that is still running

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  std::optional<int> wait_status_;
};

}  // namespace mcpexec::sandbox
