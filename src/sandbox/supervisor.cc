// The supervisor's event loop, for a one-shot run (Sandbox::Run) and a session's call
// (Session::Call); both end in Finish (run_result.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/call_steps.h"
#include "base/sigpipe_block.h"
#include "base/sys.h"
#include "sandbox/call_channel.h"
#include "sandbox/output.h"
#include "sandbox/progress_schedule.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_messages.h"
#include "sandbox/setup_error.h"
#include "sandbox/teardown.h"
#include "sandbox/warm_agent.h"
#include "sandbox/workspace_files.h"

namespace mcpexec::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

// After the sandbox's init is gone every process of the run is gone (its exit tears down the
// PID namespace), so the pipes reach EOF at once; this only bounds a pathological drain.
constexpr auto kDrainLimit = std::chrono::seconds(2);

// Data still to be written to the sandbox; the fd closes once it is all written or the reader
// is gone, which the program sees as EOF.
struct Outgoing {
  UniqueFd fd;
  std::string_view data;

  void Pump() {
    while (!data.empty()) {
      const ssize_t n = write(fd.Get(), data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n < 0) break;  // EPIPE: the reader is gone; nothing more to deliver
      data.remove_prefix(static_cast<size_t>(n));
    }
    fd.Reset();
  }
};

// Drains one output pipe (bounded, see DrainPipe); closes it at EOF. Hands what the result
// kept of it to `on_output`; true when that was anything.
bool Drain(UniqueFd& fd, Stream stream, CappedOutput& output,
           const std::function<void(Stream, std::string_view)>& on_output) {
  const std::string& kept = stream == Stream::kStdout ? output.Stdout() : output.Stderr();
  const size_t before = kept.size();
  if (DrainPipe(fd.Get(), stream, output) == DrainEnd::kClosed) fd.Reset();
  if (kept.size() == before) return false;
  if (on_output) on_output(stream, std::string_view(kept).substr(before));
  return true;
}

// Past the cap: drops what one output pipe holds; closes it at EOF.
void Discard(UniqueFd& fd, const UniqueFd& null_fd) {
  if (fd.Valid() && DiscardPipe(fd.Get(), null_fd.Get()) == DrainEnd::kClosed) fd.Reset();
}

int MillisUntil(Clock::time_point t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), 60'000))) + 1;
}

// A session's call: the interpreter outlives it, so the loop ends at its "D" answer, and the
// deadline and a cancellation interrupt it (SIGINT) before they kill it.
struct CallChannel {
  int control = -1;      // the start socket
  int interpreter = -1;  // a pidfd of the interpreter
  std::chrono::milliseconds grace{0};  // from SIGINT to SIGKILL
  std::string_view id;        // the call's: only an answer with it ends the call
  std::string_view previous;  // the session's call before (or empty), to name a stale answer
  CallAnswer answer;          // at kCallDone
  std::string broken;         // at kChannelBroken: what came instead of the answer
  std::optional<RunEnd> interrupted;  // why SIGINT was sent: kTimedOut or kCancelled
};

// One run from the start byte to the last output: pumps stdin, drains stdout and stderr into
// the capped result (or discards them past the cap), reads init's reports, and kills the
// sandbox at the deadline or on cancellation. The run is over once init has reported its
// program's end, which it does after killing and reaping every other process of its namespace,
// or once init is reaped (its death ends every process of the run: it is PID 1); the loop
// lasts until then and until the pipes are closed. A session's call
// (`call` set) ends at the interpreter's answer instead, once the pipes hold nothing more.
class RunLoop {
 public:
  RunLoop(ChildProcess& init, UniqueFd& report, UniqueFd& out, UniqueFd& err, Outgoing input,
          const RunLimits& limits, const RunHooks& hooks, CallChannel* call = nullptr)
      : call_(call),
        init_(init),
        report_(report),
        stdout_(out),
        stderr_(err),
        input_(std::move(input)),
        hooks_(hooks),
        output_(limits.max_output_bytes),
        start_(Clock::now()),
        deadline_(start_ + limits.timeout),
        progress_(start_, hooks.progress_interval, hooks.output_interval) {}

  Result<RunEnd> Run() {
    input_.Pump();
    while (!Over() || stdout_.Valid() || stderr_.Valid()) {
      if (end_ == RunEnd::kCallDone) {
        // Everything the call wrote is in the pipes: the agent flushed before it answered.
        MCPEXEC_RETURN_IF_ERROR(DrainToEmpty());
        return *end_;
      }
      const Clock::time_point now = Clock::now();
      if (!end_ && now >= deadline_) Expire(RunEnd::kTimedOut, now);
      if (!end_ && call_ && call_->interrupted && now >= kill_at_) Kill(*call_->interrupted, now);
      if (hooks_.on_progress && !end_ && progress_.Due(now)) {
        hooks_.on_progress(std::chrono::duration_cast<std::chrono::milliseconds>(now - start_),
                           output_.Held());
        progress_.Called(now);
      }
      if (Over() && !drain_until_) drain_until_ = now + kDrainLimit;
      if (drain_until_ && now >= *drain_until_) break;
      MCPEXEC_RETURN_IF_ERROR(Step(now));
    }
    if (!end_) end_ = RunEnd::kInitLost;
    return *end_;
  }

  // What the loop saw, for Finish: how it ended, the wait status init reported (or init's
  // own, when it reported none), the output and the time. A call's answer is the caller's.
  Happened Seen(RunEnd end) {
    Happened happened;
    happened.session = call_ != nullptr;
    happened.end = end;
    if (call_) happened.interrupted = call_->interrupted;
    happened.wait_status =
        exit_report_ ? exit_report_->wait_status : init_.WaitStatus().value_or(0);
    happened.stdout_data = output_.TakeStdout();
    happened.stderr_data = output_.TakeStderr();
    happened.truncated = output_.Truncated();
    happened.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
        ended_at_.value_or(Clock::now()) - start_);
    return happened;
  }
  // No process of the run is left but init, which ends by itself (or is reaped already).
  bool Over() const { return init_.Reaped() || exit_report_.has_value(); }
  const std::optional<ChildReport>& ExitReport() const { return exit_report_; }
  const std::optional<ChildReport>& FailureReport() const { return failure_report_; }

 private:
  // The first reason to end is the run's; later ones (a cancel after the exit) change nothing.
  void End(RunEnd why, Clock::time_point at) {
    if (end_) return;
    end_ = why;
    ended_at_ = at;
  }
  void Kill(RunEnd why, Clock::time_point at) {
    if (end_) return;
    init_.Kill();  // init is PID 1: its death kills every process in the namespace
    End(why, at);
  }
  // A run is killed; a session's call is interrupted first, and killed `grace` later.
  void Expire(RunEnd why, Clock::time_point at) {
    if (!call_) return Kill(why, at);
    if (call_->interrupted) return;
    call_->interrupted = why;
    kill_at_ = at + call_->grace;
    if (syscall(SYS_pidfd_send_signal, call_->interpreter, SIGINT, nullptr, 0) != 0) {
      Kill(why, at);
    }
  }

  // After the answer: what the pipes hold now, then no more (a process the call left running
  // may hold them open).
  Result<void> DrainToEmpty() {
    for (UniqueFd* fd : {&stdout_, &stderr_}) {
      const Stream stream = fd == &stdout_ ? Stream::kStdout : Stream::kStderr;
      // Bounded: a process left writing could keep the pipe from ever being empty.
      for (int round = 0; fd->Valid() && round < 64; ++round) {
        const DrainEnd end = output_.Truncated() ? DiscardPipe(fd->Get(), NullFd())
                                                 : DrainPipe(fd->Get(), stream, output_);
        // kCapped: the rest of it is discarded, in the next round.
        if (end != DrainEnd::kMore && end != DrainEnd::kCapped) break;
      }
      fd->Reset();
    }
    return Ok();
  }
  // /dev/null, where what is past the cap is emptied to; -1 if it cannot be opened.
  int NullFd() {
    if (!null_fd_.Valid()) null_fd_.Reset(open("/dev/null", O_WRONLY | O_CLOEXEC));
    return null_fd_.Get();
  }

  // One message on the control channel: the call's answer ends the call, and anything else
  // (the program wrote it) ends the session, so that no answer is ever taken for another
  // call's. Its end of file means the interpreter is gone (init reports why).
  Result<void> ReadAnswer() {
    MCPEXEC_ASSIGN_OR_RETURN(const ControlMessage message, ReceiveControl(call_->control));
    if (message.kind == ControlMessage::Kind::kNone) return Ok();
    if (message.kind == ControlMessage::Kind::kClosed) {
      control_closed_ = true;
      return Ok();
    }
    Result<CallAnswer> answer = ParseAnswer(message, call_->id, call_->previous);
    if (!answer.ok()) {
      call_->broken = answer.error().message + ", during the call";
      Kill(RunEnd::kChannelBroken, Clock::now());
      return Ok();
    }
    call_->answer = std::move(*answer);
    End(RunEnd::kCallDone, Clock::now());
    return Ok();
  }

  Result<void> Step(Clock::time_point now) {
    pollfd pfds[7];
    nfds_t n = 0;
    auto watch = [&](int fd, short events) {
      if (fd >= 0) pfds[n++] = pollfd{fd, events, 0};
    };
    // Past the cap the pipes are watched only when they are due to be emptied: in between, a
    // program that goes on writing fills them and waits, and the supervisor sleeps.
    const bool discarding = output_.Truncated();
    if (!discarding || now >= next_discard_) {
      watch(stdout_.Get(), POLLIN);
      watch(stderr_.Get(), POLLIN);
    }
    watch(report_.Get(), POLLIN);
    watch(input_.fd.Get(), POLLOUT);
    if (!Over()) watch(init_.PidFd(), POLLIN);
    if (!end_ && !(call_ && call_->interrupted)) watch(hooks_.cancel_fd, POLLIN);
    if (!end_ && call_ && !control_closed_) watch(call_->control, POLLIN);
    Clock::time_point wake = deadline_;
    if (call_ && call_->interrupted) wake = kill_at_;
    if (hooks_.on_progress && !end_) wake = std::min(wake, progress_.Next());
    if (discarding && (stdout_.Valid() || stderr_.Valid())) wake = std::min(wake, next_discard_);
    const int timeout_ms = drain_until_ ? MillisUntil(*drain_until_)
                           : end_       ? -1
                                        : MillisUntil(wake);
    if (poll(pfds, n, timeout_ms) < 0 && errno != EINTR) {
      return Errno(ErrorCode::kInternal, "poll(sandbox)");
    }

    MCPEXEC_RETURN_IF_ERROR(PumpOutput(discarding));
    if (input_.fd.Valid()) input_.Pump();
    for (nfds_t i = 0; i < n; ++i) {
      if (pfds[i].revents == 0) continue;
      if (pfds[i].fd == report_.Get()) {
        ReadReport();
      } else if (pfds[i].fd == hooks_.cancel_fd) {
        Expire(RunEnd::kCancelled, Clock::now());
      } else if (call_ && pfds[i].fd == call_->control) {
        MCPEXEC_RETURN_IF_ERROR(ReadAnswer());
      } else if (pfds[i].fd == init_.PidFd()) {
        MCPEXEC_RETURN_IF_ERROR(init_.Wait());
        // Its last report is already in the socket: read it before deciding why it ended.
        ReadPendingReports();
        if (!end_) End(RunEnd::kInitLost, Clock::now());
      }
    }
    if (output_.Truncated() && Over()) {
      // Every writer is gone with the sandbox; what is left in the pipes is past the cap.
      stdout_.Reset();
      stderr_.Reset();
    }
    return Ok();
  }

  Result<void> PumpOutput(bool discarding) {
    if (discarding) {
      if (Clock::now() >= next_discard_) {
        Discard(stdout_, null_fd_);
        Discard(stderr_, null_fd_);
        next_discard_ = Clock::now() + kDiscardInterval;
      }
      return Ok();
    }
    bool fresh = false;
    if (stdout_.Valid()) fresh |= Drain(stdout_, Stream::kStdout, output_, hooks_.on_output);
    if (stderr_.Valid()) fresh |= Drain(stderr_, Stream::kStderr, output_, hooks_.on_output);
    if (fresh) progress_.OutputArrived();
    if (output_.Truncated()) {
      if (NullFd() < 0) return Errno(ErrorCode::kInternal, "open(/dev/null)");
      for (const UniqueFd* fd : {&stdout_, &stderr_}) {
        if (fd->Valid()) GrowPipeForDiscard(fd->Get());
      }
      next_discard_ = Clock::now();
    }
    return Ok();
  }

  // One report from init; closes the socket at EOF.
  void ReadReport() {
    ChildReport report;
    const ssize_t got = read(report_.Get(), &report, sizeof report);
    if (got == static_cast<ssize_t>(sizeof report) && report.type == ReportType::kExit) {
      exit_report_ = report;
      End(RunEnd::kExited, Clock::now());
    } else if (got == static_cast<ssize_t>(sizeof report) &&
               report.type == ReportType::kFailure) {
      failure_report_ = report;
      End(RunEnd::kStartFailed, Clock::now());
    } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
      report_.Reset();
    }
  }

  void ReadPendingReports() {
    while (report_.Valid()) {
      pollfd pfd{report_.Get(), POLLIN, 0};
      if (poll(&pfd, 1, 0) <= 0) return;
      ReadReport();
    }
  }

  CallChannel* const call_;
  Clock::time_point kill_at_;  // a session's call once interrupted: when it is killed
  bool control_closed_ = false;
  ChildProcess& init_;
  UniqueFd& report_;
  UniqueFd& stdout_;
  UniqueFd& stderr_;
  Outgoing input_;
  const RunHooks& hooks_;
  CappedOutput output_;
  const Clock::time_point start_;
  const Clock::time_point deadline_;
  ProgressSchedule progress_;
  std::optional<RunEnd> end_;
  std::optional<Clock::time_point> ended_at_;
  std::optional<Clock::time_point> drain_until_;
  std::optional<ChildReport> exit_report_;
  std::optional<ChildReport> failure_report_;
  Clock::time_point next_discard_;  // past the cap: when the pipes are next emptied
  UniqueFd null_fd_;                // past the cap: /dev/null, where they are emptied to
};

}  // namespace

bool Sandbox::Waiting() const {
  if (!report_.Valid() || !plan_ || init_.Reaped()) return false;
  pollfd pfds[2] = {{init_.PidFd(), POLLIN, 0}, {report_.Get(), POLLIN, 0}};
  return poll(pfds, 2, 0) == 0;
}

Result<RunResult> Sandbox::Run(const Program& program, const RunLimits& limits,
                               const RunHooks& hooks) {
  if (!report_.Valid() || !plan_) {
    return MakeError(ErrorCode::kInvalidArgument, "this sandbox has already run");
  }
  // A warm interpreter that died while it waited must not have its end reported as the
  // program's.
  if (plan_->View().warm && !Waiting()) {
    return MakeError(ErrorCode::kUnavailable,
                     "the prepared sandbox ended while it waited for its program");
  }
  const std::shared_ptr<const LaunchPlan> plan = std::move(plan_);
  ScopedSigpipeBlock no_sigpipe;
  for (const UniqueFd* fd : {&stdin_, &stdout_, &stderr_}) {
    MCPEXEC_RETURN_IF_ERROR(SetNonBlocking(fd->Get()));
  }
  const SandboxSpec& spec = plan->Spec();
  MCPEXEC_RETURN_IF_ERROR(
      WriteProgram(workspace_.Get(), program.code, spec.outside_uid, spec.outside_gid));
  MCPEXEC_RETURN_IF_ERROR(
      WriteInputFiles(workspace_.Get(), program.files, spec.outside_uid, spec.outside_gid));
  const char go = kAgentGo;
  // A sandbox killed from outside has no reader left (EPIPE): the loop below sees init gone and
  // says so.
  if (send(start_.Get(), &go, 1, MSG_NOSIGNAL) != 1 && errno != EPIPE && errno != ECONNRESET) {
    return Errno(ErrorCode::kInternal, "send(start socket)");
  }
  MarkStep(Step::kSent);
  start_.Reset();

  RunLoop loop(init_, report_, stdout_, stderr_, Outgoing{std::move(stdin_), program.stdin_data},
               limits, hooks);
  MCPEXEC_ASSIGN_OR_RETURN(const RunEnd end, loop.Run());
  MarkStep(Step::kEnded);
  if (end == RunEnd::kStartFailed) {
    return ChildError(*plan, *loop.FailureReport(), ReadUsernsFacts());
  }
  MCPEXEC_RETURN_IF_ERROR(ConfirmOnlyInitLeft());
  Happened happened = loop.Seen(end);
  // Every process of the run but init is gone (init, which writes nothing there, may still be
  // ending): /tmp/outputs no longer changes.
  if (limits.outputs.max_files > 0) {
    MCPEXEC_ASSIGN_OR_RETURN(happened.outputs, CollectOutputs(workspace_.Get(), limits.outputs));
  }
  workspace_.Reset();
  happened.limits_backend = limits::BackendName(plan->Limits().Kind());
  happened.warm = plan->View().warm;
  if (cgroup_) {
    // Final: every process of the run is gone but init, which runs none of its code.
    const limits::Usage usage = cgroup_->Read();
    happened.oom_kill = usage.oom_killed;
    happened.memory_peak_bytes = usage.memory_peak_bytes;
    happened.cpu_time_ms = usage.cpu_time_ms;
  } else if (const auto& exit = loop.ExitReport()) {
    happened.memory_peak_bytes = static_cast<uint64_t>(exit->children_maxrss_kib) * 1024;
    happened.cpu_time_ms = static_cast<uint64_t>(exit->children_cpu_us) / 1000;
  }
  MCPEXEC_ASSIGN_OR_RETURN(CallResult finished, Finish(std::move(happened)));
  // Init's exit, the namespaces' teardown and the cgroup's removal follow the answer; while
  // they wait, the remains hold init's pidfd and nothing of the cgroup.
  if (cgroup_) cgroup_->CloseFiles();
  Teardown::Shared().Add(
      SandboxRemains{std::move(zygote_), std::move(cgroup_), std::move(init_)});
  MarkStep(Step::kCollected);
  return std::move(finished.run);
}

Result<void> Sandbox::ConfirmOnlyInitLeft() {
  if (init_.Reaped() || !cgroup_) return Ok();
  // Init's word, checked against the cgroup: init alone is charged to pids.current once the
  // others are reaped. Anything else ends the run the old way, init killed and reaped here.
  Result<uint64_t> tasks = cgroup_->Tasks();
  if (tasks.ok() && *tasks == 1) return Ok();
  init_.Kill();
  MCPEXEC_RETURN_IF_ERROR(init_.Wait());
  return Ok();
}

namespace {

// The one child of a session's init: its interpreter (a cold init's PID 2, or the process a
// zygote's run init forked), as a pidfd. The kernel's list of init's children, read again once
// the pidfd is open, so that a pid reused in between is never signalled.
Result<UniqueFd> InterpreterOf(pid_t init) {
  const std::string children =
      "/proc/" + std::to_string(init) + "/task/" + std::to_string(init) + "/children";
  MCPEXEC_ASSIGN_OR_RETURN(const std::string before, ReadFile(children));
  char* end = nullptr;
  const long pid = std::strtol(before.c_str(), &end, 10);
  if (pid <= 0 || end == before.c_str()) {
    return MakeError(ErrorCode::kUnavailable, "the warm sandbox has no interpreter");
  }
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0)));
  if (!pidfd.Valid()) return Errno(ErrorCode::kUnavailable, "pidfd_open(interpreter)");
  MCPEXEC_ASSIGN_OR_RETURN(const std::string after, ReadFile(children));
  if (after != before) {
    return MakeError(ErrorCode::kUnavailable, "the warm sandbox's interpreter changed");
  }
  return pidfd;
}

// The call's code in its sealed memfd: the interpreter reads it and cannot change or grow it.
Result<void> SealCode(const UniqueFd& fd, std::string_view code) {
  MCPEXEC_RETURN_IF_ERROR(WriteAll(fd.Get(), code));
  if (lseek(fd.Get(), 0, SEEK_SET) != 0 ||
      fcntl(fd.Get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    return Errno(ErrorCode::kInternal, "seal the call's code");
  }
  return Ok();
}

timespec CoarseNow() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return now;
}

// The rlimit backend has no cgroup to read: the interpreter's own CPU time and peak resident
// size, from /proc (its children's are not counted).
limits::Usage ProcessUsage(int pidfd) {
  limits::Usage usage;
  auto pid = PidOfPidfd(pidfd);
  if (!pid.ok()) return usage;
  const std::string name = std::to_string(*pid);
  // Fields 14 and 15 of proc(5): utime and stime.
  if (auto stat = ReadProcStat(name); stat.ok() && stat->size() > 14) {
    const uint64_t ticks = std::strtoull((*stat)[13].c_str(), nullptr, 10) +
                           std::strtoull((*stat)[14].c_str(), nullptr, 10);
    usage.cpu_time_ms = ticks * 1000 / static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  }
  if (auto status = ReadFile("/proc/" + name + "/status"); status.ok()) {
    usage.memory_peak_bytes = ProcStatusBytes(*status, "VmHWM");
    usage.memory_current_bytes = ProcStatusBytes(*status, "VmRSS");
  }
  return usage;
}

}  // namespace

Result<CallDescriptors> MakeCallDescriptors() {
  CallDescriptors fds;
  fds.code.Reset(memfd_create("mcp-exec-call", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fds.code.Valid()) return Errno(ErrorCode::kInternal, "memfd_create(call)");
  MCPEXEC_ASSIGN_OR_RETURN(fds.in, MakePipe());
  MCPEXEC_ASSIGN_OR_RETURN(fds.out, MakePipe());
  MCPEXEC_ASSIGN_OR_RETURN(fds.err, MakePipe());
  for (const UniqueFd* fd : {&fds.in.write, &fds.out.read, &fds.err.read}) {
    MCPEXEC_RETURN_IF_ERROR(SetNonBlocking(fd->Get()));
  }
  return fds;
}

Result<Session> Session::Start(Sandbox box) {
  if (!box.plan_ || !box.plan_->View().warm || !box.Waiting()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "only a warm sandbox that waits starts a session");
  }
  Session session(std::move(box));
  Sandbox& sandbox = session.box_;
  MCPEXEC_ASSIGN_OR_RETURN(session.interpreter_, InterpreterOf(sandbox.init_.Pid()));
  const char start = kSessionStart;
  if (send(sandbox.start_.Get(), &start, 1, MSG_NOSIGNAL) != 1) {
    return Errno(ErrorCode::kUnavailable, "send(start socket)");
  }
  // Each call brings its own stdin, stdout and stderr.
  sandbox.stdin_.Reset();
  sandbox.stdout_.Reset();
  sandbox.stderr_.Reset();
  return session;
}

Result<UniqueFd> Session::DupInitPidfd() const {
  const ChildProcess& init = box_.init_;
  if (init.Reaped() || init.PidFd() < 0) {
    return MakeError(ErrorCode::kUnavailable, "the session's sandbox ended as it started");
  }
  UniqueFd dup(fcntl(init.PidFd(), F_DUPFD_CLOEXEC, 0));
  // kUnavailable, not kResourceExhausted: that one is a caller's limit (too many sessions),
  // while a server out of descriptors is the server's condition.
  if (!dup.Valid()) return Errno(ErrorCode::kUnavailable, "fcntl(F_DUPFD_CLOEXEC, init's pidfd)");
  return dup;
}

void Session::AdoptNextCallDescriptors(CallDescriptors& fds) {
  if (!spare_ && end_ == SessionEnd::kNone) spare_ = std::move(fds);
}

bool Session::Alive() const {
  const ChildProcess& init = box_.init_;
  if (end_ != SessionEnd::kNone || init.Reaped()) return false;
  pollfd pfd{init.PidFd(), POLLIN, 0};
  return poll(&pfd, 1, 0) == 0;
}

limits::Usage Session::Usage() const {
  if (box_.cgroup_) return box_.cgroup_->Read();
  return interpreter_.Valid() ? ProcessUsage(interpreter_.Get()) : limits::Usage{};
}

std::string Session::EndReason() const {
  if (end_ == SessionEnd::kNone) return "";
  std::string reason = SessionEndName(end_);
  if (!end_detail_.empty()) reason += ": " + end_detail_;
  return reason;
}

void Session::End(SessionEnd why, std::string detail) {
  if (end_ == SessionEnd::kNone) {
    end_ = why;
    end_detail_ = std::move(detail);
  }
  box_.init_.Kill();  // init is PID 1: every process of the session goes with it
}

bool Session::Quiet(const char* when) {
  auto message = ReceiveControl(box_.start_.Get());
  if (message.ok() && message->kind == ControlMessage::Kind::kNone) return true;
  if (!message.ok()) {
    End(SessionEnd::kChannelBroken, message.error().message);
  } else if (message->kind == ControlMessage::Kind::kMessage) {
    auto parsed = ParseAnswer(*message, "", call_id_);
    End(SessionEnd::kChannelBroken,
        (parsed.ok() ? std::string("an answer") : parsed.error().message) + ", " + when);
  } else {
    // Closed: the interpreter is exiting (os._exit in a thread a call left running), or the
    // program closed its end; the first is told by the interpreter's end coming soon after.
    pollfd pfd{interpreter_.Get(), POLLIN, 0};
    const bool exited = poll(&pfd, 1, 100) == 1;
    End(exited ? SessionEnd::kExited : SessionEnd::kChannelBroken,
        exited ? "" : std::string("the interpreter closed it, ") + when);
  }
  return false;
}

Result<CallResult> Session::Call(const Program& program, const RunLimits& limits,
                                 const RunHooks& hooks, std::chrono::milliseconds grace) {
  if (!box_.plan_) return MakeError(ErrorCode::kInvalidArgument, "not a session");
  auto ended = [this] {
    return MakeError(ErrorCode::kUnavailable,
                     "the session has ended: " +
                         (end_ == SessionEnd::kNone ? std::string(SessionEndName(
                                                          SessionEnd::kKilled))
                                                    : EndReason()));
  };
  if (!Alive()) return ended();
  ScopedSigpipeBlock no_sigpipe;
  // Nothing may wait on the channel between calls: a message there now is the program's (a
  // thread or process a call left running), and would be taken for this call's answer.
  if (!Quiet("between calls")) return ended();
  // Until the call is sent, a failure is this call's alone: the session stays as it was.
  const SandboxSpec& spec = box_.plan_->Spec();
  MCPEXEC_RETURN_IF_ERROR(
      WriteInputFiles(box_.workspace_.Get(), program.files, spec.outside_uid, spec.outside_gid));
  std::optional<CallDescriptors> fds = std::exchange(spare_, std::nullopt);
  if (!fds) {
    MCPEXEC_ASSIGN_OR_RETURN(fds, MakeCallDescriptors());
  }
  MCPEXEC_RETURN_IF_ERROR(SealCode(fds->code, program.code));
  MCPEXEC_ASSIGN_OR_RETURN(std::string id, NewCallId());
  Result<CallResult> call = Send(program, limits, hooks, grace, std::move(id), *fds);
  // From the call's "C" on, a failure leaves the interpreter in no known state.
  if (!call.ok()) End(SessionEnd::kKilled);
  return call;
}

Result<CallResult> Session::Send(const Program& program, const RunLimits& limits,
                                 const RunHooks& hooks, std::chrono::milliseconds grace,
                                 std::string id, CallDescriptors& fds) {
  const limits::Usage before = Usage();
  const timespec started = CoarseNow();
  const int theirs[] = {fds.code.Get(), fds.in.read.Get(), fds.out.write.Get(),
                        fds.err.write.Get()};
  MCPEXEC_RETURN_IF_ERROR(SendWithDescriptors(box_.start_.Get(), CallMessage(id), theirs,
                                              "the session's interpreter has ended"));
  MarkStep(Step::kSent);
  // Only the interpreter holds these now, so that EOF means it is gone.
  fds.code.Reset();
  fds.in.read.Reset();
  fds.out.write.Reset();
  fds.err.write.Reset();

  const std::string previous = std::exchange(call_id_, std::move(id));
  CallChannel channel;
  channel.control = box_.start_.Get();
  channel.interpreter = interpreter_.Get();
  channel.grace = grace;
  channel.id = call_id_;
  channel.previous = previous;
  RunLoop loop(box_.init_, box_.report_, fds.out.read, fds.err.read,
               Outgoing{std::move(fds.in.write), program.stdin_data}, limits, hooks, &channel);
  MCPEXEC_ASSIGN_OR_RETURN(const RunEnd end, loop.Run());
  MarkStep(Step::kEnded);
  // One answer per call: anything after it, its pipes drained, would be taken for the next
  // call's (Quiet ends the session then; the call's own result stands).
  if (end == RunEnd::kCallDone) Quiet("after the call's answer");

  Happened happened = loop.Seen(end);
  happened.answer_status = channel.answer.status;
  happened.value = std::move(channel.answer.value);
  after_last_call_ = Usage();
  const limits::Usage& after = after_last_call_;
  happened.limits_backend = limits::BackendName(box_.plan_->Limits().Kind());
  happened.warm = true;
  happened.memory_peak_bytes = after.memory_peak_bytes;
  if (after.cpu_time_ms && before.cpu_time_ms) {
    happened.cpu_time_ms = *after.cpu_time_ms - std::min(*after.cpu_time_ms, *before.cpu_time_ms);
  }
  happened.oom_kill = after.oom_killed && !before.oom_killed;
  happened.oom_kill_before = before.oom_killed;
  if (limits.outputs.max_files > 0) {
    ChangedSince since{started, std::move(known_), {}};
    OutputLimits changed = limits.outputs;
    changed.changed_since = &since;
    MCPEXEC_ASSIGN_OR_RETURN(happened.outputs, CollectOutputs(box_.workspace_.Get(), changed));
    known_ = std::move(since.known);
  }
  MCPEXEC_ASSIGN_OR_RETURN(CallResult call, Finish(std::move(happened)));
  if (call.ended != SessionEnd::kNone) {
    End(call.ended, call.ended == SessionEnd::kChannelBroken ? channel.broken : std::string());
  }
  call.ended = end_;  // Quiet may have ended it after the answer
  MarkStep(Step::kCollected);
  return call;
}

}  // namespace mcpexec::sandbox
