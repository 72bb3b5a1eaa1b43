// Finish: from what the supervisor saw of a run or a session's call to its result.
#include "sandbox/run_result.h"

#include <signal.h>
#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mcpexec::sandbox {
namespace {

using ::testing::HasSubstr;

constexpr int Exit(int status) { return status << 8; }  // as wait(2) reports an exit

Happened OneShot(RunEnd end, int wait_status = 0) {
  Happened h;
  h.end = end;
  h.wait_status = wait_status;
  return h;
}

Happened InSession(RunEnd end, int wait_status = 0) {
  Happened h = OneShot(end, wait_status);
  h.session = true;
  return h;
}

RunResult Finished(Happened h) {
  Result<CallResult> done = Finish(std::move(h));
  EXPECT_TRUE(done.ok()) << done.error().message;
  return done.ok() ? std::move(done->run) : RunResult{};
}

TEST(Outcome, EachHasItsName) {
  EXPECT_STREQ(OutcomeName(Outcome::kExited), "exited");
  EXPECT_STREQ(OutcomeName(Outcome::kSignalled), "signalled");
  EXPECT_STREQ(OutcomeName(Outcome::kTimedOut), "timed out");
  EXPECT_STREQ(OutcomeName(Outcome::kCancelled), "cancelled");
  EXPECT_STREQ(OutcomeName(Outcome::kOomKilled), "OOM-killed");
  EXPECT_STREQ(OutcomeName(Outcome::kKilled), "killed");
}

TEST(Finish, AnExitIsItsStatus) {
  const RunResult r = Finished(OneShot(RunEnd::kExited, Exit(3)));
  EXPECT_EQ(r.outcome, Outcome::kExited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.signal.has_value());
  EXPECT_FALSE(r.oom_killed);
}

TEST(Finish, ASignalIs128PlusItsNumber) {
  const RunResult r = Finished(OneShot(RunEnd::kExited, SIGSEGV));
  EXPECT_EQ(r.outcome, Outcome::kSignalled);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV);
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST(Finish, ASigkillWithAnOomEventIsTheOomKiller) {
  Happened h = OneShot(RunEnd::kExited, SIGKILL);
  h.oom_kill = true;
  const RunResult r = Finished(std::move(h));
  EXPECT_EQ(r.outcome, Outcome::kOomKilled);
  EXPECT_EQ(r.exit_code, 137);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_TRUE(r.oom_killed);
  // Without one it is a signal of the program's own.
  EXPECT_EQ(Finished(OneShot(RunEnd::kExited, SIGKILL)).outcome, Outcome::kSignalled);
}

TEST(Finish, AnOomKillOfAnotherProcessKeepsTheExitAndSaysSo) {
  Happened h = OneShot(RunEnd::kExited, Exit(1));
  h.oom_kill = true;
  const RunResult r = Finished(std::move(h));
  EXPECT_EQ(r.outcome, Outcome::kExited);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.oom_killed);
}

TEST(Finish, TheDeadlineAndACancelAreMinusOneWithoutASignal) {
  Happened timed_out = OneShot(RunEnd::kTimedOut, SIGKILL);
  timed_out.oom_kill = true;
  const RunResult t = Finished(std::move(timed_out));
  EXPECT_EQ(t.outcome, Outcome::kTimedOut);
  EXPECT_EQ(t.exit_code, -1);
  EXPECT_FALSE(t.signal.has_value());
  EXPECT_TRUE(t.oom_killed);  // what the cgroup saw is reported with any outcome
  const RunResult c = Finished(OneShot(RunEnd::kCancelled));
  EXPECT_EQ(c.outcome, Outcome::kCancelled);
  EXPECT_EQ(c.exit_code, -1);
  EXPECT_FALSE(c.oom_killed);
}

TEST(Finish, InitLostIsTheOomKillerOrAnError) {
  Happened h = OneShot(RunEnd::kInitLost, SIGKILL);
  h.oom_kill = true;
  const RunResult r = Finished(std::move(h));
  EXPECT_EQ(r.outcome, Outcome::kOomKilled);
  EXPECT_EQ(r.exit_code, 137);
  EXPECT_EQ(r.signal, SIGKILL);

  // Killed from outside: the program's fate is unknown, and a one-shot run reports no result.
  Result<CallResult> lost = Finish(OneShot(RunEnd::kInitLost, SIGKILL));
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(lost.error().message,
            "the sandbox's init died before the program finished (killed by SIGKILL), killed "
            "from outside the sandbox or by the OOM killer");
  Result<CallResult> exited = Finish(OneShot(RunEnd::kInitLost, Exit(2)));
  ASSERT_FALSE(exited.ok());
  EXPECT_THAT(exited.error().message, HasSubstr("(exit status 2)"));
}

TEST(Finish, CarriesTheOutputAndTheAccounting) {
  Happened h = OneShot(RunEnd::kExited, Exit(0));
  h.stdout_data = "out";
  h.stderr_data = "err";
  h.truncated = true;
  h.duration = std::chrono::milliseconds(42);
  h.limits_backend = "cgroup1";
  h.memory_peak_bytes = 1 << 20;
  h.cpu_time_ms = 7;
  h.warm = true;
  const RunResult r = Finished(std::move(h));
  EXPECT_EQ(r.stdout_data, "out");
  EXPECT_EQ(r.stderr_data, "err");
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.outcome, Outcome::kExited);  // the cap does not end a run
  EXPECT_EQ(r.duration.count(), 42);
  EXPECT_EQ(r.limits_backend, "cgroup1");
  EXPECT_EQ(r.memory_peak_bytes, 1u << 20);
  EXPECT_EQ(r.cpu_time_ms, 7u);
  EXPECT_TRUE(r.warm);
}

TEST(FinishCall, AnAnswerIsTheCallsStatusAndValueAndTheSessionLasts) {
  Happened h = InSession(RunEnd::kCallDone);
  h.answer_status = 1;
  h.value = "42";
  Result<CallResult> call = Finish(std::move(h));
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->run.outcome, Outcome::kExited);
  EXPECT_EQ(call->run.exit_code, 1);
  EXPECT_EQ(call->value, "42");
  EXPECT_EQ(call->ended, SessionEnd::kNone);
}

TEST(FinishCall, AnAnswerAfterAnInterruptIsTheDeadlineOrTheCancel) {
  for (const RunEnd why : {RunEnd::kTimedOut, RunEnd::kCancelled}) {
    Happened h = InSession(RunEnd::kCallDone);
    h.interrupted = why;
    h.answer_status = 1;  // KeyboardInterrupt
    h.value = "1";
    Result<CallResult> call = Finish(std::move(h));
    ASSERT_TRUE(call.ok());
    EXPECT_EQ(call->run.outcome,
              why == RunEnd::kTimedOut ? Outcome::kTimedOut : Outcome::kCancelled);
    EXPECT_EQ(call->run.exit_code, -1);
    EXPECT_EQ(call->value, "1");
    EXPECT_EQ(call->ended, SessionEnd::kNone);
  }
}

TEST(FinishCall, AKillEndsTheSessionSayingWhy) {
  Result<CallResult> timed_out = Finish(InSession(RunEnd::kTimedOut));
  ASSERT_TRUE(timed_out.ok());
  EXPECT_EQ(timed_out->run.outcome, Outcome::kTimedOut);
  EXPECT_EQ(timed_out->ended, SessionEnd::kTimeout);
  EXPECT_EQ(Finish(InSession(RunEnd::kCancelled))->ended, SessionEnd::kCancelled);

  Result<CallResult> broken = Finish(InSession(RunEnd::kChannelBroken));
  ASSERT_TRUE(broken.ok());
  EXPECT_EQ(broken->run.outcome, Outcome::kKilled);
  EXPECT_EQ(broken->run.exit_code, 137);
  EXPECT_EQ(broken->run.signal, SIGKILL);
  EXPECT_EQ(broken->ended, SessionEnd::kChannelBroken);

  // Killed from outside, a session's call has a result: the interpreter was killed.
  Result<CallResult> lost = Finish(InSession(RunEnd::kInitLost, SIGKILL));
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(lost->run.outcome, Outcome::kKilled);
  EXPECT_EQ(lost->run.exit_code, 137);
  EXPECT_FALSE(lost->run.oom_killed);
  EXPECT_EQ(lost->ended, SessionEnd::kKilled);
}

TEST(FinishCall, AnInterpreterGoneAfterAnOomEventEndsTheSessionForMemory) {
  // The OOM kill came in an earlier call: it still tells why the interpreter is gone.
  Happened exited = InSession(RunEnd::kExited, SIGKILL);
  exited.oom_kill_before = true;
  Result<CallResult> call = Finish(std::move(exited));
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->run.outcome, Outcome::kOomKilled);
  EXPECT_EQ(call->run.exit_code, 137);
  EXPECT_TRUE(call->run.oom_killed);
  EXPECT_EQ(call->ended, SessionEnd::kOutOfMemory);

  Happened lost = InSession(RunEnd::kInitLost);
  lost.oom_kill = true;
  EXPECT_EQ(Finish(std::move(lost))->ended, SessionEnd::kOutOfMemory);

  // Without one, the interpreter exited on its own.
  Result<CallResult> own = Finish(InSession(RunEnd::kExited, Exit(0)));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->run.outcome, Outcome::kExited);
  EXPECT_EQ(own->ended, SessionEnd::kExited);
}

}  // namespace
}  // namespace mcpexec::sandbox
