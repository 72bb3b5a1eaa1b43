#include "sandbox/child/zygote_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/child/start_messages.h"
#include "sandbox/child/steps.h"

// Rules for this file: as steps.cc's.
namespace mcpexec::sandbox {
namespace {

using child::Fail;

// The blob's extent, for the offsets in it.
struct Extent {
  unsigned char* base;
  size_t size;

  // `field` holds an offset to `count` objects of `T`: makes it a pointer, or false when they
  // do not fit in the blob. An offset of 0 stays nullptr (0 is the header, never a target).
  template <typename T>
  bool Rebase(T*& field, size_t count) const noexcept {
    const uintptr_t offset = reinterpret_cast<uintptr_t>(field);
    if (offset == 0) return true;
    if (offset % alignof(T) != 0 || offset > size || count > (size - offset) / sizeof(T)) {
      return false;
    }
    field = reinterpret_cast<T*>(base + offset);
    return true;
  }

  // A string: its NUL must be inside the blob.
  bool RebaseString(const char*& field) const noexcept {
    if (!Rebase(field, 1)) return false;
    if (field == nullptr) return true;
    const size_t offset = static_cast<size_t>(reinterpret_cast<const unsigned char*>(field) - base);
    return memchr(field, '\0', size - offset) != nullptr;
  }
};

int WriteFile(const char* path, const char* text) noexcept {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const size_t len = strlen(text);
  const ssize_t n = write(fd, text, len);
  const int saved = errno;
  close(fd);
  errno = saved;
  return n == static_cast<ssize_t>(len) ? 0 : -1;
}

bool IsLayerName(const char* name) noexcept {
  size_t n = 0;
  for (; name[n] != '\0'; ++n) {
    const char ch = name[n];
    if (n == kZygoteLayerNameLen || !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
      return false;
    }
  }
  return n == kZygoteLayerNameLen;
}

// Appends `text` at `at` in `buffer` (of `size` bytes), keeping it NUL-terminated; false when it
// does not fit.
bool Append(char* buffer, size_t& at, size_t size, const char* text) noexcept {
  const size_t len = strlen(text);
  if (len >= size - at) return false;
  memcpy(buffer + at, text, len + 1);
  at += len;
  return true;
}

// "M": this process is in the run's cgroup (it joined, or the supervisor moved it). EOF: the
// supervisor gave up on the run.
void WaitMoved() noexcept {
  char moved;
  const ssize_t n = child::ReadByte(kFdStart, &moved);
  if (n == 0) _exit(0);
  if (n != 1 || moved != kZygoteMoved) {
    if (n == 1) errno = EPROTO;
    Fail(ChildStep::kWaitGo);
  }
}

// glibc's rseq area of this thread (glibc 2.35 and later; weak, so that the extension loads under
// an older one), registered again as glibc registers it: a fork keeps the registration, a
// CLONE_VM child loses it. When that fails, glibc is told so, and reads the CPU by system call.
#pragma weak __rseq_offset
#pragma weak __rseq_size
void RegisterRseqAgain() noexcept {
  if (&__rseq_size == nullptr || &__rseq_offset == nullptr || __rseq_size == 0) return;
  auto* area = reinterpret_cast<struct rseq*>(static_cast<char*>(__builtin_thread_pointer()) +
                                              __rseq_offset);
  area->cpu_id = RSEQ_CPU_ID_UNINITIALIZED;
  const unsigned length = __rseq_size < 32 ? 32u : __rseq_size;
  if (syscall(SYS_rseq, area, length, 0, RSEQ_SIG) != 0) {
    area->cpu_id = RSEQ_CPU_ID_REGISTRATION_FAILED;
  }
}

// The stacks of the run's start: the program's, which it leaves for the first process's once
// that process is gone (its deepest calls are the mount steps'), and the init's until its
// execve. Each has a guard page under it.
constexpr size_t kProgramStackSize = 256 * 1024;
constexpr size_t kInitStackSize = 64 * 1024;
constexpr size_t kStackGuard = 4096;
constexpr size_t kStacksSize = kStackGuard + kProgramStackSize + kStackGuard + kInitStackSize;

// The init's executable (zygote_init.cc) in a run: the zygote's kFdZygoteInit, put where a
// cold init has its go pipe, which a zygote's run has no use for.
constexpr int kFdInitExecutable = kFdGo;

struct RunStart {
  const PlanView* plan;
  const char* const* init_env;
  int locked[2];        // the pipe on which the init says it is locked down
  int first;            // a pidfd of the first process
  char* program_stack;  // its top
  void** resume;        // where the program goes on: EnterZygoteRun's __builtin_setjmp
};

// The run's program, a CLONE_VM child of the init before its execve, on a stack of its own:
// PID 2, which the init reaps (zygote_init.cc). Once the init has executed and locked itself
// down, and the first process is gone, nothing else uses this memory (or its errno): it then
// sets the sandbox up as a cold init does, and jumps back to `resume`, on the first process's
// stack, to return to Python.
int StartProgram(void* arg) noexcept {
  const RunStart& start = *static_cast<const RunStart*>(arg);
  close(start.locked[1]);
  close(kFdInitExecutable);
  char locked;
  const ssize_t n = child::ReadByte(start.locked[0], &locked);
  if (n != 1 || locked != 'L') {
    if (n >= 0) errno = EPROTO;  // the init ended, or said something else
    Fail(ChildStep::kWaitInit);
  }
  close(start.locked[0]);
  pollfd first{start.first, POLLIN, 0};
  while (poll(&first, 1, -1) != 1) {
    if (errno != EINTR) Fail(ChildStep::kWaitInit);
  }
  close(start.first);
  if (getpid() != 2) {
    errno = ESRCH;
    Fail(ChildStep::kWaitInit);
  }
  child::SetUpSandbox(*start.plan);
  child::ReportReady(*start.plan);
  __builtin_longjmp(start.resume, 1);
}

// The run's init: PID 1 of the namespace, a vfork of the first process (CLONE_VM |
// CLONE_VFORK, on a stack of its own). It starts the program while it still shares the
// interpreter's memory, so that the program is its child, then drops its privileges, as a cold
// init does once its set-up is done (its uid in the namespace is not 0: the execve would drop
// its capabilities but not its bounding set), and executes zygote_init.cc, which gives it a
// memory of its own. The program waits for that before it writes anything here, errno
// included: a failure here reports this process's own.
int StartInit(void* arg) noexcept {
  const RunStart& start = *static_cast<const RunStart*>(arg);
  // At the root, which the program's pivot_root then moves to the new one (it moves only the
  // directories that are the old root): not in a directory of the zygote's mounts.
  if (chdir("/") != 0) Fail(ChildStep::kStartInit);
  if (clone(StartProgram, start.program_stack, CLONE_VM | SIGCHLD, arg) < 0) {
    Fail(ChildStep::kStartProgram);
  }
  child::DropPrivileges(start.plan->last_cap);
  if (dup3(start.locked[1], kFdStart, 0) < 0 || fcntl(kFdReport, F_SETFD, 0) != 0) {
    Fail(ChildStep::kStartInit);
  }
  static const char* const argv[] = {"mcp-exec-init", nullptr};
  syscall(SYS_execveat, kFdInitExecutable, "", argv, start.init_env, AT_EMPTY_PATH);
  Fail(ChildStep::kStartInit);
}

}  // namespace

ZygoteRunView* RelocateZygoteRun(void* blob, size_t size) noexcept {
  if (blob == nullptr || reinterpret_cast<uintptr_t>(blob) % alignof(ZygoteRunBlob) != 0 ||
      size < sizeof(ZygoteRunBlob)) {
    return nullptr;
  }
  auto* header = static_cast<ZygoteRunBlob*>(blob);
  if (memcmp(header->magic, kZygoteRunMagic, sizeof kZygoteRunMagic) != 0 ||
      header->size != size) {
    return nullptr;
  }
  const Extent extent{static_cast<unsigned char*>(blob), size};
  ZygoteRunView& run = header->view;
  PlanView& plan = run.plan;
  // What a run does not use must be absent: nothing else is checked or relocated.
  if (plan.agent != nullptr || plan.zygote_module != nullptr || plan.zygote_init != nullptr ||
      plan.exec_path != nullptr || plan.argv != nullptr || plan.envp != nullptr ||
      plan.supervisor_args != nullptr) {
    return nullptr;
  }
  if (!extent.Rebase(plan.mount_ops, plan.mount_op_count) ||
      !extent.Rebase(plan.rlimits, plan.rlimit_count) || !extent.RebaseString(plan.hostname) ||
      !extent.RebaseString(plan.workdir) || !extent.RebaseString(run.uid_map) ||
      !extent.RebaseString(run.gid_map) || !extent.RebaseString(run.init_name) ||
      !extent.RebaseString(run.layers_dir) || !extent.RebaseString(run.layer_target) ||
      plan.hostname == nullptr || plan.workdir == nullptr || run.uid_map == nullptr ||
      run.gid_map == nullptr || run.init_name == nullptr ||
      strlen(plan.hostname) != plan.hostname_len) {
    return nullptr;
  }
  if (plan.mount_op_count > 0 && plan.mount_ops == nullptr) return nullptr;
  if (run.layers_dir != nullptr &&
      (run.layer_target == nullptr || run.layer_at > plan.mount_op_count ||
       plan.mount_op_count + 2 > kZygoteRunMaxMountOps)) {
    return nullptr;
  }
  if (plan.rlimit_count > 0 && plan.rlimits == nullptr) return nullptr;
  for (size_t i = 0; i < plan.mount_op_count; ++i) {
    MountOpView& op = const_cast<MountOpView&>(plan.mount_ops[i]);
    if (!extent.RebaseString(op.source) || !extent.RebaseString(op.target) ||
        !extent.RebaseString(op.fstype) || !extent.RebaseString(op.data) ||
        op.target == nullptr) {
      return nullptr;
    }
  }
  if (plan.seccomp != nullptr) {
    if (!extent.Rebase(plan.seccomp, 1)) return nullptr;
    auto& program = const_cast<sock_fprog&>(*plan.seccomp);
    if (program.len == 0 || !extent.Rebase(program.filter, program.len) ||
        program.filter == nullptr) {
      return nullptr;
    }
  }
  return &run;
}

void EnterZygoteRun(const ZygoteRunView& run, const int (&fds)[5], const int* join,
                    size_t join_count, pid_t zygote, const char* layer,
                    void (*after_fork_in_program)()) noexcept {
  // Into the run's cgroup before anything else, so that all it uses is the run's; a failure is
  // reported once the report socket is in place.
  const int join_errno = child::JoinCgroup(join, join_count);
  // The descriptors first, so that a failure is reported on the run's report socket.
  const int sources[kChildFdCount] = {fds[0], fds[1], fds[2], fds[3], kFdZygoteInit, fds[4]};
  child::SetupFds(sources);
  if (join_errno != 0) {
    errno = join_errno;
    Fail(ChildStep::kJoinCgroup);
  }
  // The zygote ignores SIGCHLD, so that the kernel reaps its forks: the run's init must not
  // inherit that, or its program would be reaped unreported, and neither may the program's own
  // children. (The program's Python sets its own table to match, warm_agent.cc.)
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  if (sigaction(SIGCHLD, &dfl, nullptr) != 0) Fail(ChildStep::kSignals);
  // A layer's two steps go into a copy of the run's mount steps on this stack, which the run's
  // init shares and its program inherits.
  PlanView plan = run.plan;
  MountOpView ops[kZygoteRunMaxMountOps];
  char source[256];
  if (layer != nullptr) {
    size_t at = 0;
    if (run.layers_dir == nullptr || !IsLayerName(layer) ||
        !Append(source, at, sizeof source, run.layers_dir) ||
        !Append(source, at, sizeof source, "/") || !Append(source, at, sizeof source, layer) ||
        !Append(source, at, sizeof source, "/site")) {
      errno = EINVAL;
      Fail(ChildStep::kMountOp, static_cast<uint32_t>(run.layer_at));
    }
    const size_t before = run.layer_at;
    memcpy(ops, run.plan.mount_ops, before * sizeof ops[0]);
    ops[before] = MountOpView{MountOpKind::kMount, false, source, run.layer_target, nullptr,
                              MS_BIND, nullptr, 0};
    ops[before + 1] = MountOpView{MountOpKind::kMount, false, nullptr, run.layer_target,
                                  nullptr, run.layer_remount_flags, nullptr, 0};
    memcpy(ops + before + 2, run.plan.mount_ops + before,
           (run.plan.mount_op_count - before) * sizeof ops[0]);
    plan.mount_ops = ops;
    plan.mount_op_count = run.plan.mount_op_count + 2;
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Fail(ChildStep::kDeathSignal);
  if (getppid() != zygote) _exit(0);  // the zygote died before the death signal was armed
  child::SendOwnPidfd(kFdStart, kZygoteForked, ChildStep::kSendPidfd);
  WaitMoved();
  if (unshare(static_cast<int>(run.namespaces)) != 0) Fail(ChildStep::kUserNamespace);
  if (WriteFile("/proc/self/setgroups", "deny") != 0 ||
      WriteFile("/proc/self/gid_map", run.gid_map) != 0 ||
      WriteFile("/proc/self/uid_map", run.uid_map) != 0) {
    Fail(ChildStep::kIdMaps);
  }
  // The run's init is PID 1 of the new PID namespace: a small executable (zygote_init.cc),
  // started by vfork and execve, so that it holds no copy of the interpreter. (A time namespace
  // would not do: a CLONE_VM child stays in its parent's.) The program is this memory: a
  // CLONE_VM child of the init, PID 2, which goes on alone once the init has executed and this
  // process has ended. So a run copies the zygote's page tables once, at its fork, and only its
  // program's exit unmaps them. The init dies with the zygote, whose PID namespace holds its own.
  void* const stacks = mmap(nullptr, kStacksSize, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  char* const base = static_cast<char*>(stacks);
  if (stacks == MAP_FAILED || mprotect(base, kStackGuard, PROT_NONE) != 0 ||
      mprotect(base + kStackGuard + kProgramStackSize, kStackGuard, PROT_NONE) != 0) {
    Fail(ChildStep::kForkInit);
  }
  const char* const init_env[] = {run.init_name, nullptr};
  void* resume[5];
  RunStart start{&plan, init_env, {-1, -1}, -1, base + kStackGuard + kProgramStackSize, resume};
  if (pipe2(start.locked, O_CLOEXEC) != 0) Fail(ChildStep::kForkInit);
  start.first = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (start.first < 0) Fail(ChildStep::kForkInit);
  // The program returns to Python from this frame, as it is now, with every frame above it back
  // to the interpreter's (a jump, not a return, since it starts on a stack of its own).
  // What a CLONE_VM child does not keep: the alternate signal stack (faulthandler's), and its
  // thread's rseq registration, which glibc still believes in (sched_getcpu reads the CPU from
  // it).
  stack_t altstack{};
  sigaltstack(nullptr, &altstack);
  if (__builtin_setjmp(resume) != 0) {
    munmap(stacks, kStacksSize);  // the start's: no mapping of the set-up is left over
    if (!(altstack.ss_flags & SS_DISABLE)) {
      altstack.ss_flags = 0;
      sigaltstack(&altstack, nullptr);
    }
    RegisterRseqAgain();
    after_fork_in_program();
    // An interpreter that execve() started is dumpable: its /proc/self is its own to write.
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) Fail(ChildStep::kDumpable);
    child::ApplyProgramLimits(plan);
    close(kFdReport);
    return;
  }
  // On its exit the kernel would clear glibc's thread id of this process, in memory the program
  // goes on using.
  syscall(SYS_set_tid_address, nullptr);
  int init = -1;
  if (clone(StartInit, base + kStacksSize, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &start,
            &init) < 0) {
    Fail(ChildStep::kForkInit);
  }
  child::SendPidfd(kFdStart, kZygoteInit, init, ChildStep::kSendPidfd);
  _exit(0);
}

}  // namespace mcpexec::sandbox
