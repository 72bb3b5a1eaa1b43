// What a finished run produced. An outcome, not an error: a program that exits non-zero, dies
// of a signal or runs out of time still "ran".
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

struct RunResult {
  std::string stdout_data;  // raw bytes, possibly not UTF-8
  std::string stderr_data;
  // The program's exit status; 128 + N when it died of signal N (as shells and Docker report
  // it); -1 when it ran out of time (the seed's contract).
  int exit_code = 0;
  std::optional<int> signal;
  std::chrono::milliseconds duration{0};
  bool truncated = false;
  bool timed_out = false;
  bool cancelled = false;  // killed through RunHooks::cancel_fd; the other fields are partial

  // Resource accounting from the limits backend ("cgroup2", "cgroup1" or "rlimit").
  std::string limits_backend;
  bool oom_killed = false;  // the kernel's OOM killer ended a process of the run
  std::optional<uint64_t> memory_peak_bytes;
  std::optional<uint64_t> cpu_time_ms;

  OutputCollection outputs;  // /tmp/outputs as the run left it
  // It ran in a pool sandbox, whose interpreter had its preloads imported (logged, not
  // returned: a program cannot tell, and neither does its caller).
  bool warm = false;
};

// Why a session (Sandbox::StartSession) is over; kNone while it lasts.
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

// Fills exit_code and signal from a wait(2) status.
void ApplyWaitStatus(int wait_status, RunResult& result);

// "SIGKILL" for 9; "SIG<n>" for numbers without a name.
std::string SignalName(int sig);

}  // namespace mcpexec::sandbox
