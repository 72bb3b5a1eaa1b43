#include "sandbox/child/child.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/child/steps.h"

// Rules for this file: as steps.cc's.
namespace mcpexec::sandbox {
namespace {

using child::Fail;

constexpr int kExecFailedExit = 127;

// PDEATHSIG first, then wait for the parent's go byte: if the parent died before the
// PDEATHSIG was in place, its end of the go pipe is closed and read() sees EOF.
void WaitForParent() noexcept {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Fail(ChildStep::kDeathSignal);
  char go;
  const ssize_t n = child::ReadByte(kFdGo, &go);
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

void SetIds(const PlanView& plan) noexcept {
  if (syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0) Fail(ChildStep::kSetgid);
  if (syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) Fail(ChildStep::kSetuid);
}

int WriteAll(int fd, const void* data, size_t len) noexcept {
  for (size_t done = 0; done < len;) {
    const ssize_t w = write(fd, static_cast<const char*>(data) + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    done += static_cast<size_t>(w);
  }
  return 0;
}

// Warm: the interpreter starts on the agent, which removes the file once its preloads are
// imported; the program takes its place.
void WriteAgent(const PlanView& plan) noexcept {
  const int out =
      open(plan.program_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (out < 0) Fail(ChildStep::kWriteAgent);
  if (WriteAll(out, plan.agent, plan.agent_len) != 0) Fail(ChildStep::kWriteAgent);
  if (close(out) != 0) Fail(ChildStep::kWriteAgent);
}

constexpr unsigned kMemfdExec = 0x10;  // MFD_EXEC (linux/memfd.h, 6.3)

// `len` bytes at `bytes` in a sealed memfd named `name`, at descriptor `at`, inherited.
void WriteSealedFile(const char* name, const unsigned char* bytes, size_t len, int at) noexcept {
  // Executable where vm.memfd_noexec makes memfds noexec by default (Linux 6.3 and later, which
  // know MFD_EXEC; an older kernel refuses the flag and makes them executable anyway).
  int fd = static_cast<int>(syscall(SYS_memfd_create, name, MFD_ALLOW_SEALING | kMemfdExec));
  if (fd < 0 && errno == EINVAL) {
    fd = static_cast<int>(syscall(SYS_memfd_create, name, MFD_ALLOW_SEALING));
  }
  if (fd < 0) Fail(ChildStep::kZygoteModule);
  if (WriteAll(fd, bytes, len) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0 ||
      dup3(fd, at, 0) < 0) {
    Fail(ChildStep::kZygoteModule);
  }
  close(fd);
}

// A zygote: the extension its runs are set up with (zygote_run.h), at kFdZygoteModule for the
// agent to load, and their init's executable at kFdZygoteInit. Sealed memfds, since the
// workspace is noexec and the rootfs is not ours.
void WriteZygoteModule(const PlanView& plan) noexcept {
  WriteSealedFile("mcp-exec-zygote", plan.zygote_module, plan.zygote_module_len, kFdZygoteModule);
  WriteSealedFile("mcp-exec-init", plan.zygote_init, plan.zygote_init_len, kFdZygoteInit);
}

// Cold: the supervisor has written /tmp/main.py and sends one byte. EOF: it gave up on this
// sandbox before running anything in it.
void WaitStart() noexcept {
  char go;
  const ssize_t n = child::ReadByte(kFdStart, &go);
  if (n == 0) _exit(0);
  if (n != 1) Fail(ChildStep::kWaitStart);
  close(kFdStart);
}

[[noreturn]] void ExecProgram(const PlanView& plan) noexcept {
  child::ApplyProgramLimits(plan);
  // The agent waits for its program on the start socket, and closes it before running it.
  if (plan.warm && fcntl(kFdStart, F_SETFD, 0) != 0) Fail(ChildStep::kWaitStart);
  execve(plan.exec_path, const_cast<char* const*>(plan.argv),
         const_cast<char* const*>(plan.envp));
  ChildReport report{};
  report.type = ReportType::kFailure;
  report.step = ChildStep::kExec;
  report.sys_errno = errno;
  child::Report(report);
  _exit(kExecFailedExit);
}

}  // namespace

void RunSandboxInit(const PlanView& plan, const ChildFdSources& fds) noexcept {
  // Into the run's cgroup first, so that all it uses is the run's. cgroup v1 only: on v2,
  // clone3 put it there (CLONE_INTO_CGROUP).
  const int join_errno = child::JoinCgroup(fds.join, fds.join_count);
  child::HideSupervisorArgs(plan);
  child::SetupFds(fds.fds);
  child::ResetSignals();
  // The modes of the workspace and its files are the sandbox's, not the caller's umask's.
  umask(022);
  WaitForParent();
  if (join_errno != 0) {
    errno = join_errno;
    Fail(ChildStep::kJoinCgroup);
  }
  // Its cgroups become the root of what the sandbox can see of cgroups.
  if (unshare(CLONE_NEWCGROUP) != 0) Fail(ChildStep::kCgroupNamespace);
  // Ids first: files the set-up creates (the /dev nodes' mount points) must belong to a mapped
  // uid, and leaving a host uid that is not the namespace's root keeps the capabilities.
  SetIds(plan);
  RearmDeathSignal();
  child::SetUpSandbox(plan);
  child::ReportReady(plan);

  if (plan.warm) {
    WriteAgent(plan);
    if (plan.zygote_module != nullptr) WriteZygoteModule(plan);
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
  if (plan.zygote_module != nullptr) {
    close(kFdZygoteModule);
    close(kFdZygoteInit);
  }
  child::Reap(static_cast<pid_t>(pid));
}

}  // namespace mcpexec::sandbox
