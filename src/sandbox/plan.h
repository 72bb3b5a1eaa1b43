// LaunchPlan: everything a sandbox launch needs, prepared before clone so that the child only
// reads it. A plan depends on the configuration, not on the run: compile it once and launch
// any number of sandboxes from it, from any thread.
#pragma once

#include <sys/capability.h>
#include <sys/resource.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "limits/limits.h"
#include "sandbox/child/plan_view.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/spec.h"

namespace mcpexec::sandbox {

struct MountOp {
  MountOpKind kind;
  bool optional = false;
  std::string source, target, fstype, data;
  unsigned long flags = 0;
  uint32_t mode = 0;
  // Names the op in set-up errors: "mount the workspace tmpfs on /tmp".
  std::string what;
};

class LaunchPlan {
 public:
  LaunchPlan(const LaunchPlan&) = delete;
  LaunchPlan& operator=(const LaunchPlan&) = delete;

  // The view the child reads; valid as long as this plan lives.
  const PlanView& View() const { return view_; }

  const SandboxSpec& Spec() const { return spec_; }
  const std::vector<MountOp>& MountOps() const { return mounts_; }
  // A zygote plan: what each run forked from the zygote mounts (BuildZygoteRunMountOps).
  const std::vector<MountOp>& ZygoteRunMountOps() const { return zygote_run_mounts_; }
  const std::string& ExecPath() const { return exec_path_; }  // path inside the sandbox
  const std::string& UidMap() const { return uid_map_; }
  const std::string& GidMap() const { return gid_map_; }
  // The compiled filter; nullptr when the spec chose kSeccompUnconfined.
  const SeccompFilter* Seccomp() const { return seccomp_ ? &*seccomp_ : nullptr; }
  // The resource-limits backend every sandbox of this plan runs under.
  limits::LimitsBackend& Limits() const { return *limits_; }
  const std::shared_ptr<limits::LimitsBackend>& LimitsBackend() const { return limits_; }
  // Whether the rootfs has the figure backend (kFigureBackendPath), so that the program runs
  // with MPLBACKEND=module://mcp_exec_figures; false: plain MPLBACKEND=Agg.
  bool CapturesFigures() const { return captures_figures_; }

  // One line per prepared step, for tests and for `--describe`-style debugging.
  std::string Describe() const;

 private:
  friend Result<std::shared_ptr<const LaunchPlan>> Compile(
      const SandboxSpec& spec, std::shared_ptr<limits::LimitsBackend> limits);
  LaunchPlan() = default;
  void BuildView();

  SandboxSpec spec_;
  std::vector<MountOp> mounts_;
  std::vector<MountOp> zygote_run_mounts_;
  std::vector<MountOpView> mount_views_;
  std::vector<RlimitView> rlimits_;
  std::string uid_map_, gid_map_;
  std::string workdir_, exec_path_;
  std::string agent_;  // warm plans: the agent's source (WarmAgentSource)
  std::vector<std::string> argv_, env_;
  std::vector<const char*> argv_ptrs_, env_ptrs_;
  std::optional<SeccompFilter> seccomp_;
  std::shared_ptr<limits::LimitsBackend> limits_;
  bool captures_figures_ = false;
  char* supervisor_args_ = nullptr;
  size_t supervisor_args_len_ = 0;
  PlanView view_{};
};

// A mount step's word ("mount", "pivot_root" ...), as Describe() and the zygote's agent spell it:
// a new kind fails the build here (-Wswitch) rather than reach either unnamed.
const char* MountOpKindName(MountOpKind kind);

// As root: drops this process's supplementary groups (all its threads'), which every sandbox
// would otherwise inherit. Compile refuses a privileged spec until they are gone.
Result<void> DropSupplementaryGroups();

// Validates the spec against the host (the rootfs exists and has its mount points and
// interpreter) and prepares the plan, whose sandboxes run under `limits` (required: running
// without limits is never a default). Errors name the problem and the fix.
Result<std::shared_ptr<const LaunchPlan>> Compile(const SandboxSpec& spec,
                                                  std::shared_ptr<limits::LimitsBackend> limits);

// Every run's open-file limit (RLIMIT_NOFILE, soft and hard).
inline constexpr rlim_t kOpenFilesMax = 1024;
// Every run's locked-memory limit (RLIMIT_MEMLOCK): the kernel's default before 5.16. Nothing in
// the rootfs locks memory; mlock beyond it fails with ENOMEM.
inline constexpr rlim_t kMemlockBytes = 64 * 1024;
// Every run's bound on queued signals (RLIMIT_SIGPENDING). It holds real-time signals; the
// kernel lets standard signals sent with kill() past it.
inline constexpr rlim_t kPendingSignalsMax = 1024;

struct FixedRlimit {
  int resource;
  rlim_t value;  // soft and hard
};

// The limits every run gets whatever the server inherited, each lowered to this process's hard
// limit when that is below (the program cannot raise one). RLIMIT_RTPRIO 0: no SCHED_FIFO or
// SCHED_RR, whose threads cpu.max does not throttle. RLIMIT_NICE 0: no nice value below the
// one inherited. RLIMIT_MSGQUEUE 0: no bytes for POSIX message queues, which the standard
// library has no API for.
inline constexpr FixedRlimit kProgramRlimits[] = {
    {RLIMIT_CORE, 0},
    {RLIMIT_NOFILE, kOpenFilesMax},
    {RLIMIT_RTPRIO, 0},
    {RLIMIT_NICE, 0},
    {RLIMIT_MEMLOCK, kMemlockBytes},
    {RLIMIT_MSGQUEUE, 0},
    {RLIMIT_SIGPENDING, kPendingSignalsMax},
};

// Paths inside the sandbox.
inline constexpr const char* kWorkspaceDir = "/tmp";
inline constexpr const char* kProgramPath = "/tmp/main.py";
// The matplotlib backend the rootfs recipe ships (rootfs/mcp_exec_figures.py): it saves the
// program's figures as figure-N.png in /tmp/outputs, whose files come back (kOutputsDir).
inline constexpr const char* kFigureBackendPath =
    "/usr/lib/python3/dist-packages/mcp_exec_figures.py";

}  // namespace mcpexec::sandbox
