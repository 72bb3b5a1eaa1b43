// `mcp-exec serve` over HTTP and its token: refused off loopback without one (unless chosen),
// read from a file that keeps it off the command line, and enforced on /mcp.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../support/loopback_http.h"
#include "../support/sandbox_runner.h"
#include "../support/temp_dir.h"
#include "base/sys.h"

namespace mcpexec::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::milliseconds;

constexpr const char* kInitialize =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
    R"("capabilities":{},"clientInfo":{"name":"serve-auth-test","version":"1"}}})";

std::string RandomToken() {
  std::random_device rd;
  char buf[33];
  snprintf(buf, sizeof buf, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return std::string("tok-") + buf;
}

// One request to 127.0.0.1:port with `Connection: close`; the status code, 0 when there was
// no answer.
int HttpStatus(int port, const std::string& method, const std::string& path,
               std::vector<std::string> headers = {}, const std::string& body = "") {
  if (!body.empty()) headers.push_back("Accept: application/json, text/event-stream");
  return HttpRequest(port, method, path, headers, body, std::chrono::seconds(5)).status;
}

// Polls until the server answers /healthz on `port` (true) or exits (false), for at most 15 s.
bool Serving(const BackgroundRun& server, int port) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Exited(server.Pid())) return false;
    if (HttpStatus(port, "GET", "/healthz") == 200) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

// Waits at most 15 s for the process to exit by itself; SIGKILL after that.
Outcome WaitForExit(BackgroundRun& server) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (!Exited(server.Pid()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  if (!Exited(server.Pid())) kill(server.Pid(), SIGKILL);
  return server.Wait();
}

class ServeAuth : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(runner_.Problem(), ""); }

  BackgroundRun Serve(const std::string& addr, std::vector<std::string> extra = {},
                      std::vector<std::string> env = {}) const {
    std::vector<std::string> argv = {runner_.Binary(), "serve",   "--transport", "http",
                                     "--addr",         addr,      "--rootfs",    runner_.Rootfs()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return runner_.StartCommand(argv, WithEnv(std::move(env)));
  }

  SandboxRunner runner_{RunMode::kCaller};
};

// Issue 11, finding 12: the seed's default address is every interface, so `serve --transport
// http` without a token used to expose code execution to the network.
TEST_F(ServeAuth, OffLoopbackWithoutATokenRefusesToStartLoopbackStillStarts) {
  const int port = FreePort();
  BackgroundRun loopback = Serve("127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(Serving(loopback, port)) << loopback.Stop(std::chrono::seconds(15)).Describe();
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {}, kInitialize), 200) << "no token, no auth";
  const Outcome stopped = loopback.Stop(std::chrono::seconds(15));
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();

  for (const std::string addr : {"0.0.0.0:0", ":0"}) {
    BackgroundRun open = Serve(addr);
    const Outcome refused = WaitForExit(open);
    EXPECT_NE(refused.exit_status, 0) << addr << refused.Describe();
    EXPECT_EQ(refused.term_signal, 0) << addr << ": still serving after 15 s" << refused.Describe();
    EXPECT_THAT(refused.err, AllOf(HasSubstr("refusing to serve http on 0.0.0.0:0"),
                                   HasSubstr("MCP_EXEC_AUTH_TOKEN_FILE"),
                                   HasSubstr("MCP_EXEC_AUTH_TOKEN,"),
                                   HasSubstr("MCP_EXEC_ALLOW_UNAUTHENTICATED=1")))
        << addr;
  }
}

TEST_F(ServeAuth, OffLoopbackWithoutATokenStartsWhenChosen) {
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> choices = {
      {{}, {"MCP_EXEC_ALLOW_UNAUTHENTICATED=1"}}, {{"--allow-unauthenticated"}, {}}};
  for (const auto& [flags, env] : choices) {
    const int port = FreePort();
    BackgroundRun server = Serve("0.0.0.0:" + std::to_string(port), flags, env);
    ASSERT_TRUE(Serving(server, port)) << server.Stop(std::chrono::seconds(15)).Describe();
    EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {}, kInitialize), 200);
    const Outcome stopped = server.Stop(std::chrono::seconds(15));
    EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
    // The choice is logged, once, at start.
    EXPECT_THAT(stopped.err, HasSubstr("by choice (MCP_EXEC_ALLOW_UNAUTHENTICATED=1)"));
  }
}

TEST_F(ServeAuth, TokenFileGuardsMcpAndStaysOffTheCommandLine) {
  const std::string token = RandomToken();
  TempDir dir;
  const std::string path = dir.Path() + "/token";
  {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(WriteAll(fd, token + "\n").ok());
    close(fd);
  }
  const int port = FreePort();
  // Off loopback: a token is what makes that allowed.
  BackgroundRun server = Serve("0.0.0.0:" + std::to_string(port), {"--auth-token-file", path});
  ASSERT_TRUE(Serving(server, port)) << server.Stop(std::chrono::seconds(15)).Describe();

  auto cmdline = ReadFile("/proc/" + std::to_string(server.Pid()) + "/cmdline");
  ASSERT_TRUE(cmdline.ok()) << cmdline.error().message;
  EXPECT_THAT(*cmdline, AllOf(HasSubstr("--auth-token-file"), HasSubstr(path)));
  EXPECT_THAT(*cmdline, Not(HasSubstr(token)));

  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {}, kInitialize), 401);
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {"X-MCP-AUTH: wrong-" + token}, kInitialize), 401);
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {"X-MCP-AUTH: " + token}, kInitialize), 200);
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {"Authorization: Bearer " + token}, kInitialize),
            200);
  const Outcome stopped = server.Stop(std::chrono::seconds(15));
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
  EXPECT_THAT(stopped.err, Not(HasSubstr(token)));
  EXPECT_THAT(stopped.err, Not(HasSubstr("--auth-token, where")));
}

TEST_F(ServeAuth, TokenOnTheCommandLineIsWarnedAboutWithoutTheToken) {
  const std::string token = RandomToken();
  const int port = FreePort();
  BackgroundRun server = Serve("127.0.0.1:" + std::to_string(port), {"--auth-token", token});
  ASSERT_TRUE(Serving(server, port)) << server.Stop(std::chrono::seconds(15)).Describe();
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {"X-MCP-AUTH: " + token}, kInitialize), 200);
  const Outcome stopped = server.Stop(std::chrono::seconds(15));
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
  EXPECT_THAT(stopped.err, AllOf(HasSubstr("--auth-token, where every local user can read it"),
                                 HasSubstr("--auth-token-file"), Not(HasSubstr(token))));
}

TEST_F(ServeAuth, ATokenGivenBothWaysStopsServe) {
  TempDir dir;
  const std::string path = dir.Path() + "/token";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WriteAll(fd, "tok-in-file-4711\n").ok());
  close(fd);
  BackgroundRun server = Serve("127.0.0.1:0", {"--auth-token-file", path},
                               {"MCP_EXEC_AUTH_TOKEN=tok-in-env-0815"});
  const Outcome r = WaitForExit(server);
  EXPECT_EQ(r.exit_status, 1) << r.Describe();
  EXPECT_THAT(r.err, AllOf(HasSubstr("given twice"), Not(HasSubstr("tok-in-env-0815")),
                           Not(HasSubstr("tok-in-file-4711"))));
}

}  // namespace
}  // namespace mcpexec::testing
