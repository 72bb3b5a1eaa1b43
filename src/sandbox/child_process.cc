#include "sandbox/child_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/sys.h"

namespace mcpexec::sandbox {

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      wait_status_(std::exchange(other.wait_status_, std::nullopt)),
      gone_(std::exchange(other.gone_, false)),
      adopted_(other.adopted_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    wait_status_ = std::exchange(other.wait_status_, std::nullopt);
    gone_ = std::exchange(other.gone_, false);
    adopted_ = other.adopted_;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Release(); }

void ChildProcess::Release() {
  if (!pidfd_.Valid() || Reaped()) return;
  Kill();
  (void)Wait();
}

Result<pid_t> PidOfPidfd(int pidfd) {
  // "Pid:" of the pidfd's fdinfo; -1 once the process has exited.
  MCPEXEC_ASSIGN_OR_RETURN(std::string info,
                           ReadFile("/proc/self/fdinfo/" + std::to_string(pidfd)));
  const size_t at = info.find("\nPid:\t");
  if (at == std::string::npos) return MakeError(ErrorCode::kInternal, "a pidfd without a pid");
  const long pid = std::strtol(info.c_str() + at + 6, nullptr, 10);
  if (pid <= 0) return MakeError(ErrorCode::kUnavailable, "the process of a pidfd has exited");
  return static_cast<pid_t>(pid);
}

Result<ChildProcess> ChildProcess::Adopt(UniqueFd pidfd) {
  MCPEXEC_ASSIGN_OR_RETURN(const pid_t pid, PidOfPidfd(pidfd.Get()));
  ChildProcess process(pid, std::move(pidfd));
  process.adopted_ = true;
  return process;
}

void ChildProcess::Kill() const {
  if (pidfd_.Valid() && !gone_) {
    syscall(SYS_pidfd_send_signal, pidfd_.Get(), SIGKILL, nullptr, 0);
  }
}

Result<int> ChildProcess::Wait() {
  if (gone_) return wait_status_.value_or(0);
  if (adopted_) {
    // Readable once it has exited (and, for a PID 1, once every process of its namespace has).
    for (;;) {
      pollfd pfd{pidfd_.Get(), POLLIN, 0};
      if (poll(&pfd, 1, -1) > 0) break;
      if (errno != EINTR) return Errno(ErrorCode::kInternal, "poll(sandbox init)");
    }
    gone_ = true;
    return 0;
  }
  siginfo_t info{};
  for (;;) {
    if (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.Get()), &info,
               WEXITED | __WALL) == 0) {
      break;
    }
    if (errno != EINTR) return Errno(ErrorCode::kInternal, "waitid(sandbox init)");
  }
  // Re-encode as a wait(2) status so that callers use the W* macros.
  int status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : info.si_status & 0x7f;
  if (info.si_code == CLD_DUMPED) status |= 0x80;
  wait_status_ = status;
  gone_ = true;
  return status;
}

}  // namespace mcpexec::sandbox
