#include "sandbox/child/steps.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/child/rights_message.h"

// Rules for this file: raw syscalls and signal-safety(7) functions only. Set-id calls go
// through syscall(2) directly because glibc's wrappers broadcast to the threads glibc believes
// exist, and after a raw clone those belong to the parent.
namespace mcpexec::sandbox::child {
namespace {

// The name init shows in /proc/1/cmdline instead of the supervisor's arguments.
constexpr char kInitName[] = "mcp-exec-init";

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

// Sends `len` bytes with the descriptor `passed` (SCM_RIGHTS) on the socket `fd`.
ssize_t SendWithDescriptor(int fd, const void* data, size_t len, int passed) noexcept {
  iovec iov{const_cast<void*>(data), len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg;
  PrepareRightsMessage(msg, iov, control, sizeof control, &passed, 1);
  ssize_t n;
  do {
    n = sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

ssize_t ReadByte(int fd, char* byte) noexcept {
  ssize_t n;
  do {
    n = read(fd, byte, 1);
  } while (n < 0 && errno == EINTR);
  return n;
}

void Report(const ChildReport& report) noexcept {
  ssize_t n;
  do {
    n = write(kFdReport, &report, sizeof report);
  } while (n < 0 && errno == EINTR);
}

void Fail(ChildStep step, uint32_t index) noexcept {
  ChildReport report{};
  report.type = ReportType::kFailure;
  report.step = step;
  report.sys_errno = errno;
  report.index = index;
  Report(report);
  _exit(kSetupFailedExit);
}

void HideSupervisorArgs(const PlanView& plan) noexcept {
  if (plan.supervisor_args == nullptr || plan.supervisor_args_len == 0) return;
  memset(plan.supervisor_args, 0, plan.supervisor_args_len);
  if (plan.supervisor_args_len > sizeof kInitName) {
    memcpy(plan.supervisor_args, kInitName, sizeof kInitName);
  }
}

void SetupFds(const int (&sources)[kChildFdCount]) noexcept {
  int moved[kChildFdCount];
  // First lift every source above the fixed range so that no dup2 overwrites a source that is
  // still to be moved.
  for (int i = 0; i < kChildFdCount; ++i) {
    moved[i] = sources[i] < 0 ? -1 : fcntl(sources[i], F_DUPFD_CLOEXEC, kChildFdCount);
    if (sources[i] >= 0 && moved[i] < 0) Fail(ChildStep::kSetupFds);
  }
  for (int i = 0; i < kChildFdCount; ++i) {
    if (moved[i] < 0) {
      close(i);
      continue;
    }
    const int flags = i <= kFdStderr ? 0 : O_CLOEXEC;
    if (dup3(moved[i], i, flags) < 0) Fail(ChildStep::kSetupFds);
  }
  if (close_range(kChildFdCount, ~0U, 0) != 0) Fail(ChildStep::kSetupFds);
}

int JoinCgroup(const int* join, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) {
    struct statfs fs{};
    if (fstatfs(join[i], &fs) != 0) return errno;
    if (fs.f_type != CGROUP_SUPER_MAGIC) return EBADF;  // not a cgroup's file: it moves nothing
    if (write(join[i], "0", 1) != 1) return errno != 0 ? errno : EIO;
  }
  return 0;
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

void SendPidfd(int fd, char message, int pidfd, ChildStep step) noexcept {
  if (SendWithDescriptor(fd, &message, 1, pidfd) != 1) Fail(step);
}

void SendOwnPidfd(int fd, char message, ChildStep step) noexcept {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd < 0) Fail(step);
  SendPidfd(fd, message, pidfd, step);
  close(pidfd);
}

void DropPrivileges(int last_cap) noexcept {
  for (int cap = 0; cap <= last_cap; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) Fail(ChildStep::kDropBoundingCaps);
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    Fail(ChildStep::kClearAmbientCaps);
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capset, &header, none) != 0) Fail(ChildStep::kSetCaps);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Fail(ChildStep::kNoNewPrivs);
  // The program runs with the same uid as this init; non-dumpable keeps it from ptracing us
  // or opening our /proc/1/{mem,exe,fd}.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) Fail(ChildStep::kNotDumpable);
}

void SetUpSandbox(const PlanView& plan) noexcept {
  ApplyMounts(plan);
  if (sethostname(plan.hostname, plan.hostname_len) != 0) Fail(ChildStep::kHostname);
  BringUpLoopback();
  if (chdir(plan.workdir) != 0) Fail(ChildStep::kChdir);
  DropPrivileges(plan.last_cap);
}

// The supervisor writes input files into the workspace through this descriptor before the
// program starts, and reads /tmp/outputs through it once every process of the run is gone.
void ReportReady(const PlanView& plan) noexcept {
  const int workspace = open(plan.workdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (workspace < 0) Fail(ChildStep::kReportReady);
  ChildReport ready{};
  ready.type = ReportType::kReady;
  if (SendWithDescriptor(kFdReport, &ready, sizeof ready, workspace) !=
      static_cast<ssize_t>(sizeof ready)) {
    Fail(ChildStep::kReportReady);
  }
  close(workspace);
}

void ApplyProgramLimits(const PlanView& plan) noexcept {
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
}

void Reap(pid_t program) noexcept {
  int program_status = 0;
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) _exit(kSetupFailedExit);
    if (pid == program) {
      program_status = status;
      break;
    }
  }
  // The run ends with its program: every other process of the namespace is killed and reaped
  // before the report, so that the supervisor can answer on it while this process is still
  // exiting. kill(-1) from PID 1 reaches every process of its PID namespace but itself; one
  // forking meanwhile either is reached or has its fork fail on the pending signal. Orphans are
  // reparented here before their parent is reaped, so ECHILD means none is left.
  kill(-1, SIGKILL);
  for (;;) {
    const pid_t pid = waitpid(-1, nullptr, __WALL);
    if (pid > 0 || (pid < 0 && errno == EINTR)) continue;
    if (errno != ECHILD) _exit(kSetupFailedExit);
    break;
  }
  ChildReport report{};
  report.type = ReportType::kExit;
  report.wait_status = program_status;
  struct rusage usage{};
  if (getrusage(RUSAGE_CHILDREN, &usage) == 0) {
    report.children_maxrss_kib = usage.ru_maxrss;
    report.children_cpu_us = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1'000'000LL +
                             usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
  }
  Report(report);
  _exit(0);
}

}  // namespace mcpexec::sandbox::child
