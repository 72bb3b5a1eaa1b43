// The only code that runs between clone and execve. It allocates nothing, throws nothing and
// logs nothing: the parent may be multi-threaded, and any lock another thread held at clone
// time stays held forever in the child. Failures go to the parent as a ChildReport.
#pragma once

#include "sandbox/child/plan_view.h"

namespace mcpexec::sandbox {

// Descriptors the parent created for this child, in the parent's numbering. The child moves
// them to the fixed ChildFd numbers and closes everything else. On cgroup v1 it first joins the
// run's cgroup through `join` (child::JoinCgroup), its `tasks` file in each hierarchy.
struct ChildFdSources {
  int fds[kChildFdCount];
  int join[kMaxCgroupJoinFds];
  size_t join_count;
};

// Entry point of the sandbox's PID 1, called in the clone child. Sets up the sandbox, reports
// ready, starts the interpreter as PID 2 (cold: once the supervisor says the program is in
// place; warm: at once, as the agent), reaps, reports the program's wait status and exits.
// Never returns.
[[noreturn]] void RunSandboxInit(const PlanView& plan, const ChildFdSources& fds) noexcept;

}  // namespace mcpexec::sandbox
