// Sandboxes prepared ahead against the runs before them (XRUN-04 and XRUN-05), in the engine of
// the suite: the counters a run's figures and its /proc come from, after hostile runs of the
// same server; and the sandboxes a burst of runs has the engine make above MCP_EXEC_POOL_SIZE
// (docs/engine.md, "Fork ahead"). As in cross_run_test.cc, each run of a warm engine is matched
// on the host to the waiting sandbox that served it, so that a case cannot pass on cold
// fallbacks, nor on sandboxes made after the hostile runs only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "../support/host_processes.h"
#include "adversarial_test.h"
#include "cross_run.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20;
constexpr const char* kCounters = "xrun04_counters";

// XRUN-04's hostile run (xrun04_counters.py, "hog"): about 1.3 s of CPU, 290 MiB touched in
// all, 16 MiB of files, 256 KiB over TCP and 256 datagrams.
json HogParams(const std::string& token) {
  return {{"phase", "hog"},  {"token", token},       {"touch_mib", 224}, {"burn_ms", 600},
          {"child_mib", 32}, {"child_burn_ms", 200}, {"file_mib", 8},    {"net_kib", 256}};
}
// What the hog's result shows at least beyond the first run's: the positive control of the
// bounds below, which are well under it.
constexpr uint64_t kHogPeak = 200 * kMiB;
constexpr int64_t kHogCpuMs = 800;

// How far a later run's figures may be above the first run's: noise, far below the hog's.
constexpr uint64_t kPeakMargin = 32 * kMiB;
constexpr int64_t kCpuMarginMs = 200;

// A counter a run can read: observed[key][field] (observed[key] when `field` is empty), and how
// far above the first run's it may be in a later one. `driven`: the hog raises its own by more
// than that (a positive control), so that the bound would catch a count it left behind.
struct Bound {
  const char* key;
  const char* field;
  double margin;
  bool driven;
};

constexpr Bound kBounds[] = {
    // Page faults and CPU in clock ticks (1/100 s), the program's and those of the children it
    // reaped (the hog's child touched 32 MiB: 8192 faults).
    {"self stat", "minflt", 4096, true},
    {"self stat", "majflt", 256, false},
    {"self stat", "cpu ticks", 20, true},
    {"self stat", "cminflt", 1024, true},
    {"self stat", "cmajflt", 256, false},
    {"self stat", "children cpu ticks", 10, true},
    // PID 1's own, and those of the orphans it reaped (the hog's orphan: 32 MiB, 0.2 s).
    {"init stat", "minflt", 256, false},
    {"init stat", "majflt", 64, false},
    {"init stat", "cpu ticks", 10, false},
    {"init stat", "cminflt", 1024, true},
    {"init stat", "cmajflt", 64, false},
    {"init stat", "children cpu ticks", 10, true},
    {"self status", "VmHWM", 32 << 10, true},  // KiB
    {"self status", "VmPeak", 32 << 10, true},
    {"self io", "rchar", 1 << 20, false},
    {"self io", "wchar", 1 << 20, true},
    {"self schedstat ns", "", 200e6, true},
    {"rusage self", "maxrss KiB", 32 << 10, true},
    {"rusage self", "minflt", 4096, true},
    {"rusage self", "cpu ms", 200, true},
    {"rusage children", "maxrss KiB", 32 << 10, true},
    {"rusage children", "minflt", 1024, true},
    {"rusage children", "cpu ms", 100, true},
};
// What a later run must see exactly as the first did: the mounts, the space used on /tmp and
// /dev/shm, its cgroup paths and the loopback's counters (the hog changes the last three).
constexpr const char* kSame[] = {"mounts", "cgroup", "used", "loopback", "snmp"};
constexpr const char* kSameDriven[] = {"used", "loopback", "snmp"};

std::optional<double> Figure(const json& observed, const Bound& b) {
  if (!observed.is_object() || !observed.contains(b.key)) return std::nullopt;
  const json* value = &observed[b.key];
  if (*b.field != '\0') {
    if (!value->is_object() || !value->contains(b.field)) return std::nullopt;
    value = &(*value)[b.field];
  }
  if (!value->is_number()) return std::nullopt;
  return value->get<double>();
}

std::string Name(const Bound& b) {
  return std::string(b.key) + (*b.field != '\0' ? std::string(" ") + b.field : "");
}

// A run's figures (`result`, its structured result, and `observed`, what it read in /proc)
// are its own: no more than the first run's, within the margins.
void ExpectOwnFigures(const json& result, const json& observed, const json& first_result,
                      const json& first) {
  EXPECT_EQ(result.value("oom_killed", true), false) << result.dump(1);
  EXPECT_LE(result.value("memory_peak_bytes", ~0ull),
            first_result.value("memory_peak_bytes", 0ull) + kPeakMargin)
      << "the first run's: " << first_result.value("memory_peak_bytes", json());
  EXPECT_LE(result.value("cpu_time_ms", int64_t{1} << 40),
            first_result.value("cpu_time_ms", int64_t{0}) + kCpuMarginMs)
      << "the first run's: " << first_result.value("cpu_time_ms", json());
  for (const Bound& b : kBounds) {
    const std::optional<double> mine = Figure(observed, b), reference = Figure(first, b);
    if (!mine || !reference) {
      ADD_FAILURE() << Name(b) << " is not a number: " << observed.value(b.key, json()) << ", "
                    << first.value(b.key, json());
      continue;
    }
    EXPECT_LE(*mine, *reference + b.margin) << Name(b) << "; the first run's: " << *reference;
  }
  for (const char* key : kSame) {
    EXPECT_EQ(observed.value(key, json()), first.value(key, json())) << key;
  }
}

// The positive control: the hog's own figures exceed the bounds of ExpectOwnFigures.
void ExpectTheHogCounted(const json& result, const json& hog, const json& first_result,
                         const json& first) {
  EXPECT_GE(result.value("memory_peak_bytes", 0ull),
            first_result.value("memory_peak_bytes", ~0ull - kHogPeak) + kHogPeak)
      << result.dump(1);
  EXPECT_GE(result.value("cpu_time_ms", int64_t{0}),
            first_result.value("cpu_time_ms", int64_t{1} << 40) + kHogCpuMs)
      << result.dump(1);
  EXPECT_EQ(hog.value("orphan reaped by init", false), true);
  for (const Bound& b : kBounds) {
    if (!b.driven) continue;
    const std::optional<double> hogs = Figure(hog, b), reference = Figure(first, b);
    ASSERT_TRUE(hogs && reference) << Name(b);
    EXPECT_GT(*hogs, *reference + b.margin) << "positive control: " << Name(b);
  }
  for (const char* key : kSameDriven) {
    EXPECT_NE(hog.value(key, json()), first.value(key, json())) << "positive control: " << key;
  }
}

// The sandboxes of `before` still waiting now, by interpreter and start time: those that waited
// through a run that said nothing of where it ran (the OOM-killed one prints nothing).
std::vector<WaitingSandbox> StillWaiting(pid_t server, const std::vector<WaitingSandbox>& before) {
  std::vector<WaitingSandbox> still;
  for (const WaitingSandbox& now : WaitingSandboxes(server)) {
    for (const WaitingSandbox& w : before) {
      if (w.interpreter == now.interpreter && w.start_ticks == now.start_ticks) still.push_back(w);
    }
  }
  return still;
}

// XRUN-04: a run touches 224 MiB, burns 1.3 s of CPU in itself, a child it reaps and an orphan
// init reaps, fills /tmp and /dev/shm with 8 MiB each and talks over its loopback; another runs
// into its memory limit and is OOM-killed (on the rlimit backend, which has none, asks its
// address space for 1 TiB). The runs after them, one in a sandbox made before each hostile run
// and one made after both, report what the first run of the fresh server did, within margins far
// below the hog's own figures: memory_peak_bytes, cpu_time_ms, no oom_killed, and what they read
// of their counters in /proc (their own and init's stat, status, io, schedstat, getrusage), the
// mounts, the space used, the cgroup paths and the network namespace's counters.
TEST_P(Adversarial, XRUN_04_ARunsFiguresCountOnlyItsOwnUse) {
  Server server(runner_);
  ASSERT_EQ(server.Problem(), "");

  ExpectOnlyThePoolLeft(server.Pid());
  const json first_reply = server.Exec(kCounters, {{"phase", "look"}});
  const json first = ContainedOverMcp(first_reply);
  const json first_result = Structured(first_reply);
  ASSERT_TRUE(first_result.value("memory_peak_bytes", json()).is_number() &&
              first_result.value("cpu_time_ms", json()).is_number())
      << first_result.dump(1);
  const bool cgroup = first_result.value("limits_backend", "") != "rlimit";

  // Sandboxes that waited through a hostile run, and when the last one ended.
  std::vector<WaitingSandbox> through;
  unsigned long long hostile_ended = 0;
  bool made_before = false, made_after = false;
  auto look = [&](const std::string& after) {
    SCOPED_TRACE("a run after " + after);
    const std::vector<WaitingSandbox> waiting = ExpectOnlyThePoolLeft(server.Pid());
    const json reply = server.Exec(kCounters, {{"phase", "look"}});
    const json o = ContainedOverMcp(reply);
    ExpectOwnFigures(Structured(reply), o, first_result, first);
    if (InPool()) {
      EXPECT_NE(ServedBy(waiting, o), nullptr) << "the run did not go through a waiting sandbox";
      made_before |= ServedBy(through, o) != nullptr;
    }
    made_after |= o.value("start ticks", 0ull) > hostile_ended;
  };

  const std::vector<WaitingSandbox> before_hog = ExpectOnlyThePoolLeft(server.Pid());
  const json hog_reply = server.Exec(kCounters, HogParams(RandomToken()));
  hostile_ended = NowTicks();
  const json hog = ContainedOverMcp(hog_reply);
  ExpectTheHogCounted(Structured(hog_reply), hog, first_result, first);
  for (const WaitingSandbox& w : before_hog) {
    if (!w.Served(hog)) through.push_back(w);
  }
  if (InPool()) {
    EXPECT_EQ(through.size(), kPoolSize - 1) << "the hog did not run in the pool";
  }
  look("the hog");

  const std::vector<WaitingSandbox> before_oom = ExpectOnlyThePoolLeft(server.Pid());
  const json oom =
      Structured(server.Exec(kCounters, {{"phase", "oom"}, {"max_mib", cgroup ? 4096 : 0}}));
  hostile_ended = NowTicks();
  const std::vector<WaitingSandbox> through_oom = StillWaiting(server.Pid(), before_oom);
  if (cgroup) {
    EXPECT_EQ(oom.value("oom_killed", false), true) << oom.dump(1);
    EXPECT_EQ(oom.value("exit_code", 0), 137) << oom.dump(1);
    EXPECT_GE(oom.value("memory_peak_bytes", 0ull), kHogPeak) << oom.dump(1);
  } else {
    EXPECT_EQ(oom.value("oom_killed", true), false) << oom.dump(1);
    EXPECT_EQ(oom.value("exit_code", 0), 1) << oom.dump(1);
    EXPECT_THAT(oom.value("stderr", ""), ::testing::HasSubstr("MemoryError"));
  }
  // One sandbox ran it; the OOM killer took nothing from the others.
  if (InPool()) {
    EXPECT_EQ(through_oom.size(), kPoolSize - 1);
  }
  through.insert(through.end(), through_oom.begin(), through_oom.end());
  for (int i = 0; i < 3; ++i) look("the OOM-killed run, " + std::to_string(i));

  EXPECT_TRUE(made_after) << "no run was in a sandbox made after the hostile runs ended";
  if (InPool()) {
    EXPECT_TRUE(made_before) << "no run was in a sandbox that waited through a hostile run";
  }
}

// The sandboxes an engine keeps ready for 30 s after a burst of runs: as many as ran at once.
constexpr size_t kBurst = 4;

// XRUN-05: four XRUN-01 runs at once (each holds its sandbox 1 s after it left its files,
// shared memory, SysV segment, variables, modules and daemon) raise the ready target from
// MCP_EXEC_POOL_SIZE (2) to four (MCP_EXEC_POOL_MAX and the concurrency are four), checked on
// /metrics; the refill forks the four meanwhile, beside the hostile runs. Another such run goes
// through the first of the four, and five runs look for what they all left: three in the
// sandboxes that waited through that run (a pool kept at its floor has one), one made while it
// ran and one made after it. Each finds nothing.
TEST_P(Adversarial, XRUN_05_SandboxesMadeAheadForABurstCarryNothing) {
  Server server(runner_, {"MCP_EXEC_POOL_MAX=" + std::to_string(kBurst),
                          "MCP_EXEC_MAX_CONCURRENCY=" + std::to_string(kBurst)});
  ASSERT_EQ(server.Problem(), "");
  const std::string token = RandomToken();
  const std::string marker = NewMarker("burst");
  std::random_device random;
  const int key = static_cast<int>(0x6d660000u | (random() & 0xffffu));
  const json params = {{"token", token}, {"marker", marker}, {"shm_key", key}};
  const std::string target = "mcp_exec_engine_sandboxes_target";
  const double at_floor = InPool() ? kPoolSize : 0, most = InPool() ? kBurst : 0;

  ExpectOnlyThePoolLeft(server.Pid());
  EXPECT_EQ(MetricSample(server.Metrics(), target), at_floor);
  json leave = params;
  leave["phase"] = "leave";
  leave["hold_s"] = 1;
  std::vector<json> replies(kBurst);
  std::vector<std::thread> calls;
  for (size_t i = 0; i < kBurst; ++i) {
    calls.emplace_back([&, i] { replies[i] = server.Exec("xrun01_leftovers", leave); });
  }
  for (std::thread& call : calls) call.join();
  const unsigned long long burst_ended = NowTicks();
  std::set<std::string> namespaces;
  for (const json& reply : replies) {
    const json left = ExpectLeftovers(reply, token);
    namespaces.insert(left.value("pid namespace", ""));
    ExpectTheRunGoneFrom(left.value("pid namespace", ""), burst_ended);
  }
  EXPECT_EQ(namespaces.size(), kBurst) << "the burst's runs were not in a sandbox each";

  const std::vector<WaitingSandbox> ready = ExpectOnlyThePoolLeft(server.Pid(), kBurst);
  const std::string metrics = server.Metrics();
  ASSERT_EQ(MetricSample(metrics, target), most)
      << "the burst did not raise the ready target: no sandbox was made above the floor\n"
      << metrics;
  EXPECT_EQ(MetricSample(metrics, "mcp_exec_engine_sandboxes_ready"), most) << metrics;
  if (InPool()) {
    // The refill forks while the burst's runs hold their sandboxes (1 s), beside hostile runs.
    EXPECT_TRUE(std::any_of(ready.begin(), ready.end(), [&](const WaitingSandbox& w) {
      return w.start_ticks < burst_ended;
    })) << "no sandbox was made while the burst ran";
  }

  leave.erase("hold_s");
  const json last_reply = server.Exec("xrun01_leftovers", leave);
  const unsigned long long left_at = NowTicks();
  const json left = ExpectLeftovers(last_reply, token);
  ExpectTheRunGoneFrom(left.value("pid namespace", ""), left_at);
  const std::vector<HostProcess> daemons = FindProcesses(marker);
  EXPECT_THAT(daemons, ::testing::IsEmpty())
      << "a daemon outlived its run: " << DescribeProcesses(daemons);
  KillAll(daemons);
  std::vector<WaitingSandbox> through;
  if (InPool()) {
    const WaitingSandbox* used = ServedBy(ready, left);
    EXPECT_NE(used, nullptr) << "the run did not go through a sandbox made for the burst";
    for (const WaitingSandbox& w : ready) {
      if (&w != used) through.push_back(w);
    }
  }

  json look = params;
  look["phase"] = "look";
  size_t in_through = 0;
  bool made_after = false;
  for (size_t i = 0; i < kBurst + 1; ++i) {
    SCOPED_TRACE("look " + std::to_string(i));
    const std::vector<WaitingSandbox> waiting = ExpectOnlyThePoolLeft(server.Pid(), kBurst);
    json o = ExpectNoLeftovers(server.Exec("xrun01_leftovers", look), token);
    if (InPool()) {
      EXPECT_GT(o.value("frozen objects", 0), 0) << "not a warm interpreter";
      EXPECT_NE(ServedBy(waiting, o), nullptr) << "the run did not go through a waiting sandbox";
      in_through += ServedBy(through, o) != nullptr;
    }
    made_after |= o.value("start ticks", 0ull) > left_at;
  }
  EXPECT_TRUE(made_after) << "no run was in a sandbox made after the last hostile run ended";
  if (InPool()) {
    EXPECT_EQ(in_through, kBurst - 1)
        << "the runs did not go through the sandboxes that waited through the hostile run";
    EXPECT_EQ(MetricSample(server.Metrics(), target), most)
        << "the target fell back: the case outlasted ReadyTarget's 30 s window";
  }
}

}  // namespace
}  // namespace mcpexec::testing
