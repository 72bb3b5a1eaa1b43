// Sandbox::Run: the supervisor's event loop for one run.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string_view>

#include "base/sys.h"
#include "sandbox/output.h"
#include "sandbox/progress_schedule.h"
#include "sandbox/sandbox.h"
#include "sandbox/setup_error.h"
#include "sandbox/workspace_files.h"

namespace mcpexec::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

// After the sandbox's init is gone every process of the run is gone (its exit tears down the
// PID namespace), so the pipes reach EOF at once; this only bounds a pathological drain.
constexpr auto kDrainLimit = std::chrono::seconds(2);

// Writes to a pipe whose reader died raise SIGPIPE, which would kill the whole server. Block it
// in this thread while the run lasts and consume what our own writes raised.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~ScopedSigpipeBlock() {
    if (!sigismember(&old_, SIGPIPE)) {
      sigset_t pending;
      timespec zero{};
      if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t pipe_, old_;
};

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

}  // namespace

Result<RunResult> Sandbox::Run(const Program& program, const RunLimits& limits,
                               const RunHooks& hooks) {
  if (!report_.Valid() || !plan_) {
    return MakeError(ErrorCode::kInvalidArgument, "this sandbox has already run");
  }
  const std::shared_ptr<const LaunchPlan> plan = std::move(plan_);
  ScopedSigpipeBlock no_sigpipe;
  for (const UniqueFd* fd : {&program_, &stdin_, &stdout_, &stderr_}) {
    MCPEXEC_RETURN_IF_ERROR(SetNonBlocking(fd->Get()));
  }
  Outgoing code{std::move(program_), program.code};
  Outgoing input{std::move(stdin_), program.stdin_data};
  CappedOutput output(limits.max_output_bytes);
  MCPEXEC_RETURN_IF_ERROR(WriteInputFiles(workspace_.Get(), program.files,
                                          plan->Spec().outside_uid, plan->Spec().outside_gid));

  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + limits.timeout;
  std::optional<Clock::time_point> end, drain_until;
  std::optional<int> program_status;
  std::optional<ChildReport> exit_report;
  std::optional<ChildReport> failure;
  bool timed_out = false;
  bool cancelled = false;
  ProgressSchedule progress(start, hooks.progress_interval, hooks.output_interval);
  Clock::time_point next_discard;  // past the cap: when the pipes are next emptied
  UniqueFd null_fd;                // past the cap: /dev/null, where they are emptied to

  code.Pump();
  input.Pump();
  while (!init_.Reaped() || stdout_.Valid() || stderr_.Valid() || report_.Valid()) {
    const Clock::time_point now = Clock::now();
    if (!init_.Reaped() && !program_status && !failure && !timed_out && !cancelled &&
        now >= deadline) {
      init_.Kill();  // init is PID 1: its death kills every process in the namespace
      timed_out = true;
      end = now;
    }
    if (hooks.on_progress && !end && progress.Due(now)) {
      hooks.on_progress(std::chrono::duration_cast<std::chrono::milliseconds>(now - start),
                        output.Held());
      progress.Called(now);
    }
    if (init_.Reaped() && !drain_until) drain_until = now + kDrainLimit;
    if (drain_until && now >= *drain_until) break;

    pollfd pfds[6];
    nfds_t n = 0;
    auto watch = [&](const UniqueFd& fd, short events) {
      if (fd.Valid()) pfds[n++] = pollfd{fd.Get(), events, 0};
    };
    // Past the cap the pipes are watched only when they are due to be emptied: in between, a
    // program that goes on writing fills them and waits, and the supervisor sleeps.
    const bool discarding = output.Truncated();
    if (!discarding || now >= next_discard) {
      watch(stdout_, POLLIN);
      watch(stderr_, POLLIN);
    }
    watch(report_, POLLIN);
    watch(code.fd, POLLOUT);
    watch(input.fd, POLLOUT);
    if (!init_.Reaped()) pfds[n++] = pollfd{init_.PidFd(), POLLIN, 0};
    if (hooks.cancel_fd >= 0 && !cancelled) pfds[n++] = pollfd{hooks.cancel_fd, POLLIN, 0};
    Clock::time_point wake = deadline;
    if (hooks.on_progress && !end) wake = std::min(wake, progress.Next());
    if (discarding && (stdout_.Valid() || stderr_.Valid())) wake = std::min(wake, next_discard);
    const int timeout_ms = drain_until              ? MillisUntil(*drain_until)
                           : (timed_out || cancelled) ? -1
                                                      : MillisUntil(wake);
    if (poll(pfds, n, timeout_ms) < 0 && errno != EINTR) {
      return Errno(ErrorCode::kInternal, "poll(sandbox)");
    }

    if (!discarding) {
      bool fresh = false;
      if (stdout_.Valid()) fresh |= Drain(stdout_, Stream::kStdout, output, hooks.on_output);
      if (stderr_.Valid()) fresh |= Drain(stderr_, Stream::kStderr, output, hooks.on_output);
      if (fresh) progress.OutputArrived();
      if (output.Truncated()) {
        null_fd.Reset(open("/dev/null", O_WRONLY | O_CLOEXEC));
        if (!null_fd.Valid()) return Errno(ErrorCode::kInternal, "open(/dev/null)");
        for (const UniqueFd* fd : {&stdout_, &stderr_}) {
          if (fd->Valid()) GrowPipeForDiscard(fd->Get());
        }
        next_discard = Clock::now();
      }
    } else if (Clock::now() >= next_discard) {
      Discard(stdout_, null_fd);
      Discard(stderr_, null_fd);
      next_discard = Clock::now() + kDiscardInterval;
    }
    if (code.fd.Valid()) code.Pump();
    if (input.fd.Valid() && !code.fd.Valid()) input.Pump();
    for (nfds_t i = 0; i < n; ++i) {
      if (pfds[i].fd == report_.Get() && pfds[i].revents != 0) {
        ChildReport report;
        const ssize_t got = read(report_.Get(), &report, sizeof report);
        if (got == static_cast<ssize_t>(sizeof report) && report.type == ReportType::kExit) {
          program_status = report.wait_status;
          exit_report = report;
          end = Clock::now();
        } else if (got == static_cast<ssize_t>(sizeof report) &&
                   report.type == ReportType::kFailure) {
          failure = report;
        } else if (got == 0 || (got < 0 && errno != EINTR)) {
          report_.Reset();
        }
      } else if (pfds[i].fd == hooks.cancel_fd && pfds[i].revents != 0) {
        init_.Kill();
        cancelled = true;
        if (!end) end = Clock::now();
      } else if (pfds[i].fd == init_.PidFd() && pfds[i].revents != 0) {
        MCPEXEC_RETURN_IF_ERROR(init_.Wait());
        if (!end) end = Clock::now();
      }
    }
    if (output.Truncated() && init_.Reaped()) {
      // Every writer is gone with the sandbox; what is left in the pipes is past the cap.
      stdout_.Reset();
      stderr_.Reset();
    }
  }
  if (failure) return ChildError(*plan, *failure, ReadUsernsFacts());
  RunResult result;
  // Init is reaped, so every process of the run is gone: /tmp/outputs no longer changes.
  if (limits.outputs.max_files > 0) {
    MCPEXEC_ASSIGN_OR_RETURN(result.outputs, CollectOutputs(workspace_.Get(), limits.outputs));
  }
  workspace_.Reset();
  result.limits_backend = limits::BackendName(plan->Limits().Kind());
  if (cgroup_) {
    MCPEXEC_ASSIGN_OR_RETURN(limits::Usage usage, cgroup_->Finish());
    cgroup_.reset();
    result.oom_killed = usage.oom_killed;
    result.memory_peak_bytes = usage.memory_peak_bytes;
    result.cpu_time_ms = usage.cpu_time_ms;
  } else if (exit_report) {
    result.memory_peak_bytes = static_cast<uint64_t>(exit_report->children_maxrss_kib) * 1024;
    result.cpu_time_ms = static_cast<uint64_t>(exit_report->children_cpu_us) / 1000;
  }
  result.cancelled = cancelled && !program_status;
  result.duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(end.value_or(Clock::now()) - start);
  result.truncated = output.Truncated();
  result.stdout_data = output.TakeStdout();
  result.stderr_data = output.TakeStderr();
  if (timed_out || result.cancelled) {
    result.timed_out = timed_out;
    result.exit_code = -1;
  } else if (program_status) {
    ApplyWaitStatus(*program_status, result);
  } else if (result.oom_killed) {
    // The OOM killer chose init (it picks by size; rare): the run ended for lack of memory.
    ApplyWaitStatus(SIGKILL, result);
  } else {
    // Init cannot be signalled from inside the sandbox, so it was killed from outside (or by
    // the OOM killer) and the program's fate is unknown: not a result to report as the
    // program's.
    RunResult died;
    ApplyWaitStatus(init_.WaitStatus().value_or(0), died);
    return MakeError(ErrorCode::kUnavailable,
                     "the sandbox's init died before the program finished (" +
                         (died.signal ? "killed by " + SignalName(*died.signal)
                                      : "exit status " + std::to_string(died.exit_code)) +
                         "), killed from outside the sandbox or by the OOM killer");
  }
  return result;
}

}  // namespace mcpexec::sandbox
