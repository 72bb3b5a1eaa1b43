#include "sandbox/child/child.h"

#include "sandbox/child/rights_message.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

// Rules for this file: raw syscalls and signal-safety(7) functions only. Set-id calls go
// through syscall(2) directly because glibc's wrappers broadcast to the threads glibc believes
// exist, and after a raw clone those belong to the parent.
namespace mcpexec::sandbox {
namespace {

constexpr int kSetupFailedExit = 125;
constexpr int kExecFailedExit = 127;

void Report(const ChildReport& report) noexcept {
  ssize_t n;
  do {
    n = write(kFdReport, &report, sizeof report);
  } while (n < 0 && errno == EINTR);
}

[[noreturn]] void Fail(ChildStep step, uint32_t index = 0) noexcept {
  ChildReport report{};
  report.type = ReportType::kFailure;
  report.step = step;
  report.sys_errno = errno;
  report.index = index;
  Report(report);
  _exit(kSetupFailedExit);
}

// The name init shows in /proc/1/cmdline instead of the supervisor's arguments.
constexpr char kInitName[] = "mcp-exec-init";

void HideSupervisorArgs(const PlanView& plan) noexcept {
  if (plan.supervisor_args == nullptr || plan.supervisor_args_len == 0) return;
  memset(plan.supervisor_args, 0, plan.supervisor_args_len);
  if (plan.supervisor_args_len > sizeof kInitName) {
    memcpy(plan.supervisor_args, kInitName, sizeof kInitName);
  }
}

void SetupFds(const ChildFdSources& src) noexcept {
  int moved[kChildFdCount];
  // First lift every source above the fixed range so that no dup2 overwrites a source that is
  // still to be moved.
  for (int i = 0; i < kChildFdCount; ++i) {
    moved[i] = fcntl(src.fds[i], F_DUPFD_CLOEXEC, kChildFdCount);
    if (moved[i] < 0) Fail(ChildStep::kSetupFds);
  }
  for (int i = 0; i < kChildFdCount; ++i) {
    const int flags = i <= kFdStderr ? 0 : O_CLOEXEC;
    if (dup3(moved[i], i, flags) < 0) Fail(ChildStep::kSetupFds);
  }
  if (close_range(kChildFdCount, ~0U, 0) != 0) Fail(ChildStep::kSetupFds);
}

// The parent's signal mask and ignored signals survive both clone and execve.
void ResetSignals() noexcept {
  sigset_t empty;
  sigemptyset(&empty);
  if (sigprocmask(SIG_SETMASK, &empty, nullptr) != 0) Fail(ChildStep::kSignals);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &dfl, nullptr);  // EINVAL for glibc's reserved signals is expected
  }
}

// PDEATHSIG first, then wait for the parent's go byte: if the parent died before the
// PDEATHSIG was in place, its end of the go pipe is closed and read() sees EOF.
void WaitForParent() noexcept {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Fail(ChildStep::kDeathSignal);
  char go;
  ssize_t n;
  do {
    n = read(kFdGo, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) {
    errno = n == 0 ? EPIPE : errno;
    Fail(ChildStep::kWaitGo);
  }
}

// A change of effective ids clears PDEATHSIG (prctl(2)), so it is armed again after SetIds.
// The parent keeps its end of the go pipe open until set-up is over, so a hang-up on it means
// the parent died in between.
void RearmDeathSignal() noexcept {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Fail(ChildStep::kDeathSignal);
  pollfd pfd{kFdGo, POLLIN, 0};
  if (poll(&pfd, 1, 0) != 0) {
    errno = EPIPE;
    Fail(ChildStep::kWaitGo);
  }
  close(kFdGo);
}

int PivotRoot(const char* new_root) noexcept {
  // pivot_root(".", ".") stacks the old root on top of the new one; detaching "." then
  // removes the old root without needing a directory for it (see pivot_root(2) NOTES).
  if (chdir(new_root) != 0) return -1;
  if (syscall(SYS_pivot_root, ".", ".") != 0) return -1;
  if (umount2(".", MNT_DETACH) != 0) return -1;
  return chdir("/");
}

int CopyFile(const char* source, const char* target, mode_t mode) noexcept {
  const int in = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0) return -1;
  const int out = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (out < 0) {
    close(in);
    return -1;
  }
  char buf[8192];
  int result = 0;
  for (;;) {
    const ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      result = static_cast<int>(n);
      break;
    }
    for (ssize_t done = 0; done < n && result == 0;) {
      const ssize_t w = write(out, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) result = -1;
      else done += w;
    }
    if (result != 0) break;
  }
  const int saved = errno;
  close(in);
  if (close(out) != 0 && result == 0) return -1;
  errno = saved;
  return result;
}

int ApplyMountOp(const MountOpView& op) noexcept {
  switch (op.kind) {
    case MountOpKind::kMount:
      return mount(op.source, op.target, op.fstype, op.flags, op.data);
    case MountOpKind::kMkdir:
      return mkdir(op.target, op.mode);
    case MountOpKind::kTouch: {
      const int fd = open(op.target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, op.mode);
      if (fd < 0) return -1;
      close(fd);
      return 0;
    }
    case MountOpKind::kSymlink:
      return symlink(op.source, op.target);
    case MountOpKind::kCopyFile:
      return CopyFile(op.source, op.target, op.mode);
    case MountOpKind::kPivotRoot:
      return PivotRoot(op.target);
  }
  errno = EINVAL;
  return -1;
}

void ApplyMounts(const PlanView& plan) noexcept {
  for (size_t i = 0; i < plan.mount_op_count; ++i) {
    const MountOpView& op = plan.mount_ops[i];
    if (ApplyMountOp(op) != 0 && !(op.optional && errno == ENOENT)) {
      Fail(ChildStep::kMountOp, static_cast<uint32_t>(i));
    }
  }
}

void BringUpLoopback() noexcept {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail(ChildStep::kLoopback);
  struct ifreq ifr{};
  memcpy(ifr.ifr_name, "lo", 3);
  ifr.ifr_flags = IFF_UP | IFF_RUNNING;
  if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) Fail(ChildStep::kLoopback);
  close(fd);
}

void SetIds(const PlanView& plan) noexcept {
  if (plan.clear_groups && syscall(SYS_setgroups, 0, nullptr) != 0) Fail(ChildStep::kSetgroups);
  if (syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0) Fail(ChildStep::kSetgid);
  if (syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) Fail(ChildStep::kSetuid);
}

void DropPrivileges(const PlanView& plan) noexcept {
  for (int cap = 0; cap <= plan.last_cap; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) Fail(ChildStep::kDropBoundingCaps);
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    Fail(ChildStep::kClearAmbientCaps);
  }
  // cap_set_proc() on a cap_t the parent built is one capset(2); it does not allocate.
  if (cap_set_proc(static_cast<cap_t>(plan.empty_caps)) != 0) Fail(ChildStep::kSetCaps);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Fail(ChildStep::kNoNewPrivs);
  // The program runs with the same uid as this init; non-dumpable keeps it from ptracing us
  // or opening our /proc/1/{mem,exe,fd}.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) Fail(ChildStep::kNotDumpable);
}

// The supervisor writes input files into the workspace through this descriptor before the
// program starts, and reads /tmp/outputs through it once every process of the run is gone.
void ReportReady(const PlanView& plan) noexcept {
  const int workspace = open(plan.workdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (workspace < 0) Fail(ChildStep::kReportReady);
  ChildReport ready{};
  ready.type = ReportType::kReady;
  iovec iov{&ready, sizeof ready};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg;
  PrepareRightsMessage(msg, iov, control, sizeof control, &workspace, 1);
  ssize_t n;
  do {
    n = sendmsg(kFdReport, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof ready)) Fail(ChildStep::kReportReady);
  close(workspace);
}

// Warm: the interpreter starts on the agent, which removes the file once its preloads are
// imported; the program takes its place.
void WriteAgent(const PlanView& plan) noexcept {
  const int out =
      open(plan.program_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (out < 0) Fail(ChildStep::kWriteAgent);
  for (size_t done = 0; done < plan.agent_len;) {
    const ssize_t w = write(out, plan.agent + done, plan.agent_len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) Fail(ChildStep::kWriteAgent);
    done += static_cast<size_t>(w);
  }
  if (close(out) != 0) Fail(ChildStep::kWriteAgent);
}

// Cold: the supervisor has written /tmp/main.py and sends one byte. EOF: it gave up on this
// sandbox before running anything in it.
void WaitStart() noexcept {
  char go;
  ssize_t n;
  do {
    n = read(kFdStart, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 0) _exit(0);
  if (n != 1) Fail(ChildStep::kWaitStart);
  close(kFdStart);
}

[[noreturn]] void ExecProgram(const PlanView& plan) noexcept {
  if (setsid() < 0) Fail(ChildStep::kSetsid);
  for (size_t i = 0; i < plan.rlimit_count; ++i) {
    if (setrlimit(plan.rlimits[i].resource, &plan.rlimits[i].limit) != 0) {
      Fail(ChildStep::kRlimit, static_cast<uint32_t>(i));
    }
  }
  if (plan.seccomp != nullptr &&
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, plan.seccomp) != 0) {
    Fail(ChildStep::kSeccomp);
  }
  // The agent waits for its program on the start socket, and closes it before running it.
  if (plan.warm && fcntl(kFdStart, F_SETFD, 0) != 0) Fail(ChildStep::kWaitStart);
  execve(plan.exec_path, const_cast<char* const*>(plan.argv),
         const_cast<char* const*>(plan.envp));
  ChildReport report{};
  report.type = ReportType::kFailure;
  report.step = ChildStep::kExec;
  report.sys_errno = errno;
  Report(report);
  _exit(kExecFailedExit);
}

// PID 1 of the sandbox: reaps every orphan, and ends the sandbox when the program ends. Its
// exit tears down the PID namespace, which kills whatever the program left running.
[[noreturn]] void Reap(pid_t program) noexcept {
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) _exit(kSetupFailedExit);
    if (pid == program) {
      ChildReport report{};
      report.type = ReportType::kExit;
      report.wait_status = status;
      struct rusage usage{};
      if (getrusage(RUSAGE_CHILDREN, &usage) == 0) {
        report.children_maxrss_kib = usage.ru_maxrss;
        report.children_cpu_us =
            (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1'000'000LL +
            usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
      }
      Report(report);
      _exit(0);
    }
  }
}

}  // namespace

void RunSandboxInit(const PlanView& plan, const ChildFdSources& fds) noexcept {
  HideSupervisorArgs(plan);
  SetupFds(fds);
  ResetSignals();
  // The modes of the workspace and its files are the sandbox's, not the caller's umask's.
  umask(022);
  WaitForParent();
  // The parent has put this process in its cgroups before the go byte: they become the root
  // of what the sandbox can see of cgroups.
  if (unshare(CLONE_NEWCGROUP) != 0) Fail(ChildStep::kCgroupNamespace);
  // Ids first: files the set-up creates (the /dev nodes' mount points) must belong to a mapped
  // uid, and leaving a host uid that is not the namespace's root keeps the capabilities.
  SetIds(plan);
  RearmDeathSignal();
  ApplyMounts(plan);
  if (sethostname(plan.hostname, plan.hostname_len) != 0) Fail(ChildStep::kHostname);
  BringUpLoopback();
  if (chdir(plan.workdir) != 0) Fail(ChildStep::kChdir);
  DropPrivileges(plan);

  ReportReady(plan);

  if (plan.warm) {
    WriteAgent(plan);
  } else {
    WaitStart();
  }
  // A raw clone rather than fork(): fork() runs atfork handlers, which take locks.
  const long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) Fail(ChildStep::kStartProgram);
  if (pid == 0) ExecProgram(plan);

  // The program's descendants hold the stdio pipes; PID 1 needs none of them.
  close(kFdStdin);
  close(kFdStdout);
  close(kFdStderr);
  if (plan.warm) close(kFdStart);
  Reap(static_cast<pid_t>(pid));
}

}  // namespace mcpexec::sandbox
