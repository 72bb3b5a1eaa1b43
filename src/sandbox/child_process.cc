#include "sandbox/child_process.h"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace mcpexec::sandbox {

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      wait_status_(std::exchange(other.wait_status_, std::nullopt)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    wait_status_ = std::exchange(other.wait_status_, std::nullopt);
  }
  return *this;
}

ChildProcess::~ChildProcess() { Release(); }

void ChildProcess::Release() {
  if (!pidfd_.Valid() || Reaped()) return;
  Kill();
  (void)Wait();
}

void ChildProcess::Kill() const {
  if (pidfd_.Valid() && !wait_status_) {
    syscall(SYS_pidfd_send_signal, pidfd_.Get(), SIGKILL, nullptr, 0);
  }
}

Result<int> ChildProcess::Wait() {
  if (wait_status_) return *wait_status_;
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
  return status;
}

}  // namespace mcpexec::sandbox
