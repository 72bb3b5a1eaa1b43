// Runs of one server against each other (XRUN-01 to XRUN-03), in the engine of the suite
// (MCP_EXEC_TEST_ENGINE): what a run leaves behind for the next, two runs at the same time, and
// a run against the sandboxes the pool keeps ready. Each case starts `mcp-exec serve` on
// Streamable HTTP with a pool of two and checks, besides what the programs saw, which sandbox
// served each run: in the pool every run must have gone through a prepared sandbox (its
// interpreter, matched by PID namespace and start time, was waiting on the host before the
// call), so that the pool, not a cold fallback, is what is tested.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <random>
#include <sstream>
#include <thread>

#include "../support/host_processes.h"
#include "adversarial_test.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int kPoolSize = 2;
// The start socket's descriptor in a waiting interpreter (docs/engine.md, "The protocol").
constexpr const char* kStartFd = "0x5";
// A run that imports numpy, pandas and matplotlib.pyplot took about 20 ms warm (the preloads)
// and 1 s cold on the 2-core development machine.
constexpr milliseconds kWarmRunBound(500);

// The engines that keep sandboxes ready: the pool's, or those the zygote forked.
bool InPool() { return TestEngine() == "pool" || TestEngine() == "zygote"; }
bool InZygote() { return TestEngine() == "zygote"; }

// The fields of /proc/PID/stat after the command name; empty when the process is gone.
std::vector<std::string> StatFields(pid_t pid) {
  const std::string stat = ReadHostFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  std::vector<std::string> fields;
  if (paren == std::string::npos) return fields;
  std::istringstream rest(stat.substr(paren + 1));
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

// starttime (field 22 of /proc/PID/stat): clock ticks since boot; 0 when the process is gone.
unsigned long long StartTicks(pid_t pid) {
  const std::vector<std::string> fields = StatFields(pid);
  return fields.size() > 19 ? std::stoull(fields[19]) : 0;
}

// Clock ticks since boot now, on the clock of StartTicks.
unsigned long long NowTicks() {
  return static_cast<unsigned long long>(std::stod(ReadHostFile("/proc/uptime")) *
                                         static_cast<double>(sysconf(_SC_CLK_TCK)));
}

std::string PidNamespace(pid_t pid) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec).string();
}

std::string Cmdline(pid_t pid) {
  std::string text = ReadHostFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

std::vector<pid_t> Descendants(pid_t root) {
  std::vector<pid_t> found;
  std::vector<pid_t> next = {root};
  while (!next.empty()) {
    const pid_t parent = next.back();
    next.pop_back();
    for (pid_t child : ChildrenOf(parent)) {
      found.push_back(child);
      next.push_back(child);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string DescribePids(const std::vector<pid_t>& pids) {
  std::ostringstream out;
  for (pid_t pid : pids) {
    out << "\n  pid " << pid << " ppid " << (StatFields(pid).size() > 1 ? StatFields(pid)[1] : "?")
        << ": " << Cmdline(pid);
  }
  return pids.empty() ? "none" : out.str();
}

// Living host processes in PID namespace `ns` that started no later than `ticks` (a namespace's inode
// number is reused once it is freed, by sandboxes made afterwards).
std::vector<pid_t> ProcessesInPidNamespace(const std::string& ns, unsigned long long ticks) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (PidNamespace(pid) != ns) continue;
    // A zombie has ended: it runs nothing and holds no memory, only its pid until its parent
    // reaps it. A zygote's run's init is reaped by the zygote's own init, which may not have
    // been scheduled yet when the result arrives.
    const std::vector<std::string> fields = StatFields(pid);
    if (fields.size() > 19 && fields[0] == "Z") continue;
    const unsigned long long started = StartTicks(pid);
    if (started != 0 && started <= ticks) found.push_back(pid);
  }
  return found;
}

// A sandbox the pool keeps ready, as the host sees it: the sandbox's init, whose one child, the
// interpreter, waits for its program on the start socket. A pool's init is the server's child;
// a zygote's is a child of the zygote's own init, to which it was orphaned.
struct WaitingSandbox {
  pid_t init = -1;
  pid_t interpreter = -1;
  unsigned long long start_ticks = 0;  // the interpreter's
  std::string pid_ns;

  // Whether a run's report says it ran in this sandbox.
  bool Served(const json& observed) const {
    return observed.value("pid namespace", "") == pid_ns &&
           observed.value("start ticks", 0ull) == start_ticks;
  }
};

// What `pid` is blocked in: the syscall's number and its first argument.
std::pair<std::string, std::string> BlockedIn(pid_t pid) {
  std::istringstream call(ReadHostFile("/proc/" + std::to_string(pid) + "/syscall"));
  std::string number, fd;
  call >> number >> fd;
  return {number, fd};
}

// Blocked in read(2) on the start socket: the agent has said ready and waits for "G".
bool WaitsOnStartSocket(pid_t pid) {
  return BlockedIn(pid) == std::make_pair(std::to_string(SYS_read), std::string(kStartFd));
}

// The zygote, as the host sees it: the server's child (its sandbox's init) whose one child, the
// zygote's interpreter, waits for forks in recvmsg(2) on its start socket. Empty in the other
// engines.
std::vector<pid_t> ZygotePids(pid_t server) {
  std::vector<pid_t> found;
  for (pid_t init : ChildrenOf(server)) {
    for (pid_t child : ChildrenOf(init)) {
      if (BlockedIn(child) == std::make_pair(std::to_string(SYS_recvmsg),
                                             std::string(kStartFd))) {
        found.insert(found.end(), {init, child});
      }
    }
  }
  return found;
}

// The zygote's pids once it waits for the next fork again: a refill may be forking from it when
// a test looks (the zygote then runs Python, not recvmsg), longer on a loaded machine.
std::vector<pid_t> WaitForZygote(pid_t server) {
  if (!InZygote()) return {};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::vector<pid_t> found = ZygotePids(server);
    if (!found.empty() || std::chrono::steady_clock::now() >= deadline) return found;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

std::vector<WaitingSandbox> WaitingSandboxes(pid_t server) {
  std::vector<WaitingSandbox> found;
  std::vector<pid_t> inits;
  if (InZygote()) {
    const std::vector<pid_t> zygote = ZygotePids(server);
    for (size_t i = 0; i + 1 < zygote.size(); i += 2) {
      for (pid_t child : ChildrenOf(zygote[i])) {
        if (child != zygote[i + 1]) inits.push_back(child);
      }
    }
  } else {
    inits = ChildrenOf(server);
  }
  for (pid_t init : inits) {
    const std::vector<pid_t> children = ChildrenOf(init);
    if (children.size() != 1 || !WaitsOnStartSocket(children[0])) continue;
    found.push_back(
        WaitingSandbox{init, children[0], StartTicks(children[0]), PidNamespace(children[0])});
  }
  return found;
}

// Polls until the pool has `count` sandboxes waiting (in cold: none are expected, returns at
// once); returns the last look.
std::vector<WaitingSandbox> WaitForPool(pid_t server, size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::vector<WaitingSandbox> waiting = WaitingSandboxes(server);
    if (waiting.size() >= count || std::chrono::steady_clock::now() >= deadline) return waiting;
    std::this_thread::sleep_for(milliseconds(50));
  }
}

// The sandbox of `waiting` that served the run that reported `observed`; nullptr when none.
const WaitingSandbox* ServedBy(const std::vector<WaitingSandbox>& waiting, const json& observed) {
  for (const WaitingSandbox& w : waiting) {
    if (w.Served(observed)) return &w;
  }
  return nullptr;
}

// Pids the runs signal: every pid when the host's pid_max is small, else the low ones and a
// window around the newest (where the server's and the sandboxes' are).
json ScanRanges() {
  const long pid_max = std::stol(ReadHostFile("/proc/sys/kernel/pid_max"));
  if (pid_max <= 65536) return json::array({json::array({1, pid_max - 1})});
  const long last = std::stol(ReadHostFile("/proc/sys/kernel/ns_last_pid"));
  return json::array({json::array({1, 4096}), json::array({std::max(4097L, last - 2000),
                                                           std::min(pid_max - 1, last + 20000)})});
}

// The server's pid and those of its waiting sandboxes' processes.
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

// One `mcp-exec serve --transport http` of the test's mode, in the suite's engine (the runner
// adds MCP_EXEC_ENGINE), with a pool of kPoolSize and two runs at a time, and an MCP session on
// it. SIGTERM and reaped by the destructor.
class Server {
 public:
  explicit Server(const SandboxRunner& runner)
      : port_(FreeLoopbackPort()),
        process_(
            runner.StartCommand({runner.Binary(), "serve", "--transport", "http", "--addr",
                                 "127.0.0.1:" + std::to_string(port_), "--rootfs", runner.Rootfs()},
                                WithEnv({"MCP_EXEC_POOL_SIZE=" + std::to_string(kPoolSize),
                                         "MCP_EXEC_PRELOAD=numpy,pandas,matplotlib.pyplot",
                                         "MCP_EXEC_MAX_CONCURRENCY=2"}))) {
    // The pool serves once its first sandbox is ready: give it longer than WaitForHealthz does.
    for (int i = 0; i < 12 && !up_; ++i) up_ = WaitForHealthz(port_);
    if (up_) session_ = OpenMcpSession(port_, {});
  }
  ~Server() {
    if (process_.Pid() > 0) {
      kill(process_.Pid(), SIGTERM);
      (void)process_.Wait();
    }
  }

  // Empty when the server is up and the session open; else what went wrong.
  std::string Problem() {
    if (!up_ && process_.Pid() > 0) {
      kill(process_.Pid(), SIGKILL);
      return "the server did not come up:" + process_.Wait().Describe();
    }
    if (!up_) return "the server did not come up";
    if (session_.init.status != 200) {
      return "initialize: " + std::to_string(session_.init.status) + session_.init.body;
    }
    return "";
  }
  pid_t Pid() const { return process_.Pid(); }

  // tools/call exec of probe `name` with `params` on stdin; the JSON-RPC reply.
  json Exec(const std::string& name, const json& params) {
    std::string problem;
    const std::string code = ProbeSource(name, &problem);
    EXPECT_EQ(problem, "");
    const HttpReply reply = HttpPost(
        port_, "/mcp",
        json({{"jsonrpc", "2.0"},
              {"id", ++id_},
              {"method", "tools/call"},
              {"params",
               {{"name", "exec"}, {"arguments", {{"code", code}, {"stdin", params.dump()}}}}}})
            .dump(),
        session_.headers);
    EXPECT_EQ(reply.status, 200) << reply.headers << reply.body;
    return ReplyJson(reply);
  }

 private:
  int port_;
  BackgroundRun process_;
  bool up_ = false;
  McpSession session_;
  std::atomic<int> id_{1};
};

// The structured result of an exec reply (an empty object when there is none).
json Structured(const json& reply) {
  if (!reply.is_object() || !reply.contains("result")) return json::object();
  return reply["result"].value("structuredContent", json::object());
}

// Checks that the reply is a normal result of a run that exited 0 with a report whose "escaped"
// list is empty; returns the report's "observed" object (empty when there is none).
json ContainedOverMcp(const json& reply) {
  if (!reply.is_object() || !reply.contains("result")) {
    ADD_FAILURE() << "not a tools/call result: " << reply.dump();
    return json::object();
  }
  const json& result = reply["result"];
  EXPECT_EQ(result.value("isError", true), false) << result.dump(1);
  const json structured = Structured(reply);
  EXPECT_EQ(structured.value("exit_code", -1), 0) << structured.dump(1);
  const json report = json::parse(structured.value("stdout", ""), nullptr, false);
  if (!report.is_object() || !report.contains("observed")) {
    ADD_FAILURE() << "the probe printed no report: " << structured.dump(1);
    return json::object();
  }
  EXPECT_EQ(report.value("escaped", json(nullptr)), json::array())
      << "attacks that worked, as the program saw them: " << structured.dump(1);
  return report["observed"];
}

// After a run: nothing of it is left under the server beyond the sandboxes the pool keeps ready
// (in cold, nothing at all), once the pool is full again. Returns the waiting sandboxes.
std::vector<WaitingSandbox> ExpectOnlyThePoolLeft(pid_t server) {
  const std::vector<WaitingSandbox> waiting = WaitForPool(server, InPool() ? kPoolSize : 0);
  EXPECT_EQ(waiting.size(), InPool() ? kPoolSize : 0u)
      << "the pool did not refill; the server's processes:" << DescribePids(Descendants(server));
  std::vector<pid_t> pool = WaitForZygote(server);
  for (const WaitingSandbox& w : waiting) pool.insert(pool.end(), {w.init, w.interpreter});
  std::sort(pool.begin(), pool.end());
  // A run's init ends after its result (sandbox/teardown.h): its exit may take a few ms more,
  // under load longer, but not 5 s.
  std::vector<pid_t> left;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    left.clear();
    std::vector<pid_t> all = Descendants(server);
    // A run's init that has ended but is not reaped yet (a zombie) is not left running.
    std::erase_if(all, [](pid_t pid) {
      const std::vector<std::string> fields = StatFields(pid);
      return !fields.empty() && fields[0] == "Z";
    });
    std::set_difference(all.begin(), all.end(), pool.begin(), pool.end(),
                        std::back_inserter(left));
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (!left.empty() && std::chrono::steady_clock::now() < give_up);
  EXPECT_THAT(left, ::testing::IsEmpty())
      << "processes under the server besides the waiting sandboxes:" << DescribePids(left);
  return waiting;
}

// The pid a process has in its own PID namespace (the last NSpid of /proc/PID/status); 0 when
// it cannot be read: the process is gone.
pid_t InnerPid(pid_t pid) {
  std::istringstream status(ReadHostFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("NSpid:")) continue;
    const size_t last = line.find_last_of(" \t");
    return static_cast<pid_t>(std::atol(line.c_str() + last + 1));
  }
  return 0;
}

// A run whose result has come: nothing of it is left in its PID namespace but its init (PID 1),
// which is ending (the result comes before init's exit, sandbox/teardown.h), and within 5 s
// not even that.
void ExpectTheRunGoneFrom(const std::string& ns, unsigned long long ticks) {
  std::vector<pid_t> others = ProcessesInPidNamespace(ns, ticks);
  std::erase_if(others, [](pid_t pid) {
    const pid_t inner = InnerPid(pid);
    return inner == 1 || inner == 0;
  });
  EXPECT_THAT(others, ::testing::IsEmpty())
      << "processes left in the run's PID namespace:" << DescribePids(others);
  std::vector<pid_t> in_ns = ProcessesInPidNamespace(ns, ticks);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!in_ns.empty() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    in_ns = ProcessesInPidNamespace(ns, ticks);
  }
  EXPECT_THAT(in_ns, ::testing::IsEmpty())
      << "the run's init outlived its result by 5 s:" << DescribePids(in_ns);
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
  json left = ContainedOverMcp(left_reply);
  ExpectEach(left,
             {"write /tmp/leftover-" + token, "write /tmp/outputs/leftover-" + token,
              "write /dev/shm/leftover-" + token, "shm_open /leftover-shm-" + token, "shmget key",
              "connect to the daemon's socket"},
             "ok");
  ExpectEach(left, {"getenv MCP_EXEC_LEFTOVER", "getenv MCP_EXEC_LEFTOVER_PUTENV"}, true);
  EXPECT_EQ(left["daemons running"], 1) << "positive control: the daemon ran";
  EXPECT_EQ(Structured(left_reply)["files"].size(), 1u) << "positive control: the output file";

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
    json o = ContainedOverMcp(reply);
    ExpectEach(o,
               {"read /tmp/leftover-" + token, "read /tmp/outputs/leftover-" + token,
                "read /dev/shm/leftover-" + token, "shm_open /leftover-shm-" + token, "shmget key"},
               "ENOENT");
    ExpectEach(o, {"/tmp/outputs", "/dev/shm"}, json::array());
    EXPECT_EQ(Structured(reply)["files"], json::array());
    ExpectEach(o, {"getenv MCP_EXEC_LEFTOVER", "getenv MCP_EXEC_LEFTOVER_PUTENV"}, "");
    EXPECT_EQ(o["token in /proc/self/environ"], false);
    EXPECT_EQ(o["environment"], json({"HOME", "LANG", "MCP_EXEC_FIGURE_MAX_PX", "MPLBACKEND",
                                      "PATH", "PYTHONDONTWRITEBYTECODE"}));
    EXPECT_EQ(o["import leftover"], "ModuleNotFoundError");
    ExpectEach(o, {"builtins.leftover", "os.leftover", "json.leftover", "numpy.leftover"}, false);
    ExpectEach(o, {"/proc/sysvipc/shm rows", "/proc/net/unix rows", "daemons running"}, 0);
    EXPECT_EQ(o["connect to the daemon's socket"], "ECONNREFUSED");
    EXPECT_EQ(o["pids"], json({1, 2}));
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
