// Sleeper: a forked child process that waits until the test lets it go, for tests that need a
// real process to signal (or to leave alone) and to reap. Header-only: the unit and the
// integration tests both use it.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "base/sys.h"
#include "base/unique_fd.h"

namespace mcpexec::testing {

// Exits 0 when its release fd is closed (Finish); the destructor SIGKILLs and reaps it if the
// test did not.
class Sleeper {
 public:
  Sleeper() {
    auto pipe = MakePipe();
    EXPECT_TRUE(pipe.ok());
    pid_ = fork();
    if (pid_ == 0) {
      // Only its own read end stays open: a copy of another sleeper's release end would keep
      // that one from seeing EOF.
      const unsigned r = static_cast<unsigned>(pipe->read.Get());
      if (r > 3) close_range(3, r - 1, 0);
      close_range(r + 1, ~0U, 0);
      char c;
      while (read(pipe->read.Get(), &c, 1) < 0 && errno == EINTR) {
      }
      _exit(0);
    }
    release_ = std::move(pipe->write);
  }
  ~Sleeper() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      (void)Finish();
    }
  }
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;

  pid_t Pid() const { return pid_; }
  // Its pid as a line of cgroup.procs.
  std::string Line() const { return std::to_string(pid_) + "\n"; }
  // Lets it go and reaps it: its wait status.
  int Finish() {
    release_.Reset();
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return status;
  }

 private:
  pid_t pid_ = -1;
  UniqueFd release_;
  bool reaped_ = false;
};

}  // namespace mcpexec::testing
