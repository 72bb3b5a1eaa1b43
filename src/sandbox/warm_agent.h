// The agent: the Python a warm sandbox's interpreter starts with. Init writes it to /tmp/main.py
// and starts `python3 /tmp/main.py`, the program's own command line. It removes that file,
// imports the preloads with fd 1 and 2 on /dev/null, says "R" on the start socket (kFdStart),
// waits for "G", closes the socket, and runs the program the supervisor wrote to /tmp/main.py the
// way `python3 /tmp/main.py` would: same __main__ namespace, traceback text and exit status. A
// preload that fails to import is reported as "E<text>" and the agent exits 1. docs/engine.md
// lists what a program can still tell apart.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "sandbox/plan.h"

namespace mcpexec::sandbox {

// The agent's source, importing `preload` (valid dotted module names: config::ParseModuleList).
std::string WarmAgentSource(const std::vector<std::string>& preload);

// What each run a zygote forks sets up itself, from the plan: the mounts of BuildZygoteRunMountOps
// (paths inside the rootfs), the id maps of its own user namespace, and what a cold init
// applies to the program (rlimits, seccomp filter).
struct ZygoteRunSetup {
  std::vector<MountOp> mounts;
  std::string uid_map, gid_map;
  std::string hostname;
  std::string init_name;  // a cold init's name (/proc/1/comm): the supervisor's
  int last_cap = 0;
  std::vector<RlimitView> rlimits;
  std::vector<sock_filter> seccomp;  // empty: none
};

// The zygote's agent: imports `preload`, says "R", then forks a sandbox per "F" (zygote.h).
std::string ZygoteAgentSource(const std::vector<std::string>& preload,
                              const ZygoteRunSetup& setup);

// The messages on the start socket: ready (agent), "E" + why a preload failed (agent), go
// (supervisor).
inline constexpr char kAgentReady = 'R';
inline constexpr char kAgentFailed = 'E';
inline constexpr char kAgentGo = 'G';
// A zygote's messages: on its own start socket, "F" with a run's five descriptors (supervisor);
// on the run's start socket, "P" with a pidfd of the run's first process (zygote), "M" once
// the supervisor has moved it into the run's cgroup, "I" with a pidfd of the run's init, then
// "R" or "E" as above.
inline constexpr char kZygoteFork = 'F';
inline constexpr char kZygoteForked = 'P';
inline constexpr char kZygoteMoved = 'M';
inline constexpr char kZygoteInit = 'I';
// A session's messages on the start socket: "S" instead of "G" (supervisor), then per call "C"
// with four descriptors (code, stdin, stdout, stderr; supervisor) and "D" with the call's status
// and value (agent).
inline constexpr char kSessionStart = 'S';
inline constexpr char kSessionCall = 'C';
inline constexpr char kSessionDone = 'D';

}  // namespace mcpexec::sandbox
