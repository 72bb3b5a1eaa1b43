#include "cross_run.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <thread>

#include "../support/host_processes.h"
#include "adversarial_test.h"

namespace mcpexec::testing {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {

// The start socket's descriptor in a waiting interpreter (docs/engine.md, "The protocol").
constexpr const char* kStartFd = "0x5";

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

std::string PidNamespace(pid_t pid) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec).string();
}

std::string Cmdline(pid_t pid) {
  std::string text = ReadHostFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

// Living host processes in PID namespace `ns` that started no later than `ticks` (a namespace's
// inode number is reused once it is freed, by sandboxes made afterwards).
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

// What `pid` is blocked in: the syscall's number and its first argument.
std::pair<std::string, std::string> BlockedIn(pid_t pid) {
  std::istringstream call(ReadHostFile("/proc/" + std::to_string(pid) + "/syscall"));
  std::string number, fd;
  call >> number >> fd;
  return {number, fd};
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

}  // namespace

bool InPool() { return TestEngine() == "pool" || TestEngine() == "zygote"; }
bool InZygote() { return TestEngine() == "zygote"; }

unsigned long long StartTicks(pid_t pid) {
  const std::vector<std::string> fields = StatFields(pid);
  return fields.size() > 19 ? std::stoull(fields[19]) : 0;
}

unsigned long long NowTicks() {
  return static_cast<unsigned long long>(std::stod(ReadHostFile("/proc/uptime")) *
                                         static_cast<double>(sysconf(_SC_CLK_TCK)));
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

bool WaitsOnStartSocket(pid_t pid) {
  return BlockedIn(pid) == std::make_pair(std::to_string(SYS_read), std::string(kStartFd));
}

std::vector<pid_t> ZygotePids(pid_t server) {
  std::vector<pid_t> found;
  for (pid_t init : ChildrenOf(server)) {
    for (pid_t child : ChildrenOf(init)) {
      if (BlockedIn(child) == std::make_pair(std::to_string(SYS_recvmsg), std::string(kStartFd))) {
        found.insert(found.end(), {init, child});
      }
    }
  }
  return found;
}

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

std::vector<WaitingSandbox> WaitForPool(pid_t server, size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::vector<WaitingSandbox> waiting = WaitingSandboxes(server);
    if (waiting.size() >= count || std::chrono::steady_clock::now() >= deadline) return waiting;
    std::this_thread::sleep_for(milliseconds(50));
  }
}

const WaitingSandbox* ServedBy(const std::vector<WaitingSandbox>& waiting, const json& observed) {
  for (const WaitingSandbox& w : waiting) {
    if (w.Served(observed)) return &w;
  }
  return nullptr;
}

namespace {

// `defaults` with each NAME=VALUE of `overrides` in place of the default of that NAME, or added.
std::vector<std::string> Settings(std::vector<std::string> defaults,
                                  const std::vector<std::string>& overrides) {
  for (const std::string& setting : overrides) {
    const std::string name = setting.substr(0, setting.find('=') + 1);
    std::erase_if(defaults, [&](const std::string& d) { return d.starts_with(name); });
    defaults.push_back(setting);
  }
  return defaults;
}

}  // namespace

Server::Server(const SandboxRunner& runner, const std::vector<std::string>& env)
    : port_(FreeLoopbackPort()),
      process_(runner.StartCommand(
          {runner.Binary(), "serve", "--transport", "http", "--addr",
           "127.0.0.1:" + std::to_string(port_), "--rootfs", runner.Rootfs()},
          WithEnv(Settings(
              {"MCP_EXEC_POOL_SIZE=" + std::to_string(kPoolSize),
               "MCP_EXEC_PRELOAD=numpy,pandas,matplotlib.pyplot", "MCP_EXEC_MAX_CONCURRENCY=2"},
              env)))) {
  // The pool serves once its first sandbox is ready: give it longer than WaitForHealthz does.
  for (int i = 0; i < 12 && !up_; ++i) up_ = WaitForHealthz(port_);
  if (up_) session_ = OpenMcpSession(port_, {});
}

Server::~Server() {
  if (process_.Pid() > 0) {
    kill(process_.Pid(), SIGTERM);
    (void)process_.Wait();
  }
}

std::string Server::Problem() {
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

json Server::Exec(const std::string& name, const json& params) {
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

std::string Server::Metrics() {
  const HttpReply reply = HttpGet(port_, "/metrics");
  return reply.status == 200 ? reply.body : "";
}

double MetricSample(const std::string& metrics, const std::string& name) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(name + " ")) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

json Structured(const json& reply) {
  if (!reply.is_object() || !reply.contains("result")) return json::object();
  return reply["result"].value("structuredContent", json::object());
}

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

json ExpectLeftovers(const json& reply, const std::string& token) {
  json left = ContainedOverMcp(reply);
  ExpectEach(left,
             {"write /tmp/leftover-" + token, "write /tmp/outputs/leftover-" + token,
              "write /dev/shm/leftover-" + token, "shm_open /leftover-shm-" + token, "shmget key",
              "connect to the daemon's socket"},
             "ok");
  ExpectEach(left, {"getenv MCP_EXEC_LEFTOVER", "getenv MCP_EXEC_LEFTOVER_PUTENV"}, true);
  EXPECT_EQ(left["daemons running"], 1) << "positive control: the daemon ran";
  EXPECT_EQ(Structured(reply)["files"].size(), 1u) << "positive control: the output file";
  return left;
}

json ExpectNoLeftovers(const json& reply, const std::string& token) {
  json o = ContainedOverMcp(reply);
  ExpectEach(o,
             {"read /tmp/leftover-" + token, "read /tmp/outputs/leftover-" + token,
              "read /dev/shm/leftover-" + token, "shm_open /leftover-shm-" + token, "shmget key"},
             "ENOENT");
  ExpectEach(o, {"/tmp/outputs", "/dev/shm"}, json::array());
  EXPECT_EQ(Structured(reply)["files"], json::array());
  ExpectEach(o, {"getenv MCP_EXEC_LEFTOVER", "getenv MCP_EXEC_LEFTOVER_PUTENV"}, "");
  EXPECT_EQ(o["token in /proc/self/environ"], false);
  EXPECT_EQ(o["environment"], json({"HOME", "LANG", "MCP_EXEC_FIGURE_MAX_PX", "MPLBACKEND", "PATH",
                                    "PYTHONDONTWRITEBYTECODE"}));
  EXPECT_EQ(o["import leftover"], "ModuleNotFoundError");
  ExpectEach(o, {"builtins.leftover", "os.leftover", "json.leftover", "numpy.leftover"}, false);
  ExpectEach(o, {"/proc/sysvipc/shm rows", "/proc/net/unix rows", "daemons running"}, 0);
  EXPECT_EQ(o["connect to the daemon's socket"], "ECONNREFUSED");
  EXPECT_EQ(o["pids"], json({1, 2}));
  return o;
}

std::vector<WaitingSandbox> ExpectOnlyThePoolLeft(pid_t server, size_t ready) {
  const std::vector<WaitingSandbox> waiting = WaitForPool(server, InPool() ? ready : 0);
  EXPECT_EQ(waiting.size(), InPool() ? ready : 0u)
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
    std::set_difference(all.begin(), all.end(), pool.begin(), pool.end(), std::back_inserter(left));
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (!left.empty() && std::chrono::steady_clock::now() < give_up);
  EXPECT_THAT(left, ::testing::IsEmpty())
      << "processes under the server besides the waiting sandboxes:" << DescribePids(left);
  return waiting;
}

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

}  // namespace mcpexec::testing
