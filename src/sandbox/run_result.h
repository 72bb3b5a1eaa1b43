// What a finished run produced. An outcome, not an error: a program that exits non-zero, dies
// of a signal or runs out of time still "ran". Finish makes it from what the supervisor saw.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sandbox/output.h"
#include "sandbox/workspace_files.h"

namespace mcpexec::sandbox {

// A program and its input, given to a prepared sandbox.
struct Program {
  std::string code;
  std::string stdin_data;
  // Written into the workspace before the program starts; the caller keeps them alive.
  std::span<const InputFile> files = {};
};

struct RunLimits {
  std::chrono::milliseconds timeout{30'000};
  size_t max_output_bytes = 1 << 20;
  OutputLimits outputs;  // what is read back from /tmp/outputs
};

// Optional ways to follow and stop a run from outside.
struct RunHooks {
  // When this fd becomes readable the run is killed and reported as cancelled (-1: none).
  int cancel_fd = -1;
  // Called on the running thread with each piece of output as it is read, in the order read:
  // only the bytes the result keeps (nothing past the output cap), raw (possibly not UTF-8, a
  // character possibly split between two calls). The view is valid during the call only.
  std::function<void(Stream stream, std::string_view bytes)> on_output;
  // Called on the running thread while the program runs: `progress_interval` after the previous
  // call (or the start), and sooner, `output_interval` after it, once on_output has been called
  // since (see ProgressSchedule). `output_bytes` is what the result holds so far.
  std::function<void(std::chrono::milliseconds elapsed, size_t output_bytes)> on_progress;
  std::chrono::milliseconds progress_interval{1000};
  std::chrono::milliseconds output_interval{1000};
};

// How a run or a session's call ended, as its result tells it. What the output cap did is not
// an outcome (RunResult::truncated): past the cap the program runs on, its output discarded.
// A sandbox that could not be set up, or a program that could not be started, is not one
// either: that is an Error, never a result (docs/engine.md).
enum class Outcome {
  kExited,     // the program exited (a session's call: answered) with exit_code
  kSignalled,  // it died of a signal of its own (from inside the sandbox): exit_code 128 + N
  kTimedOut,   // killed, or a call interrupted, at its deadline: exit_code -1
  kCancelled,  // killed, or a call interrupted, through RunHooks::cancel_fd: exit_code -1
  kOomKilled,  // the OOM killer ended it (or, in a session, its interpreter)
  // A session's interpreter killed by the supervisor (its control channel broken) or from
  // outside: exit_code 137. A one-shot run killed from outside is an Error, not a result.
  kKilled,
};

// "exited", "signalled", "timed out", "cancelled", "OOM-killed", "killed".
const char* OutcomeName(Outcome outcome);

struct RunResult {
  Outcome outcome = Outcome::kExited;
  std::string stdout_data;  // raw bytes, possibly not UTF-8
  std::string stderr_data;
  // The program's exit status; 128 + N when it died of signal N (as shells and Docker report
  // it); -1 when it ran out of time or was cancelled (the seed's contract).
  int exit_code = 0;
  std::optional<int> signal;  // the signal it died of (kSignalled, kOomKilled, kKilled)
  std::chrono::milliseconds duration{0};
  bool truncated = false;  // the output cap was reached; what came past it was dropped

  // Resource accounting from the limits backend ("cgroup2", "cgroup1" or "rlimit").
  std::string limits_backend;
  // The kernel's OOM killer ended a process of the run (the program itself: kOomKilled; a
  // process it started: any outcome).
  bool oom_killed = false;
  std::optional<uint64_t> memory_peak_bytes;
  std::optional<uint64_t> cpu_time_ms;

  OutputCollection outputs;  // /tmp/outputs as the run left it
  // It ran in a pool sandbox, whose interpreter had its preloads imported (logged, not
  // returned: a program cannot tell, and neither does its caller).
  bool warm = false;
};

// Why a session (Session) is over; kNone while it lasts.
enum class SessionEnd {
  kNone,
  kTimeout,      // a call ran past its deadline and did not stop when interrupted
  kCancelled,    // a cancelled call did not stop when interrupted
  kOutOfMemory,  // the OOM killer ended its interpreter
  kExited,       // its interpreter exited (os._exit, a fatal signal of its own)
  kKilled,       // killed from outside, or ended by its owner
  // A message on its control channel that was not the answer to the call it waited for: the
  // program wrote to the channel (call_channel.h)
  kChannelBroken,
};

// "timeout", "cancelled", "out of memory", "the interpreter exited", "killed", "control channel
// broken".
const char* SessionEndName(SessionEnd end);

// One call of a session.
struct CallResult {
  RunResult run;  // exit_code: 0, 1 for an uncaught exception, or sys.exit's code
  std::optional<std::string> value;  // repr() of a last expression that is not None, cut short
  SessionEnd ended = SessionEnd::kNone;  // the call ended the session
};

// How the supervisor's loop saw a run or a call end: the first reason it saw.
enum class RunEnd {
  kCallDone,     // a session's interpreter answered "D": the call is over, the session lasts
  kExited,       // init reported the program's (a session's: its interpreter's) wait status
  kTimedOut,     // killed at the deadline (a call: interrupted first, killed `grace` later)
  kCancelled,    // killed through RunHooks::cancel_fd (a call: likewise)
  kStartFailed,  // init reported that the program could not be started
  kInitLost,     // init was reaped without a report: killed from outside, or by the OOM killer
  // A session's control channel carried something other than the call's answer: killed
  kChannelBroken,
};

// Everything the supervisor saw of a run or a session's call, from its start to its end, for
// Finish.
struct Happened {
  bool session = false;  // a session's call: its interpreter may outlive it
  RunEnd end = RunEnd::kInitLost;
  // A call interrupted (SIGINT) at its deadline or cancellation, that answered or was killed
  // after: kTimedOut or kCancelled.
  std::optional<RunEnd> interrupted;
  // At kExited: the program's, from init's report; at kInitLost: init's own, once reaped.
  int wait_status = 0;
  // At kCallDone: the call's answer (its status and value).
  int answer_status = 0;
  std::optional<std::string> value;
  // The cgroup's OOM events: one came during the run or call; one had come before it, in the
  // same sandbox (a session's earlier call).
  bool oom_kill = false;
  bool oom_kill_before = false;
  // The output as capped, and the time from the start to the first reason to end.
  std::string stdout_data;
  std::string stderr_data;
  bool truncated = false;
  std::chrono::milliseconds duration{0};
  // Accounting, and what /tmp/outputs held.
  std::string limits_backend;
  std::optional<uint64_t> memory_peak_bytes;
  std::optional<uint64_t> cpu_time_ms;
  bool warm = false;
  OutputCollection outputs;
};

// The one step from what happened to the result, for a one-shot run (Sandbox::Run, which
// returns the `run` of it) and a session's call (Session::Call) alike: the Outcome, the exit
// code and signal, the OOM flag, the output and the accounting, and, for a call, its value and
// whether it ended the session. A one-shot run whose init died of something other than the OOM
// killer was killed from outside, and the program's fate is unknown: kUnavailable, not a
// result. kStartFailed is the caller's to report (it holds the failure report): here it counts
// as init lost.
Result<CallResult> Finish(Happened happened);

// Fills outcome (kExited or kSignalled), exit_code and signal from a wait(2) status.
void ApplyWaitStatus(int wait_status, RunResult& result);

// "SIGKILL" for 9; "SIG<n>" for numbers without a name.
std::string SignalName(int sig);

}  // namespace mcpexec::sandbox
