#include "sandbox/zygote.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/sys.h"
#include "sandbox/child/zygote_run.h"
#include "sandbox/sandbox_messages.h"
#include "sandbox/setup_error.h"
#include "sandbox/warm_agent.h"

namespace mcpexec::sandbox {
namespace {

// Whatever the zygote said instead of the next step of a fork. When the run ended without a
// word on the start socket, its set-up failed at a step it reported as a cold init does.
Error ForkError(const LaunchPlan& plan, int report, const SandboxMessage& message,
                const char* step) {
  if (message.data.empty()) {
    UniqueFd unused;
    auto failure =
        ReadReport(report, std::chrono::steady_clock::now() + std::chrono::seconds(1), unused);
    if (failure.ok() && *failure && (*failure)->type == ReportType::kFailure) {
      return ChildError(plan, **failure, ReadUsernsFacts());
    }
    return MakeError(ErrorCode::kUnavailable,
                     std::string("the zygote, or the run it forked, ended before ") + step);
  }
  if (message.data[0] == kAgentFailed) {
    return MakeError(ErrorCode::kUnavailable,
                     "a run forked from the zygote could not be set up: " + message.data.substr(1));
  }
  return MakeError(ErrorCode::kInternal,
                   std::string("an unexpected message from the zygote before ") + step);
}

// Kills the run's first process if the fork fails before it has ended by itself: its parent,
// the zygote, reaps it.
struct FirstProcess {
  UniqueFd pidfd;
  ~FirstProcess() {
    if (pidfd.Valid()) syscall(SYS_pidfd_send_signal, pidfd.Get(), SIGKILL, nullptr, 0);
  }
};

// What /proc says of a process that should be gone, for the error when it is not: its state
// (Z: it ended and the zygote did not wait for it) and, when still running, where it waits.
std::string StateOf(pid_t pid) {
  auto stat = ReadProcStat(std::to_string(pid));
  if (!stat.ok() || stat->size() < 3 || (*stat)[2].empty()) return "its state cannot be read";
  const char state = (*stat)[2][0];
  if (state == 'Z') return "it ended and the zygote did not wait for it";
  auto wchan = ReadFile("/proc/" + std::to_string(pid) + "/wchan");
  const bool waits = wchan.ok() && !wchan->empty() && *wchan != "0";
  return std::string("it has not ended: state ") + state + (waits ? ", waiting in " + *wchan : "");
}

Result<void> WaitUntilReaped(int pidfd, pid_t pid, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    if (syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) != 0 && errno == ESRCH) return Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return MakeError(ErrorCode::kDeadlineExceeded,
                       "the zygote did not reap a run's first process in time (" + StateOf(pid) +
                           ")");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

Result<std::shared_ptr<Zygote>> Zygote::Start(std::shared_ptr<const LaunchPlan> plan,
                                              std::chrono::milliseconds timeout) {
  if (!plan->Spec().zygote) {
    return MakeError(ErrorCode::kInvalidArgument, "not a zygote plan");
  }
  MCPEXEC_ASSIGN_OR_RETURN(Sandbox box, Sandbox::Create(std::move(plan), timeout));
  return std::shared_ptr<Zygote>(new Zygote(std::move(box)));
}

uint64_t Zygote::Forks() const {
  std::lock_guard lock(mutex_);
  return forks_;
}

Result<Sandbox> Zygote::Fork(std::chrono::milliseconds timeout, std::string_view layer) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const LaunchPlan& plan = *box_.plan_;
  if (!layer.empty() && !HasLayers()) {
    return MakeError(ErrorCode::kInvalidArgument, "this zygote has no package layers");
  }
  MCPEXEC_ASSIGN_OR_RETURN(Pipe report, MakeSeqpacketPair());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe start, MakeSeqpacketPair());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe in, MakePipe());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  MCPEXEC_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  Sandbox sandbox;
  sandbox.zygote_ = shared_from_this();
  sandbox.plan_ = box_.plan_;
  MCPEXEC_ASSIGN_OR_RETURN(sandbox.cgroup_, plan.Limits().CreateRun());
  std::vector<UniqueFd> join;
  if (sandbox.cgroup_) {
    MCPEXEC_ASSIGN_OR_RETURN(join, sandbox.cgroup_->JoinFds());
  }
  if (join.size() > kMaxCgroupJoinFds) {
    return MakeError(ErrorCode::kInternal, "more cgroup hierarchies than a zygote's fork joins");
  }
  {
    std::lock_guard lock(mutex_);
    // The run's descriptors, in the order the agent puts them at 0, 1, 2, 3 and 5, then those
    // the fork joins the run's cgroup through.
    std::vector<int> fds = {in.read.Get(), out.write.Get(), err.write.Get(), report.write.Get(),
                            start.write.Get()};
    for (const UniqueFd& fd : join) fds.push_back(fd.Get());
    const std::string message = std::string(1, kZygoteFork) + std::string(layer);
    MCPEXEC_RETURN_IF_ERROR(
        SendWithDescriptors(box_.start_.Get(), message, fds, "the zygote has ended"));
    ++forks_;
  }
  const bool joins = !join.empty();
  join.clear();  // the fork holds them now
  // Only the run holds these ends now, so that EOF means it is gone.
  report.write.Reset();
  start.write.Reset();
  in.read.Reset();
  out.write.Reset();
  err.write.Reset();

  MCPEXEC_ASSIGN_OR_RETURN(SandboxMessage forked,
                           ReceiveMessage(start.read.Get(), deadline, "zygote's fork"));
  if (forked.data != std::string(1, kZygoteForked) || !forked.passed.Valid()) {
    return ForkError(plan, report.read.Get(), forked, "the fork");
  }
  FirstProcess first{std::move(forked.passed)};
  MCPEXEC_ASSIGN_OR_RETURN(const pid_t first_pid, PidOfPidfd(first.pidfd.Get()));
  if (sandbox.cgroup_ && !joins) {
    if (auto moved = sandbox.cgroup_->Move(first_pid); !moved.ok()) {
      return std::move(moved).error().WithContext("put a zygote's run in its cgroup");
    }
  }
  const char moved = kZygoteMoved;
  if (send(start.read.Get(), &moved, 1, MSG_NOSIGNAL) != 1) {
    return Errno(ErrorCode::kUnavailable, "send(zygote's fork)");
  }

  MCPEXEC_ASSIGN_OR_RETURN(SandboxMessage init,
                           ReceiveMessage(start.read.Get(), deadline, "zygote's fork"));
  if (init.data != std::string(1, kZygoteInit) || !init.passed.Valid()) {
    return ForkError(plan, report.read.Get(), init, "the run's init started");
  }
  MCPEXEC_ASSIGN_OR_RETURN(sandbox.init_, ChildProcess::Adopt(std::move(init.passed)));

  UniqueFd workspace;
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<ChildReport> ready,
                           ReadReport(report.read.Get(), deadline, workspace));
  if (!ready || ready->type != ReportType::kReady || !workspace.Valid()) {
    if (ready && ready->type == ReportType::kFailure) {
      return ChildError(plan, *ready, ReadUsernsFacts());
    }
    return MakeError(ErrorCode::kUnavailable, "a run forked from the zygote ended during set-up");
  }
  MCPEXEC_ASSIGN_OR_RETURN(SandboxMessage program,
                           ReceiveMessage(start.read.Get(), deadline, "zygote's fork"));
  if (program.data != std::string(1, kAgentReady)) {
    return ForkError(plan, report.read.Get(), program, "the run was ready");
  }
  // The first process ended once it forked the init; until the zygote has reaped it, it counts
  // in the run's pids (and in its user namespace's process count, the rlimit backend's).
  MCPEXEC_RETURN_IF_ERROR(WaitUntilReaped(first.pidfd.Get(), first_pid, deadline));
  first.pidfd.Reset();
  // What the fork holds (its processes' page tables and the pages they have written) is the
  // sandbox's, not the program's: the limits apply on top, as in a pool sandbox.
  if (sandbox.cgroup_) MCPEXEC_RETURN_IF_ERROR(sandbox.cgroup_->ExcludeCurrentUsage());
  sandbox.Hold(std::move(workspace), report, start, in, out, err);
  return sandbox;
}

}  // namespace mcpexec::sandbox
