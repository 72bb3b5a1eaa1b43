// `mcp-exec serve` over HTTP and its token: refused off loopback without one (unless chosen),
// read from a file that keeps it off the command line, and enforced on /mcp.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

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

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// One request to 127.0.0.1:port with `Connection: close`; the status code, 0 when there was
// no answer.
int HttpStatus(int port, const std::string& method, const std::string& path,
               const std::vector<std::string>& headers = {}, const std::string& body = "") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                          std::to_string(port) + "\r\nConnection: close\r\n";
    if (!body.empty()) {
      request += "Content-Type: application/json\r\nAccept: application/json, "
                 "text/event-stream\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n";
    }
    for (const std::string& h : headers) request += h + "\r\n";
    request += "\r\n" + body;
    if (WriteAll(fd, request).ok()) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) reply.append(buf, size_t(n));
    }
  }
  close(fd);
  int status = 0;
  if (sscanf(reply.c_str(), "HTTP/1.1 %d", &status) != 1) return 0;
  return status;
}

bool Exited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
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

// SIGTERM, then the outcome of the graceful stop.
Outcome Stop(BackgroundRun& server) {
  kill(server.Pid(), SIGTERM);
  return WaitForExit(server);
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
  ASSERT_TRUE(Serving(loopback, port)) << Stop(loopback).Describe();
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {}, kInitialize), 200) << "no token, no auth";
  const Outcome stopped = Stop(loopback);
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
    ASSERT_TRUE(Serving(server, port)) << Stop(server).Describe();
    EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {}, kInitialize), 200);
    const Outcome stopped = Stop(server);
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
  ASSERT_TRUE(Serving(server, port)) << Stop(server).Describe();

  auto cmdline = ReadFile("/proc/" + std::to_string(server.Pid()) + "/cmdline");
  ASSERT_TRUE(cmdline.ok()) << cmdline.error().message;
  EXPECT_THAT(*cmdline, AllOf(HasSubstr("--auth-token-file"), HasSubstr(path)));
  EXPECT_THAT(*cmdline, Not(HasSubstr(token)));

  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {}, kInitialize), 401);
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {"X-MCP-AUTH: wrong-" + token}, kInitialize), 401);
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {"X-MCP-AUTH: " + token}, kInitialize), 200);
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {"Authorization: Bearer " + token}, kInitialize),
            200);
  const Outcome stopped = Stop(server);
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
  EXPECT_THAT(stopped.err, Not(HasSubstr(token)));
  EXPECT_THAT(stopped.err, Not(HasSubstr("--auth-token, where")));
}

TEST_F(ServeAuth, TokenOnTheCommandLineIsWarnedAboutWithoutTheToken) {
  const std::string token = RandomToken();
  const int port = FreePort();
  BackgroundRun server = Serve("127.0.0.1:" + std::to_string(port), {"--auth-token", token});
  ASSERT_TRUE(Serving(server, port)) << Stop(server).Describe();
  EXPECT_EQ(HttpStatus(port, "POST", "/mcp", {"X-MCP-AUTH: " + token}, kInitialize), 200);
  const Outcome stopped = Stop(server);
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
