// Exhaustion and lifetime (catalogue RES-04 to RES-11, and ADV-19): the run ends when its time
// is up whatever the program does, its output and workspace are capped, nothing it starts
// outlives it, its signals stay inside, and its rlimits are its own, not the server's. The fork
// bomb and the memory bomb (RES-01 to RES-03) belong to the limits backend's tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "../support/host_processes.h"
#include "adversarial_test.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

void ExpectKilledAtTimeout(const Outcome& r) {
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["timed_out"], true) << r.Describe();
  EXPECT_EQ(r.json["exit_code"], -1);
  EXPECT_EQ(r.exit_status, 124);
  EXPECT_LT(r.elapsed, milliseconds(4000)) << r.Describe();
}

TEST_P(Adversarial, RES_04_CpuBurnIsKilledAtTheTimeout) {
  ExpectKilledAtTimeout(RunProbe("res04_cpu_burn", json::object(), {"--timeout", "1"}));
}

TEST_P(Adversarial, RES_05_BlockedProgramIsKilledAtTheTimeout) {
  ExpectKilledAtTimeout(RunProbe("res05_blocked", json::object(), {"--timeout", "1"}));
}

TEST_P(Adversarial, RES_06_WorkspaceIsSizeCapped) {
  json o = Contained("res06_disk_fill", json::object(), {"--workspace-bytes", "4m"});
  EXPECT_EQ(o["size"], 4 << 20);
  EXPECT_EQ(o["write"], json("ENOSPC"));
  EXPECT_LE(o.value("written", -1L), 4 << 20);
}

// Empty files cost no blocks: without nr_inodes= a size-capped tmpfs still takes millions of
// them, each pinning kernel memory outside the workspace's size.
TEST_P(Adversarial, RES_06_WorkspaceInodesAreCapped) {
  json o = Contained("res06_inodes", {{"cap", 131072}}, {"--timeout", "60"});
  for (const char* top : {"/tmp", "/dev/shm"}) {
    EXPECT_LE(o.value(std::string(top) + " inodes", -1L), 131072) << top;
    EXPECT_EQ(o[std::string(top) + " create"], json("ENOSPC")) << top;
  }
}

TEST_P(Adversarial, RES_07_OutputFloodOnBothStreamsIsCapped) {
  const Outcome r = RunProbe("res07_output_flood", {{"mib", 16}}, {}, SamplingPeakMemory());
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["exit_code"], 0) << r.Describe();
  EXPECT_EQ(r.json["truncated"], true);
  const size_t kept =
      r.json["stdout"].get<std::string>().size() + r.json["stderr"].get<std::string>().size();
  // 1 MiB of raw output at most; each invalid byte becomes U+FFFD (3 bytes).
  EXPECT_LE(kept, 3u << 20);
  EXPECT_THAT(r.json["stdout"].get<std::string>(), ::testing::HasSubstr("\xef\xbf\xbd"));
  EXPECT_GT(r.peak_rss_kib, 1024) << "positive control: mcp-exec's memory was sampled";
  EXPECT_LT(r.peak_rss_kib, 128 * 1024) << "the supervisor's memory grew with the output";
  EXPECT_LT(r.elapsed, milliseconds(20000));
}

TEST_P(Adversarial, RES_08_SetsidDaemonDoesNotOutliveTheRun) {
  const std::string marker = NewMarker("daemon");
  json o = Contained("res08_setsid_daemon", {{"marker", marker}});
  EXPECT_EQ(o["daemons running"], 1) << "positive control: the daemon ran";
  const std::vector<HostProcess> left = FindProcesses(marker);
  EXPECT_THAT(left, ::testing::IsEmpty())
      << "left running after the result: " << DescribeProcesses(left);
  KillAll(left);
}

// A host process of the same host uid as the sandbox's user (the one kill(-1) would reach
// without a PID namespace) survives; the supervisor's pid is in the scanned range.
TEST_P(Adversarial, RES_09_SignalsReachOnlyTheSandbox) {
  HostSleeper sleeper(runner_.ExpectedHostUid(), ExpectedHostGid());
  ASSERT_TRUE(sleeper.Alive());
  // Every pid when pid_max is small (the supervisor's may have wrapped around past it), else a
  // window around this process's.
  const int pid_max = std::stoi(ReadHostFile("/proc/sys/kernel/pid_max"));
  const bool all = pid_max <= 65536;
  const int first = all ? 2 : std::max(2, static_cast<int>(getpid()) - 2000);
  const int last = all ? pid_max - 1 : static_cast<int>(getpid()) + 30000;
  BackgroundRun run =
      StartProbe("res09_signals",
                 {{"host_pids", {sleeper.Pid(), getpid(), getppid()}}, {"scan", {first, last}}});
  const pid_t supervisor = run.Pid();
  json o = ContainedReport(run.Wait());
  EXPECT_EQ(o["signal 0 to host pids"], json({"ESRCH"}));
  EXPECT_EQ(o["pids answering in the scan"], json::array());
  EXPECT_EQ(o["kill(-1, SIGKILL)"], json("ok"));
  EXPECT_EQ(o["own child"], json("SIGKILL")) << "positive control: kill(-1) does work inside";
  EXPECT_EQ(o["kill(1, SIGKILL)"], json("ok"));
  EXPECT_EQ(o["init alive"], json("ok")) << "the sandbox's init is immune to its own namespace";
  EXPECT_TRUE(sleeper.Alive()) << "the host process of the sandbox's uid was killed";
  EXPECT_GE(supervisor, first);
  EXPECT_LE(supervisor, last) << "the supervisor's pid was not in the scanned range";
}

TEST_P(Adversarial, RES_10_KillingTheSupervisorKillsTheSandbox) {
  const std::string marker = NewMarker("supervisor");
  BackgroundRun run =
      StartProbe("res10_supervisor_killed", {{"marker", marker}}, {"--timeout", "60"});
  const std::vector<HostProcess> running = WaitForProcesses(marker, 2, milliseconds(5000));
  EXPECT_EQ(running.size(), 2u) << "positive control: " << DescribeProcesses(running);
  ASSERT_EQ(kill(run.Pid(), SIGKILL), 0);
  const Outcome r = run.Wait();
  EXPECT_EQ(r.term_signal, SIGKILL) << r.Describe();
  const std::vector<HostProcess> left = WaitForNoProcesses(marker, milliseconds(2000));
  EXPECT_THAT(left, ::testing::IsEmpty())
      << "still running 2 s after the supervisor died: " << DescribeProcesses(left);
  KillAll(left);
}

TEST_P(Adversarial, RES_11_CoreDumpsAreOff) {
  json o = Contained("res11_core_dump");
  EXPECT_EQ(o["RLIMIT_CORE"], json({0, 0}));
  EXPECT_EQ(o["raise RLIMIT_CORE"], json("EPERM"));  // no CAP_SYS_RESOURCE
  EXPECT_EQ(o["child"], json("SIGABRT"));
  EXPECT_EQ(o["core dumped"], false);
  EXPECT_EQ(o["core files in /tmp"], json::array());
}

// Raises this process's limits for its lifetime where it may (as root: all of them), so that a
// limit the sandbox inherited from the server would show; puts them back when done.
class GenerousServerLimits {
 public:
  GenerousServerLimits() {
    const std::pair<int, rlim_t> wanted[] = {{RLIMIT_RTPRIO, 99},
                                             {RLIMIT_NICE, 40},
                                             {RLIMIT_MEMLOCK, RLIM_INFINITY},
                                             {RLIMIT_MSGQUEUE, 64 << 20},
                                             {RLIMIT_SIGPENDING, 1 << 20}};
    for (const auto& [resource, value] : wanted) {
      struct rlimit old {};
      getrlimit(resource, &old);
      saved_.push_back({resource, old});
      struct rlimit raised = {value, value};
      if (setrlimit(resource, &raised) != 0) {
        // Without CAP_SYS_RESOURCE only the soft limit can go up, to the hard one.
        raised = {old.rlim_max, old.rlim_max};
        setrlimit(resource, &raised);
      }
    }
  }
  ~GenerousServerLimits() {
    for (const auto& [resource, old] : saved_) setrlimit(resource, &old);
  }
  // What the program should get for a limit mcp-exec sets to `value`: that, or the server's hard
  // limit when it is lower.
  static json Expected(int resource, rlim_t value) {
    struct rlimit now {};
    getrlimit(resource, &now);
    const rlim_t v = std::min(value, now.rlim_max);
    return json::array({v, v});
  }

 private:
  std::vector<std::pair<int, struct rlimit>> saved_;
};

// Issue 11, finding 8: RLIMIT_RTPRIO, NICE, MEMLOCK, MSGQUEUE and SIGPENDING came from the
// server. The server here runs with generous ones (RTPRIO 99, NICE 40, ...): the program still
// gets mcp-exec's own, cannot raise them (no CAP_SYS_RESOURCE), and the kernel refuses what
// they bound: SCHED_FIFO and SCHED_RR (EPERM for RTPRIO 0, while SCHED_BATCH passes the filter
// and works), a lower nice value (EACCES), mlock past 64 KiB (ENOMEM), a POSIX message queue
// (EMFILE) and the 1025th queued real-time signal (EAGAIN).
TEST_P(Adversarial, ADV_19_RlimitsAreTheProgramsOwnNotTheServers) {
  GenerousServerLimits server;
  json o = Contained("adv19_rlimits");
  json& limits = o["limits"];
  EXPECT_EQ(limits["Max realtime priority"], json({0, 0}));
  EXPECT_EQ(limits["Max nice priority"], json({0, 0}));
  EXPECT_EQ(limits["Max msgqueue size"], json({0, 0}));
  EXPECT_EQ(limits["Max locked memory"], GenerousServerLimits::Expected(RLIMIT_MEMLOCK, 64 << 10));
  const json pending = GenerousServerLimits::Expected(RLIMIT_SIGPENDING, 1024);
  EXPECT_EQ(limits["Max pending signals"], pending);
  EXPECT_EQ(limits["Max core file size"], json({0, 0}));
  EXPECT_EQ(limits["Max open files"], json({1024, 1024}));
  ExpectEach(o,
             {"raise RLIMIT_RTPRIO", "raise RLIMIT_NICE", "raise RLIMIT_MEMLOCK",
              "raise RLIMIT_MSGQUEUE", "raise RLIMIT_SIGPENDING", "SCHED_FIFO", "SCHED_RR"},
             "EPERM");
  ExpectEach(o, {"SCHED_BATCH", "SCHED_OTHER", "mlock 4 KiB"}, "ok");
  EXPECT_EQ(o["lower the nice value"], json("EACCES"));
  EXPECT_EQ(o["mlock 1 MiB"], json("ENOMEM"));
  EXPECT_EQ(o["mq_open"], json("EMFILE"));
  EXPECT_EQ(o["queued real-time signals"], pending[0]);
  EXPECT_EQ(o["sigqueue after that"], json("EAGAIN"));
}

}  // namespace
}  // namespace mcpexec::testing
