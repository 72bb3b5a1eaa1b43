#include "sandbox/sandbox.h"

#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/sys.h"
#include "sandbox/child/child.h"
#include "sandbox/sandbox_messages.h"
#include "sandbox/setup_error.h"
#include "sandbox/warm_agent.h"

namespace mcpexec::sandbox {
namespace {

// The cgroup namespace is made by the child once it is in its cgroups (RunSandboxInit), so
// that its root is the run's cgroup on cgroup v1 too, where joining comes after clone.
constexpr uint64_t kNamespaceFlags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                     CLONE_NEWIPC | CLONE_NEWUTS;

Result<void> WriteIdMaps(pid_t pid, const LaunchPlan& plan) {
  const std::string proc = "/proc/" + std::to_string(pid);
  // Denied as root too. An unprivileged writer may map its own gid only after denying
  // setgroups(2) (user_namespaces(7)), which a zygote's run is: its namespace is made by a
  // process without capabilities, and every sandbox is to look the same from inside.
  MCPEXEC_RETURN_IF_ERROR(WriteProcFile(proc + "/setgroups", "deny"));
  MCPEXEC_RETURN_IF_ERROR(WriteProcFile(proc + "/gid_map", plan.GidMap()));
  return WriteProcFile(proc + "/uid_map", plan.UidMap());
}

// Init's reason for the end of a warm interpreter that never said ready: a report of a failure
// to start it, or its exit status.
Error AgentLost(const LaunchPlan& plan, int report_fd) {
  UniqueFd unused;
  auto report = ReadReport(report_fd, std::chrono::steady_clock::now() + std::chrono::seconds(2),
                           unused);
  if (report.ok() && *report && (*report)->type == ReportType::kFailure) {
    return ChildError(plan, **report, ReadUsernsFacts());
  }
  std::string how = "without a word";
  if (report.ok() && *report && (*report)->type == ReportType::kExit) {
    RunResult died;
    ApplyWaitStatus((*report)->wait_status, died);
    how = died.signal ? "killed by " + SignalName(*died.signal)
                      : "with exit status " + std::to_string(died.exit_code);
  }
  return MakeError(ErrorCode::kUnavailable,
                   "the warm interpreter ended " + how + " before its preloads (MCP_EXEC_PRELOAD) "
                   "were imported; a module that needs more memory or processes than the limits "
                   "allow, or an interpreter that cannot run the agent, ends it so");
}

}  // namespace

void Sandbox::Hold(UniqueFd workspace, Pipe& report, Pipe& start, Pipe& in, Pipe& out,
                   Pipe& err) {
  workspace_ = std::move(workspace);
  report_ = std::move(report.read);
  start_ = std::move(start.read);
  stdin_ = std::move(in.write);
  stdout_ = std::move(out.read);
  stderr_ = std::move(err.read);
}

Result<void> Sandbox::WaitForAgent(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return MakeError(ErrorCode::kDeadlineExceeded,
                       "the warm interpreter did not import its preloads (MCP_EXEC_PRELOAD) in "
                       "time");
    }
    pollfd pfd{start_.Get(), POLLIN, 0};
    const int n = poll(&pfd, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(ErrorCode::kInternal, "poll(start socket)");
    if (n == 0) continue;
    char message[4096];
    const ssize_t got = recv(start_.Get(), message, sizeof message, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got == 1 && message[0] == kAgentReady) return Ok();
    if (got > 1 && message[0] == kAgentFailed) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "a preload (MCP_EXEC_PRELOAD) failed: " +
                           std::string(message + 1, static_cast<size_t>(got - 1)));
    }
    if (got <= 0) return AgentLost(*plan_, report_.Get());
    return MakeError(ErrorCode::kInternal, "an unexpected message from the warm interpreter");
  }
}

Result<Sandbox> Sandbox::Create(std::shared_ptr<const LaunchPlan> plan,
                                std::chrono::milliseconds setup_timeout) {
  MCPEXEC_ASSIGN_OR_RETURN(Pipe report, MakeSeqpacketPair());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe go, MakePipe());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe start, MakeSeqpacketPair());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe in, MakePipe());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  ChildFdSources sources{{in.read.Get(), out.write.Get(), err.write.Get(), report.write.Get(),
                          go.read.Get(), start.write.Get()},
                         {},
                         0};
  const PlanView& view = plan->View();
  MCPEXEC_ASSIGN_OR_RETURN(std::unique_ptr<limits::RunCgroup> cgroup, plan->Limits().CreateRun());
  // cgroup v1: the child moves itself in (RunCgroup::JoinFds says why).
  std::vector<UniqueFd> join;
  if (cgroup && cgroup->CloneIntoFd() < 0) {
    auto opened = cgroup->JoinFds();
    if (!opened.ok()) {
      return std::move(opened).error().WithContext("put the sandbox in its cgroup");
    }
    join = std::move(*opened);
    if (join.empty() || join.size() > kMaxCgroupJoinFds) {
      return MakeError(ErrorCode::kInternal,
                       "a run cgroup with neither a directory to clone into nor 1 to " +
                           std::to_string(kMaxCgroupJoinFds) + " files to join through");
    }
    for (const UniqueFd& fd : join) sources.join[sources.join_count++] = fd.Get();
  }

  int pidfd = -1;
  clone_args args{};
  // CLONE_CLEAR_SIGHAND: the supervisor's handlers never run in the child, even before its
  // ResetSignals (a v1 join may wait before it).
  args.flags = kNamespaceFlags | CLONE_PIDFD | CLONE_CLEAR_SIGHAND;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (cgroup && cgroup->CloneIntoFd() >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup->CloneIntoFd());
  }
  const long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) RunSandboxInit(view, sources);
  if (pid < 0) {
    const int clone_errno = errno;  // ReadUsernsFacts() opens files and may change errno
    return CloneError(clone_errno, ReadUsernsFacts());
  }

  Sandbox sandbox;
  sandbox.cgroup_ = std::move(cgroup);
  sandbox.init_ = ChildProcess(static_cast<pid_t>(pid), UniqueFd(pidfd));
  sandbox.plan_ = std::move(plan);
  // Close the child's ends here so that EOF means the sandbox is gone.
  report.write.Reset();
  go.read.Reset();
  start.write.Reset();
  in.read.Reset();
  out.write.Reset();
  err.write.Reset();

  join.clear();
  if (auto mapped = WriteIdMaps(static_cast<pid_t>(pid), *sandbox.plan_); !mapped.ok()) {
    return IdMapError(mapped.error(), ReadUsernsFacts());
  }
  // `go.write` stays open until Create() returns: the child takes a hang-up on it as the
  // parent's death while it re-arms PDEATHSIG.
  MCPEXEC_RETURN_IF_ERROR(WriteAll(go.write.Get(), "g"));

  const auto deadline = std::chrono::steady_clock::now() + setup_timeout;
  UniqueFd workspace;
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<ChildReport> first,
                           ReadReport(report.read.Get(), deadline, workspace));
  if (first && first->type == ReportType::kReady) {
    if (!workspace.Valid()) {
      return MakeError(ErrorCode::kInternal, "the sandbox reported ready without its workspace");
    }
    sandbox.Hold(std::move(workspace), report, start, in, out, err);
    if (view.warm) {
      MCPEXEC_RETURN_IF_ERROR(sandbox.WaitForAgent(deadline));
      // The preloads are the sandbox's, not the program's: the limits apply on top of them.
      if (sandbox.cgroup_) MCPEXEC_RETURN_IF_ERROR(sandbox.cgroup_->ExcludeCurrentUsage());
    }
    return sandbox;
  }
  if (first && first->type == ReportType::kFailure) {
    (void)sandbox.init_.Wait();
    return ChildError(*sandbox.plan_, *first, ReadUsernsFacts());
  }
  auto status = sandbox.init_.Wait();
  return MakeError(ErrorCode::kInternal,
                   "the sandbox's init ended during set-up without a report (wait status " +
                       (status.ok() ? std::to_string(*status) : status.error().message) + ")");
}

}  // namespace mcpexec::sandbox
