// The MCP server over an in-memory transport: a recording sink and a fake tool.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "mcp/server.h"
#include "mcp_fakes.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

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

// What a tool leaves for after its response (the next session call's descriptors) runs once the
// response is sent, in the order handed over.
TEST_F(McpServerTest, WorkHandedOverForAfterTheResponseRunsOnceItIsSent) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<int, size_t>> ran;  // (which, messages the sink had by then)
  tool_->on_after_response = [&](int i) {
    std::lock_guard lock(mu);
    ran.emplace_back(i, sink->Messages().size());
    cv.notify_all();
  };
  const json call = {{"jsonrpc", "2.0"},
                     {"id", 5},
                     {"method", "tools/call"},
                     {"params", {{"name", "fake"}, {"arguments", {{"after_response", 2}}}}}};
  ASSERT_EQ(session_->Handle(call.dump(), sink), Handled::kResponding);
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return ran.size() == 2; }));
  const std::vector<std::pair<int, size_t>> expected = {{0, 1}, {1, 1}};
  EXPECT_EQ(ran, expected) << "the work ran before the response was sent, or out of order";
  const std::vector<json> messages = sink->Messages();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0]["result"]["isError"], false) << messages[0].dump();
}

TEST_F(McpServerTest, NotificationsAndClientResponsesGetNoReply) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  // Both are handled on the calling thread: nothing can arrive later.
  EXPECT_EQ(session_->Handle(R"({"jsonrpc":"2.0","method":"notifications/whatever"})", sink),
            Handled::kNoResponse);
  EXPECT_EQ(session_->Handle(R"({"jsonrpc":"2.0","id":9,"result":{}})", sink),
            Handled::kNoResponse);
  EXPECT_TRUE(sink->Messages().empty());
}

TEST_F(McpServerTest, ProgressIsSentForATokenAndStopsAtTheResult) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  session_->Handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                        {"params", {{"name", "fake"}, {"arguments", {{"progress_steps", 3}}},
                                    {"_meta", {{"progressToken", "tok"}}}}}}
                       .dump(),
                   sink);
  auto got = sink->WaitFinals(1);
  ASSERT_EQ(got.size(), 4u);
  double last = -1;
  for (size_t i = 0; i + 1 < got.size(); ++i) {
    EXPECT_EQ(got[i]["method"], "notifications/progress");
    EXPECT_EQ(got[i]["params"]["progressToken"], "tok");
    EXPECT_GT(got[i]["params"]["progress"].get<double>(), last);
    last = got[i]["params"]["progress"].get<double>();
  }
  EXPECT_EQ(got.back()["id"], 1);
}

// A client that reads a progress notification and the response together must still find the
// notification's token: the official TypeScript SDK handles the notification after the response.
TEST_F(McpServerTest, TheResponseFollowsTheLastProgressNotificationBy25Ms) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  session_->Handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                        {"params", {{"name", "fake"}, {"arguments", {{"progress_steps", 1}}},
                                    {"_meta", {{"progressToken", "tok"}}}}}}
                       .dump(),
                   sink);
  const std::vector<json> got = sink->WaitFinals(1);
  const auto at = sink->Times();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["method"], "notifications/progress");
  EXPECT_EQ(got[1]["id"], 1);
  EXPECT_GE(at[1] - at[0], std::chrono::milliseconds(25));
}

TEST_F(McpServerTest, InitializeDeclaresLogging) {
  json r = Request(1, "initialize", {{"protocolVersion", "2025-11-25"}});
  EXPECT_EQ(r["result"]["capabilities"]["logging"], json::object());
}

TEST_F(McpServerTest, SetLevelTakesTheEightLevelsAndRefusesAnythingElse) {
  EXPECT_EQ(Request(1, "logging/setLevel", {{"level", "info"}})["error"]["code"],
            jsonrpc::kInvalidRequest);  // before initialize, like every request but ping
  Initialize();
  for (const char* level :
       {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}) {
    json r = Request(2, "logging/setLevel", {{"level", level}});
    EXPECT_EQ(r["result"], json::object()) << level << ": " << r;
  }
  for (const json& params : {json::object(), json{{"level", "INFO"}}, json{{"level", "trace"}},
                             json{{"level", 3}}, json{{"level", nullptr}}}) {
    json r = Request(3, "logging/setLevel", params);
    EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams) << params;
    EXPECT_THAT(r["error"]["message"].get<std::string>(), HasSubstr("debug, info")) << params;
  }
  EXPECT_EQ(Call(R"({"jsonrpc":"2.0","id":4,"method":"logging/setLevel"})")["error"]["code"],
            jsonrpc::kInvalidParams);
}

// The notifications/message a fake tool call sends with these log lines (the call's own sink).
std::vector<json> LogMessagesOfACall(Session& session, int id, const json& lines) {
  auto sink = std::make_shared<RecordingSink>();
  session.Handle(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
                      {"params", {{"name", "fake"}, {"arguments", {{"log", lines}}}}}}
                     .dump(),
                 sink);
  std::vector<json> got = sink->WaitFinals(1);
  EXPECT_EQ(got.back()["id"], id);
  got.pop_back();
  for (const json& m : got) EXPECT_EQ(m["method"], "notifications/message") << m;
  return got;
}

TEST_F(McpServerTest, LogMessagesGoOutOnlyAfterSetLevelAndOnlyAtOrAboveIt) {
  Initialize();
  const json lines = json::array({{{"level", "debug"}, {"logger", "stdout"}, {"data", "d"}},
                                  {{"level", "info"}, {"logger", "stdout"}, {"data", "i"}},
                                  {{"level", "warning"}, {"logger", "stderr"}, {"data", "w"}}});
  EXPECT_EQ(LogMessagesOfACall(*session_, 1, lines), std::vector<json>{})
      << "sent before the client asked for any";

  ASSERT_EQ(Request(2, "logging/setLevel", {{"level", "info"}})["result"], json::object());
  std::vector<json> got = LogMessagesOfACall(*session_, 3, lines);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], jsonrpc::MakeNotification(
                        "notifications/message",
                        {{"level", "info"}, {"logger", "stdout"}, {"data", "i"}}));
  EXPECT_EQ(got[1]["params"]["level"], "warning");
  EXPECT_EQ(got[1]["params"]["logger"], "stderr");
  EXPECT_EQ(got[1]["params"]["data"], "w");

  ASSERT_EQ(Request(4, "logging/setLevel", {{"level", "error"}})["result"], json::object());
  EXPECT_EQ(LogMessagesOfACall(*session_, 5, lines), std::vector<json>{});
  ASSERT_EQ(Request(6, "logging/setLevel", {{"level", "debug"}})["result"], json::object());
  EXPECT_EQ(LogMessagesOfACall(*session_, 7, lines).size(), 3u);

  // The level is a session's: another session of the same server has not asked for any.
  auto other = server_.NewSession("other");
  ASSERT_EQ(other->Handle(json{{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                               {"params", {{"protocolVersion", "2025-11-25"}}}}
                              .dump(),
                          std::make_shared<RecordingSink>()),
            Handled::kResponding);
  EXPECT_EQ(LogMessagesOfACall(*other, 8, lines), std::vector<json>{});
}

// The level is read when a message is sent: a setLevel that arrives while a call runs applies
// to the rest of that call.
TEST_F(McpServerTest, SetLevelDuringACallAppliesToItsLaterMessages) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  session_->Handle(
      json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
           {"params", {{"name", "fake"},
                       {"arguments", {{"block", true},
                                      {"log", json::array({{{"level", "info"},
                                                            {"logger", "stdout"},
                                                            {"data", "late"}}})}}}}}}
          .dump(),
      sink);
  ASSERT_TRUE(tool_->WaitStarted(1));
  ASSERT_EQ(Request(2, "logging/setLevel", {{"level", "info"}})["result"], json::object());
  tool_->Release();
  std::vector<json> got = sink->WaitFinals(1);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["params"]["data"], "late");
  EXPECT_EQ(got[1]["id"], 1);
}

TEST_F(McpServerTest, CancelledCallSendsNoResult) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  session_->Handle(R"({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"fake","arguments":{"block":true}}})",
                   sink);
  ASSERT_TRUE(tool_->WaitStarted(1));
  session_->Handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}})",
                   std::make_shared<RecordingSink>());
  ASSERT_TRUE(tool_->WaitCancelled(1));
  pool_.Drain();  // the call's task has ended: a result would have been sent by now
  EXPECT_TRUE(sink->Messages().empty()) << sink->Messages()[0];
  // Cancelling an unknown or finished id is harmless, and the session goes on.
  session_->Handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}})",
                   std::make_shared<RecordingSink>());
  EXPECT_EQ(Request(3, "ping")["result"], json::object());
  EXPECT_EQ(tool_->Cancelled(), 1);
}

TEST_F(McpServerTest, FullQueueIsABusyToolError) {
  Initialize();
  // Two workers and a queue of one: with two calls running and one waiting, the fourth finds
  // no room.
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    session_->Handle(json{{"jsonrpc", "2.0"}, {"id", i}, {"method", "tools/call"},
                          {"params", {{"name", "fake"}, {"arguments", {{"block", true}}}}}}
                         .dump(),
                     sinks.back());
    if (i < 2) {
      ASSERT_TRUE(tool_->WaitStarted(i + 1));
    }
  }
  json busy = Request(99, "tools/call", {{"name", "fake"}, {"arguments", json::object()}});
  EXPECT_EQ(busy["result"]["isError"], true);
  EXPECT_THAT(busy["result"]["content"][0]["text"].get<std::string>(), HasSubstr("busy"));
  tool_->Release();
  for (auto& s : sinks) EXPECT_EQ(s->WaitFinals(1).back()["result"]["isError"], false);
}

TEST_F(McpServerTest, DuplicateRunningIdIsRefused) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  const std::string call =
      R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fake","arguments":{"block":true}}})";
  session_->Handle(call, sink);
  EXPECT_EQ(Call(call)["error"]["code"], jsonrpc::kInvalidRequest);
  tool_->Release();
  EXPECT_EQ(sink->WaitFinals(1).back()["id"], 5);
}

TEST_F(McpServerTest, CloseCancelsEveryRunningCall) {
  Initialize();
  auto sink = std::make_shared<RecordingSink>();
  // One at a time: the pool's queue holds one call, and a second submitted before a worker took
  // the first would be refused as busy.
  for (int started = 1; started <= 2; ++started) {
    session_->Handle(json{{"jsonrpc", "2.0"}, {"id", started}, {"method", "tools/call"},
                          {"params", {{"name", "fake"}, {"arguments", {{"block", true}}}}}}
                         .dump(),
                     sink);
    ASSERT_TRUE(tool_->WaitStarted(started));
  }
  session_->Close();
  EXPECT_TRUE(tool_->WaitCancelled(2));
  pool_.Drain();
  EXPECT_TRUE(sink->Messages().empty());
}

// ------------------------------------------------------------- the stateless era (2026-07-28)

// params with the _meta a 2026-07-28 request carries, plus `extra_meta`.
json Stateless(json params = json::object(), const json& extra_meta = json::object()) {
  params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                     {"io.modelcontextprotocol/clientCapabilities", json::object()},
                     {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "2"}}}};
  params["_meta"].update(extra_meta);
  return params;
}

void ExpectStatelessResult(const json& result) {
  EXPECT_EQ(result["resultType"], "complete") << result;
  EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/serverInfo"],
            (json{{"name", "mcp-exec"}, {"version", "9.9.9"}}))
      << result;
}

TEST_F(McpServerTest, DiscoverAnswersBeforeAnyHandshakeAndWithoutARevision) {
  for (const json& params : {Stateless(), json::object()}) {
    const json r = Request(1, "server/discover", params);
    ASSERT_TRUE(r.contains("result")) << r;
    const json& result = r["result"];
    EXPECT_EQ(result["supportedVersions"],
              (json{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}));
    EXPECT_EQ(result["capabilities"]["tools"], (json{{"listChanged", false}}));
    EXPECT_GE(result["ttlMs"].get<long>(), 0) << result;
    EXPECT_EQ(result["cacheScope"], "public");
    ExpectStatelessResult(result);
  }
  EXPECT_FALSE(session_->Initialized()) << "discovery is not a handshake";
}

TEST_F(McpServerTest, StatelessRequestsNeedNoHandshake) {
  const json list = Request(1, "tools/list", Stateless());
  ASSERT_TRUE(list.contains("result")) << list;
  EXPECT_EQ(list["result"]["tools"][0]["name"], "fake");
  EXPECT_GE(list["result"]["ttlMs"].get<long>(), 0) << list;
  EXPECT_EQ(list["result"]["cacheScope"], "public");
  ExpectStatelessResult(list["result"]);

  const json call =
      Request(2, "tools/call", Stateless({{"name", "fake"}, {"arguments", {{"x", 1}}}}));
  ASSERT_TRUE(call.contains("result")) << call;
  EXPECT_EQ(call["result"]["structuredContent"], (json{{"x", 1}}));
  EXPECT_EQ(call["result"]["isError"], false);
  ExpectStatelessResult(call["result"]);

  // The same requests without a revision are the handshake era's, which still needs one.
  EXPECT_EQ(Request(3, "tools/list")["error"]["code"], jsonrpc::kInvalidRequest);
  EXPECT_FALSE(session_->Initialized());
}

TEST_F(McpServerTest, AnUnsupportedRevisionGetsTheSupportedOnes) {
  for (const json& requested : {json("1900-01-01"), json("2025-11-25"), json(20260728)}) {
    const json r = Request(1, "tools/list", Stateless({}, {{"io.modelcontextprotocol/protocolVersion", requested}}));
    ASSERT_TRUE(r.contains("error")) << r;
    EXPECT_EQ(r["error"]["code"], -32022) << requested;
    EXPECT_EQ(r["error"]["data"]["supported"][0], "2026-07-28");
    EXPECT_EQ(r["error"]["data"]["requested"], requested.is_string() ? requested : json(requested.dump()));
  }
  EXPECT_EQ(Request(2, "server/discover", Stateless({}, {{"io.modelcontextprotocol/protocolVersion", "1900-01-01"}}))["error"]["code"],
            -32022);
}

TEST_F(McpServerTest, AStatelessRequestWithoutClientCapabilitiesIsInvalidParams) {
  for (const std::string method : {"server/discover", "tools/list", "tools/call"}) {
    json params = Stateless({{"name", "fake"}, {"arguments", {{"x", 1}}}});
    params["_meta"].erase("io.modelcontextprotocol/clientCapabilities");
    json r = Request(1, method, params);
    ASSERT_TRUE(r.contains("error")) << method << ": " << r;
    EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams) << method;
    EXPECT_NE(r["error"]["message"].get<std::string>().find("clientCapabilities"), std::string::npos) << r;
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = "all";
    r = Request(2, method, params);
    EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams) << method << ": " << r;
  }
}

TEST_F(McpServerTest, TheStatelessEraHasNoPingInitializeOrSetLevel) {
  for (const std::string method : {"ping", "initialize", "logging/setLevel", "resources/list"}) {
    const json r = Request(1, method, Stateless({{"protocolVersion", "2025-11-25"}, {"level", "debug"}}));
    EXPECT_EQ(r["error"]["code"], jsonrpc::kMethodNotFound) << method << ": " << r;
  }
  EXPECT_FALSE(session_->Initialized());
}

TEST_F(McpServerTest, StatelessLogMessagesGoOnlyToTheRequestThatAsks) {
  const json lines = json::array({{{"level", "debug"}, {"logger", "stdout"}, {"data", "d"}},
                                  {{"level", "info"}, {"logger", "stdout"}, {"data", "i"}},
                                  {{"level", "warning"}, {"logger", "stderr"}, {"data", "w"}}});
  // A session-wide level set in the handshake era does not reach stateless requests.
  Initialize();
  ASSERT_EQ(Request(1, "logging/setLevel", {{"level", "debug"}})["result"], json::object());
  auto call = [&](int id, const json& extra_meta) {
    auto sink = std::make_shared<RecordingSink>();
    session_->Handle(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
                          {"params", Stateless({{"name", "fake"}, {"arguments", {{"log", lines}}}},
                                               extra_meta)}}
                         .dump(),
                     sink);
    std::vector<json> got = sink->WaitFinals(1);
    EXPECT_EQ(got.back()["id"], id);
    got.pop_back();
    return got;
  };
  EXPECT_EQ(call(2, json::object()), std::vector<json>{}) << "the request asked for none";
  const std::vector<json> got = call(3, {{"io.modelcontextprotocol/logLevel", "info"}});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["method"], "notifications/message");
  EXPECT_EQ(got[0]["params"]["data"], "i");
  EXPECT_EQ(got[1]["params"]["data"], "w");
  const json bad = Request(4, "tools/call", Stateless({{"name", "fake"}}, {{"io.modelcontextprotocol/logLevel", "loud"}}));
  EXPECT_EQ(bad["error"]["code"], jsonrpc::kInvalidParams) << bad;
}

// On stdio the stateless revision cancels as the handshake era does, with
// notifications/cancelled, and no handshake comes first.
TEST_F(McpServerTest, StatelessCallIsCancelledByNotification) {
  auto sink = std::make_shared<RecordingSink>();
  session_->Handle(json{{"jsonrpc", "2.0"},
                        {"id", "s1"},
                        {"method", "tools/call"},
                        {"params", Stateless({{"name", "fake"}, {"arguments", {{"block", true}}}})}}
                       .dump(),
                   sink);
  ASSERT_TRUE(tool_->WaitStarted(1));
  session_->Handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}})",
                   std::make_shared<RecordingSink>());
  ASSERT_TRUE(tool_->WaitCancelled(1));
  pool_.Drain();
  EXPECT_TRUE(sink->Messages().empty()) << sink->Messages()[0];
  EXPECT_FALSE(session_->Initialized());
}

TEST_F(McpServerTest, AnInitializedSessionNamingItsOwnRevisionStaysInItsEra) {
  Initialize();
  const json r = Request(1, "tools/list", Stateless({}, {{"io.modelcontextprotocol/protocolVersion", "2025-11-25"}}));
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_FALSE(r["result"].contains("resultType")) << r;
  EXPECT_EQ(Request(2, "ping", Stateless({}, {{"io.modelcontextprotocol/protocolVersion", "2025-11-25"}}))["result"],
            json::object());
}

}  // namespace
}  // namespace mcpexec::mcp
