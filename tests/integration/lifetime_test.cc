// Nothing of a run outlives it: on timeout, on normal exit and when the supervisor is killed,
// every process the program started is gone, double-forked setsid daemons included. Each test
// first sees the processes from the host (positive control), then sees them gone.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/host_processes.h"
#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using std::chrono::milliseconds;

// Python helpers for the programs below: processes that carry the marker as an argument.
constexpr const char* kSpawners = R"py(
import os, subprocess, sys, time
MARKER = "@MARKER@"
SLEEPER = ["/usr/bin/python3", "-c", "import time; time.sleep(600)", MARKER]

def spawn_child():
    return subprocess.Popen(SLEEPER)

def spawn_grandchild():
    # A marked child that starts a marked child of its own.
    return subprocess.Popen(["/usr/bin/python3", "-c",
        "import subprocess, sys, time; subprocess.Popen(sys.argv[1:-1]); time.sleep(600)",
        *SLEEPER, MARKER])

def spawn_daemon():
    # Double fork and setsid: the daemon is reparented to PID 1, in a session of its own.
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(SLEEPER[0], SLEEPER)
        os._exit(0)
    os.waitpid(pid, 0)

def count_marked():
    n = 0
    for p in os.listdir("/proc"):
        try:
            if MARKER in open(f"/proc/{p}/cmdline").read().split("\0"):
                n += 1
        except OSError:
            pass
    return n

def wait_for_marked(count):
    # Returns the count that met the wait: a process in the middle of execve can drop out of
    # a later reading of /proc for a moment.
    deadline = time.time() + 5
    n = count_marked()
    while n < count and time.time() < deadline:
        time.sleep(0.01)
        n = count_marked()
    return n
)py";

// However a test ends, kills what it left behind: the sandbox's init when it is known (its death
// ends the whole namespace), then every marked process.
class LeftoverReaper {
 public:
  explicit LeftoverReaper(std::string marker) : marker_(std::move(marker)) {}
  ~LeftoverReaper() {
    const std::vector<HostProcess> left = FindProcesses(marker_);
    if (left.empty()) return;
    if (init_ > 0) kill(init_, SIGKILL);
    KillAll(left);
  }
  void SetInit(pid_t init) { init_ = init; }

 private:
  std::string marker_;
  pid_t init_ = -1;
};

std::string Program(const std::string& marker, const std::string& body) {
  return ReplaceAll(std::string(kSpawners) + body, "@MARKER@", marker);
}

class LifetimeTest : public SandboxTest {};

TEST_P(LifetimeTest, TimeoutKillsChildrenGrandchildrenAndSetsidDaemons) {
  const std::string marker = NewMarker("timeout");
  const LeftoverReaper reaper(marker);
  BackgroundRun run = runner_.StartCode(Program(marker, R"py(
spawn_child()
spawn_grandchild()
spawn_daemon()
print("marked processes:", wait_for_marked(4), flush=True)
time.sleep(600)
)py"),
                                        {"--timeout", "4"});
  // Positive control: child, grandchild (and its parent), daemon are visible from the host.
  const std::vector<HostProcess> running = WaitForProcesses(marker, 4, milliseconds(3500));
  EXPECT_EQ(running.size(), 4u) << DescribeProcesses(running);

  const Outcome r = run.Wait();
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["timed_out"], true) << r.Describe();
  EXPECT_EQ(r.json["exit_code"], -1);
  EXPECT_EQ(r.exit_status, 124);
  EXPECT_EQ(r.json["stdout"], "marked processes: 4\n");
  EXPECT_GE(r.json["duration_ms"].get<long>(), 3900);
  EXPECT_LT(r.json["duration_ms"].get<long>(), 5500);
  const std::vector<HostProcess> left = FindProcesses(marker);
  EXPECT_THAT(left, ::testing::IsEmpty())
      << "left running after the run returned: " << DescribeProcesses(left);
}

TEST_P(LifetimeTest, NormalExitKillsLeftoverSetsidDaemon) {
  const std::string marker = NewMarker("exit");
  const LeftoverReaper reaper(marker);
  BackgroundRun run = runner_.StartCode(Program(marker, R"py(
spawn_daemon()
print("daemons running:", wait_for_marked(1), flush=True)
time.sleep(1)
)py"));
  const std::vector<HostProcess> running = WaitForProcesses(marker, 1, milliseconds(3000));
  EXPECT_EQ(running.size(), 1u) << "positive control: the daemon was never seen from the host";

  const Outcome r = run.Wait();
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["exit_code"], 0) << r.Describe();
  EXPECT_EQ(r.json["timed_out"], false);
  EXPECT_EQ(r.json["stdout"], "daemons running: 1\n");
  EXPECT_EQ(r.exit_status, 0);
  const std::vector<HostProcess> left = FindProcesses(marker);
  EXPECT_THAT(left, ::testing::IsEmpty())
      << "left running after the run returned: " << DescribeProcesses(left);
}

TEST_P(LifetimeTest, KillingTheSupervisorKillsTheSandbox) {
  const std::string marker = NewMarker("supervisor");
  LeftoverReaper reaper(marker);
  BackgroundRun run = runner_.StartCode(Program(marker, R"py(
spawn_child()
spawn_daemon()
time.sleep(600)
)py"),
                                        {"--timeout", "60"});
  const std::vector<HostProcess> running = WaitForProcesses(marker, 2, milliseconds(3000));
  ASSERT_EQ(running.size(), 2u) << "positive control: " << DescribeProcesses(running);

  // The sandbox's init: mcp-exec's only child.
  const std::vector<pid_t> init = ChildrenOf(run.Pid());
  ASSERT_EQ(init.size(), 1u);
  reaper.SetInit(init[0]);

  ASSERT_EQ(kill(run.Pid(), SIGKILL), 0);
  const Outcome r = run.Wait();
  EXPECT_EQ(r.term_signal, SIGKILL) << r.Describe();
  const std::vector<HostProcess> left = WaitForNoProcesses(marker, milliseconds(2000));
  EXPECT_THAT(left, ::testing::IsEmpty())
      << "still running 2 s after mcp-exec was killed: " << DescribeProcesses(left);
  EXPECT_TRUE(WaitForExit(init[0], milliseconds(500)))
      << "the sandbox's init " << init[0] << " outlived mcp-exec";
}

TEST_P(LifetimeTest, ZeroTimeoutIsClampedToOneSecond) {
  const Outcome r = runner_.RunCode("import time\ntime.sleep(3)\nprint('too late')",
                                    {"--timeout", "0"});
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["timed_out"], true) << r.Describe();
  EXPECT_EQ(r.json["exit_code"], -1);
  EXPECT_EQ(r.json["stdout"], "");
  EXPECT_EQ(r.exit_status, 124);
  EXPECT_GE(r.json["duration_ms"].get<long>(), 950);
  EXPECT_LT(r.json["duration_ms"].get<long>(), 2000);
  EXPECT_LT(r.elapsed, milliseconds(2500));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(LifetimeTest);

}  // namespace
}  // namespace mcpexec::testing
