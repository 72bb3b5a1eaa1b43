// Choosing an environment (docs/environments.md, issue 25) through `mcp-exec serve` over stdio
// and HTTP, as root and as the unprivileged user: a server offers "default" and a fake image
// "x", a call chooses one with `environment`, the default can be another, an unknown name lists
// the offered ones, x's engine starts at its first call and serves warm after, a session keeps
// its environment, and an idle environment releases its engine (MCP_EXEC_ENVIRONMENT_IDLE_S),
// never under a run or a session, with /metrics telling each environment's engine and memory.
// "x" is the test rootfs hard-linked (cp -al: one inode per file, no copy) into a
// scratch directory on the same filesystem, with its own metadata, a module only it has
// (only_in_x) and a variable from its env.txt.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "support/host_processes.h"
#include "support/loopback_http.h"
#include "support/mcp_stdio.h"
#include "support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

// Prints whether only_in_x was imported before the program (by a warm interpreter's preloads),
// then what only x has: its module's mark and its env.txt's variable.
constexpr const char* kProbe =
    "import os, sys\n"
    "preloaded = 'only_in_x' in sys.modules\n"
    "import only_in_x\n"
    "print(only_in_x.MARK, os.environ.get('ONLY_IN_X'), preloaded)\n";

class EnvironmentsTest : public SandboxTest {
 protected:
  static void SetUpTestSuite() {
    const std::string rootfs = HostSetup::Get().Rootfs();
    // Beside the rootfs's own directory: the same filesystem, so that cp -al can link.
    char tmpl[] = "/tmp/mcp-exec-test-envs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    const std::string image = dir_ + "/x";
    const std::string copy = "cp -al '" + rootfs + "' '" + image + "'";
    ASSERT_EQ(std::system(copy.c_str()), 0)
        << copy << ": the test rootfs and /tmp must be on one filesystem";
    // Every file of the copy is the rootfs's own inode: x's files are written only after the
    // links to the rootfs's are removed, never through them.
    const std::string meta = image + "/usr/share/mcp-exec/environment";
    const std::string module = image + "/usr/lib/python3/dist-packages/only_in_x.py";
    fs::remove_all(meta);
    fs::remove(module);
    fs::create_directories(meta);
    std::ofstream(meta + "/name") << "x\n";
    std::ofstream(meta + "/hash") << "00000000000000aa\n";
    std::ofstream(meta + "/packages.json") << R"([{"name":"only_in_x","version":"0.1"}])";
    std::ofstream(meta + "/preload.txt") << "# the module that tells a warm run\nonly_in_x\n";
    std::ofstream(meta + "/env.txt") << "ONLY_IN_X=yes\n";
    std::ofstream(module) << "MARK = 'x'\n";
    for (const auto& entry : fs::recursive_directory_iterator(meta)) {
      fs::permissions(entry.path(), fs::perms(entry.is_directory() ? 0755 : 0644));
    }
    fs::permissions(module, fs::perms(0644));
  }

  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  McpStdioServer Serve(std::vector<std::string> env = {}) {
    env.push_back("MCP_EXEC_ENVIRONMENTS_DIR=" + dir_);
    return McpStdioServer(runner_, std::move(env));
  }

  static std::string dir_;
};

std::string EnvironmentsTest::dir_;

json Exec(McpStdioServer& server, json args) { return server.Call("exec", std::move(args)); }

TEST_P(EnvironmentsTest, ACallChoosesItsEnvironmentAndAnUnknownOneListsTheOffered) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const json in_x = Structured(Exec(server, {{"code", kProbe}, {"environment", "x"}}));
  ASSERT_FALSE(in_x.is_discarded());
  EXPECT_EQ(in_x["exit_code"], 0) << in_x;
  EXPECT_THAT(in_x["stdout"].get<std::string>(), ::testing::StartsWith("x yes ")) << in_x;
  EXPECT_EQ(in_x["environment"], "x");

  const json in_default = Structured(Exec(server, {{"code", kProbe}}));
  ASSERT_FALSE(in_default.is_discarded());
  EXPECT_EQ(in_default["exit_code"], 1) << in_default;
  EXPECT_THAT(in_default["stderr"].get<std::string>(),
              HasSubstr("ModuleNotFoundError: No module named 'only_in_x'"));
  EXPECT_EQ(in_default["environment"], "default");
  EXPECT_EQ(Structured(Exec(server, {{"code", kProbe}, {"environment", "default"}}))["exit_code"],
            1);

  const json unknown = Exec(server, {{"code", "print(1)"}, {"environment", "nope"}});
  EXPECT_THAT(ToolErrorText(unknown),
              HasSubstr("unknown environment \"nope\": this server offers default, x"));
  const Outcome stopped = server.Stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.err;
  EXPECT_THAT(stopped.err, HasSubstr(R"("environments":["default","x"])"));
}

// Until x's own engine is ready its runs go cold in its image; then they are warm: its
// interpreter imported x's preload.txt (only_in_x) before the program. With MCP_EXEC_ENGINE=cold
// every run stays cold.
TEST_P(EnvironmentsTest, AnEnvironmentsEngineStartsAtItsFirstCallAndServesWarmAfter) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const json first = Structured(Exec(server, {{"code", kProbe}, {"environment", "x"}}));
  ASSERT_FALSE(first.is_discarded());
  EXPECT_THAT(first["stdout"].get<std::string>(), ::testing::StartsWith("x yes ")) << first;
  const char* engine = std::getenv("MCP_EXEC_ENGINE");
  const bool cold = engine != nullptr && std::string(engine) == "cold";
  bool warm = false;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!cold && !warm && std::chrono::steady_clock::now() < deadline) {
    const json run = Structured(Exec(server, {{"code", kProbe}, {"environment", "x"}}));
    ASSERT_FALSE(run.is_discarded());
    ASSERT_EQ(run["exit_code"], 0) << run;
    warm = run["stdout"] == "x yes True\n";
    if (!warm) std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(warm, !cold) << "engine " << (engine ? engine : "auto");
  const Outcome stopped = server.Stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.err;
  EXPECT_THAT(stopped.err, HasSubstr(R"("environment":"x","level":"info","msg":"starting an environment's engine")"))
      << "x's engine starts at its first call";
}

TEST_P(EnvironmentsTest, TheDefaultEnvironmentCanBeAnother) {
  McpStdioServer server = Serve({"MCP_EXEC_DEFAULT_ENVIRONMENT=x"});
  ASSERT_EQ(server.Problem(), "");
  const json run = Structured(Exec(server, {{"code", kProbe}}));
  ASSERT_FALSE(run.is_discarded());
  EXPECT_THAT(run["stdout"].get<std::string>(), ::testing::StartsWith("x yes ")) << run;
  EXPECT_EQ(run["environment"], "x");
  EXPECT_EQ(server.Stop().exit_status, 0);
}

TEST_P(EnvironmentsTest, AnEnvironmentThatIsNotBuiltIsNotOfferedOrStopsTheServer) {
  McpStdioServer server = Serve({"MCP_EXEC_ENVIRONMENTS=default,x,gone"});
  ASSERT_EQ(server.Problem(), "");
  EXPECT_THAT(ToolErrorText(Exec(server, {{"code", "1"}, {"environment", "gone"}})),
              HasSubstr("this server offers default, x"));
  const Outcome stopped = server.Stop();
  EXPECT_THAT(stopped.err, HasSubstr("the environment \\\"gone\\\" is not offered: its image " +
                                     dir_ + "/gone is not built"));
  EXPECT_THAT(stopped.err, HasSubstr("tools/build-rootfs --environment gone"));

  McpStdioServer refused =
      Serve({"MCP_EXEC_ENVIRONMENTS=default,gone", "MCP_EXEC_DEFAULT_ENVIRONMENT=gone"});
  EXPECT_THAT(refused.Problem(),
              HasSubstr("the default environment \\\"gone\\\" (MCP_EXEC_DEFAULT_ENVIRONMENT) is "
                        "not offered (offered: default)"));
}

// The refusal above races the harness's first write: a server that has already exited must make
// that write fail, not end this test binary with SIGPIPE.
TEST_P(EnvironmentsTest, AServerThatRefusedItsSettingsFailsTheNextWriteWithoutASignal) {
  InteractiveProcess refused = runner_.StartInteractive(
      {runner_.Binary(), "serve", "--transport", "stdio", "--rootfs", runner_.Rootfs()},
      WithEnv({"MCP_EXEC_ENVIRONMENTS_DIR=" + dir_, "MCP_EXEC_ENVIRONMENTS=default,gone",
               "MCP_EXEC_DEFAULT_ENVIRONMENT=gone"}));
  // Exited, not reaped: its end of the stdin pipe is closed then, as it is not yet at the EOF of
  // its stdout.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, refused.Pid(), &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(refused.WriteLine("{}"));
  const Outcome outcome = refused.Finish();
  EXPECT_NE(outcome.exit_status, 0);
  EXPECT_THAT(outcome.err, HasSubstr("MCP_EXEC_DEFAULT_ENVIRONMENT"));
}

TEST_P(EnvironmentsTest, ASessionKeepsTheEnvironmentItWasOpenedIn) {
  McpStdioServer server = Serve({"MCP_EXEC_PRELOAD="});
  ASSERT_EQ(server.Problem(), "");
  const json opened = Structured(
      Exec(server, {{"code", "import only_in_x\nv = only_in_x.MARK"}, {"session", "new"},
                    {"environment", "x"}}));
  ASSERT_TRUE(opened.contains("session")) << opened;
  EXPECT_EQ(opened["environment"], "x");
  const std::string handle = opened["session"];
  const json later = Structured(Exec(server, {{"code", "v"}, {"session", handle}}));
  EXPECT_EQ(later["result"], "'x'") << later;
  EXPECT_EQ(later["environment"], "x");
  EXPECT_EQ(Structured(Exec(server, {{"code", "v"}, {"session", handle}, {"environment", "x"}}))
                ["result"],
            "'x'");
  EXPECT_THAT(
      ToolErrorText(Exec(server, {{"code", "v"}, {"session", handle}, {"environment", "default"}})),
      HasSubstr("this session runs in the environment \"x\", which it keeps for its life"));
  EXPECT_EQ(Structured(Exec(server, {{"code", "v + '!'"}, {"session", handle}}))["result"], "'x!'")
      << "a refused call leaves the session as it was";
  const json list = Structured(server.Call("session_list", json::object()));
  ASSERT_EQ(list["sessions"].size(), 1u) << list;
  EXPECT_EQ(list["sessions"][0]["environment"], "x");

  const json in_default = Structured(Exec(server, {{"code", "import sys\n'only_in_x' in sys.modules"},
                                                   {"session", "new"}}));
  EXPECT_EQ(in_default["environment"], "default") << in_default;
  EXPECT_EQ(server.Stop().exit_status, 0);
}

// The server's processes and all of theirs.
std::set<pid_t> Descendants(pid_t pid) {
  std::set<pid_t> out;
  std::vector<pid_t> todo = {pid};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (const pid_t child : ChildrenOf(p)) {
      if (out.insert(child).second) todo.push_back(child);
    }
  }
  return out;
}

// `mcp-exec serve --transport http` on loopback (no token: /metrics is open), with one MCP
// session, for calls that run at once and scrapes between them.
class HttpServe {
 public:
  HttpServe(const SandboxRunner& runner, std::vector<std::string> env)
      : port_(FreePort()),
        server_(runner.StartCommand({runner.Binary(), "serve", "--transport", "http", "--addr",
                                     "127.0.0.1:" + std::to_string(port_), "--rootfs",
                                     runner.Rootfs()},
                                    WithEnv(std::move(env)))) {}
  ~HttpServe() {
    if (!stopped_) Stop();
  }

  // Empty when /readyz answered 200 and initialize a session; what went wrong otherwise.
  std::string Start() {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (HttpRequest(port_, "GET", "/readyz").status != 200) {
      if (Exited(server_.Pid())) return "the server exited: " + Stop().Describe();
      if (std::chrono::steady_clock::now() > deadline) return "never ready";
      std::this_thread::sleep_for(50ms);
    }
    const json init = {{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                       {"params", {{"protocolVersion", "2025-06-18"},
                                   {"capabilities", json::object()},
                                   {"clientInfo", {{"name", "environments-test"}, {"version", "1"}}}}}};
    const HttpReply r =
        HttpRequest(port_, "POST", "/mcp", {"Accept: application/json"}, init.dump());
    session_ = r.Header("Mcp-Session-Id");
    return session_.empty() ? "initialize: " + r.head + r.body : "";
  }

  // A tools/call's result; a discarded value when there is none.
  json Call(const std::string& tool, const json& arguments) const {
    const json request = {{"jsonrpc", "2.0"}, {"id", next_id_++}, {"method", "tools/call"},
                          {"params", {{"name", tool}, {"arguments", arguments}}}};
    const HttpReply r = HttpRequest(port_, "POST", "/mcp",
                                    {"Accept: application/json", "Mcp-Session-Id: " + session_},
                                    request.dump());
    const json reply = json::parse(r.body, nullptr, false);
    if (!reply.is_object() || !reply.contains("result")) {
      return {{"http_status", r.status}, {"http_body", r.body}};  // not a result: says why
    }
    return reply["result"];
  }
  json Exec(const json& arguments) const { return Structured(Call("exec", arguments)); }

  // The value of sample `line_start` ("name{labels}") in a scrape of /metrics; -1 when none.
  double Metric(const std::string& line_start) const {
    const std::string m = HttpRequest(port_, "GET", "/metrics").body;
    const size_t at = m.find("\n" + line_start + " ");
    if (at == std::string::npos) return -1;
    return std::stod(m.substr(at + 1 + line_start.size() + 1));
  }
  // Polls `line_start` until it is `value`, for up to `timeout`; the last value read.
  double WaitForMetric(const std::string& line_start, double value,
                       std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    double now = Metric(line_start);
    while (now != value && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100ms);
      now = Metric(line_start);
    }
    return now;
  }

  pid_t Pid() const { return server_.Pid(); }
  Outcome Stop() {
    stopped_ = true;
    return server_.Stop();
  }

 private:
  int port_;
  BackgroundRun server_;
  std::string session_;
  mutable std::atomic<int> next_id_{1};  // calls run at once: each its own id
  bool stopped_ = false;
};

constexpr const char* kReadyX = R"(mcp_exec_environment_engine_ready{environment="x"})";
constexpr const char* kRssX = R"(mcp_exec_environment_memory_rss_bytes{environment="x"})";
constexpr const char* kPssX = R"(mcp_exec_environment_memory_pss_bytes{environment="x"})";

// With MCP_EXEC_ENVIRONMENT_IDLE_S=2: x's engine (a zygote, or the pool the suite runs) starts at
// its first call and holds memory at rest; a run longer than the idle time and a session keep
// it; once neither does it is released after the idle time, its zygote and prepared sandboxes
// gone with it; the next call runs cold and starts it again. The default environment's engine
// is never released.
TEST_P(EnvironmentsTest, AnIdleEnvironmentReleasesItsEngineButNeverUnderARunOrASession) {
  const std::string engine = TestEngine() == "pool" ? "pool" : "zygote";
  HttpServe server(runner_, {"MCP_EXEC_ENVIRONMENTS_DIR=" + dir_, "MCP_EXEC_ENVIRONMENT_IDLE_S=2",
                             "MCP_EXEC_PRELOAD=", "MCP_EXEC_ENGINE=" + engine});
  ASSERT_EQ(server.Start(), "");
  EXPECT_EQ(server.Metric(R"(mcp_exec_environment_engine_ready{environment="default"})"), 1);
  EXPECT_GT(server.Metric(R"(mcp_exec_environment_memory_pss_bytes{environment="default"})"), 0);
  EXPECT_EQ(server.Metric(kReadyX), 0) << "x's engine starts at its first call";
  EXPECT_EQ(server.Metric(kPssX), 0);
  // Settled: the default's engine and its prepared sandboxes, which nothing here uses.
  std::this_thread::sleep_for(500ms);
  const std::set<pid_t> before_x = Descendants(server.Pid());

  const std::string long_code = std::string(kProbe) + "import time\ntime.sleep(5)\nprint('done')\n";
  json long_run;
  double ready_during = -1, rss_during = -1, pss_during = -1;
  std::string handle;
  // The long run must get x's engine, which it does when it starts within the idle time of the
  // last warm call; a slow machine that misses that is given another try.
  for (int attempt = 0; attempt < 3 && handle.empty(); ++attempt) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    bool warm = false;
    while (!warm && std::chrono::steady_clock::now() < deadline) {
      const json run = server.Exec({{"code", kProbe}, {"environment", "x"}});
      ASSERT_FALSE(run.is_discarded());
      ASSERT_EQ(run["exit_code"], 0) << run;
      warm = run["stdout"] == "x yes True\n";
      if (!warm) std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(warm) << "x's engine never served a run";
    std::thread runner([&] { long_run = server.Exec({{"code", long_code}, {"environment", "x"}}); });
    // A session opened while the run holds the engine: its sandbox is the engine's.
    std::this_thread::sleep_for(500ms);
    const json opened_raw =
        server.Call("exec", {{"code", "v = 41"}, {"session", "new"}, {"environment", "x"}});
    const json opened = Structured(opened_raw);
    // Past the idle time, the run still going.
    std::this_thread::sleep_for(2500ms);
    ready_during = server.Metric(kReadyX);
    rss_during = server.Metric(kRssX);
    pss_during = server.Metric(kPssX);
    runner.join();
    ASSERT_FALSE(long_run.is_discarded());
    if (long_run["stdout"] != "x yes True\ndone\n") {  // it ran cold: try again
      if (opened.contains("session")) server.Call("session_close", {{"session", opened["session"]}});
      continue;
    }
    ASSERT_TRUE(opened.contains("session")) << opened_raw;
    handle = opened["session"];
  }
  ASSERT_FALSE(handle.empty()) << "the long run never got x's engine: " << long_run;
  EXPECT_EQ(long_run["exit_code"], 0) << long_run;
  EXPECT_EQ(long_run["timed_out"], false);
  EXPECT_EQ(ready_during, 1) << "released under a run";
  EXPECT_GT(rss_during, 0);
  EXPECT_GT(pss_during, 0);
  EXPECT_LE(pss_during, rss_during);

  // The run is over; the session alone keeps the engine, past the idle time.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(server.Metric(kReadyX), 1) << "released under a session";
  const json in_session = server.Call("exec", {{"code", "v + 1"}, {"session", handle}});
  const json in_session_result = Structured(in_session);
  EXPECT_EQ(in_session_result.is_object() ? in_session_result.value("result", "") : "", "42")
      << "the session's sandbox died with the engine? " << in_session;
  const json closed = server.Call("session_close", {{"session", handle}});
  EXPECT_EQ(closed.value("structuredContent", json::object()).value("closed", false), true)
      << closed;

  // Unused now: released after the idle time, and its processes with it.
  EXPECT_EQ(server.WaitForMetric(kReadyX, 0, 30s), 0) << "never released";
  EXPECT_EQ(server.Metric(kRssX), 0);
  EXPECT_EQ(server.Metric(kPssX), 0);
  EXPECT_EQ(server.Metric(R"(mcp_exec_environment_engine_ready{environment="default"})"), 1)
      << "the default environment's engine is never released";
  std::set<pid_t> after = Descendants(server.Pid());
  for (const auto deadline = std::chrono::steady_clock::now() + 20s;
       after != before_x && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(100ms);
    after = Descendants(server.Pid());
  }
  EXPECT_EQ(after, before_x) << "x's zygote and prepared sandboxes are gone, the default's kept";

  // The next call runs cold in x's image, and starts the engine again.
  const json cold = server.Exec({{"code", kProbe}, {"environment", "x"}});
  EXPECT_EQ(cold["exit_code"], 0) << cold;
  EXPECT_THAT(cold["stdout"].get<std::string>(), ::testing::StartsWith("x yes ")) << cold;
  EXPECT_EQ(server.WaitForMetric(kReadyX, 1, 60s), 1) << "never started again";

  const Outcome stopped = server.Stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
  EXPECT_THAT(stopped.err, HasSubstr(R"("environment":"x","idle_s":2,"level":"info","msg":"an environment's engine was released)"))
      << stopped.err;
  EXPECT_THAT(stopped.err, HasSubstr("starting an environment's engine again"));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(EnvironmentsTest);

}  // namespace
}  // namespace mcpexec::testing

// `mcp-exec run --environment NAME` (docs/environments.md, "`run` in an environment"): the run a
// server's call naming NAME gets, in a cold sandbox.
namespace mcpexec::testing {
namespace {

// `mcp-exec run ARGS...` with the test rootfs as MCP_EXEC_ROOTFS (a variable, not --rootfs, which
// --environment refuses) and x's directory as MCP_EXEC_ENVIRONMENTS_DIR, plus `env`.
Outcome RunIn(const SandboxRunner& runner, const std::string& environments_dir,
              std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {runner.Binary(), "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  env.push_back("MCP_EXEC_ROOTFS=" + runner.Rootfs());
  env.push_back("MCP_EXEC_ENVIRONMENTS_DIR=" + environments_dir);
  return runner.RunCommand(argv, WithEnv(std::move(env)));
}

// What image a run had: its metadata's name, then kProbe's line.
constexpr const char* kNameAndProbe =
    "print(open('/usr/share/mcp-exec/environment/name').read().strip())\n";

TEST_P(EnvironmentsTest, RunWithEnvironmentRunsInItsImageWithItsVariables) {
  const Outcome in_x =
      RunIn(runner_, dir_, {"--environment", "x", "--code", std::string(kNameAndProbe) + kProbe});
  ASSERT_TRUE(IsRunResult(in_x)) << in_x.Describe();
  EXPECT_EQ(in_x.exit_status, 0) << in_x.Describe();
  EXPECT_EQ(in_x.json["stdout"], "x\nx yes False\n") << "cold: nothing preloaded";

  // The same run in the default environment: the test rootfs, without x's module or variable.
  const Outcome in_default = RunIn(runner_, dir_, {"--code", kProbe});
  ASSERT_TRUE(IsRunResult(in_default)) << in_default.Describe();
  EXPECT_EQ(in_default.exit_status, 1);
  EXPECT_THAT(in_default.json["stderr"].get<std::string>(),
              HasSubstr("No module named 'only_in_x'"));
  EXPECT_EQ(RunIn(runner_, dir_, {"--environment", "default", "--code", kProbe}).exit_status, 1);
}

// Without --environment a run has MCP_EXEC_DEFAULT_ENVIRONMENT's, as a call naming none; with
// --rootfs, "default" in the directory it names.
TEST_P(EnvironmentsTest, RunWithoutEnvironmentHasTheDefaultEnvironmentOrTheRootfsGiven) {
  const Outcome by_default =
      RunIn(runner_, dir_, {"--code", kProbe}, {"MCP_EXEC_DEFAULT_ENVIRONMENT=x"});
  ASSERT_TRUE(IsRunResult(by_default)) << by_default.Describe();
  EXPECT_EQ(by_default.json["stdout"], "x yes False\n") << by_default.Describe();

  const Outcome by_rootfs = RunIn(runner_, dir_, {"--rootfs", runner_.Rootfs(), "--code", kProbe},
                                  {"MCP_EXEC_DEFAULT_ENVIRONMENT=x"});
  ASSERT_TRUE(IsRunResult(by_rootfs)) << by_rootfs.Describe();
  EXPECT_EQ(by_rootfs.exit_status, 1) << "--rootfs names the image: " << by_rootfs.Describe();
}

// A warm engine's interpreter imports the environment's preload.txt, as a server's engine for x.
TEST_P(EnvironmentsTest, RunWithEnvironmentOnAWarmEngineHasItsPreloads) {
  for (const char* engine : {"pool", "zygote"}) {
    const Outcome r =
        RunIn(runner_, dir_, {"--environment", "x", "--engine", engine, "--code", kProbe});
    ASSERT_TRUE(IsRunResult(r)) << engine << r.Describe();
    EXPECT_EQ(r.json["stdout"], "x yes True\n") << engine << r.Describe();
  }
}

TEST_P(EnvironmentsTest, RunWithAnEnvironmentNotOfferedNamesTheOfferedOnesAndTheFix) {
  const Outcome unknown = RunIn(runner_, dir_, {"--environment", "nope", "--code", "print(1)"});
  EXPECT_EQ(unknown.exit_status, 125) << unknown.Describe();
  EXPECT_EQ(unknown.out, "");
  EXPECT_THAT(unknown.err, HasSubstr("environment \"nope\" is not offered: its image " + dir_ +
                                     "/nope is not built; `mcp-exec env build nope` builds it. "
                                     "Offered here: default, x"));

  const Outcome by_default =
      RunIn(runner_, dir_, {"--code", "print(1)"}, {"MCP_EXEC_DEFAULT_ENVIRONMENT=nope"});
  EXPECT_EQ(by_default.exit_status, 125) << by_default.Describe();
  EXPECT_THAT(by_default.err,
              HasSubstr("environment \"nope\" (MCP_EXEC_DEFAULT_ENVIRONMENT) is not offered"));

  // Built, but left out of the offer: as a server with the same settings.
  const Outcome left_out = RunIn(runner_, dir_, {"--environment", "x", "--code", "print(1)"},
                                 {"MCP_EXEC_ENVIRONMENTS=default"});
  EXPECT_EQ(left_out.exit_status, 125) << left_out.Describe();
  EXPECT_THAT(left_out.err, HasSubstr("environment \"x\" is not offered: it is built, but "
                                      "MCP_EXEC_ENVIRONMENTS (default) leaves it out"));

  const Outcome bad_name = RunIn(runner_, dir_, {"--environment", "../x", "--code", "print(1)"});
  EXPECT_EQ(bad_name.exit_status, 2) << bad_name.Describe();
  EXPECT_THAT(bad_name.err, HasSubstr("\"../x\" is not an environment name"));
}

TEST_P(EnvironmentsTest, RunRefusesEnvironmentWithRootfs) {
  const Outcome r = RunIn(
      runner_, dir_, {"--environment", "x", "--rootfs", runner_.Rootfs(), "--code", "print(1)"});
  EXPECT_EQ(r.exit_status, 2) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("--environment and --rootfs both choose the image, give one"));
}

// The real `data` image that tools/setup builds beside the test rootfs (build/environments/data).
TEST_P(EnvironmentsTest, RunInTheDataEnvironmentImportsItsPackages) {
  const char* rootfs = std::getenv("MCP_EXEC_TEST_ROOTFS");
  ASSERT_NE(rootfs, nullptr);
  const fs::path data = fs::path(rootfs).parent_path() / "environments" / "data";
  std::error_code ec;
  const fs::path image = fs::canonical(data, ec);
  ASSERT_FALSE(ec) << data << " is not built: tools/setup builds it (or mcp-exec env build data)";
  // A directory of this mode's reach that holds the image under its name, as tools/build-rootfs
  // links it (the tree's own name, env-data-HASH16, is checked against its metadata).
  const std::string dir = HostSetup::Get().ScratchDir() + "/environments-" + ModeName(GetParam());
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms(0755));
  fs::create_directory_symlink(image, dir + "/data");
  const Outcome r = RunIn(
      runner_, dir,
      {"--environment", "data", "--code", "import sklearn, scipy\n" + std::string(kNameAndProbe)});
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  EXPECT_EQ(r.exit_status, 0) << r.Describe();
  EXPECT_EQ(r.json["stdout"], "data\n") << r.Describe();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mcpexec::testing
