#include "sandbox/child/zygote_run.h"

#include <fcntl.h>
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

// "M": the supervisor has put this process in the run's cgroup. EOF: it gave up on the run.
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

// The init's stack, and a guard page under it. Its deepest calls are the mount steps'.
constexpr size_t kInitStackSize = 256 * 1024;
constexpr size_t kInitStackGuard = 4096;

struct InitStart {
  const ZygoteRunView* run;
  const PlanView* plan;
  void** resume;  // where the program goes on: EnterZygoteRun's __builtin_setjmp
};

// The run's init, in the memory of the process that cloned it: sets the sandbox up as a cold
// init, forks the program, which jumps back to `resume`, and reaps.
int RunInit(void* arg) noexcept {
  const InitStart& start = *static_cast<const InitStart*>(arg);
  const PlanView& plan = *start.plan;
  child::SetUpSandbox(plan);
  child::SendOwnPidfd(kFdStart, kZygoteInit, ChildStep::kSendPidfd);
  child::ReportReady(plan);
  const long program = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (program < 0) Fail(ChildStep::kStartProgram);
  if (program == 0) __builtin_longjmp(start.resume, 1);
  // As a cold init: /proc/1/cmdline and /proc/1/comm say what it is, and signals from inside
  // the namespace reach PID 1 only through a handler.
  child::HideSupervisorArgs(plan);
  prctl(PR_SET_NAME, start.run->init_name, 0, 0, 0);
  child::ResetSignals();
  close(kFdStdin);
  close(kFdStdout);
  close(kFdStderr);
  close(kFdStart);
  child::Reap(static_cast<pid_t>(program));
  return 0;
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
  if (plan.agent != nullptr || plan.zygote_module != nullptr || plan.exec_path != nullptr ||
      plan.argv != nullptr || plan.envp != nullptr || plan.supervisor_args != nullptr) {
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

void EnterZygoteRun(const ZygoteRunView& run, const int (&fds)[5], pid_t zygote,
                    const char* layer, void (*after_fork_in_program)()) noexcept {
  // The descriptors first, so that a failure is reported on the run's report socket.
  const int sources[kChildFdCount] = {fds[0], fds[1], fds[2], fds[3], -1, fds[4]};
  child::SetupFds(sources);
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
  // The run's init is PID 1 of the new PID namespace. (A time namespace would not do: a CLONE_VM
  // child stays in its parent's.) It shares this process's memory
  // (CLONE_VM) on a stack of its own, instead of taking a copy of the interpreter's page tables
  // that its exit would unmap again: this process ends at once, so that the memory is the init's
  // alone and the init the only process of the run outside its program. The init dies with the
  // zygote, whose PID namespace holds its own.
  const size_t stack_size = kInitStackSize + kInitStackGuard;
  void* const stack = mmap(nullptr, stack_size, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED || mprotect(stack, kInitStackGuard, PROT_NONE) != 0) {
    Fail(ChildStep::kForkInit);  // the init's start, its stack included
  }
  // The init's fork of the program is a copy of this memory, in which this frame and every
  // frame above it, back to the interpreter's, are as they are now: the program jumps back here
  // to return to Python (a jump, not a return, since it starts on the init's stack).
  // What a CLONE_VM child does not keep, and so neither does its fork, the program: the
  // alternate signal stack (faulthandler's), and its thread's rseq registration, which glibc
  // still believes in (sched_getcpu reads the CPU from it).
  stack_t altstack{};
  sigaltstack(nullptr, &altstack);
  void* resume[5];
  InitStart start{&run, &plan, resume};
  if (__builtin_setjmp(resume) != 0) {
    munmap(stack, stack_size);  // the init's: no mapping of the program's is left over
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
  // On its exit the kernel would clear glibc's thread id of this process, in memory the init
  // and its program go on using.
  syscall(SYS_set_tid_address, nullptr);
  if (clone(RunInit, static_cast<char*>(stack) + stack_size, CLONE_VM | SIGCHLD, &start) < 0) {
    Fail(ChildStep::kForkInit);
  }
  _exit(0);
}

}  // namespace mcpexec::sandbox
