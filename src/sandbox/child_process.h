// ChildProcess: owns a child by pid and pidfd. While armed, destruction kills it with SIGKILL
// and reaps it, so no code path leaves a sandbox running or a zombie behind. An adopted process
// (a zygote's run, which the zygote forked) is owned the same way, except that its parent reaps
// it: it counts as reaped once its pidfd says it has exited, and its wait status is unknown.
#pragma once

#include <sys/types.h>

#include <optional>

#include "base/result.h"
#include "base/unique_fd.h"

namespace mcpexec::sandbox {

// The pid, as this process's /proc sees it, of the process a pidfd refers to.
Result<pid_t> PidOfPidfd(int pidfd);

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(pid_t pid, UniqueFd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  // A process another one forked, by a pidfd of it.
  static Result<ChildProcess> Adopt(UniqueFd pidfd);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  pid_t Pid() const { return pid_; }
  int PidFd() const { return pidfd_.Get(); }
  bool Reaped() const { return gone_; }
  std::optional<int> WaitStatus() const { return wait_status_; }

  // SIGKILL through the pidfd (no pid-reuse race). Safe to call after the child exited.
  void Kill() const;
  // Blocks until the child exits, reaps it and returns its wait status (adopted: 0). Idempotent.
  Result<int> Wait();

 private:
  void Release();  // kills and reaps a child that is still running

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  std::optional<int> wait_status_;
  bool gone_ = false;
  bool adopted_ = false;
};

}  // namespace mcpexec::sandbox
