// The steps of a sandbox's set-up, one copy of each: a cold init (child.cc) and a run forked
// from the zygote (zygote_run.cc) take the same ones. Same rules as child.h: raw syscalls and
// signal-safety(7) functions only, no allocation, no exceptions. A step that fails reports
// the step and errno on kFdReport and ends the process (exit status 125).
#pragma once

#include <sys/types.h>

#include "sandbox/child/plan_view.h"

namespace mcpexec::sandbox::child {

inline constexpr int kSetupFailedExit = 125;

// One byte from `fd`, retried on EINTR: read(2)'s result.
ssize_t ReadByte(int fd, char* byte) noexcept;
void Report(const ChildReport& report) noexcept;
[[noreturn]] void Fail(ChildStep step, uint32_t index = 0) noexcept;

// Writes "mcp-exec-init" over the supervisor's argument strings, so that /proc/1/cmdline does
// not show them. (A zygote's run's init executes mcp-exec-init, zygote_init.cc.)
void HideSupervisorArgs(const PlanView& plan) noexcept;
// Moves each source to its ChildFd number (a source of -1: that number is closed) and closes
// every other descriptor. 0-2 stay inheritable, the rest are close-on-exec.
void SetupFds(const int (&sources)[kChildFdCount]) noexcept;
// Writes "0" to each of the `count` descriptors at `join`, cgroup v1 `tasks` files, after
// checking that each is a cgroup file: moves this thread into the run's cgroup. The process must
// be single-threaded. Returns 0, or the errno of the first that failed (EBADF: not a cgroup
// file), for the caller to report as kJoinCgroup once its report descriptor is in place.
int JoinCgroup(const int* join, size_t count) noexcept;
// Empties the signal mask and sets every disposition to the default.
void ResetSignals() noexcept;
// Sends `message` with `pidfd` on the socket `fd`.
void SendPidfd(int fd, char message, int pidfd, ChildStep step) noexcept;
// Sends `message` with a pidfd of this process on the socket `fd`.
void SendOwnPidfd(int fd, char message, ChildStep step) noexcept;

// Every capability up to `last_cap` dropped (bounding, ambient and own), no_new_privs set and
// the process made non-dumpable.
void DropPrivileges(int last_cap) noexcept;
// The sandbox's file system, hostname, loopback and workspace, then DropPrivileges: what an
// init does once it is in its namespaces with its ids.
void SetUpSandbox(const PlanView& plan) noexcept;
// Hands the workspace to the supervisor (kReady with an O_PATH descriptor of it).
void ReportReady(const PlanView& plan) noexcept;
// In the program's process: a new session, the rlimits, then the seccomp filter, last.
void ApplyProgramLimits(const PlanView& plan) noexcept;
// PID 1 of the sandbox: reaps every orphan, and ends the sandbox when `program` ends: kills
// and reaps every other process of the namespace, then reports the program's wait status and
// what the run's processes used, and exits.
[[noreturn]] void Reap(pid_t program) noexcept;

}  // namespace mcpexec::sandbox::child
