// Resource limits per run, attacked the way a hostile program would: a memory bomb, a fork
// bomb, a CPU spin, a workspace fill, and a server killed mid-run. Every test reads the backend
// the run reports (limits_backend) and asserts what that backend promises: cgroup v2 and v1
// kill a memory bomb and hold pids and cpu; the rlimit backend (the unprivileged user on a host
// without delegated cgroups) stops the bomb at its address-space backstop and holds processes
// with RLIMIT_NPROC.
//
// Runs directly on a cgroup v1 host (root: cgroup1, the test user: rlimit) and inside the
// cgroup v2 guest of tools/vm-run (tests/vm/cgroup2), as root and as a user owning a delegated
// subtree; `--gtest_filter=*Limits*` selects these.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "../support/host_processes.h"
#include "../support/mcp_stdio.h"
#include "../support/sandbox_test.h"
#include "base/sys.h"
#include "config/config.h"
#include "exec/exec.h"
#include "limits/limits.h"
#include "sandbox/plan.h"
#include "sandbox/sandbox.h"
#include "sandbox/teardown.h"

namespace mcpexec::testing {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1ull << 20;

class LimitsTest : public SandboxTest {
 protected:
  static bool IsCgroup(const Outcome& r) {
    const std::string b = r.json.value("limits_backend", "");
    return b == "cgroup2" || b == "cgroup1";
  }
};

// The configuration the test process itself would run with: the defaults plus MCP_EXEC_* from
// its environment (tools/vm/delegate sets MCP_EXEC_CGROUP there).
config::Config TestConfig() {
  config::Config c = config::Defaults(HostSetup::Get().Rootfs());
  auto applied = config::ApplyEnv(config::ProcessEnv(), c);
  EXPECT_TRUE(applied.ok()) << applied.error().message;
  return c;
}

// Run cgroups named `prefix`* in the backend's directories.
std::vector<std::string> RunCgroups(const std::string& location, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream dirs(location);
  std::string dir;
  while (dirs >> dir) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) continue;
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).starts_with(prefix)) found.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  return found;
}

// Live processes whose name (comm) is `name`.
size_t ProcessesNamed(const std::string& name) {
  size_t count = 0;
  const std::string needle = "(" + name + ") ";
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  while (dirent* e = readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto stat = ReadFile(std::string("/proc/") + e->d_name + "/stat");
    if (!stat.ok()) continue;
    const size_t at = stat->find(needle);
    // Zombies (state Z) are already dead.
    if (at != std::string::npos && stat->compare(at + needle.size(), 1, "Z") != 0) ++count;
  }
  closedir(proc);
  return count;
}

// How long the host takes to fork and exec /bin/true: a responsiveness probe.
milliseconds HostSpawnLatency() {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/true", "true", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
}

TEST_P(LimitsTest, MemoryBombIsStopped) {
  const Outcome r = runner_.RunCode(R"py(
chunks = []
while True:
    chunks.append(b"x" * (16 << 20))
)py",
                                    {"--timeout", "60"});
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  if (IsCgroup(r)) {
    EXPECT_EQ(r.json["oom_killed"], true) << r.Describe();
    EXPECT_EQ(r.json["exit_code"], 137) << r.Describe();
    EXPECT_EQ(r.json.value("signal", ""), "SIGKILL") << r.Describe();
    // It reached the limit (256 MiB by default) and not beyond.
    ASSERT_TRUE(r.json["memory_peak_bytes"].is_number()) << r.Describe();
    EXPECT_GE(r.json["memory_peak_bytes"].get<uint64_t>(), 200 * kMiB) << r.Describe();
    EXPECT_LE(r.json["memory_peak_bytes"].get<uint64_t>(), 256 * kMiB) << r.Describe();
  } else {
    ASSERT_EQ(r.json["limits_backend"], "rlimit") << r.Describe();
    EXPECT_EQ(r.json["oom_killed"], false);
    EXPECT_EQ(r.json["exit_code"], 1) << r.Describe();
    EXPECT_THAT(r.json["stderr"].get<std::string>(), HasSubstr("MemoryError"));
  }
}

TEST_P(LimitsTest, MemoryLimitFollowsTheConfiguration) {
  const Outcome r = runner_.RunCode("x = b'x' * (100 << 20)\nprint(len(x))",
                                    {"--memory-max", "64m"});
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  if (IsCgroup(r)) {
    EXPECT_EQ(r.json["oom_killed"], true) << r.Describe();
    EXPECT_EQ(r.json["exit_code"], 137) << r.Describe();
  } else {
    // The rlimit backend has no memory limit: the degradation it reports.
    EXPECT_EQ(r.json["exit_code"], 0) << r.Describe();
  }
}

TEST_P(LimitsTest, MemoryPeakIsPlausible) {
  const Outcome r = runner_.RunCode(R"py(
x = b"x" * (100 << 20)
print(len(x))
)py");
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  EXPECT_EQ(r.json["exit_code"], 0) << r.Describe();
  EXPECT_EQ(r.json["oom_killed"], false);
  ASSERT_TRUE(r.json["memory_peak_bytes"].is_number()) << r.Describe();
  const uint64_t peak = r.json["memory_peak_bytes"].get<uint64_t>();
  // The warm engines report the peak less what the sandbox held when it became ready, and some
  // of that (the agent's buffers, page cache) can be freed while the program runs: a pool run
  // reported 100 MiB less 40 KiB.
  EXPECT_GE(peak, 96 * kMiB) << r.Describe();
  EXPECT_LE(peak, 200 * kMiB) << r.Describe();
  ASSERT_TRUE(r.json["cpu_time_ms"].is_number()) << r.Describe();
}

TEST_P(LimitsTest, ForkBombIsHeldAtThePidsLimit) {
  const Outcome r = runner_.RunCode(R"py(
import os, time, errno, json
made, error = 0, None
for _ in range(1000):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        made += 1
    except OSError as e:
        error = errno.errorcode[e.errno]
        break
print(json.dumps({"made": made, "error": error}))
)py",
                                    {"--pids-max", "40", "--timeout", "60"});
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  const nlohmann::json p = r.ProgramJson();
  ASSERT_TRUE(p.is_object()) << r.Describe();
  // 40 in all: init and the program are two of them.
  EXPECT_EQ(p["made"], 38) << r.Describe();
  EXPECT_EQ(p["error"], "EAGAIN") << r.Describe();
}

TEST_P(LimitsTest, ExponentialForkBombLeavesTheHostResponsive) {
  // Which backend this mode gets: only a cgroup's cpu.max keeps the host's CPUs free.
  const Outcome probe = runner_.RunCode("pass");
  ASSERT_TRUE(IsRunResult(probe)) << probe.Describe();
  const bool cpu_limited = IsCgroup(probe);
  // The bomb names its processes (comm, 15 bytes) so that the host can count them from
  // /proc/PID/stat: reading their cmdline would wait on the mmap lock that every one of their
  // failing forks takes.
  char tag[16];
  std::snprintf(tag, sizeof tag, "fb%08x%04x", static_cast<unsigned>(std::rand()),
                static_cast<unsigned>(getpid() & 0xffff));
  BackgroundRun run = runner_.StartCode(ReplaceAll(R"py(
import os
with open("/proc/self/comm", "w") as f:
    f.write("@TAG@")
while True:
    try:
        os.fork()
    except OSError:
        pass
)py",
                                                   "@TAG@", tag),
                                        {"--timeout", "60"});
  // Until the bomb has filled most of its pids (seconds under emulation, at once natively).
  size_t most = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (most < limits::kDefaultPidsMax / 2 && std::chrono::steady_clock::now() < give_up) {
    most = std::max(most, ProcessesNamed(tag));
    std::this_thread::sleep_for(milliseconds(50));
  }
  milliseconds worst{0};
  for (int i = 0; i < 10; ++i) {
    worst = std::max(worst, HostSpawnLatency());
    most = std::max(most, ProcessesNamed(tag));
  }
  ASSERT_EQ(kill(run.Pid(), SIGKILL), 0);
  (void)run.Wait();
  EXPECT_LE(most, limits::kDefaultPidsMax) << "more processes than pids.max";
  EXPECT_GE(most, limits::kDefaultPidsMax / 2) << "positive control: the bomb ran";
  if (cpu_limited) {
    EXPECT_LT(worst, milliseconds(1000)) << "the host stalled while the bomb ran";
  }
  size_t left = ProcessesNamed(tag);
  for (int i = 0; i < 100 && left > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    left = ProcessesNamed(tag);
  }
  EXPECT_EQ(left, 0u) << "bomb processes outlived mcp-exec";
}

TEST_P(LimitsTest, CpuSpinGetsOnlyItsShare) {
  const Outcome r = runner_.RunCode(R"py(
import threading, time, resource, json
def spin():
    end = time.monotonic() + 2
    while time.monotonic() < end:
        pass
threads = [threading.Thread(target=spin) for _ in range(2)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"cpu_limit": resource.getrlimit(resource.RLIMIT_CPU)}))
)py",
                                    {"--cpus", "0.5", "--max-timeout-s", "100"});
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  ASSERT_EQ(r.json["exit_code"], 0) << r.Describe();
  ASSERT_TRUE(r.json["cpu_time_ms"].is_number()) << r.Describe();
  const auto cpu_ms = r.json["cpu_time_ms"].get<int64_t>();
  const auto wall_ms = r.json["duration_ms"].get<int64_t>();
  if (IsCgroup(r)) {
    // Two spinning threads would use 2 CPUs; cpu.max allows half of one. The cap is the point;
    // the floor only tells a quota far below the one asked (0.1 CPU would give wall / 10) from
    // a host too busy to give the run its whole share (seen at load 11 on 2 cores: wall / 5).
    EXPECT_LE(cpu_ms, wall_ms / 2 + 300) << r.Describe();
    EXPECT_GE(cpu_ms, wall_ms / 8) << r.Describe();
  } else {
    // The rlimit backend cannot share CPU; it bounds CPU time: 0.5 CPU x 100 s.
    const nlohmann::json p = r.ProgramJson();
    EXPECT_EQ(p["cpu_limit"], nlohmann::json::array({50, 51})) << r.Describe();
  }
}

TEST_P(LimitsTest, FillingTheWorkspaceGivesEnospc) {
  const Outcome r = runner_.RunCode(R"py(
import errno, json
written, error = 0, None
try:
    with open("/tmp/fill", "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
            f.flush()
            written += 1
except OSError as e:
    error = errno.errorcode[e.errno]
print(json.dumps({"written_mib": written, "error": error}))
)py");
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  const nlohmann::json p = r.ProgramJson();
  EXPECT_EQ(p["error"], "ENOSPC") << r.Describe();
  EXPECT_GE(p["written_mib"].get<int>(), 60) << r.Describe();
  EXPECT_EQ(r.json["oom_killed"], false) << r.Describe();
}

TEST_P(LimitsTest, AutoNeverChoosesDegradedLimits) {
  LaunchOptions options;
  options.env = {"MCP_EXEC_LIMITS=auto"};
  const Outcome r = runner_.RunCode("print(1)", {}, options);
  if (r.exit_status == 125) {
    // Failing closed, with the fix.
    EXPECT_THAT(r.err, HasSubstr("no cgroup backend is usable")) << r.Describe();
    EXPECT_THAT(r.err, HasSubstr("Delegate=yes")) << r.Describe();
    EXPECT_THAT(r.err, HasSubstr("MCP_EXEC_LIMITS=rlimit")) << r.Describe();
    EXPECT_NE(GetParam(), RunMode::kCaller) << "the caller has a cgroup backend in every test run";
  } else {
    ASSERT_TRUE(IsRunResult(r)) << r.Describe();
    EXPECT_TRUE(IsCgroup(r)) << r.Describe();
  }
}

TEST_P(LimitsTest, AnUnusableBackendIsAnErrorNotAFallback) {
  LaunchOptions options;
  const bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
  // The backend this host cannot give: v1 on a pure v2 host, v2 where v2 has no controllers.
  options.env = {v2 ? "MCP_EXEC_LIMITS=cgroup1" : "MCP_EXEC_LIMITS=cgroup2"};
  const Outcome r = runner_.RunCode("print(1)", {}, options);
  EXPECT_EQ(r.exit_status, 125) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr(v2 ? "cgroup v1 limits" : "cgroup v2 limits")) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("not usable")) << r.Describe();
}

TEST_P(LimitsTest, RlimitBackendIsReportedAsSuch) {
  LaunchOptions options;
  options.env = {"MCP_EXEC_LIMITS=rlimit"};
  const Outcome r = runner_.RunCode(R"py(
import resource, json
print(json.dumps({n: resource.getrlimit(getattr(resource, n)) for n in
                  ["RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CORE"]}))
)py",
                                    {}, options);
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  EXPECT_EQ(r.json["limits_backend"], "rlimit");
  const nlohmann::json p = r.ProgramJson();
  EXPECT_EQ(p["RLIMIT_AS"], nlohmann::json::array({1ull << 30, 1ull << 30})) << r.Describe();
  EXPECT_EQ(p["RLIMIT_NPROC"], nlohmann::json::array({128, 128})) << r.Describe();
  EXPECT_EQ(p["RLIMIT_NOFILE"], nlohmann::json::array({1024, 1024})) << r.Describe();
  EXPECT_EQ(p["RLIMIT_FSIZE"], nlohmann::json::array({64 << 20, 64 << 20})) << r.Describe();
  EXPECT_EQ(p["RLIMIT_CORE"], nlohmann::json::array({0, 0})) << r.Describe();
}

// Under the rlimit backend a session's figures come from its interpreter's /proc/<pid>/status,
// whose first line is the name the program gives itself (issue 23: this one read as 1 TB).
TEST_P(LimitsTest, RlimitSessionFiguresAreNotTheNameTheProgramGivesItself) {
  McpStdioServer server(runner_, {"MCP_EXEC_LIMITS=rlimit", "MCP_EXEC_PRELOAD="});
  ASSERT_EQ(server.Problem(), "");
  const nlohmann::json opened = Structured(server.Call(
      "exec", {{"session", "new"},
               {"code", "import ctypes\n"
                        "ctypes.CDLL(None).prctl(15, b'VmHWM:999999999', 0, 0, 0)  # PR_SET_NAME\n"
                        "open('/proc/self/status').readline().strip()"}}));
  ASSERT_TRUE(opened.contains("session")) << opened;
  EXPECT_EQ(opened["limits_backend"], "rlimit");
  EXPECT_EQ(opened["result"], "'Name:\\tVmHWM:999999999'") << "the name is set: " << opened;
  const nlohmann::json next = Structured(
      server.Call("exec", {{"session", opened["session"]}, {"code", "x = 1"}}));
  ASSERT_TRUE(next["memory_peak_bytes"].is_number()) << next;
  EXPECT_LT(next["memory_peak_bytes"].get<uint64_t>(), 256 * kMiB) << next;
  const nlohmann::json list = Structured(server.Call("session_list", nlohmann::json::object()));
  ASSERT_EQ(list["sessions"].size(), 1u) << list;
  ASSERT_TRUE(list["sessions"][0]["memory_bytes"].is_number()) << list;
  EXPECT_LT(list["sessions"][0]["memory_bytes"].get<uint64_t>(), 256 * kMiB) << list;
}

TEST_P(LimitsTest, KilledServerLeavesNothingAndItsCgroupsGoAtTheNextStart) {
  const std::string marker = NewMarker("killed-server");
  const std::string program = ReplaceAll(
      "import subprocess, time\n"
      "subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(600)', '@M@'])\n"
      "time.sleep(600)\n",
      "@M@", marker);
  const nlohmann::json call = {
      {"jsonrpc", "2.0"},
      {"id", 2},
      {"method", "tools/call"},
      {"params", {{"name", "exec"}, {"arguments", {{"code", program}, {"timeout_s", 120}}}}}};
  const std::string input =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n" +
      call.dump() + "\n";
  // stdin stays open: at its end the server would cancel the call itself.
  LaunchOptions options = WithInput(input);
  options.hold_stdin_open = true;
  BackgroundRun server = runner_.StartCommand(
      {runner_.Binary(), "serve", "--rootfs", runner_.Rootfs(), "--max-timeout-s", "300"},
      options);
  // In the emulated cgroup v2 guest (tests/vm/cgroup2) a cold run can take over 10 s to start.
  const std::vector<HostProcess> running = WaitForProcesses(marker, 1, milliseconds(60000));
  ASSERT_EQ(running.size(), 1u) << "positive control: the run started";

  // The backend this server uses, as the test process sees it.
  const std::string prefix = "run-" + std::to_string(server.Pid()) + "-";
  std::string location;
  if (GetParam() == RunMode::kCaller) {
    auto plan = exec::PrepareSandboxes(TestConfig());
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    location = (*plan)->Limits().Location();
  }
  const bool cgroups = !location.empty() && !RunCgroups(location, prefix).empty();
  if (GetParam() == RunMode::kCaller) {
    ASSERT_TRUE(cgroups) << "no run cgroup " << prefix << "* in " << location;
  }

  ASSERT_EQ(kill(server.Pid(), SIGKILL), 0);
  const Outcome r = server.Wait();
  EXPECT_EQ(r.term_signal, SIGKILL);
  const std::vector<HostProcess> left = WaitForNoProcesses(marker, milliseconds(3000));
  EXPECT_THAT(left, ::testing::IsEmpty())
      << "still running after the server was killed: " << DescribeProcesses(left);
  KillAll(left);
  if (!cgroups) return;

  // Nothing removed the dead server's cgroups; the next start does.
  EXPECT_FALSE(RunCgroups(location, prefix).empty());
  const Outcome next = runner_.RunCode("pass");
  ASSERT_TRUE(IsRunResult(next)) << next.Describe();
  EXPECT_THAT(RunCgroups(location, prefix), ::testing::IsEmpty());
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(LimitsTest);

// In-process, as the test process: the cgroups of 100 runs are all removed.
TEST(LimitsLibraryTest, NoCgroupIsLeftAfterManyRuns) {
  ASSERT_EQ(HostSetup::Get().Problem(RunMode::kCaller), "");
  const config::Config config = TestConfig();
  auto plan = exec::PrepareSandboxes(config);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const limits::LimitsBackend& backend = (*plan)->Limits();
  ASSERT_NE(backend.Kind(), limits::Backend::kRlimit) << "the caller has a cgroup backend";
  const std::string prefix = "run-" + std::to_string(getpid()) + "-";
  const int runs = [] {
    const char* n = std::getenv("MCPEXEC_TEST_LEAK_RUNS");
    return n != nullptr ? std::atoi(n) : 100;
  }();
  for (int i = 0; i < runs; ++i) {
    auto result = exec::Execute(*engine::MakeColdEngine(*plan), config,
                                *exec::ValidateRequest(config, {"pass", "", 10}));
    ASSERT_TRUE(result.ok()) << result.error().message;
    ASSERT_EQ(result->exit_code, 0);
    ASSERT_EQ(result->limits_backend, limits::BackendName(backend.Kind()));
    // Each run's cgroup goes after its answer, with at most kMaxPending waiting.
    ASSERT_LE(sandbox::Teardown::Shared().GetStats().pending, sandbox::Teardown::kMaxPending);
  }
  sandbox::Teardown::Shared().Drain();
  EXPECT_THAT(RunCgroups(backend.Location(), prefix), ::testing::IsEmpty());
}

// Only in the delegated cgroup v2 guest run (tests/vm/cgroup2 selects it; the host's run
// excludes it): a user owning a delegated subtree, as systemd's Delegate=yes gives one, with
// MCP_EXEC_CGROUP naming a child of it for the other tests. Here mcp-exec starts alone in a
// cgroup of its own without MCP_EXEC_CGROUP, as a service with Delegate=yes does: it moves
// itself into a "supervisor" leaf and runs its sandboxes in siblings of it.
TEST(Cgroup2DelegationTest, AloneInItsCgroupItUsesASupervisorLeaf) {
  ASSERT_NE(geteuid(), 0u) << "runs as the delegated user";
  const char* runs = std::getenv("MCP_EXEC_CGROUP");
  ASSERT_NE(runs, nullptr) << "tests/vm/cgroup2 sets MCP_EXEC_CGROUP";
  const std::string delegated = std::string(runs).substr(0, std::string(runs).rfind('/'));
  const std::string own = delegated + "/solo-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(own.c_str(), 0755), 0) << own << ": " << strerror(errno);

  const SandboxRunner runner(RunMode::kCaller);
  const Outcome r = runner.RunCommand(
      {"/bin/sh", "-c",
       "echo $$ > \"$1/cgroup.procs\" && exec env -u MCP_EXEC_CGROUP \"$2\" run --rootfs \"$3\" "
       "--code 'x = b\"x\" * (300 << 20)'",
       "sh", own, runner.Binary(), runner.Rootfs()});
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  EXPECT_EQ(r.json["limits_backend"], "cgroup2");
  EXPECT_EQ(r.json["oom_killed"], true) << r.Describe();

  auto enabled = ReadFile(own + "/cgroup.subtree_control");
  ASSERT_TRUE(enabled.ok());
  EXPECT_THAT(*enabled, HasSubstr("memory"));
  EXPECT_THAT(*enabled, HasSubstr("pids"));
  EXPECT_EQ(access((own + "/supervisor").c_str(), F_OK), 0) << "no supervisor leaf";
  EXPECT_THAT(RunCgroups(own, "run-"), ::testing::IsEmpty());
  EXPECT_EQ(rmdir((own + "/supervisor").c_str()), 0) << strerror(errno);
  EXPECT_EQ(rmdir(own.c_str()), 0) << strerror(errno);
}

}  // namespace
}  // namespace mcpexec::testing
