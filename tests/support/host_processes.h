// Host-side view of the processes a sandboxed program spawns. Each test puts a marker of its
// own (NewMarker) as a whole argument on the command lines of those processes and finds them by
// scanning /proc/*/cmdline from the host.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

namespace mcpexec::testing {

struct HostProcess {
  pid_t pid;
  uid_t uid;  // the real uid, from /proc/PID/status
};

inline void PrintTo(const HostProcess& p, std::ostream* os) {
  *os << "pid " << p.pid << " uid " << p.uid;
}

// "mcpexec-it-<topic>-<pid>-<random hex>": unique per call.
std::string NewMarker(const std::string& topic);

// Live processes (zombies have no command line) one of whose arguments equals `marker`.
std::vector<HostProcess> FindProcesses(const std::string& marker);

// Polls until at least `count` processes carry `marker`; returns the last scan (fewer than
// `count` when `timeout` passed first).
std::vector<HostProcess> WaitForProcesses(const std::string& marker, size_t count,
                                          std::chrono::milliseconds timeout);

// Polls until no process carries `marker`; returns the last scan (empty on success).
std::vector<HostProcess> WaitForNoProcesses(const std::string& marker,
                                            std::chrono::milliseconds timeout);

// Direct children of `parent` (from PPid in /proc/*/status).
std::vector<pid_t> ChildrenOf(pid_t parent);

// True when `pid` no longer runs: gone, or a zombie waiting to be reaped by whoever inherited
// it. Polls up to `timeout` for that.
bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

// Cleanup after a failed check: SIGKILLs each of `processes` (which the test started).
void KillAll(const std::vector<HostProcess>& processes);

// "pid 123 uid 65532, pid 124 uid 65532" for assertion messages.
std::string DescribeProcesses(const std::vector<HostProcess>& processes);

}  // namespace mcpexec::testing
