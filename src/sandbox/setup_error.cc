#include "sandbox/setup_error.h"

#include <unistd.h>

#include <cstdlib>

#include "base/sys.h"

namespace mcpexec::sandbox {
namespace {

std::optional<long> ReadSysctl(const char* path) {
  auto text = ReadFile(path);
  if (!text.ok()) return std::nullopt;
  return std::strtol(text->c_str(), nullptr, 10);
}

const char* FixedStepName(ChildStep step) {
  switch (step) {
    case ChildStep::kSetupFds: return "arrange the sandbox's file descriptors";
    case ChildStep::kSignals: return "reset signal handling";
    case ChildStep::kDeathSignal: return "arm the parent-death signal";
    case ChildStep::kWaitGo: return "wait for the supervisor (it went away)";
    case ChildStep::kMountOp: return "mount";
    case ChildStep::kHostname: return "set the hostname";
    case ChildStep::kLoopback: return "bring up the loopback interface";
    case ChildStep::kSetgid: return "switch to the sandbox gid";
    case ChildStep::kSetuid: return "switch to the sandbox uid";
    case ChildStep::kChdir: return "enter the workspace";
    case ChildStep::kDropBoundingCaps: return "drop the capability bounding set";
    case ChildStep::kClearAmbientCaps: return "clear the ambient capabilities";
    case ChildStep::kSetCaps: return "clear every capability set";
    case ChildStep::kNoNewPrivs: return "set no_new_privs";
    case ChildStep::kNotDumpable: return "make the sandbox init non-dumpable";
    case ChildStep::kWaitStart: return "wait for the program";
    case ChildStep::kWriteAgent: return "write the warm interpreter's agent to /tmp/main.py";
    case ChildStep::kStartProgram: return "start the program";
    case ChildStep::kSetsid: return "start a new session";
    case ChildStep::kCgroupNamespace: return "enter a new cgroup namespace";
    case ChildStep::kReportReady: return "hand the workspace to the supervisor";
    case ChildStep::kRlimit: return "set a resource limit";
    case ChildStep::kSeccomp: return "load the seccomp filter";
    case ChildStep::kExec: return "execute the interpreter";
    case ChildStep::kZygoteModule: return "hand the zygote its extension and its runs' init";
    case ChildStep::kSendPidfd: return "send a zygote run's pidfd to the supervisor";
    case ChildStep::kUserNamespace: return "make a zygote run's namespaces";
    case ChildStep::kIdMaps: return "write a zygote run's id maps";
    case ChildStep::kForkInit: return "start a zygote run's init";
    case ChildStep::kDumpable: return "make a zygote run's program dumpable";
    case ChildStep::kStartInit: return "execute a zygote run's init (mcp-exec-init)";
    case ChildStep::kWaitInit: return "wait for a zygote run's init to lock itself down";
    case ChildStep::kJoinCgroup:
      return "join the run's cgroup (writing 0 to its cgroup v1 tasks files)";
  }
  return "an unknown step";
}

}  // namespace

UsernsFacts ReadUsernsFacts() {
  UsernsFacts f;
  f.max_user_namespaces = ReadSysctl("/proc/sys/user/max_user_namespaces");
  f.unprivileged_userns_clone = ReadSysctl("/proc/sys/kernel/unprivileged_userns_clone");
  f.apparmor_restrict = ReadSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  f.root = geteuid() == 0;
  return f;
}

UsernsHint ExplainUserns(const UsernsFacts& f) {
  if (f.max_user_namespaces && *f.max_user_namespaces == 0) {
    return {"user namespaces are disabled: user.max_user_namespaces is 0",
            {"sysctl -w user.max_user_namespaces=15000 (and set it in /etc/sysctl.d/ to keep "
             "it)"}};
  }
  if (!f.root && f.unprivileged_userns_clone && *f.unprivileged_userns_clone == 0) {
    return {"unprivileged user namespaces are disabled: kernel.unprivileged_userns_clone is 0",
            {"sysctl -w kernel.unprivileged_userns_clone=1 (and set it in /etc/sysctl.d/)"}};
  }
  if (!f.root && f.apparmor_restrict && *f.apparmor_restrict == 1) {
    return {"AppArmor restricts unprivileged user namespaces "
            "(kernel.apparmor_restrict_unprivileged_userns=1)",
            {"install an AppArmor profile for mcp-exec that grants 'userns,'",
             "or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"}};
  }
  return {"user namespaces are not available here: the limit on them may be reached "
          "(user.max_user_namespaces), or a container runtime's seccomp or AppArmor profile "
          "forbids them",
          {"run mcp-exec on the host, or give its container --security-opt seccomp=unconfined "
           "--security-opt apparmor=unconfined"}};
}

std::vector<std::string> HiddenProcFixes() {
  return {"under systemd, turn off ProtectKernelTunables=, ProtectKernelLogs=, ProtectProc= and "
          "ProcSubset= for mcp-exec (packaging/systemd/mcp-exec.service leaves them off)",
          "in a container, run mcp-exec on the host, or unmask the container's /proc (docker "
          "--security-opt systempaths=unconfined, podman --security-opt unmask=ALL)"};
}

Error CloneError(int err, const UsernsFacts& facts) {
  if (err == ENOSYS) {
    return Error{ErrorCode::kUnavailable, err,
                 "cannot create the sandbox: clone3(2) is not supported; mcp-exec needs "
                 "Linux 5.9 or newer"};
  }
  if (err == EAGAIN || err == ENOMEM) {
    return Error{ErrorCode::kResourceExhausted, err,
                 "cannot create the sandbox: clone3 failed with " + ErrnoText(err) +
                     ": the host is out of processes or memory"};
  }
  UsernsHint hint = ExplainUserns(facts);
  return Error{ErrorCode::kUnavailable, err,
               "cannot create the sandbox's namespaces: clone3 failed with " + ErrnoText(err) +
                   ". " + hint.why,
               std::move(hint.fixes)};
}

Error IdMapError(const Error& cause, const UsernsFacts& facts) {
  Error error{ErrorCode::kUnavailable, cause.sys_errno,
              "cannot map the sandbox's user: " + cause.message};
  if (facts.root) {
    error.fixes = {"check that the configured host uid/gid exist as numbers and are not 0"};
  } else {
    UsernsHint hint = ExplainUserns(facts);
    error.message += ". " + hint.why;
    error.fixes = std::move(hint.fixes);
  }
  return error;
}

std::string StepName(const LaunchPlan& plan, const ChildReport& report) {
  if (report.step == ChildStep::kMountOp && report.index < plan.MountOps().size()) {
    const MountOp& op = plan.MountOps()[report.index];
    return op.what + " (" + op.target + ")";
  }
  return FixedStepName(report.step);
}

Error ChildError(const LaunchPlan& plan, const ChildReport& report, const UsernsFacts& facts) {
  const int err = report.sys_errno;
  Error error{ErrorCode::kUnavailable, err,
              "sandbox set-up failed: could not " + StepName(plan, report) + ": " +
                  ErrnoText(err)};
  if (report.step == ChildStep::kExec && err == ENOENT) {
    error.code = ErrorCode::kNotFound;
    error.message += ". The interpreter " + plan.ExecPath() +
                     " (or its ELF loader) is missing from the rootfs " + plan.Spec().rootfs;
    error.fixes = {"rebuild the rootfs with tools/build-rootfs",
                   "or set MCP_EXEC_PYTHON to an interpreter the rootfs has"};
  } else if (report.step == ChildStep::kMountOp && (err == EPERM || err == EACCES)) {
    // Either the user namespace forbids mounts, or (for a fresh /proc) parts of the host's
    // /proc are mounted over; the report cannot tell which.
    UsernsHint hint = ExplainUserns(facts);
    error.message += ". Mounting inside the sandbox's user namespace was refused: " + hint.why +
                     "; or, for a fresh /proc, parts of the host's /proc are mounted over";
    error.fixes = std::move(hint.fixes);
    for (std::string& fix : HiddenProcFixes()) error.fixes.push_back(std::move(fix));
  } else if (report.step == ChildStep::kMountOp && err == ENOENT) {
    error.message += ". A path the sandbox needs is missing (rootfs " + plan.Spec().rootfs + ")";
  } else if (report.step == ChildStep::kWaitGo) {
    error.message = "sandbox set-up stopped: the supervisor went away before the sandbox started";
  }
  return error;
}

}  // namespace mcpexec::sandbox
