// Sandbox: one prepared sandbox, run once. Create() builds it (namespaces, mounts, ids,
// capabilities, limits) and leaves it waiting for a program: its init (cold), or the
// interpreter with its preloads imported (a warm plan). Run() gives it the program and
// supervises it to the end. The two steps are separate so that sandboxes can be prepared ahead
// of demand (docs/engine.md has the states).
//
// Session: a warm Sandbox that waits, taken over to run calls one after another in one
// interpreter (docs/sessions.md). Both are supervised by the same loop (supervisor.cc) and end
// each run or call in the same step, Finish (run_result.h).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "limits/limits.h"
#include "sandbox/child_process.h"
#include "sandbox/plan.h"
#include "sandbox/run_result.h"

namespace mcpexec::sandbox {

class Zygote;

class Sandbox {
 public:
  // Clones the sandbox's init into new user, mount, pid, net, ipc, uts and cgroup namespaces
  // and waits until it has finished set-up or failed (within `setup_timeout`); with a warm
  // plan, until the interpreter has imported its preloads too. Errors say what failed and how
  // to fix it.
  //
  // The kernel kills the sandbox when the *thread* that created it exits (PR_SET_PDEATHSIG),
  // so create sandboxes from threads that outlive them. Thread-safe: any number of threads may
  // create sandboxes from one plan at once.
  static Result<Sandbox> Create(std::shared_ptr<const LaunchPlan> plan,
                                std::chrono::milliseconds setup_timeout =
                                    std::chrono::seconds(30));

  Sandbox(Sandbox&&) noexcept = default;
  Sandbox& operator=(Sandbox&&) noexcept = default;
  // Kills and reaps the sandbox if it has not been run to its end.
  ~Sandbox() = default;

  // Writes the program and its input files into the workspace, starts it, delivers its stdin,
  // pumps output, enforces the deadline and the output cap, and returns when every process of
  // the run is gone: init's own exit and the cgroup's removal go to the Teardown (teardown.h). Call once. A failure to start the program (an interpreter that cannot
  // be executed, a program too large for the workspace, a warm sandbox that died while it
  // waited) is an Error; anything the program does is a RunResult. Blocks SIGPIPE in the
  // calling thread for its duration.
  Result<RunResult> Run(const Program& program, const RunLimits& limits,
                        const RunHooks& hooks = {});

  // True while it waits for its program: not run yet, and nothing in it has ended.
  bool Waiting() const;

  // Host pid of the sandbox's init (PID 1 inside).
  // (Its cgroup, when the limits backend uses cgroups, was entered before it ran any code.)
  pid_t InitPid() const { return init_.Pid(); }

 private:
  friend class Zygote;   // makes the sandboxes it forks
  friend class Session;  // takes over a warm one's state
  Sandbox() = default;
  // Takes the supervisor's ends of a ready sandbox's descriptors (read ends of the sockets and
  // output pipes, the write end of stdin).
  void Hold(UniqueFd workspace, Pipe& report, Pipe& start, Pipe& in, Pipe& out, Pipe& err);
  // Waits for the warm interpreter's "R" on the start socket.
  Result<void> WaitForAgent(std::chrono::steady_clock::time_point deadline);
  // After init's report of the run's end: checks with the cgroup that init is all that is left,
  // or kills and reaps init.
  Result<void> ConfirmOnlyInitLeft();

  // A zygote's run: the zygote, which must outlive it (its runs die with it). Destroyed last.
  std::shared_ptr<const Zygote> zygote_;
  std::shared_ptr<const LaunchPlan> plan_;
  // Declared before init_ so that it is destroyed after it: the cgroup is removed once init is
  // killed and reaped.
  std::unique_ptr<limits::RunCgroup> cgroup_;
  ChildProcess init_;
  UniqueFd report_;   // ChildReport records from init and the program
  // An O_PATH descriptor of the workspace tmpfs, from init: input files go in through it, and
  // it keeps the tmpfs readable after the sandbox is gone, for its outputs.
  UniqueFd workspace_;
  UniqueFd start_;    // the start socket (kFdStart): "G" starts the program
  UniqueFd stdin_;
  UniqueFd stdout_;
  UniqueFd stderr_;
};

// A session call's descriptors before its code is in: the code's memfd (empty, not sealed) and
// its stdin, stdout and stderr pipes, the supervisor's ends non-blocking.
struct CallDescriptors {
  UniqueFd code;
  Pipe in, out, err;
};
// A new set, for a session call to come; kInternal or kResourceExhausted when the descriptors
// cannot be had. Thread-safe.
Result<CallDescriptors> MakeCallDescriptors();

class Session {
 public:
  // Turns `box`, a warm sandbox that waits for its program, into a session: its interpreter
  // waits for calls instead (kInvalidArgument for any other sandbox). Thread-compatible: one
  // thread at a time calls a session's methods.
  static Result<Session> Start(Sandbox box);

  Session(Session&&) noexcept = default;
  Session& operator=(Session&&) noexcept = default;
  // Kills and reaps the session's sandbox, and removes its cgroup.
  ~Session() = default;

  // Runs `program` (its code, stdin and input files; files already in the workspace are an
  // error, as in a run) in the session's interpreter and returns when the call ends. At the
  // deadline, or on cancellation, the interpreter gets SIGINT (KeyboardInterrupt); one that
  // has not answered `grace` later is killed, which ends the session (CallResult::ended). So
  // does any message on the control channel that is not this call's one answer
  // (call_channel.h). The outputs are the files under /tmp/outputs the call changed. An Error
  // when the session is over (Alive() is false then), or the call could not be started: an
  // error before its code was sent (an input file that cannot be written) leaves the session
  // as it was; any later one ends it. One call at a time.
  Result<CallResult> Call(const Program& program, const RunLimits& limits, const RunHooks& hooks,
                          std::chrono::milliseconds grace);
  // Keeps `fds` (MakeCallDescriptors) for the next call, made between calls so that the call
  // does not make its own; leaves them with the caller when the session has some or has ended.
  void AdoptNextCallDescriptors(CallDescriptors& fds);
  // True while the session's interpreter is alive.
  bool Alive() const;
  // Why the session ended, in words ("timeout", "control channel broken: an empty message,
  // between calls", ...); empty while it lasts, or when it was ended from outside unseen.
  std::string EndReason() const;
  // What the session holds and has used since it started (the preloads excluded); empty
  // fields when unknown.
  limits::Usage Usage() const;
  // Usage() as the last call left it, read as it ended: what a caller shows with the call's
  // result without reading the cgroup again.
  const limits::Usage& UsageAfterLastCall() const { return after_last_call_; }
  // A pidfd of init, its own descriptor: another thread ends the session through it (SIGKILL)
  // while a call runs. kUnavailable when init has been reaped or the descriptor cannot be had
  // (EMFILE).
  Result<UniqueFd> DupInitPidfd() const;

 private:
  explicit Session(Sandbox box) : box_(std::move(box)) {}
  // The call from the moment it is sent (Call has written its files and its code).
  Result<CallResult> Send(const Program& program, const RunLimits& limits, const RunHooks& hooks,
                          std::chrono::milliseconds grace, std::string id, CallDescriptors& fds);
  // True when nothing waits on the control channel, as nothing may `when` (between calls,
  // after a call's answer); otherwise ends the session, saying why.
  bool Quiet(const char* when);
  // Kills the session's init, keeping the first reason given.
  void End(SessionEnd why, std::string detail = {});

  // Its init, cgroup, workspace and start socket (the control channel); stdin, stdout and
  // stderr are each call's own.
  Sandbox box_;
  UniqueFd interpreter_;  // a pidfd of its interpreter: a call's deadline interrupts it (SIGINT)
  SessionEnd end_ = SessionEnd::kNone;
  std::string end_detail_;  // kChannelBroken: what came on the channel, and when
  std::string call_id_;     // the id of the last call (call_channel.h)
  std::set<FileStamp> known_;  // the outputs the last call knew (ChangedSince)
  limits::Usage after_last_call_;
  // The next call's, made after the last one's response (AdoptNextCallDescriptors).
  std::optional<CallDescriptors> spare_;
};

}  // namespace mcpexec::sandbox
