// The `call steps` debug line (docs/engine.md#where-a-call-spends-its-time) of a real `mcp-exec
// serve`, as root and as an unprivileged user: at MCP_EXEC_LOG_LEVEL=debug each exec call over
// stdio writes one, with every step's time as a non-negative integer and their sum within what
// the client measured; over Streamable HTTP it has every step but the write, which the
// connection does after it; at the default level there is none.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/loopback_http.h"
#include "support/mcp_stdio.h"
#include "support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using std::chrono::microseconds;
using std::chrono::steady_clock;

// The steps of a call over stdio, in order; HTTP has all but write_us.
const std::vector<std::string> kStdioSteps = {
    "parse_us", "dispatch_us", "queue_us",  "validate_us",  "take_us",  "send_us",
    "run_us",   "collect_us",  "result_us", "serialize_us", "write_us",
};

// The `call steps` lines of a server's log, by request id.
std::map<std::string, json> StepLines(const std::string& log) {
  std::map<std::string, json> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const json parsed = json::parse(line, nullptr, false);
    if (!parsed.is_object() || parsed.value("msg", "") != "call steps") continue;
    EXPECT_EQ(lines.count(parsed.value("request_id", "")), 0u) << "two lines for one call: " << log;
    lines[parsed.value("request_id", "")] = parsed;
  }
  return lines;
}

// Checks that `line` has exactly `steps` among its *_us fields, each a non-negative integer,
// and returns their sum in microseconds.
int64_t CheckSteps(const json& line, const std::vector<std::string>& steps) {
  int64_t sum = 0;
  for (const std::string& step : steps) {
    const json& value = line.contains(step) ? line[step] : json();
    EXPECT_TRUE(value.is_number_integer()) << step << " missing or not an integer: " << line;
    if (!value.is_number_integer()) continue;
    EXPECT_GE(value.get<int64_t>(), 0) << step << ": " << line;
    sum += value.get<int64_t>();
  }
  for (const auto& [key, value] : line.items()) {
    if (key.ends_with("_us")) {
      EXPECT_THAT(steps, ::testing::Contains(key)) << "a field for a step not measured: " << line;
    }
  }
  return sum;
}

// How a run of this suite's engine may have had its sandbox: cold is cold; a warm engine's
// call takes a ready one, or (none ready yet) forks one from its zygote or runs cold.
void CheckSandbox(const json& line) {
  const std::string sandbox = line.value("sandbox", "");
  if (TestEngine() == "cold") {
    EXPECT_EQ(sandbox, "cold") << line;
  } else {
    EXPECT_THAT(sandbox, ::testing::AnyOf("ready", "forked", "cold")) << line;
  }
}

class CallStepsTest : public SandboxTest {};

TEST_P(CallStepsTest, AtDebugEachExecCallOverStdioWritesItsStepsWithinTheClientsTime) {
  McpStdioServer server(runner_, {"MCP_EXEC_LOG_LEVEL=debug"});
  ASSERT_EQ(server.Problem(), "");
  // The first call may meet a zygote or pool still starting; the next ones are warm.
  ASSERT_EQ(Structured(server.Call("exec", {{"code", "print(1)"}}))["exit_code"], 0);
  std::map<std::string, microseconds> client;
  for (int i = 0; i < 3; ++i) {
    const auto sent = steady_clock::now();
    const int id = server.Send("exec", {{"code", "print(1)"}});
    const json result = server.Wait(id);
    client[std::to_string(id)] =
        std::chrono::duration_cast<microseconds>(steady_clock::now() - sent);
    ASSERT_EQ(Structured(result)["stdout"], "1\n") << result;
  }
  const Outcome stopped = server.Stop();
  const std::map<std::string, json> lines = StepLines(stopped.err);
  EXPECT_EQ(lines.size(), 4u) << "one line per exec call, no other: " << stopped.err;
  for (const auto& [id, took] : client) {
    ASSERT_EQ(lines.count(id), 1u) << "no steps for request " << id << ": " << stopped.err;
    const json& line = lines.at(id);
    EXPECT_EQ(line["level"], "debug");
    EXPECT_EQ(line["tool"], "exec");
    EXPECT_EQ(line["session"], "stdio");
    CheckSandbox(line);
    const int64_t sum = CheckSteps(line, kStdioSteps);
    EXPECT_LE(sum, took.count()) << "the steps of request " << id << " add up to more than the "
                                 << took.count() << " us its client waited: " << line;
  }
}

TEST_P(CallStepsTest, AtTheDefaultLevelNoStepsAreWritten) {
  McpStdioServer server(runner_);
  ASSERT_EQ(server.Problem(), "");
  ASSERT_EQ(Structured(server.Call("exec", {{"code", "print(1)"}}))["exit_code"], 0);
  ASSERT_EQ(Structured(server.Call("exec", {{"code", "print(1)"}}))["exit_code"], 0);
  const Outcome stopped = server.Stop();
  EXPECT_THAT(stopped.err, ::testing::HasSubstr(R"("msg":"exec")"))
      << "the calls' info lines are in the log that was read";
  EXPECT_THAT(stopped.err, ::testing::Not(::testing::HasSubstr("call steps"))) << stopped.err;
  EXPECT_THAT(stopped.err, ::testing::Not(::testing::HasSubstr(R"("level":"debug")")))
      << stopped.err;
}

TEST_P(CallStepsTest, OverStreamableHttpTheLineHasEveryStepButTheWrite) {
  const int port = FreePort();
  BackgroundRun server =
      runner_.StartCommand({runner_.Binary(), "serve", "--transport", "http", "--addr",
                            "127.0.0.1:" + std::to_string(port), "--rootfs", runner_.Rootfs()},
                           WithEnv({"MCP_EXEC_LOG_LEVEL=debug"}));
  const auto deadline = steady_clock::now() + std::chrono::seconds(60);
  while (HttpRequest(port, "GET", "/healthz").status != 200) {
    ASSERT_FALSE(Exited(server.Pid())) << server.Stop().Describe();
    ASSERT_LT(steady_clock::now(), deadline) << "the server never answered /healthz";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::vector<std::string> accept = {"Accept: application/json"};
  const json init = {{"jsonrpc", "2.0"},
                     {"id", 1},
                     {"method", "initialize"},
                     {"params",
                      {{"protocolVersion", "2025-06-18"},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "call-steps-test"}, {"version", "1"}}}}}};
  const HttpReply opened = HttpRequest(port, "POST", "/mcp", accept, init.dump());
  ASSERT_EQ(opened.status, 200) << opened.body;
  std::vector<std::string> headers = accept;
  headers.push_back("Mcp-Session-Id: " + opened.Header("Mcp-Session-Id"));
  microseconds took{0};
  for (int id = 2; id <= 3; ++id) {
    const json call = {{"jsonrpc", "2.0"},
                       {"id", id},
                       {"method", "tools/call"},
                       {"params", {{"name", "exec"}, {"arguments", {{"code", "print(1)"}}}}}};
    const auto sent = steady_clock::now();
    const HttpReply reply = HttpRequest(port, "POST", "/mcp", headers, call.dump());
    took = std::chrono::duration_cast<microseconds>(steady_clock::now() - sent);
    ASSERT_EQ(reply.status, 200) << reply.body;
    const json answer = json::parse(reply.body, nullptr, false);
    ASSERT_EQ(answer["result"]["structuredContent"]["stdout"], "1\n") << reply.body;
  }
  const Outcome stopped = server.Stop();
  const std::map<std::string, json> lines = StepLines(stopped.err);
  ASSERT_EQ(lines.count("3"), 1u) << stopped.err;
  const json& line = lines.at("3");
  EXPECT_EQ(line["tool"], "exec");
  CheckSandbox(line);
  std::vector<std::string> steps = kStdioSteps;
  steps.pop_back();  // write_us: the connection writes the reply after the line
  const int64_t sum = CheckSteps(line, steps);
  EXPECT_LE(sum, took.count()) << "the steps add up to more than the " << took.count()
                               << " us the client waited: " << line;
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(CallStepsTest);

}  // namespace
}  // namespace mcpexec::testing
