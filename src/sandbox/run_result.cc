#include "sandbox/run_result.h"

#include <string.h>
#include <sys/wait.h>

namespace mcpexec::sandbox {

void ApplyWaitStatus(int wait_status, RunResult& result) {
  if (WIFSIGNALED(wait_status)) {
    result.signal = WTERMSIG(wait_status);
    result.exit_code = 128 + WTERMSIG(wait_status);
  } else {
    result.signal.reset();
    result.exit_code = WEXITSTATUS(wait_status);
  }
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "SIG" + std::to_string(sig);
}

const char* SessionEndName(SessionEnd end) {
  switch (end) {
    case SessionEnd::kNone:
      return "open";
    case SessionEnd::kTimeout:
      return "timeout";
    case SessionEnd::kCancelled:
      return "cancelled";
    case SessionEnd::kOutOfMemory:
      return "out of memory";
    case SessionEnd::kExited:
      return "the interpreter exited";
    case SessionEnd::kKilled:
      return "killed";
    case SessionEnd::kChannelBroken:
      return "control channel broken";
  }
  return "killed";
}

}  // namespace mcpexec::sandbox
