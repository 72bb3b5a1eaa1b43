// PlanView: the read-only, allocation-free view of a LaunchPlan that the post-clone child
// reads. Every pointer points into storage owned by the parent's LaunchPlan; the child has its
// own copy of that memory (clone without CLONE_VM), so nothing here is ever freed or changed
// by the child.
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace mcpexec::sandbox {

enum class MountOpKind : uint8_t {
  kMount,      // mount(source, target, fstype, flags, data)
  kMkdir,      // mkdir(target, mode)
  kTouch,      // create an empty file at target (a bind-mount target), mode
  kSymlink,    // symlink(source, target)
  kCopyFile,   // copy the regular file source to a new file target, mode
  kPivotRoot,  // chdir(target); pivot_root(".", "."); detach the old root; chdir("/")
};

struct MountOpView {
  MountOpKind kind;
  bool optional;  // a missing target (ENOENT) is not an error: kernel-dependent /proc paths
  const char* source;
  const char* target;
  const char* fstype;
  unsigned long flags;
  const char* data;
  uint32_t mode;
};

struct RlimitView {
  int resource;
  struct rlimit limit;
};

// Fixed descriptors of the child: set up first thing after clone.
enum ChildFd : int {
  kFdStdin = 0,
  kFdStdout = 1,
  kFdStderr = 2,
  // child -> parent: ChildReport records, one per message of a SOCK_SEQPACKET pair; kReady
  // carries the workspace (an O_PATH descriptor of /tmp) as SCM_RIGHTS.
  kFdReport = 3,
  kFdGo = 4,  // parent -> child: one byte once the id maps are written
  // The start socket: the supervisor sends one byte once the program is in /tmp/main.py. A cold
  // init waits for it before starting the program; a warm init hands it to the agent it starts
  // at once (the one descriptor besides 0-2 that reaches Python, closed before the program
  // runs), which reports on it when its preloads are imported.
  kFdStart = 5,
  kChildFdCount = 6,
  // A zygote's init only: the zygote's extension (zygote_run.h), a sealed memfd its agent loads
  // and closes before it imports anything.
  kFdZygoteModule = 6,
  // A zygote's init only: its runs' init (zygote_init.cc), a sealed memfd the zygote keeps open
  // and hands to each run.
  kFdZygoteInit = 7,
};

// At most this many descriptors a sandbox's first process writes "0" to, to join the run's
// cgroup (one for each cgroup v1 hierarchy: RunCgroup::JoinFds).
inline constexpr size_t kMaxCgroupJoinFds = 4;

struct PlanView {
  const MountOpView* mount_ops;
  size_t mount_op_count;

  const char* hostname;
  size_t hostname_len;

  uid_t uid;
  gid_t gid;

  int last_cap;           // highest capability number the kernel knows

  const char* workdir;  // cwd of the program, inside the new root
  // Warm: init writes the agent (warm_agent.h) to /tmp/main.py and starts the interpreter on it
  // as soon as set-up is done; the agent waits on kFdStart itself. Cold: init waits on
  // kFdStart and then starts `python3 /tmp/main.py`. Either way the program's command line is
  // the same.
  bool warm;
  const char* program_path;  // /tmp/main.py
  const char* agent;         // warm: the agent's source
  size_t agent_len;
  // A zygote: the extension its agent sets each run up with (zygote_run.h). nullptr otherwise.
  const unsigned char* zygote_module;
  size_t zygote_module_len;
  // A zygote: the executable of its runs' init (zygote_init.cc). nullptr otherwise.
  const unsigned char* zygote_init;
  size_t zygote_init_len;

  const RlimitView* rlimits;
  size_t rlimit_count;

  const sock_fprog* seccomp;  // nullptr: no filter in this plan

  const char* exec_path;
  const char* const* argv;
  const char* const* envp;

  // The supervisor's argument strings (its /proc/PID/cmdline), which init, a clone of it,
  // shares: init overwrites its copy so that the program cannot read the supervisor's command
  // line (an --auth-token, host paths) from /proc/1/cmdline. nullptr: unknown.
  char* supervisor_args;
  size_t supervisor_args_len;
};

// What the child tells the parent on kFdReport. One record is one write(2) of this fixed size
// (below PIPE_BUF, so atomic).
enum class ReportType : uint32_t { kReady = 1, kFailure = 2, kExit = 3 };

enum class ChildStep : uint32_t {
  kSetupFds = 1,
  kSignals,
  kDeathSignal,
  kWaitGo,
  kMountOp,
  kHostname,
  kLoopback,
  kSetgid,
  kSetuid,
  kChdir,
  kDropBoundingCaps,
  kClearAmbientCaps,
  kSetCaps,
  kNoNewPrivs,
  kNotDumpable,
  kWaitStart,
  kWriteAgent,
  kStartProgram,
  kSetsid,
  kRlimit,
  kSeccomp,
  kExec,
  kCgroupNamespace,
  kReportReady,
  // A zygote's init, and the runs it forks (zygote_run.h).
  kZygoteModule,
  kSendPidfd,
  kUserNamespace,
  kIdMaps,
  kForkInit,
  kDumpable,
  kStartInit,
  kWaitInit,
  // A cold init on cgroup v1, and a zygote's fork there.
  kJoinCgroup,
};

struct ChildReport {
  ReportType type;
  ChildStep step;     // kFailure
  int32_t sys_errno;  // kFailure
  uint32_t index;     // kFailure: mount op or rlimit index
  int32_t wait_status;  // kExit: the program's wait status
  // kExit: getrusage(RUSAGE_CHILDREN) of init, which has reaped the program and every orphan
  // so far: the largest resident set and the CPU time they used.
  int64_t children_maxrss_kib;
  int64_t children_cpu_us;
};

}  // namespace mcpexec::sandbox
