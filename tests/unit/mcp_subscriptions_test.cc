// subscriptions/listen with the tasks extension's notifications/tasks (the stateless era),
// through a session as a client sees it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "mcp/protocol.h"
#include "mcp/server.h"
#include "mcp_fakes.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;

constexpr const char* kSubscriptionId = "io.modelcontextprotocol/subscriptionId";

json Stateless(json params, bool extension = true) {
  json capabilities = json::object();
  if (extension) capabilities["extensions"][std::string(kTasksExtension)] = json::object();
  params["_meta"] = {{std::string(kMetaProtocolVersion), "2026-07-28"},
                     {std::string(kMetaClientCapabilities), capabilities}};
  return params;
}

json Request(const json& id, const std::string& method, const json& params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

// The messages of `sink` once `done` holds for them (within 5 s).
std::vector<json> WaitUntil(RecordingSink& sink,
                            const std::function<bool(const std::vector<json>&)>& done) {
  std::vector<json> messages;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    messages = sink.Messages();
    if (done(messages)) return messages;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  ADD_FAILURE() << "not there within 5 s; got " << json(messages).dump();
  return messages;
}

// The notifications/tasks of `messages` for task `id`.
std::vector<json> TaskNotes(const std::vector<json>& messages, const std::string& id) {
  std::vector<json> notes;
  for (const json& m : messages) {
    if (m.value("method", "") == "notifications/tasks" && m["params"].value("taskId", "") == id) {
      notes.push_back(m);
    }
  }
  return notes;
}

// Drops every notifications/tasks once `drop` is set, as a transport does past the budget of a
// client that does not read.
class DroppingSink : public RecordingSink {
 public:
  std::atomic<bool> drop{false};
  bool Send(const json& message, bool final) override {
    if (drop && message.value("method", "") == "notifications/tasks") return false;
    return RecordingSink::Send(message, final);
  }
};

// A JSON-only Streamable HTTP reply: the final response, nothing before it.
class JsonReplySink : public RecordingSink {
 public:
  bool OpenAfterFinal() const override { return false; }
  bool CarriesNotifications() const override { return false; }
};

class McpSubscriptionsTest : public ::testing::Test {
 protected:
  McpSubscriptionsTest()
      : pool_(4, 64),
        job_(std::make_shared<FakeTool>(TaskSupport::kOptional, "job")),
        server_({"mcp-exec", "9.9.9", ""}, {job_}, pool_) {}
  ~McpSubscriptionsTest() override {
    job_->Release();
    for (auto& s : sessions_) s->Close();
    pool_.Drain();
  }

  // A stateless request's session of caller `caller` (the HTTP credential, or a connection).
  std::shared_ptr<Session> NewSession(const std::string& caller = "shared") {
    auto session = server_.NewSession("stateless", caller);
    sessions_.push_back(session);
    return session;
  }
  // One request; its final reply.
  static json Send(Session& session, const json& id, const std::string& method, json params) {
    auto sink = std::make_shared<RecordingSink>();
    session.Handle(Request(id, method, params).dump(), sink);
    for (const json& m : sink->WaitFinals(1)) {
      if (m.contains("id")) return m;
    }
    return json();
  }
  // A task of the job tool; its id.
  std::string StartTask(Session& session, json arguments) {
    const json r = Send(session, 1, "tools/call", Stateless({{"name", "job"}, {"arguments", arguments}}));
    EXPECT_EQ(r["result"]["resultType"], "task") << r;
    return r["result"].value("taskId", "");
  }
  // Waits until task `id` of `session`'s caller has ended, told on a subscription of its own:
  // every listener's notification of that end has gone out by then.
  static void AwaitEndTold(Session& session, const std::string& id) {
    auto own = Listen(session, "await-" + id, {id});
    WaitUntil(*own, [&](const auto& m) {
      for (const json& n : TaskNotes(m, id)) {
        if (n["params"]["status"] != "working") return true;
      }
      return false;
    });
    session.Handle(json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"},
                        {"params", {{"requestId", "await-" + id}}}}.dump(),
                   std::make_shared<RecordingSink>());
  }
  // Opens a subscription with request id `id` for `task_ids`; its stream.
  static std::shared_ptr<RecordingSink> Listen(Session& session, const json& id, const json& task_ids,
                                               bool extension = true) {
    auto sink = std::make_shared<RecordingSink>();
    session.Handle(
        Request(id, "subscriptions/listen", Stateless({{"notifications", {{"taskIds", task_ids}}}}, extension))
            .dump(),
        sink);
    return sink;
  }

  WorkerPool pool_;
  std::shared_ptr<FakeTool> job_;
  Server server_;
  std::vector<std::shared_ptr<Session>> sessions_;
};

// The acknowledgement first, then the task as it is, then its end with the result inlined: every
// message tagged with the listen request's id, and no response while the stream is open.
TEST_F(McpSubscriptionsTest, AListenerIsToldOfItsTasksEndWithTheResult) {
  auto caller = NewSession();
  const std::string id = StartTask(*caller, {{"block", true}, {"n", 7}});
  ASSERT_TRUE(job_->WaitStarted(1));
  // Another request of the same caller listens (over HTTP each is a session of its own).
  auto listener = NewSession();
  auto stream = Listen(*listener, "sub-1", {id});
  std::vector<json> messages = WaitUntil(*stream, [&](const auto& m) { return m.size() >= 2; });
  ASSERT_GE(messages.size(), 2u);
  EXPECT_EQ(messages[0]["method"], "notifications/subscriptions/acknowledged");
  EXPECT_EQ(messages[0]["params"]["notifications"], (json{{"taskIds", {id}}}));
  EXPECT_EQ(messages[0]["params"]["_meta"][kSubscriptionId], "sub-1");
  EXPECT_EQ(messages[1]["method"], "notifications/tasks");
  EXPECT_EQ(messages[1]["params"]["status"], "working");
  EXPECT_EQ(messages[1]["params"]["_meta"][kSubscriptionId], "sub-1");

  job_->Release();
  messages = WaitUntil(*stream, [&](const auto& m) { return TaskNotes(m, id).size() >= 2; });
  const json ended = TaskNotes(messages, id).back();
  EXPECT_EQ(ended["params"]["status"], "completed");
  EXPECT_EQ(ended["params"]["result"]["structuredContent"]["n"], 7);
  EXPECT_GT(ended["params"]["ttlMs"].get<int64_t>(), 0);
  EXPECT_EQ(ended["params"]["_meta"][kSubscriptionId], "sub-1");
  for (const json& m : stream->Messages()) EXPECT_FALSE(m.contains("id")) << "answered: " << m;
}

// A task that ended before the client listened is told at once: a listener never waits for a
// change that has happened.
TEST_F(McpSubscriptionsTest, ATaskThatEndedBeforeTheListenIsToldAtOnce) {
  auto session = NewSession();
  const std::string id = StartTask(*session, {{"n", 1}});
  AwaitEndTold(*session, id);
  auto stream = Listen(*session, 3, {id, id, "unknown", id});
  const auto messages = WaitUntil(*stream, [&](const auto& m) { return !TaskNotes(m, id).empty(); });
  EXPECT_EQ(messages[0]["params"]["notifications"], (json{{"taskIds", {id}}})) << "an id listed again";
  EXPECT_EQ(TaskNotes(messages, id)[0]["params"]["status"], "completed");
  EXPECT_EQ(TaskNotes(messages, id)[0]["params"]["result"]["structuredContent"]["n"], 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(TaskNotes(stream->Messages(), id).size(), 1u) << "a state told twice";
}

// Another caller's task is left out of the acknowledgement as an unknown id is, and nothing of
// it is sent: the answer does not tell whether it exists.
TEST_F(McpSubscriptionsTest, AnotherCallersTaskIsNotHonored) {
  auto owner = NewSession("owner");
  const std::string id = StartTask(*owner, {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  auto stranger = NewSession("stranger");
  auto stream = Listen(*stranger, 1, {id, "no-such-task"});
  auto messages = WaitUntil(*stream, [](const auto& m) { return !m.empty(); });
  EXPECT_EQ(messages[0]["params"]["notifications"], (json{{"taskIds", json::array()}}));
  auto owners = Listen(*owner, 2, {id});  // told of the end after the stranger would have been
  job_->Release();
  WaitUntil(*owners, [&](const auto& m) { return !TaskNotes(m, id).empty() && TaskNotes(m, id).back()["params"]["status"] == "completed"; });
  EXPECT_EQ(stream->Messages().size(), 1u) << json(stream->Messages()).dump();
}

// notifications/cancelled for the listen request ends it: the task's end is not sent there, and
// the request is not answered.
TEST_F(McpSubscriptionsTest, ACancelledSubscriptionHearsNothingMore) {
  auto session = NewSession();
  const std::string id = StartTask(*session, {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  auto stream = Listen(*session, 5, {id});
  WaitUntil(*stream, [&](const auto& m) { return m.size() >= 2; });
  session->Handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}})",
                  std::make_shared<RecordingSink>());
  EXPECT_EQ(server_.Listening().OpenCount(), 0u);
  EXPECT_EQ(stream.use_count(), 1) << "the closed subscription still holds its stream";
  auto other = Listen(*NewSession(), 6, {id});  // told after the cancelled one would have been
  job_->Release();
  WaitUntil(*other, [&](const auto& m) { return !TaskNotes(m, id).empty() && TaskNotes(m, id).back()["params"]["status"] == "completed"; });
  EXPECT_EQ(stream->Messages().size(), 2u) << json(stream->Messages()).dump();
  // The id is free again.
  auto again = Listen(*session, 5, json::array());
  EXPECT_EQ(WaitUntil(*again, [](const auto& m) { return !m.empty(); })[0]["method"],
            "notifications/subscriptions/acknowledged");
}

// A session that goes away (its stream closed) takes its subscriptions with it.
TEST_F(McpSubscriptionsTest, AClosedSessionsSubscriptionsEnd) {
  auto session = NewSession();
  auto stream = Listen(*session, 1, json::array());
  WaitUntil(*stream, [](const auto& m) { return !m.empty(); });
  EXPECT_EQ(server_.Listening().OpenCount(), 1u);
  session->Close();
  EXPECT_EQ(server_.Listening().OpenCount(), 0u);
  auto dropped = NewSession();
  Listen(*dropped, 2, json::array());
  EXPECT_EQ(server_.Listening().OpenCount(), 1u);
  sessions_.pop_back();
  dropped.reset();
  EXPECT_EQ(server_.Listening().OpenCount(), 0u) << "a destroyed session's subscription is open";
}

// A stopping server answers each open subscription: the response tells the client it ended on
// purpose, not by a dropped connection.
TEST_F(McpSubscriptionsTest, AStoppingServerEndsEachSubscriptionWithItsResponse) {
  auto session = NewSession();
  auto a = Listen(*session, "a", json::array());
  auto b = Listen(*session, 2, json::array());
  server_.Listening().EndAll();
  for (const auto& [stream, id] : {std::pair{a, json("a")}, std::pair{b, json(2)}}) {
    const auto messages = stream->WaitFinals(1);
    ASSERT_EQ(messages.size(), 2u);
    const json& end = messages[1];
    EXPECT_EQ(end["id"], id);
    EXPECT_EQ(end["result"]["resultType"], "complete");
    EXPECT_EQ(end["result"]["_meta"][kSubscriptionId], id);
  }
  EXPECT_EQ(server_.Listening().OpenCount(), 0u);
}

TEST_F(McpSubscriptionsTest, BadListensAreRefusedWithClearErrors) {
  auto session = NewSession();
  auto error_of = [&](const json& id, const json& params) {
    return Send(*session, id, "subscriptions/listen", params)["error"];
  };
  EXPECT_EQ(error_of(1, Stateless(json::object()))["code"], jsonrpc::kInvalidParams);
  EXPECT_EQ(error_of(2, Stateless({{"notifications", "all"}}))["code"], jsonrpc::kInvalidParams);
  EXPECT_EQ(error_of(3, Stateless({{"notifications", {{"taskIds", "x"}}}}))["code"],
            jsonrpc::kInvalidParams);
  EXPECT_EQ(error_of(4, Stateless({{"notifications", {{"taskIds", {1, 2}}}}}))["code"],
            jsonrpc::kInvalidParams);
  json many = json::array();
  for (int i = 0; i < 1001; ++i) many.push_back("t" + std::to_string(i));
  EXPECT_EQ(error_of(5, Stateless({{"notifications", {{"taskIds", many}}}}))["code"],
            jsonrpc::kInvalidParams);
  // Task ids without the tasks extension declared.
  const json missing = error_of(6, Stateless({{"notifications", {{"taskIds", json::array()}}}}, false));
  EXPECT_EQ(missing["code"], kMissingRequiredClientCapability);
  EXPECT_EQ(missing["data"]["requiredCapabilities"]["extensions"][std::string(kTasksExtension)],
            json::object());
  // A JSON reply cannot carry a stream.
  auto json_reply = std::make_shared<JsonReplySink>();
  session->Handle(Request(7, "subscriptions/listen", Stateless({{"notifications", json::object()}})).dump(),
                  json_reply);
  EXPECT_EQ(json_reply->WaitFinals(1).at(0)["error"]["code"], jsonrpc::kInvalidRequest);
  // Filters this server has nothing for are left out of the acknowledgement.
  auto stream = std::make_shared<RecordingSink>();
  session->Handle(Request(8, "subscriptions/listen",
                          Stateless({{"notifications", {{"toolsListChanged", true},
                                                        {"resourceSubscriptions", {"file:///x"}}}}}))
                      .dump(),
                  stream);
  EXPECT_EQ(WaitUntil(*stream, [](const auto& m) { return !m.empty(); })[0]["params"]["notifications"],
            json::object());
  // Its id is taken while it is open.
  EXPECT_EQ(error_of(8, Stateless({{"notifications", json::object()}}))["code"], jsonrpc::kInvalidRequest);
  EXPECT_EQ(Send(*session, 8, "tools/call", Stateless({{"name", "job"}}, false))["error"]["code"],
            jsonrpc::kInvalidRequest);
  EXPECT_EQ(server_.Listening().OpenCount(), 1u);
}

// The handshake era has no subscriptions/listen, nor the other methods of the stateless era alone.
TEST_F(McpSubscriptionsTest, TheHandshakeEraHasNoListen) {
  auto session = server_.NewSession("test");
  sessions_.push_back(session);
  Send(*session, 0, "initialize",
       {{"protocolVersion", "2025-11-25"},
        {"capabilities", json::object()},
        {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
  session->Handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                  std::make_shared<RecordingSink>());
  for (const std::string method : {"subscriptions/listen", "tasks/update"}) {
    EXPECT_EQ(Send(*session, 1, method, {{"notifications", json::object()}})["error"]["code"],
              jsonrpc::kMethodNotFound)
        << method;
  }
}

// One caller holds a bounded number of open subscriptions.
TEST_F(McpSubscriptionsTest, ACallersOpenSubscriptionsAreBounded) {
  auto session = NewSession();
  std::vector<std::shared_ptr<RecordingSink>> open;
  for (size_t i = 0; i < Subscriptions::kMaxPerCaller; ++i) {
    open.push_back(Listen(*session, static_cast<int>(i), json::array()));
  }
  const json refused =
      Send(*session, 100, "subscriptions/listen", Stateless({{"notifications", json::object()}}));
  EXPECT_EQ(refused["error"]["code"], jsonrpc::kInvalidRequest);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("close one first"), std::string::npos);
  // Another caller is not held back by this one.
  auto other = NewSession("other");
  EXPECT_EQ(WaitUntil(*Listen(*other, 1, json::array()), [](const auto& m) { return !m.empty(); })[0]["method"],
            "notifications/subscriptions/acknowledged");
  // One closed, one more may open.
  session->Handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}})",
                  std::make_shared<RecordingSink>());
  EXPECT_EQ(WaitUntil(*Listen(*session, 101, json::array()), [](const auto& m) { return !m.empty(); })[0]["method"],
            "notifications/subscriptions/acknowledged");
}

// A run that asks the client for input is told as input_required with the requests, then as
// working again once answered.
TEST_F(McpSubscriptionsTest, AListenerSeesATaskAskAndResume) {
  auto session = NewSession();
  const json ask = {{"k", {{"method", "elicitation/create"}, {"params", {{"message", "ok?"}}}}}};
  const std::string id = StartTask(*session, {{"ask", ask}});
  ASSERT_TRUE(job_->WaitStarted(1));
  auto stream = Listen(*session, 9, {id});
  auto messages = WaitUntil(*stream, [&](const auto& m) {
    for (const json& n : TaskNotes(m, id)) {
      if (n["params"]["status"] == "input_required") return true;
    }
    return false;
  });
  const json asking = TaskNotes(messages, id).back();
  EXPECT_EQ(asking["params"]["inputRequests"], ask);
  Send(*session, 10, "tasks/update", Stateless({{"taskId", id}, {"inputResponses", {{"k", true}}}}));
  messages = WaitUntil(*stream, [&](const auto& m) {
    return TaskNotes(m, id).back()["params"]["status"] == "completed";
  });
  std::vector<std::string> statuses;
  for (const json& n : TaskNotes(messages, id)) statuses.push_back(n["params"]["status"]);
  // The first is what the task was when the listen came: working, or asking already.
  ASSERT_GE(statuses.size(), 3u);
  EXPECT_EQ(statuses[statuses.size() - 2], "working");
  EXPECT_EQ(statuses.back(), "completed");
}

// A large result is left out of the notification (tasks/get has it), so that what waits for a
// slow client stays small; a small one is inlined.
TEST_F(McpSubscriptionsTest, ALargeResultIsLeftForTasksGet) {
  auto session = NewSession();
  const std::string big(Subscriptions::kMaxInlineBytes + 1, 'x');
  const std::string large = StartTask(*session, {{"block", true}, {"pad", big}});
  const std::string small = StartTask(*session, {{"block", true}, {"pad", "y"}});
  ASSERT_TRUE(job_->WaitStarted(2));
  auto stream = Listen(*session, 1, {large, small});
  job_->Release();
  const auto messages = WaitUntil(*stream, [&](const auto& m) {
    return TaskNotes(m, large).size() >= 2 && TaskNotes(m, small).size() >= 2;
  });
  const json large_end = TaskNotes(messages, large).back()["params"];
  EXPECT_EQ(large_end["status"], "completed");
  EXPECT_FALSE(large_end.contains("result"));
  EXPECT_EQ(Send(*session, 2, "tasks/get", Stateless({{"taskId", large}}))["result"]["result"]
                ["structuredContent"]["pad"],
            big);
  EXPECT_EQ(TaskNotes(messages, small).back()["params"]["result"]["structuredContent"]["pad"], "y");
}

// A notification the transport drops (a client 4 MiB behind) ends the subscription with an error
// that says so: the client is not left waiting for an end it will never be told.
TEST_F(McpSubscriptionsTest, ADroppedNotificationEndsTheSubscriptionWithAnError) {
  auto session = NewSession();
  const std::string id = StartTask(*session, {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  auto stream = std::make_shared<DroppingSink>();
  session->Handle(Request("slow", "subscriptions/listen", Stateless({{"notifications", {{"taskIds", {id}}}}})).dump(),
                  stream);
  WaitUntil(*stream, [&](const auto& m) { return TaskNotes(m, id).size() == 1; });
  stream->drop = true;
  job_->Release();
  const json end = stream->WaitFinals(1).back();
  EXPECT_EQ(end["id"], "slow");
  EXPECT_EQ(end["error"]["code"], kSubscriptionFellBehind);
  EXPECT_NE(end["error"]["message"].get<std::string>().find("listen again"), std::string::npos);
  EXPECT_EQ(server_.Listening().OpenCount(), 0u);
  // A listen whose acknowledgement is dropped is refused the same way.
  auto deaf = std::make_shared<DroppingSink>();
  deaf->drop = true;
  session->Handle(Request("deaf", "subscriptions/listen", Stateless({{"notifications", {{"taskIds", {id}}}}})).dump(),
                  deaf);
  EXPECT_EQ(deaf->WaitFinals(1).back()["error"]["code"], kSubscriptionFellBehind);
  EXPECT_EQ(server_.Listening().OpenCount(), 0u);
}

// A listen that comes while the server stops is ended at once, as the open ones were.
TEST_F(McpSubscriptionsTest, AListenAfterTheStopIsEndedAtOnce) {
  auto session = NewSession();
  server_.Listening().EndAll();
  const json r = Send(*session, "late", "subscriptions/listen", Stateless({{"notifications", json::object()}}));
  EXPECT_EQ(r["result"]["resultType"], "complete") << r;
  EXPECT_EQ(r["result"]["_meta"][kSubscriptionId], "late");
  EXPECT_EQ(server_.Listening().OpenCount(), 0u);
}

// Each state is told once and never after a newer one, however the listen and the change race.
TEST(Subscriptions, AStateIsToldOnceAndNeverAfterANewerOne) {
  TaskStore store(TaskLimits{});
  auto task = *store.Create("a", std::nullopt);
  Subscriptions subscriptions([](const TaskView& view, bool) {
    return json{{"taskId", view.id}, {"status", TaskStatusName(view.status)}};
  });
  auto sink = std::make_shared<RecordingSink>();
  Subscriptions::Listen listen;
  listen.caller = "a";
  listen.request_id = 1;
  listen.sink = sink;
  listen.tasks = {task};
  ASSERT_TRUE(std::holds_alternative<uint64_t>(subscriptions.Open(std::move(listen))));
  const TaskView working = task->View();
  store.Finish(task, TaskStatus::kCompleted, json::object());
  const TaskView ended = task->View();
  subscriptions.TaskChanged("a", ended);
  subscriptions.TaskChanged("a", ended);    // told again: not sent again
  subscriptions.TaskChanged("a", working);  // an older state: never after the newer one
  subscriptions.TaskChanged("b", ended);    // another owner's task of the same id: not this one's
  std::vector<std::string> statuses;
  for (const json& m : sink->Messages()) {
    if (m.value("method", "") == "notifications/tasks") statuses.push_back(m["params"]["status"]);
  }
  EXPECT_EQ(statuses, (std::vector<std::string>{"working", "completed"}));
}

}  // namespace
}  // namespace mcpexec::mcp
