// /metrics and /readyz of a real `mcp-exec serve --transport http`, as root and as an
// unprivileged user: exec calls of each kind show up in the counters, the scrape passes
// `promtool check metrics` (Debian's prometheus package; its absence fails the test), and the
// token guards /metrics unless MCP_EXEC_METRICS_AUTH=none; a warm engine's ready sandboxes
// follow the runs in flight.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "../support/loopback_http.h"
#include "../support/sandbox_test.h"
#include "../support/temp_dir.h"
#include "base/sys.h"

namespace mcpexec::testing {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;
using nlohmann::json;

constexpr char kToken[] = "metrics-test-token";

// One request on its own connection; a JSON body asks for a JSON reply.
HttpReply Request(int port, const std::string& method, const std::string& path,
                  std::vector<std::string> headers = {}, const std::string& body = "") {
  if (!body.empty()) headers.push_back("Accept: application/json");
  return HttpRequest(port, method, path, headers, body);
}

// Polls until `path` answers 200 (true) or the server exits or 60 s pass (false).
bool Answers200(const BackgroundRun& server, int port, const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Exited(server.Pid())) return false;
    if (Request(port, "GET", path).status == 200) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

// The value of the sample `line_start` ("name{labels}"), -1 when the scrape has none.
double Sample(const std::string& scrape, const std::string& line_start) {
  const size_t at = scrape.find("\n" + line_start + " ");
  if (at == std::string::npos) return -1;
  return std::stod(scrape.substr(at + 1 + line_start.size() + 1));
}

// `promtool check metrics` over `scrape`: its exit status and output. promtool reads stdin.
std::pair<int, std::string> Promtool(const std::string& scrape) {
  TempDir dir;
  const std::string path = dir.Path() + "/scrape.txt";
  FILE* f = fopen(path.c_str(), "we");
  if (f == nullptr) return {-1, "cannot write " + path};
  fwrite(scrape.data(), 1, scrape.size(), f);
  fclose(f);
  FILE* p = popen(("promtool check metrics < " + path + " 2>&1").c_str(), "re");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[1024];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class MetricsTest : public SandboxTest {
 protected:
  BackgroundRun Serve(int port, std::vector<std::string> env = {}) const {
    env.push_back(std::string("MCP_EXEC_AUTH_TOKEN=") + kToken);
    return runner_.StartCommand({runner_.Binary(), "serve", "--transport", "http", "--addr",
                                 "127.0.0.1:" + std::to_string(port), "--rootfs",
                                 runner_.Rootfs()},
                                WithEnv(std::move(env)));
  }
};

const std::vector<std::string> kAuth = {std::string("X-MCP-AUTH: ") + kToken};

json Call(int port, const std::string& session, int id, const json& arguments) {
  std::vector<std::string> headers = kAuth;
  headers.push_back("Mcp-Session-Id: " + session);
  const json request = {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
                        {"params", {{"name", "exec"}, {"arguments", arguments}}}};
  const HttpReply r = Request(port, "POST", "/mcp", headers, request.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  const json reply = json::parse(r.body, nullptr, false);
  return reply.is_object() && reply.contains("result") ? reply["result"] : reply;
}

TEST_P(MetricsTest, ExecCallsAreCountedAndTheScrapePassesPromtool) {
  const int port = FreePort();
  BackgroundRun server = Serve(port);
  ASSERT_TRUE(Answers200(server, port, "/healthz")) << server.Stop().Describe();
  EXPECT_TRUE(Answers200(server, port, "/readyz")) << "the engine never got warm";

  const json init = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                     {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()},
                                 {"clientInfo", {{"name", "metrics-test"}, {"version", "1"}}}}}};
  const HttpReply opened = Request(port, "POST", "/mcp", kAuth, init.dump());
  ASSERT_EQ(opened.status, 200) << opened.body;
  const std::string session = opened.Header("Mcp-Session-Id");
  ASSERT_FALSE(session.empty()) << opened.head;

  const json ok = Call(port, session, 2, {{"code", "print('hello')"}});
  EXPECT_EQ(ok["structuredContent"]["exit_code"], 0) << ok;
  const json failed = Call(port, session, 3, {{"code", "import sys; sys.exit(3)"}});
  EXPECT_EQ(failed["structuredContent"]["exit_code"], 3) << failed;
  const json slow = Call(port, session, 4, {{"code", "import time; time.sleep(60)"},
                                            {"timeout_s", 1}});
  EXPECT_EQ(slow["structuredContent"]["timed_out"], true) << slow;

  EXPECT_EQ(Request(port, "GET", "/metrics").status, 401) << "a token is set: /metrics needs it";
  // A worker counts a call as running until it has also let go of the call's sandbox, which
  // it does after the reply: the scrape is retried until the last call has left.
  HttpReply scrape;
  const auto settled = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    scrape = Request(port, "GET", "/metrics", kAuth);
    ASSERT_EQ(scrape.status, 200);
    if (Sample(scrape.body, "mcp_exec_runs_in_flight") == 0) break;
    std::this_thread::sleep_for(milliseconds(20));
  } while (std::chrono::steady_clock::now() < settled);
  EXPECT_THAT(scrape.Header("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  const std::string& m = scrape.body;
  EXPECT_EQ(Sample(m, R"(mcp_exec_exec_calls_total{outcome="ok"})"), 1) << m;
  EXPECT_EQ(Sample(m, R"(mcp_exec_exec_calls_total{outcome="exit_nonzero"})"), 1);
  EXPECT_EQ(Sample(m, R"(mcp_exec_exec_calls_total{outcome="timeout"})"), 1);
  EXPECT_EQ(Sample(m, R"(mcp_exec_exec_calls_total{outcome="oom"})"), 0);
  EXPECT_EQ(Sample(m, R"(mcp_exec_exec_calls_total{outcome="setup_error"})"), 0);
  EXPECT_EQ(Sample(m, "mcp_exec_exec_duration_seconds_count"), 3);
  // The timed-out call took at least its second.
  EXPECT_GE(Sample(m, "mcp_exec_exec_duration_seconds_sum"), 1.0);
  // The timed-out call is above 0.5 s; the other two are below it unless the machine is slow.
  EXPECT_GE(Sample(m, R"(mcp_exec_exec_duration_seconds_bucket{le="+Inf"})") -
                Sample(m, R"(mcp_exec_exec_duration_seconds_bucket{le="0.5"})"),
            1);
  EXPECT_GE(Sample(m, "mcp_exec_output_bytes_total"), 6);  // "hello\n"
  EXPECT_EQ(Sample(m, "mcp_exec_runs_in_flight"), 0);
  EXPECT_EQ(Sample(m, "mcp_exec_queue_depth"), 0);
  EXPECT_EQ(Sample(m, "mcp_exec_calls_rejected_busy_total"), 0);
  EXPECT_EQ(Sample(m, R"(mcp_exec_sessions_open{transport="streamable_http"})"), 1);
  EXPECT_EQ(Sample(m, R"(mcp_exec_sessions_open{transport="sse"})"), 0);
  EXPECT_GE(Sample(m, R"(mcp_exec_http_requests_total{code="200"})"), 5);
  EXPECT_GE(Sample(m, R"(mcp_exec_http_requests_total{code="401"})"), 1);
  EXPECT_THAT(m, HasSubstr("mcp_exec_build_info{version=\""));
  if (!TestEngine().empty()) {
    EXPECT_EQ(Sample(m, "mcp_exec_engine_info{engine=\"" + TestEngine() + "\"}"), 1) << m;
  }
  if (GetParam() == RunMode::kUnprivileged) {
    EXPECT_EQ(Sample(m, R"(mcp_exec_limits_backend_info{backend="rlimit"})"), 1) << m;
  } else {
    EXPECT_THAT(m, HasSubstr("mcp_exec_limits_backend_info{backend=\""));
  }
  // Metadata only: nothing of the code or its output.
  EXPECT_THAT(m, ::testing::Not(HasSubstr("hello")));
  EXPECT_THAT(m, ::testing::Not(HasSubstr("sleep")));

  const auto [status, said] = Promtool(m);
  EXPECT_EQ(status, 0) << "promtool check metrics (Debian: apt-get install prometheus): " << said
                       << "\n" << m;

  const Outcome stopped = server.Stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
}

// Fork ahead (docs/engine.md#fork-ahead): a zygote that keeps one sandbox ready keeps three
// after three runs at once, so that the next three find theirs ready; not more than
// MCP_EXEC_POOL_MAX. (The fall back after 30 s quiet is ReadyTarget's unit test.)
TEST_P(MetricsTest, AWarmEngineKeepsReadyAsManyAsRanAtOnceUpToPoolMax) {
  const int port = FreePort();
  BackgroundRun server =
      Serve(port, {"MCP_EXEC_ENGINE=zygote", "MCP_EXEC_PRELOAD=decimal", "MCP_EXEC_POOL_SIZE=1",
                   "MCP_EXEC_POOL_MAX=3", "MCP_EXEC_MAX_CONCURRENCY=4"});
  ASSERT_TRUE(Answers200(server, port, "/readyz")) << server.Stop().Describe();
  const json init = {
      {"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
      {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()},
                  {"clientInfo", {{"name", "metrics-test"}, {"version", "1"}}}}}};
  const HttpReply opened = Request(port, "POST", "/mcp", kAuth, init.dump());
  ASSERT_EQ(opened.status, 200) << opened.body;
  const std::string session = opened.Header("Mcp-Session-Id");
  auto scrape = [&] { return Request(port, "GET", "/metrics", kAuth).body; };
  EXPECT_EQ(Sample(scrape(), "mcp_exec_engine_sandboxes_target"), 1);

  // Four at once: one past the most.
  std::vector<std::thread> calls;
  for (int i = 0; i < 4; ++i) {
    calls.emplace_back([&, i] {
      const json r = Call(port, session, 10 + i, {{"code", "import time; time.sleep(1)"}});
      EXPECT_EQ(r["structuredContent"]["exit_code"], 0) << r;
    });
  }
  for (std::thread& t : calls) t.join();
  std::string m;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    m = scrape();
    if (Sample(m, "mcp_exec_engine_sandboxes_ready") == 3) break;
    std::this_thread::sleep_for(milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(Sample(m, "mcp_exec_engine_sandboxes_target"), 3) << m;
  EXPECT_EQ(Sample(m, "mcp_exec_engine_sandboxes_ready"), 3) << m;
  const Outcome stopped = server.Stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
}

TEST_P(MetricsTest, MetricsAuthNoneOpensMetricsButNotMcp) {
  const int port = FreePort();
  BackgroundRun server = Serve(port, {"MCP_EXEC_METRICS_AUTH=none"});
  ASSERT_TRUE(Answers200(server, port, "/healthz")) << server.Stop().Describe();
  const HttpReply scrape = Request(port, "GET", "/metrics");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_THAT(scrape.body, HasSubstr("# TYPE mcp_exec_exec_calls_total counter"));
  EXPECT_EQ(Request(port, "POST", "/mcp", {}, R"({"jsonrpc":"2.0","id":1,"method":"ping"})").status,
            401);
  EXPECT_EQ(Request(port, "GET", "/readyz").status, 200);
  const Outcome stopped = server.Stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(MetricsTest);

}  // namespace
}  // namespace mcpexec::testing
