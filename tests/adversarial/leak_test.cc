// Information leaks (catalogue LEAK-01 to LEAK-03): the supervisor's environment and command
// line, the host's paths, devices, network and cgroup layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>

#include <thread>

#include "adversarial_test.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_P(Adversarial, LEAK_01_SupervisorEnvironmentIsNotInherited) {
  const std::string token = RandomToken();
  const json names = {"MCP_EXEC_AUTH_TOKEN", "HOST_SECRET", "AWS_SECRET_ACCESS_KEY"};
  const LaunchOptions options = WithEnv(
      {"MCP_EXEC_AUTH_TOKEN=" + token, "HOST_SECRET=" + token, "AWS_SECRET_ACCESS_KEY=" + token});
  json o = Contained("leak01_environment", {{"names", names}}, {}, options);
  // The recipe's rootfs has the figure backend, whose variable is the only MCP_EXEC_* one.
  EXPECT_EQ(o["environment"], json({"HOME", "LANG", "MCP_EXEC_FIGURE_MAX_PX", "MPLBACKEND", "PATH",
                                    "PYTHONDONTWRITEBYTECODE"}));
  EXPECT_EQ(o["/proc/1/environ"], json("EACCES"));  // init is not dumpable
  EXPECT_EQ(o["/proc/self/environ"], json("ok"));
}

// The HTTP deployment of the README: `mcp-exec serve` with a token on its command line. The
// sandbox's init is a fork of the server, so /proc/1/cmdline is the server's argv.
TEST_P(Adversarial, LEAK_01_ServeAuthTokenIsInvisibleToPrograms) {
  const std::string token = RandomToken();
  const int port = FreeLoopbackPort();
  BackgroundRun server = runner_.StartCommand(
      {runner_.Binary(), "serve", "--transport", "http", "--addr",
       "127.0.0.1:" + std::to_string(port), "--auth-token", token, "--rootfs", runner_.Rootfs()});
  ASSERT_TRUE(WaitForHealthz(port)) << "the server did not come up:" << [&] {
    kill(server.Pid(), SIGKILL);
    return server.Wait().Describe();
  }();
  const std::vector<std::string> auth = {"Authorization: Bearer " + token};
  const McpSession mcp = OpenMcpSession(port, auth);
  ASSERT_EQ(mcp.init.status, 200) << mcp.init.headers << mcp.init.body;
  const std::vector<std::string>& session = mcp.headers;
  std::string problem;
  const std::string code = ProbeSource("leak01_serve_token", &problem);
  ASSERT_FALSE(code.empty()) << problem;
  const HttpReply call = HttpPost(
      port, "/mcp",
      json({{"jsonrpc", "2.0"},
            {"id", 2},
            {"method", "tools/call"},
            {"params",
             {{"name", "exec"},
              {"arguments", {{"code", code}, {"stdin", json({{"token", token}}).dump()}}}}}})
          .dump(),
      session);
  kill(server.Pid(), SIGTERM);
  const Outcome stopped = server.Wait();
  ASSERT_EQ(call.status, 200) << call.headers << call.body << stopped.Describe();
  const json result = ReplyJson(call);
  ASSERT_TRUE(result.is_object() && result.contains("result")) << call.body;
  const json structured = result["result"].value("structuredContent", json::object());
  const json report = json::parse(structured.value("stdout", ""), nullptr, false);
  ASSERT_TRUE(report.is_object()) << call.body;
  EXPECT_EQ(report["escaped"], json::array()) << report.dump(1);
}

TEST_P(Adversarial, LEAK_02_InitCommandLineNamesNoHostPath) {
  json o = Contained("leak02_host_paths", {{"host_paths", {runner_.Binary(), runner_.Rootfs()}},
                                           {"look_in", {"cmdline"}}});
  EXPECT_EQ(o["host paths named"], json::object());
  const std::string init = o.value("init cmdline", "");
  EXPECT_THAT(init, Not(HasSubstr(runner_.Binary())));
  EXPECT_THAT(init, Not(HasSubstr("--"))) << "the supervisor's flags are visible";
}

TEST_P(Adversarial, LEAK_02_NoHostDevicesOrNetworkInSysAndProcNet) {
  HostTcpListener listener(AF_INET);  // so that the host has a TCP socket to leak
  ASSERT_TRUE(listener.Valid());
  const std::vector<std::string> interfaces = HostInterfaces();
  ASSERT_GT(interfaces.size(), 1u) << "a host with only lo cannot show a leak";
  json o = Contained("leak02_sysfs_net", {{"host_interfaces", interfaces}});
  EXPECT_EQ(o["/sys"], json::array());
  ExpectEach(o, {"/sys/class/net", "/sys/block", "/sys/devices", "/sys/firmware"}, "ENOENT");
  EXPECT_EQ(o["/proc/net/dev"], json({"lo"}));
  ExpectEach(o, {"/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/unix"}, 0);
}

TEST_P(Adversarial, LEAK_03_CgroupPathsAreRootAndNothingIsWritable) {
  json o = Contained("leak03_cgroup_procs");
  EXPECT_EQ(o["/proc/self/cgroup"], json({"/"}));
  ExpectEach(o,
             {"write /sys/fs/cgroup/cgroup.procs", "write /sys/fs/cgroup/../cgroup.procs",
              "write /sys/fs/cgroup/memory/cgroup.procs", "write /sys/fs/cgroup/pids/cgroup.procs",
              "write /sys/fs/cgroup/unified/cgroup.procs"},
             "ENOENT");
}

}  // namespace
}  // namespace mcpexec::testing
