// Runs of one server against each other (XRUN-01 to XRUN-03), in the engine of the suite
// (MCP_EXEC_TEST_ENGINE): what a run leaves behind for the next, two runs at the same time, and
// a run against the sandboxes the pool keeps ready. Each case starts `mcp-exec serve` on
// Streamable HTTP with a pool of two and checks, besides what the programs saw, which sandbox
// served each run: in the pool every run must have gone through a prepared sandbox (its
// interpreter, matched by PID namespace and start time, was waiting on the host before the
// call), so that the pool, not a cold fallback, is what is tested.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include "../support/host_processes.h"
#include "adversarial_test.h"
#include "cross_run.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// A run that imports numpy, pandas and matplotlib.pyplot took about 20 ms warm (the preloads)
// and 1 s cold on the 2-core development machine.
constexpr milliseconds kWarmRunBound(500);

// Pids the runs signal: every pid when the host's pid_max is small, else the low ones and a
// window around the newest (where the server's and the sandboxes' are).
json ScanRanges() {
  const long pid_max = std::stol(ReadHostFile("/proc/sys/kernel/pid_max"));
  if (pid_max <= 65536) return json::array({json::array({1, pid_max - 1})});
  const long last = std::stol(ReadHostFile("/proc/sys/kernel/ns_last_pid"));
  return json::array({json::array({1, 4096}), json::array({std::max(4097L, last - 2000),
                                                           std::min(pid_max - 1, last + 20000)})});
}

// The server's pid, the zygote's and those of its waiting sandboxes' processes.
json HostPids(pid_t server, const std::vector<WaitingSandbox>& waiting) {
  json pids = json::array({server});
  for (pid_t pid : ZygotePids(server)) pids.push_back(pid);
  for (const WaitingSandbox& w : waiting) {
    pids.push_back(w.init);
    pids.push_back(w.interpreter);
  }
  return pids;
}

// XRUN-01: a run leaves files (/tmp, /tmp/outputs, /dev/shm), a POSIX shared memory object,
// variables (os.environ, os.putenv), sys.modules, builtins and module attributes, a SysV segment
// and a setsid daemon on an abstract socket; three later runs of the same server find none of
// them. In the pool the later runs include one in a sandbox made before the first ran and one
// made after it ended: state in a waiting sandbox is as isolated as state in a new one.
TEST_P(Adversarial, XRUN_01_NothingOfARunReachesTheNextRun) {
  Server server(runner_);
  ASSERT_EQ(server.Problem(), "");
  const std::string token = RandomToken();
  const std::string marker = NewMarker("leftover");
  std::random_device random;
  const int key = static_cast<int>(0x6d640000u | (random() & 0xffffu));
  const json params = {{"token", token}, {"marker", marker}, {"shm_key", key}};

  const std::vector<WaitingSandbox> before = ExpectOnlyThePoolLeft(server.Pid());
  json leave_params = params;
  leave_params["phase"] = "leave";
  const json left_reply = server.Exec("xrun01_leftovers", leave_params);
  const unsigned long long left_at = NowTicks();
  json left = ExpectLeftovers(left_reply, token);

  // The run's result came back: its PID namespace, daemon included, is gone.
  const std::vector<HostProcess> daemons = FindProcesses(marker);
  EXPECT_THAT(daemons, ::testing::IsEmpty())
      << "the daemon outlived its run: " << DescribeProcesses(daemons);
  KillAll(daemons);
  ExpectTheRunGoneFrom(left.value("pid namespace", ""), left_at);
  if (InPool()) {
    EXPECT_NE(ServedBy(before, left), nullptr) << "the run did not go through the pool";
  }

  bool made_before = false, made_after = false;
  json look_params = params;
  look_params["phase"] = "look";
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("look " + std::to_string(i));
    const std::vector<WaitingSandbox> waiting = ExpectOnlyThePoolLeft(server.Pid());
    const json reply = server.Exec("xrun01_leftovers", look_params);
    json o = ExpectNoLeftovers(reply, token);
    // A namespace's inode number is reused once it is freed: the start time tells them apart.
    EXPECT_NE(json({o["pid namespace"], o["start ticks"]}),
              json({left["pid namespace"], left["start ticks"]}))
        << "the same sandbox as the first run";
    if (InPool()) {
      EXPECT_GT(o.value("frozen objects", 0), 0) << "not a warm interpreter";
      const WaitingSandbox* sandbox = ServedBy(waiting, o);
      EXPECT_NE(sandbox, nullptr) << "the run did not go through a waiting sandbox";
      made_before |= sandbox != nullptr && ServedBy(before, o) != nullptr;
    } else {
      EXPECT_EQ(o["frozen objects"], 0);
    }
    made_after |= o.value("start ticks", 0ull) > left_at;
  }
  EXPECT_TRUE(made_after) << "no run was in a sandbox made after the first run ended";
  if (InPool()) {
    EXPECT_TRUE(made_before) << "no run was in a sandbox made before the first ran";
  }
}

// XRUN-02: two runs in flight at once, each listening on an abstract socket with files in /tmp
// and /dev/shm and a SysV segment, look for the other's and SIGKILL every pid not their own.
TEST_P(Adversarial, XRUN_02_ConcurrentRunsCannotSeeOrSignalEachOther) {
  Server server(runner_);
  ASSERT_EQ(server.Problem(), "");
  const std::vector<WaitingSandbox> waiting = ExpectOnlyThePoolLeft(server.Pid());
  std::random_device random;
  const int base = static_cast<int>(0x6d650000u | (random() & 0xfff0u));
  const std::string token = RandomToken();
  const json params = {{"token", token},
                       {"shm_keys", {{"a", base}, {"b", base + 1}}},
                       {"window", 2},
                       {"host_pids", HostPids(server.Pid(), waiting)},
                       {"scan", ScanRanges()}};
  json replies[2];
  std::thread other([&] {
    json p = params;
    p["self"] = "b";
    p["other"] = "a";
    replies[1] = server.Exec("xrun02_concurrent", p);
  });
  json p = params;
  p["self"] = "a";
  p["other"] = "b";
  replies[0] = server.Exec("xrun02_concurrent", p);
  other.join();

  json a = ContainedOverMcp(replies[0]);
  json b = ContainedOverMcp(replies[1]);
  for (auto [looker, other] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    json& o = *looker;
    // Positive control of the timing: each looked while the other was up.
    const bool overlapped = other->value("up at", 1e18) < o.value("looked from", 0.0) &&
                            o.value("looked until", 1e18) < other->value("down at", 0.0);
    ASSERT_TRUE(overlapped) << "the runs were not up at the same time:\n"
                            << a.dump() << "\n"
                            << b.dump();
    ExpectEach(o, {"pids", "pids after"}, json({1, 2}));
    ExpectEach(o, {"shmget own key", "connect own socket", "connect own socket at the end"}, "ok");
    EXPECT_EQ(o["connect other's socket"], "ECONNREFUSED");
    EXPECT_EQ(o["shmget other's key"], "ENOENT");
    ExpectEach(o, {"signal 0 to host pids", "SIGKILL to pids not its own"}, json({"ESRCH"}));
    EXPECT_EQ(o["/proc/sysvipc/shm rows"], 1) << "its own segment only";
  }
  for (auto [o, other] : {std::pair{&a, "b"}, std::pair{&b, "a"}}) {
    ExpectEach(
        *o, {"read /tmp/xrun-" + token + "-" + other, "read /dev/shm/xrun-" + token + "-" + other},
        "ENOENT");
  }
  EXPECT_NE(a["pid namespace"], b["pid namespace"]);
  if (InPool()) {
    const WaitingSandbox* served_a = ServedBy(waiting, a);
    const WaitingSandbox* served_b = ServedBy(waiting, b);
    EXPECT_NE(served_a, nullptr) << "run a did not go through the pool";
    EXPECT_NE(served_b, nullptr) << "run b did not go through the pool";
    EXPECT_NE(served_a, served_b);
  }
  ExpectOnlyThePoolLeft(server.Pid());
}

// XRUN-03: with two sandboxes waiting, a run looks for them (python processes in /proc, their
// host pids by signal, pidfd, ptrace and process_vm_readv, the start socket, /dev/shm) and
// kills every process it can (kill(-1, SIGKILL)). The sandbox that waited through it is
// unchanged on the host and serves the next run warm, as does the one made meanwhile. In zygote
// the zygote's own pids are among those attacked, and it is unchanged too. In cold there is no
// pool: the run finds as little, and the host checks that nothing waits.
TEST_P(Adversarial, XRUN_03_ARunCannotReachThePoolsWaitingSandboxes) {
  Server server(runner_);
  ASSERT_EQ(server.Problem(), "");
  const std::vector<WaitingSandbox> before = ExpectOnlyThePoolLeft(server.Pid());
  const std::string token = RandomToken();
  const json hunt = server.Exec("xrun03_pool_hunt", {{"phase", "hunt"},
                                                     {"token", token},
                                                     {"host_pids", HostPids(server.Pid(), before)},
                                                     {"scan", ScanRanges()}});
  json o = ContainedOverMcp(hunt);
  ExpectEach(o, {"pids", "pids after kill(-1)"}, json({1, 2}));
  EXPECT_EQ(o["python processes"], json({2}));
  EXPECT_EQ(o["/proc/1/fd"], "EACCES");  // init is not dumpable
  ExpectEach(o, {"signal 0 to host pids", "pidfd_open to host pids"}, json({"ESRCH"}));
  ExpectEach(o, {"ptrace attach to host pids", "process_vm_readv to host pids"}, json({"EPERM"}));
  EXPECT_EQ(o["pids answering in the scan"], json::array());
  EXPECT_EQ(o["fds"], json({0, 1, 2}));
  ExpectEach(
      o, {"fstat fd 3", "fstat fd 4", "fstat fd 5", "send on fd 3", "send on fd 4", "send on fd 5"},
      "EBADF");
  EXPECT_EQ(o["/proc/net/unix rows"], 0);
  EXPECT_EQ(o["/dev/shm"], json::array());
  EXPECT_EQ(o["/dev/shm and /tmp are one mount"], false);
  EXPECT_EQ(o["list /proc/<host pid>/root/dev/shm"], json({"ENOENT"}));
  EXPECT_EQ(o["kill(-1, SIGKILL)"], "ok");
  EXPECT_EQ(o["own child"], "SIGKILL") << "positive control: kill(-1) does work inside";

  // The sandbox that waited through the hunt: the same processes, still waiting.
  const WaitingSandbox* hunter = ServedBy(before, o);
  std::vector<WaitingSandbox> untouched;
  for (const WaitingSandbox& w : before) {
    if (&w != hunter) untouched.push_back(w);
  }
  if (InPool()) {
    ASSERT_NE(hunter, nullptr) << "the hunt did not go through the pool";
    ASSERT_EQ(untouched.size(), 1u);
  } else {
    EXPECT_THAT(before, ::testing::IsEmpty());
    EXPECT_EQ(o["frozen objects"], 0);
  }
  for (const WaitingSandbox& w : untouched) {
    EXPECT_NE(StartTicks(w.init), 0u) << "the waiting sandbox's init is gone";
    EXPECT_EQ(StartTicks(w.interpreter), w.start_ticks)
        << "the waiting interpreter is gone or was replaced";
    EXPECT_TRUE(WaitsOnStartSocket(w.interpreter)) << "the waiting interpreter no longer waits";
    EXPECT_EQ(ChildrenOf(w.init), std::vector<pid_t>{w.interpreter});
  }
  if (InZygote()) {
    EXPECT_EQ(WaitForZygote(server.Pid()).size(), 2u)
        << "the zygote is gone or was replaced; the server's processes:"
        << DescribePids(Descendants(server.Pid()));
  }

  // The next two runs: the one that waited through the hunt, then the one made meanwhile.
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("run " + std::to_string(i) + " after the hunt");
    const std::vector<WaitingSandbox> waiting = ExpectOnlyThePoolLeft(server.Pid());
    const json reply =
        server.Exec("xrun03_pool_hunt", {{"phase", "next"},
                                         {"token", token},
                                         {"modules", {"numpy", "pandas", "matplotlib.pyplot"}}});
    json next = ContainedOverMcp(reply);
    EXPECT_EQ(next["read /dev/shm/hunt-" + token], "ENOENT");
    if (!InPool()) continue;
    EXPECT_GT(next.value("frozen objects", 0), 0) << "not a warm interpreter";
    EXPECT_LT(Structured(reply).value("duration_ms", 1 << 30), kWarmRunBound.count())
        << "not a warm start";
    const WaitingSandbox* served = ServedBy(waiting, next);
    EXPECT_NE(served, nullptr) << "the run did not go through a waiting sandbox";
    if (i == 0 && !untouched.empty()) {
      EXPECT_TRUE(untouched[0].Served(next)) << "not served by the sandbox that waited";
    }
  }
}

}  // namespace
}  // namespace mcpexec::testing
