// The MCP server over an in-memory transport: a recording sink and a fake tool.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "mcp/server.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class RecordingSink : public MessageSink {
 public:
  void Send(const json& message, bool final) override {
    std::lock_guard lock(mu_);
    messages_.push_back(message);
    finals_ += final ? 1 : 0;
    cv_.notify_all();
  }
  // Waits for `n` final messages; returns every message received so far.
  std::vector<json> WaitFinals(int n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return finals_ >= n; });
    return messages_;
  }
  std::vector<json> Messages() {
    std::lock_guard lock(mu_);
    return messages_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json> messages_;
  int finals_ = 0;
};

// Echoes its arguments; "sleep_ms" makes it wait (reporting progress) until cancelled.
class FakeTool : public Tool {
 public:
  std::string Name() const override { return "fake"; }
  json Definition() const override {
    return {{"name", "fake"}, {"inputSchema", {{"type", "object"}}}};
  }
  json Call(const json& arguments, const ToolCallContext& context) override {
    const int sleep_ms = arguments.value("sleep_ms", 0);
    for (int waited = 0; waited < sleep_ms; waited += 50) {
      if (context.report_progress) context.report_progress(waited + 1, "waiting");
      pollfd pfd{context.cancel_fd, POLLIN, 0};
      if (poll(&pfd, 1, 50) > 0) {
        ++cancelled;
        return ToolError("cancelled");
      }
    }
    return {{"content", json::array()}, {"structuredContent", arguments}, {"isError", false}};
  }
  std::atomic<int> cancelled{0};
};

class McpServerTest : public ::testing::Test {
 protected:
  McpServerTest()
      : pool_(2, 1), tool_(std::make_shared<FakeTool>()), server_({"mcp-exec", "9.9.9", ""}, {tool_}, pool_) {}

  // Sends one message and returns the single final reply.
  json Call(const std::string& text) {
    auto sink = std::make_shared<RecordingSink>();
    EXPECT_EQ(session_->Handle(text, sink), Handled::kResponding) << text;
    auto got = sink->WaitFinals(1);
    EXPECT_FALSE(got.empty()) << text;
    return got.empty() ? json() : got.back();
  }
  json Request(int id, const std::string& method, json params = json::object()) {
    return Call(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump());
  }
  void Initialize() {
    json r = Request(0, "initialize", {{"protocolVersion", "2025-11-25"},
                                       {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    ASSERT_EQ(r["result"]["protocolVersion"], "2025-11-25");
    auto sink = std::make_shared<RecordingSink>();
    EXPECT_EQ(session_->Handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", sink),
              Handled::kNoResponse);
  }

  WorkerPool pool_;
  std::shared_ptr<FakeTool> tool_;
  Server server_;
  std::shared_ptr<Session> session_ = server_.NewSession("test");
};

TEST_F(McpServerTest, InitializeNegotiatesTheVersionAndDeclaresTools) {
  json r = Request(1, "initialize", {{"protocolVersion", "2024-11-05"}});
  EXPECT_EQ(r["id"], 1);
  EXPECT_EQ(r["result"]["protocolVersion"], "2024-11-05");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "mcp-exec");
  EXPECT_EQ(r["result"]["serverInfo"]["version"], "9.9.9");
  EXPECT_TRUE(r["result"]["capabilities"]["tools"].is_object());
  EXPECT_EQ(session_->ProtocolVersion(), "2024-11-05");
  EXPECT_EQ(Request(2, "initialize", {{"protocolVersion", "2024-11-05"}})["error"]["code"],
            jsonrpc::kInvalidRequest);
}

TEST_F(McpServerTest, UnknownVersionGetsTheLatest) {
  json r = Request(1, "initialize", {{"protocolVersion", "1999-01-01"}});
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpServerTest, InitializeWithoutParamsIsInvalidParams) {
  EXPECT_EQ(Call(R"({"jsonrpc":"2.0","id":1,"method":"initialize"})")["error"]["code"],
            jsonrpc::kInvalidParams);
}

TEST_F(McpServerTest, PingWorksBeforeAndAfterInitialize) {
  EXPECT_EQ(Request(1, "ping")["result"], json::object());
  Initialize();
  EXPECT_EQ(Request(2, "ping")["result"], json::object());
}

TEST_F(McpServerTest, RequestsBeforeInitializeAreRefused) {
  json r = Request(1, "tools/list");
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidRequest);
  EXPECT_THAT(r["error"]["message"].get<std::string>(), HasSubstr("not initialized"));
}

TEST_F(McpServerTest, EveryErrorCode) {
  Initialize();
  EXPECT_EQ(Call("{oops")["error"]["code"], jsonrpc::kParseError);
  EXPECT_EQ(Call(R"({"jsonrpc":"2.0","id":1})")["error"]["code"], jsonrpc::kInvalidRequest);
  EXPECT_EQ(Request(2, "no/such/method")["error"]["code"], jsonrpc::kMethodNotFound);
  EXPECT_EQ(Request(3, "tools/call", {{"name", "nope"}})["error"]["code"], jsonrpc::kInvalidParams);
  EXPECT_EQ(Request(4, "tools/call", {{"arguments", json::object()}})["error"]["code"],
            jsonrpc::kInvalidParams);
  EXPECT_EQ(Request(5, "tools/call", {{"name", "fake"}, {"arguments", 3}})["error"]["code"],
            jsonrpc::kInvalidParams);
  EXPECT_EQ(Call(R"({"jsonrpc":"2.0","id":6,"method":"tools/list","params":[1]})")["error"]["code"],
            jsonrpc::kInvalidParams);
}

TEST_F(McpServerTest, ToolsListAndCall) {
  Initialize();
  json list = Request(1, "tools/list");
  ASSERT_EQ(list["result"]["tools"].size(), 1u);
  EXPECT_EQ(list["result"]["tools"][0]["name"], "fake");
  json call = Request(2, "tools/call", {{"name", "fake"}, {"arguments", {{"x", 1}}}});
  EXPECT_EQ(call["id"], 2);
  EXPECT_EQ(call["result"]["structuredContent"]["x"], 1);
  EXPECT_EQ(call["result"]["isError"], false);
}

TEST_F(McpServerTest, NotificationsAndClientResponsesGetNoReply) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  EXPECT_EQ(session_->Handle(R"({"jsonrpc":"2.0","method":"notifications/whatever"})", sink),
            Handled::kNoResponse);
  EXPECT_EQ(session_->Handle(R"({"jsonrpc":"2.0","id":9,"result":{}})", sink),
            Handled::kNoResponse);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(sink->Messages().empty());
}

TEST_F(McpServerTest, ProgressIsSentForATokenAndStopsAtTheResult) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  session_->Handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                        {"params", {{"name", "fake"}, {"arguments", {{"sleep_ms", 200}}},
                                    {"_meta", {{"progressToken", "tok"}}}}}}
                       .dump(),
                   sink);
  auto got = sink->WaitFinals(1);
  ASSERT_GE(got.size(), 3u);
  double last = -1;
  for (size_t i = 0; i + 1 < got.size(); ++i) {
    EXPECT_EQ(got[i]["method"], "notifications/progress");
    EXPECT_EQ(got[i]["params"]["progressToken"], "tok");
    EXPECT_GT(got[i]["params"]["progress"].get<double>(), last);
    last = got[i]["params"]["progress"].get<double>();
  }
  EXPECT_EQ(got.back()["id"], 1);
}

TEST_F(McpServerTest, CancelledCallSendsNoResult) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  session_->Handle(R"({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"fake","arguments":{"sleep_ms":5000}}})",
                   sink);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  session_->Handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}})",
                   std::make_shared<RecordingSink>());
  for (int i = 0; i < 100 && tool_->cancelled.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(tool_->cancelled.load(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(sink->Messages().empty()) << sink->Messages()[0];
  // Cancelling an unknown or finished id is harmless, and the session goes on.
  session_->Handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}})",
                   std::make_shared<RecordingSink>());
  EXPECT_EQ(Request(3, "ping")["result"], json::object());
}

TEST_F(McpServerTest, FullQueueIsABusyToolError) {
  Initialize();
  // Two workers and a queue of one: the fourth concurrent call finds no room.
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    session_->Handle(json{{"jsonrpc", "2.0"}, {"id", i}, {"method", "tools/call"},
                          {"params", {{"name", "fake"}, {"arguments", {{"sleep_ms", 300}}}}}}
                         .dump(),
                     sinks.back());
    // Let a worker take each of the first two before the next arrives.
    if (i < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  json busy = Request(99, "tools/call", {{"name", "fake"}, {"arguments", json::object()}});
  EXPECT_EQ(busy["result"]["isError"], true);
  EXPECT_THAT(busy["result"]["content"][0]["text"].get<std::string>(), HasSubstr("busy"));
  for (auto& s : sinks) EXPECT_EQ(s->WaitFinals(1).back()["result"]["isError"], false);
}

TEST_F(McpServerTest, DuplicateRunningIdIsRefused) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  const std::string call =
      R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fake","arguments":{"sleep_ms":300}}})";
  session_->Handle(call, sink);
  EXPECT_EQ(Call(call)["error"]["code"], jsonrpc::kInvalidRequest);
  EXPECT_EQ(sink->WaitFinals(1).back()["id"], 5);
}

TEST_F(McpServerTest, CloseCancelsEveryRunningCall) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  session_->Handle(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake","arguments":{"sleep_ms":5000}}})",
                   sink);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  session_->Close();
  for (int i = 0; i < 100 && tool_->cancelled.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(tool_->cancelled.load(), 1);
}

}  // namespace
}  // namespace mcpexec::mcp
