// The messages on a sandbox's start socket (kFdStart), one byte each, written by the supervisor,
// the agent (warm_agent.h) and a zygote's runs (zygote_run.h).
#pragma once

namespace mcpexec::sandbox {

// Ready (agent), "E" + why a preload failed (agent), go (supervisor).
inline constexpr char kAgentReady = 'R';
inline constexpr char kAgentFailed = 'E';
inline constexpr char kAgentGo = 'G';
// A zygote's messages: on its own start socket, "F" with a run's five descriptors and those it
// joins the run's cgroup through, if any (supervisor); on the run's start socket, "P" with a
// pidfd of the run's first process (the run), "M" once it is in the run's cgroup (joined, or
// moved by the supervisor), "I" with a pidfd of the run's init, then "R" or "E" as above.
inline constexpr char kZygoteFork = 'F';
inline constexpr char kZygoteForked = 'P';
inline constexpr char kZygoteMoved = 'M';
inline constexpr char kZygoteInit = 'I';
// A session's messages: "S" instead of "G" (supervisor), then per call "C" with four
// descriptors (code, stdin, stdout, stderr; supervisor) and "D" with the call's status and
// value (agent).
inline constexpr char kSessionStart = 'S';
inline constexpr char kSessionCall = 'C';
inline constexpr char kSessionDone = 'D';

}  // namespace mcpexec::sandbox
