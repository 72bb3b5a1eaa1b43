#include "sandbox/run_result.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

namespace mcpexec::sandbox {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kExited:
      return "exited";
    case Outcome::kSignalled:
      return "signalled";
    case Outcome::kTimedOut:
      return "timed out";
    case Outcome::kCancelled:
      return "cancelled";
    case Outcome::kOomKilled:
      return "OOM-killed";
    case Outcome::kKilled:
      return "killed";
  }
  return "killed";
}

void ApplyWaitStatus(int wait_status, RunResult& result) {
  if (WIFSIGNALED(wait_status)) {
    result.outcome = Outcome::kSignalled;
    result.signal = WTERMSIG(wait_status);
    result.exit_code = 128 + WTERMSIG(wait_status);
  } else {
    result.outcome = Outcome::kExited;
    result.signal.reset();
    result.exit_code = WEXITSTATUS(wait_status);
  }
}

Result<CallResult> Finish(Happened happened) {
  CallResult call;
  RunResult& result = call.run;
  result.stdout_data = std::move(happened.stdout_data);
  result.stderr_data = std::move(happened.stderr_data);
  result.truncated = happened.truncated;
  result.duration = happened.duration;
  result.limits_backend = std::move(happened.limits_backend);
  result.memory_peak_bytes = happened.memory_peak_bytes;
  result.cpu_time_ms = happened.cpu_time_ms;
  result.warm = happened.warm;
  result.outputs = std::move(happened.outputs);

  const bool session = happened.session;
  // A session's cgroup holds every call: an OOM kill in an earlier one still tells why its
  // interpreter is gone.
  const bool oom = session ? happened.oom_kill || happened.oom_kill_before : happened.oom_kill;
  auto stopped = [&](Outcome outcome, SessionEnd ends) {
    result.outcome = outcome;
    result.exit_code = -1;
    if (session) call.ended = ends;
  };
  switch (happened.end) {
    case RunEnd::kCallDone:
      // Interrupted in time: the call answered (KeyboardInterrupt), and the session lasts.
      result.exit_code = happened.answer_status;
      call.value = std::move(happened.value);
      if (happened.interrupted == RunEnd::kTimedOut) {
        stopped(Outcome::kTimedOut, SessionEnd::kNone);
      } else if (happened.interrupted == RunEnd::kCancelled) {
        stopped(Outcome::kCancelled, SessionEnd::kNone);
      }
      break;
    case RunEnd::kTimedOut:
      stopped(Outcome::kTimedOut, SessionEnd::kTimeout);
      break;
    case RunEnd::kCancelled:
      stopped(Outcome::kCancelled, SessionEnd::kCancelled);
      break;
    case RunEnd::kExited:
      ApplyWaitStatus(happened.wait_status, result);
      if (session) {
        call.ended = oom ? SessionEnd::kOutOfMemory : SessionEnd::kExited;
        if (oom) result.outcome = Outcome::kOomKilled;
      } else if (oom && result.signal == SIGKILL) {
        result.outcome = Outcome::kOomKilled;
      }
      break;
    case RunEnd::kChannelBroken:
      if (session) {
        ApplyWaitStatus(SIGKILL, result);
        result.outcome = Outcome::kKilled;
        call.ended = SessionEnd::kChannelBroken;
        break;
      }
      [[fallthrough]];
    case RunEnd::kStartFailed:
    case RunEnd::kInitLost:
      if (oom) {
        // The OOM killer chose init, or the interpreter (it picks by size): it ended for lack
        // of memory.
        ApplyWaitStatus(SIGKILL, result);
        result.outcome = Outcome::kOomKilled;
        if (session) call.ended = SessionEnd::kOutOfMemory;
      } else if (session) {
        ApplyWaitStatus(SIGKILL, result);
        result.outcome = Outcome::kKilled;
        call.ended = SessionEnd::kKilled;
      } else {
        // Init cannot be signalled from inside the sandbox, so it was killed from outside and
        // the program's fate is unknown: not a result to report as the program's.
        RunResult died;
        ApplyWaitStatus(happened.wait_status, died);
        return MakeError(ErrorCode::kUnavailable,
                         "the sandbox's init died before the program finished (" +
                             (died.signal ? "killed by " + SignalName(*died.signal)
                                          : "exit status " + std::to_string(died.exit_code)) +
                             "), killed from outside the sandbox or by the OOM killer");
      }
      break;
  }
  result.oom_killed = happened.oom_kill || result.outcome == Outcome::kOomKilled;
  return call;
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
