// Exhaustion and lifetime (catalogue RES-04 to RES-11): the run ends when its time is up
// whatever the program does, its output and workspace are capped, nothing it starts outlives
// it, and its signals stay inside. The fork bomb and the memory bomb (RES-01 to RES-03) belong
// to the limits backend's tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

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
  const Outcome r = RunProbe("res07_output_flood", {{"mib", 16}});
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["exit_code"], 0) << r.Describe();
  EXPECT_EQ(r.json["truncated"], true);
  const size_t kept =
      r.json["stdout"].get<std::string>().size() + r.json["stderr"].get<std::string>().size();
  // 1 MiB of raw output at most; each invalid byte becomes U+FFFD (3 bytes).
  EXPECT_LE(kept, 3u << 20);
  EXPECT_THAT(r.json["stdout"].get<std::string>(), ::testing::HasSubstr("\xef\xbf\xbd"));
  EXPECT_LT(r.maxrss_kib, 128 * 1024) << "the supervisor's memory grew with the output";
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
  const int first = std::max(2, static_cast<int>(getpid()) - 2000);
  const int last = static_cast<int>(getpid()) + 30000;
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

}  // namespace
}  // namespace mcpexec::testing
