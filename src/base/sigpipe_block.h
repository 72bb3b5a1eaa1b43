// ScopedSigpipeBlock: a write to a pipe or socket whose reader is gone raises SIGPIPE, which
// would end the whole server. Blocked in the calling thread for the object's life; what the
// thread's own writes raised meanwhile is consumed, so the write sees EPIPE and nothing else.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <time.h>

namespace mcpexec {

class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~ScopedSigpipeBlock() {
    if (!sigismember(&old_, SIGPIPE)) {
      sigset_t pending;
      timespec zero{};
      if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t pipe_, old_;
};

}  // namespace mcpexec
