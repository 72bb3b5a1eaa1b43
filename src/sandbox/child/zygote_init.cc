// The init of a run forked from the zygote: a small static executable that EnterZygoteRun
// (zygote_run.h) starts from a sealed memfd as the run's PID 1, so that the init holds no copy
// of the zygote's interpreter. The program takes the first process's copy instead, and a run
// copies the interpreter's page tables once, not twice (docs/engine.md, "What a fork costs").
//
// Started with: /proc/1/cmdline "mcp-exec-init", as a cold init's; envp[0] the name its
// /proc/1/comm shows; no capability, an empty bounding set and no_new_privs (dropped before
// the execve, DropPrivileges); its working directory the run's root. Descriptors: 3, the run's
// report socket; 5, a pipe on which it says "L" once it is locked down, which the program waits
// for before it does anything (until then this process is dumpable, as every process is right
// after execve). The program is its child, PID 2 of the namespace: started before the execve,
// as its first child, which the program checks.
//
// Rules: as steps.cc's. Nothing here is the caller's: the program cannot reach this process's
// memory (non-dumpable, no ptrace of PID 1 from inside) or signal it (PID 1 ignores signals it
// has no handler for).
#include <sys/prctl.h>
#include <unistd.h>

#include "sandbox/child/plan_view.h"
#include "sandbox/child/steps.h"

namespace {

constexpr int kFdLocked = mcpexec::sandbox::kFdStart;
constexpr pid_t kProgram = 2;

}  // namespace

int main(int, char**, char** envp) {
  using namespace mcpexec::sandbox;
  // First: until this, /proc/1/mem is open to a process of the same uid.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) child::Fail(ChildStep::kNotDumpable);
  if (envp[0] != nullptr) prctl(PR_SET_NAME, envp[0], 0, 0, 0);
  child::ResetSignals();
  // A program that ended before it read this is reaped below, as any other.
  const char locked = 'L';
  (void)!write(kFdLocked, &locked, 1);
  close(kFdLocked);
  close(kFdStdin);
  close(kFdStdout);
  close(kFdStderr);
  child::Reap(kProgram);
}
