// Tasks: the store's limits, and both eras' wire through a Session with fake tools. Each case
// plays a client, a hostile one where it says so.
#include <fcntl.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "mcp/protocol.h"
#include "mcp/server.h"
#include "mcp/tasks.h"
#include "mcp_fakes.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// ------------------------------------------------------------------------------ the store

TaskLimits SmallLimits() {
  TaskLimits limits;
  limits.max_tasks = 4;
  limits.max_running_per_caller = 2;
  limits.max_result_bytes = 1000;
  limits.max_ttl_ms = 60'000;
  limits.min_ttl_ms = 0;
  return limits;
}

json ResultOf(size_t bytes) { return {{"content", json::array()}, {"text", std::string(bytes, 'x')}}; }

TEST(TaskStore, TheTtlIsTheRequestedOneWithinTheCap) {
  TaskLimits limits = SmallLimits();
  limits.min_ttl_ms = 1000;
  TaskStore store(limits);
  EXPECT_EQ((*store.Create("a", std::nullopt))->View().ttl_ms, 60'000);
  EXPECT_EQ((*store.Create("a", 5000))->View().ttl_ms, 5000);
  EXPECT_EQ((*store.Create("b", int64_t{1} << 50))->View().ttl_ms, 60'000);
  EXPECT_EQ((*store.Create("b", 0))->View().ttl_ms, 1000);
}

TEST(TaskStore, IdsAreUnguessableAndAnotherOwnersTaskIsNotFound) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("alice", std::nullopt);
  EXPECT_EQ(task->Id().size(), 32u);  // 128 bits from getrandom
  EXPECT_EQ(task->Id().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(task->Id(), (*store.Create("alice", std::nullopt))->Id());
  EXPECT_EQ(store.Find("alice", task->Id()), task);
  EXPECT_EQ(store.Find("mallory", task->Id()), nullptr);
  std::string near = task->Id();
  near[0] = near[0] == '0' ? '1' : '0';
  EXPECT_EQ(store.Find("alice", near), nullptr);
}

TEST(TaskStore, RunningTasksAreLimitedPerCallerAndInAll) {
  TaskStore store(SmallLimits());
  auto a1 = *store.Create("a", std::nullopt);
  auto a2 = *store.Create("a", std::nullopt);
  auto refused = store.Create("a", std::nullopt);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("MCP_EXEC_MAX_TASKS_PER_CALLER"));
  auto b1 = *store.Create("b", std::nullopt);
  auto b2 = *store.Create("b", std::nullopt);
  refused = store.Create("c", std::nullopt);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("MCP_EXEC_MAX_TASKS"));
  // Other clients' tasks are not this one's business: not even how many there are.
  EXPECT_THAT(refused.error().message, Not(HasSubstr("4")));
  EXPECT_EQ(store.GetStats().refused, 2u);
  // A finished task makes room: it is dropped, the oldest first, before its TTL.
  store.Finish(a1, TaskStatus::kCompleted, ResultOf(10));
  auto c1 = store.Create("c", std::nullopt);
  ASSERT_TRUE(c1.ok()) << c1.error().message;
  EXPECT_EQ(store.Find("a", a1->Id()), nullptr);
  EXPECT_EQ(store.GetStats().dropped, 1u);
  EXPECT_EQ(store.Find("a", a2->Id()), a2);
}

// A client that floods the store drops its own ended tasks, not another client's older ones.
TEST(TaskStore, AFloodDropsTheFloodersResultsBeforeAnothersOlderOnes) {
  TaskStore store(SmallLimits());  // 4 kept, 2 running per caller, 1000 bytes of results
  auto theirs = *store.Create("bob", std::nullopt);
  store.Finish(theirs, TaskStatus::kCompleted, ResultOf(10));  // the oldest, never fetched
  for (int i = 0; i < 20; ++i) {
    auto created = store.Create("mallory", std::nullopt);
    ASSERT_TRUE(created.ok()) << i << ": " << created.error().message;
    store.Finish(*created, TaskStatus::kCompleted, ResultOf(10));
  }
  EXPECT_EQ(store.Find("bob", theirs->Id()), theirs) << "another client's flood dropped it";
  EXPECT_EQ(store.GetStats().kept, 4u);
  // By bytes too: past the limit, the client holding the most bytes loses its oldest first.
  auto large = *store.Create("mallory", std::nullopt);
  store.Finish(large, TaskStatus::kCompleted, ResultOf(900));
  EXPECT_LE(store.GetStats().result_bytes, 1000u);
  EXPECT_EQ(store.Find("bob", theirs->Id()), theirs) << "dropped for another client's bytes";
  EXPECT_EQ(store.Find("mallory", large->Id()), large);
  // When the one keeping the most is the quiet client, its oldest goes: nobody is exempt.
  TaskStore fair(SmallLimits());
  std::vector<std::shared_ptr<Task>> bobs;
  for (int i = 0; i < 3; ++i) {
    bobs.push_back(*fair.Create("bob", std::nullopt));
    fair.Finish(bobs.back(), TaskStatus::kCompleted, ResultOf(10));
  }
  auto alice = *fair.Create("alice", std::nullopt);
  fair.Finish(alice, TaskStatus::kCompleted, ResultOf(10));
  ASSERT_TRUE(fair.Create("alice", std::nullopt).ok());
  EXPECT_EQ(fair.Find("bob", bobs[0]->Id()), nullptr);
  EXPECT_EQ(fair.Find("alice", alice->Id()), alice);
}

TEST(TaskStore, FinishedResultsStayWithinTheirBytes) {
  TaskStore store(SmallLimits());
  auto first = *store.Create("a", std::nullopt);
  store.Finish(first, TaskStatus::kCompleted, ResultOf(600));
  auto second = *store.Create("a", std::nullopt);
  store.Finish(second, TaskStatus::kCompleted, ResultOf(600));
  EXPECT_EQ(store.Find("a", first->Id()), nullptr);
  EXPECT_EQ(store.Find("a", second->Id()), second);
  EXPECT_LE(store.GetStats().result_bytes, 1000u);
}

TEST(TaskStore, AnEndedTaskGoesAtItsTtlARunningOneStays) {
  TaskStore store(SmallLimits());
  auto ended = *store.Create("a", 50);
  auto running = *store.Create("a", 50);
  store.Finish(ended, TaskStatus::kCompleted, ResultOf(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(store.Find("a", ended->Id()), nullptr);
  EXPECT_EQ(store.Find("a", running->Id()), running);
  store.Finish(running, TaskStatus::kCompleted, ResultOf(10));
  EXPECT_EQ(store.Find("a", running->Id()), nullptr);
  EXPECT_EQ(store.GetStats().kept, 0u);
  EXPECT_EQ(store.GetStats().result_bytes, 0u);
}

// Whichever comes first, the outcome is one of two: the cancel was in time and the task ends
// cancelled, or it was not and the task keeps its result. Never a cancelled result on a task
// that says completed, nor the reverse.
TEST(TaskStore, CancelRacingTheRunsEndHasOneOutcome) {
  TaskLimits limits = SmallLimits();
  limits.max_tasks = 10;
  limits.max_running_per_caller = 10;
  TaskStore store(limits);
  int cancelled = 0, completed = 0;
  for (int i = 0; i < 500; ++i) {
    auto task = *store.Create("a", std::nullopt);
    bool in_time = false;
    std::thread canceller([&] { in_time = store.RequestCancel(task); });
    store.Finish(task, TaskStatus::kCompleted, ResultOf(1));
    canceller.join();
    const TaskView view = task->View();
    if (in_time) {
      ASSERT_EQ(view.status, TaskStatus::kCancelled) << i;
      ++cancelled;
    } else {
      ASSERT_EQ(view.status, TaskStatus::kCompleted) << i;
      ++completed;
    }
  }
  EXPECT_EQ(cancelled + completed, 500);
}

TEST(TaskStore, WhenDoneRunsOnceAtTheEndOrAtOnce) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("a", std::nullopt);
  int calls = 0;
  store.WhenDone(task, TaskStore::kWaitForResult, [&](const TaskView& v) {
    ++calls;
    EXPECT_EQ(v.status, TaskStatus::kFailed);
    EXPECT_EQ(v.status_message, "boom") << "a failed task says why";
  });
  EXPECT_EQ(calls, 0);
  store.Finish(task, TaskStatus::kFailed, {{"code", -32603}, {"message", "boom"}});
  store.Finish(task, TaskStatus::kCompleted, ResultOf(1));  // an ended task does not change
  EXPECT_EQ(calls, 1);
  store.WhenDone(task, TaskStore::kWaitForResult, [&](const TaskView&) { ++calls; });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(task->View().status, TaskStatus::kFailed);
}

TEST(TaskStore, ListPagesOneOwnersTasksAndRefusesAForgedCursor) {
  TaskLimits limits = SmallLimits();
  limits.max_tasks = 100;
  limits.max_running_per_caller = 100;
  TaskStore store(limits);
  std::vector<std::string> mine;
  for (int i = 0; i < 7; ++i) {
    mine.push_back((*store.Create("a", std::nullopt))->Id());
    (void)*store.Create("b", std::nullopt);
  }
  std::vector<std::string> seen;
  std::string cursor;
  std::vector<TaskView> page;
  std::string next;
  do {
    ASSERT_TRUE(store.List("a", cursor, 3, page, next));
    EXPECT_LE(page.size(), 3u);
    for (const TaskView& v : page) seen.push_back(v.id);
    cursor = next;
  } while (!cursor.empty());
  EXPECT_EQ(seen, mine);
  EXPECT_FALSE(store.List("a", "x1", 3, page, next));
  EXPECT_FALSE(store.List("a", "99999999999999999999999", 3, page, next));
}

TEST(TaskStore, DroppingAnOwnerCancelsItsRunsAndForgetsItsTasks) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("a", std::nullopt);
  auto other = *store.Create("b", std::nullopt);
  store.DropOwner("a");
  EXPECT_TRUE(task->CancelRequested());
  uint64_t n = 0;
  EXPECT_EQ(read(task->CancelFd(), &n, sizeof n), 8);  // the run sees it on its cancel fd
  EXPECT_EQ(store.Find("a", task->Id()), nullptr);
  EXPECT_FALSE(other->CancelRequested());
  store.Finish(task, TaskStatus::kCompleted, ResultOf(10));  // the run returns later
  EXPECT_EQ(store.GetStats().running, 1u);
  EXPECT_EQ(store.GetStats().result_bytes, 0u);
}

// A store keeps up to MCP_EXEC_MAX_TASKS ended tasks for their TTL: none holds a descriptor.
TEST(TaskStore, AnEndedTaskHoldsNoDescriptorAndCannotBeCancelled) {
  TaskStore store(SmallLimits());
  auto done = *store.Create("a", std::nullopt);
  auto failed = *store.Create("a", std::nullopt);
  const int fd = done->CancelFd();
  ASSERT_GE(fd, 0);
  store.Finish(done, TaskStatus::kCompleted, ResultOf(10));
  store.Discard(failed);
  EXPECT_EQ(done->CancelFd(), -1);
  EXPECT_EQ(failed->CancelFd(), -1);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "the eventfd is closed";
  EXPECT_EQ(store.Find("a", done->Id()), done) << "the task itself is kept";
  EXPECT_FALSE(store.RequestCancel(done)) << "nothing is written to a closed descriptor";
}

TEST(TaskStore, AnEndedTaskIsKeptLongEnoughToBePolledOnce) {
  TaskLimits limits = SmallLimits();
  limits.min_ttl_ms = 60;
  TaskStore store(limits);
  auto task = *store.Create("a", 0);  // raised to 60 ms
  EXPECT_EQ(task->View().ttl_ms, 60);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));  // its TTL passes while it runs
  store.Finish(task, TaskStatus::kCompleted, ResultOf(10));
  EXPECT_EQ(store.Find("a", task->Id()), task) << "gone the moment it ended";
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(store.Find("a", task->Id()), nullptr);
}

// A run stopped by something other than its client (its exec session closed) ends cancelled,
// with the reason the run gave.
TEST(TaskStore, ARunMarkedCancelledEndsCancelledWithItsReason) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("a", std::nullopt);
  TaskStore::MarkCancelled(task, "its session was closed while it ran");
  store.Finish(task, TaskStatus::kCompleted, ResultOf(1));
  EXPECT_EQ(task->View().status, TaskStatus::kCancelled);
  EXPECT_EQ(task->View().status_message, "its session was closed while it ran");
  auto other = *store.Create("a", std::nullopt);
  store.RequestCancel(other);
  store.Finish(other, TaskStatus::kCompleted, ResultOf(1));
  EXPECT_EQ(other->View().status_message, "cancelled by the client");
}

TEST(TaskStore, CancelAllStopsEveryRunningTask) {
  TaskStore store(SmallLimits());
  auto a = *store.Create("a", std::nullopt);
  auto b = *store.Create("b", std::nullopt);
  auto ended = *store.Create("b", std::nullopt);
  store.Finish(ended, TaskStatus::kCompleted, ResultOf(1));
  store.CancelAll();
  EXPECT_TRUE(a->CancelRequested());
  EXPECT_TRUE(b->CancelRequested());
  EXPECT_FALSE(ended->CancelRequested());
}

TEST(TaskStore, AResultThatIsNotUtf8IsKeptWithoutThrowing) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("a", std::nullopt);
  int done = 0;
  store.WhenDone(task, TaskStore::kWaitForResult, [&](const TaskView&) { ++done; });
  store.Finish(task, TaskStatus::kCompleted, {{"text", std::string("\xff\xfe bad")}});
  EXPECT_EQ(done, 1);
  EXPECT_EQ(store.GetStats().running, 0u);
  EXPECT_GT(store.GetStats().result_bytes, 0u);
}

TEST(TaskStore, WaitersPerTaskAreBoundedAndADiscardedTaskReleasesThem) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("a", std::nullopt);
  int done = 0;
  for (size_t i = 0; i < TaskStore::kMaxWaiters; ++i) {
    EXPECT_TRUE(store.WhenDone(task, TaskStore::kWaitForResult, [&](const TaskView& v) {
      ++done;
      EXPECT_EQ(v.status, TaskStatus::kFailed);
      EXPECT_EQ(v.status_message, "the task's run could not start");
    }).has_value());
  }
  EXPECT_FALSE(
      store.WhenDone(task, TaskStore::kWaitForResult, [&](const TaskView&) { ++done; }).has_value());
  // Waiting for the run to stop has places of its own.
  EXPECT_TRUE(
      store.WhenDone(task, TaskStore::kWaitForCancel, [&](const TaskView&) { ++done; }).has_value());
  store.Discard(task);
  EXPECT_EQ(done, static_cast<int>(TaskStore::kMaxWaiters) + 1);
  EXPECT_EQ(store.GetStats().running, 0u);
}

// A request that gave up waiting frees its place, and is not called.
TEST(TaskStore, AWaitThatStoppedIsNotCalledAndFreesItsPlace) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("a", std::nullopt);
  int called = 0;
  std::vector<uint64_t> waits;
  for (size_t i = 0; i < TaskStore::kMaxWaiters; ++i) {
    auto wait = store.WhenDone(task, TaskStore::kWaitForResult, [&](const TaskView&) { ++called; });
    ASSERT_TRUE(wait.has_value());
    ASSERT_NE(*wait, 0u);
    waits.push_back(*wait);
  }
  auto held = std::make_shared<int>(0);
  ASSERT_FALSE(store.WhenDone(task, TaskStore::kWaitForResult, [held](const TaskView&) {}));
  EXPECT_EQ(held.use_count(), 1) << "a refused wait is not kept";
  store.StopWaiting(task, waits[0]);
  store.StopWaiting(task, waits[0]);  // twice: no effect
  auto late = store.WhenDone(task, TaskStore::kWaitForResult, [held](const TaskView&) {});
  ASSERT_TRUE(late.has_value()) << "the stopped wait's place was not freed";
  EXPECT_EQ(held.use_count(), 2);
  store.StopWaiting(task, *late);
  EXPECT_EQ(held.use_count(), 1) << "a stopped wait's callback is released";
  store.Finish(task, TaskStatus::kCompleted, ResultOf(1));
  EXPECT_EQ(called, static_cast<int>(TaskStore::kMaxWaiters) - 1);
}

TEST(TaskStore, InputIsAwaitedUntilEveryKeyIsAnswered) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("a", std::nullopt);
  std::optional<json> answers;
  std::thread run([&] {
    answers = task->AwaitInput({{"x", {{"method", "elicitation/create"}}},
                                {"y", {{"method", "elicitation/create"}}}});
  });
  while (task->View().status != TaskStatus::kInputRequired) std::this_thread::yield();
  task->Answer({{"x", 1}, {"stranger", 2}});
  TaskView view = task->View();
  EXPECT_EQ(view.status, TaskStatus::kInputRequired);
  EXPECT_FALSE(view.input_requests.contains("x"));
  EXPECT_TRUE(view.input_requests.contains("y"));
  task->Answer({{"y", 3}});
  run.join();
  ASSERT_TRUE(answers.has_value());
  EXPECT_EQ(*answers, (json{{"x", 1}, {"y", 3}}));
  EXPECT_EQ(task->View().status, TaskStatus::kWorking);
  // A cancel while it waits ends the wait with nothing.
  std::thread again([&] { answers = task->AwaitInput({{"z", json::object()}}); });
  while (task->View().status != TaskStatus::kInputRequired) std::this_thread::yield();
  EXPECT_TRUE(store.RequestCancel(task));
  again.join();
  EXPECT_FALSE(answers.has_value());
}

// A client that never answers does not hold the run's worker past the task's TTL.
TEST(TaskStore, AWaitForInputEndsWithTheTasksTtl) {
  TaskStore store(SmallLimits());
  auto task = *store.Create("a", 100);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(task->AwaitInput({{"x", json::object()}}).has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(90));
  store.Finish(task, TaskStatus::kCompleted, ResultOf(1));
  EXPECT_EQ(task->View().status, TaskStatus::kCancelled);
  EXPECT_EQ(task->View().status_message, "no answer came within the task's TTL");
}

// ------------------------------------------------------------------------- through a session

// A server with three tools: "fake" never runs as a task, "job" may, "must" must.
class McpTasksTest : public ::testing::Test {
 protected:
  explicit McpTasksTest(TaskLimits limits = {})
      : pool_(4, 64),
        plain_(std::make_shared<FakeTool>()),
        job_(std::make_shared<FakeTool>(TaskSupport::kOptional, "job")),
        must_(std::make_shared<FakeTool>(TaskSupport::kRequired, "must")),
        server_({"mcp-exec", "9.9.9", ""}, {plain_, job_, must_}, pool_, limits) {}
  ~McpTasksTest() override {
    job_->Release();
    must_->Release();
    plain_->Release();
    for (auto& s : sessions_) s->Close();
    pool_.Drain();
  }

  std::shared_ptr<Session> NewSession(const std::string& version = "2025-11-25") {
    auto session = server_.NewSession("test");
    sessions_.push_back(session);
    json r = Send(*session, 0, "initialize",
                  {{"protocolVersion", version},
                   {"capabilities", json::object()},
                   {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    EXPECT_EQ(r["result"]["protocolVersion"], version);
    session->Handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                    std::make_shared<RecordingSink>());
    return session;
  }
  // One request; its final reply.
  static json Send(Session& session, int id, const std::string& method, json params,
                   std::shared_ptr<RecordingSink> sink = nullptr) {
    if (!sink) sink = std::make_shared<RecordingSink>();
    session.Handle(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump(),
                   sink);
    // The answer: a notification (a task's status) may follow it.
    for (const json& m : sink->WaitFinals(1)) {
      if (m.contains("id")) return m;
    }
    return json();
  }
  // `count` tasks/result requests for task `id`, ids from `first` on, answered later; their sinks.
  static std::vector<std::shared_ptr<RecordingSink>> WaitForResults(Session& session,
                                                                    const std::string& id,
                                                                    int first, size_t count) {
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    for (size_t i = 0; i < count; ++i) {
      sinks.push_back(std::make_shared<RecordingSink>());
      session.Handle(json{{"jsonrpc", "2.0"}, {"id", first + static_cast<int>(i)},
                          {"method", "tasks/result"}, {"params", {{"taskId", id}}}}.dump(),
                     sinks.back());
    }
    return sinks;
  }
  // A 2025-11-25 task of `tool`; its id.
  std::string StartTask(Session& session, const std::string& tool, json arguments,
                        json task = json::object()) {
    json r = Send(session, 1, "tools/call",
                  {{"name", tool}, {"arguments", arguments}, {"task", task}});
    EXPECT_EQ(r["result"]["task"]["status"], "working") << r;
    return r["result"]["task"].value("taskId", "");
  }
  static json Stateless(json params, bool extension = true) {
    json capabilities = json::object();
    if (extension) capabilities["extensions"][std::string(kTasksExtension)] = json::object();
    params["_meta"] = {{std::string(kMetaProtocolVersion), "2026-07-28"},
                       {std::string(kMetaClientCapabilities), capabilities}};
    return params;
  }
  // Polls tasks/get until the task has ended (or has `status`); its last answer.
  json AwaitEnd(Session& session, const std::string& id, bool stateless = false,
                const std::string& status = "") {
    json r;
    for (int i = 0; i < 500; ++i) {
      json params = {{"taskId", id}};
      r = Send(session, 2, "tasks/get", stateless ? Stateless(params) : params);
      const std::string now = r["result"].value("status", "");
      if (status.empty() ? now != "working" && now != "input_required" : now == status) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "task " << id << " never got to " << (status.empty() ? "its end" : status)
                  << ": " << r;
    return r;
  }

  WorkerPool pool_;
  std::shared_ptr<FakeTool> plain_, job_, must_;
  Server server_;
  std::vector<std::shared_ptr<Session>> sessions_;
};

TEST_F(McpTasksTest, Only2025_11_25AnnouncesTasksAndOnlyForToolsThatTakeThem) {
  auto session = NewSession();
  json r = Send(*session, 1, "tools/list", json::object());
  std::map<std::string, json> execution;
  for (const json& tool : r["result"]["tools"]) execution[tool["name"]] = tool.value("execution", json());
  EXPECT_EQ(execution["fake"], json());
  EXPECT_EQ(execution["job"], (json{{"taskSupport", "optional"}}));
  EXPECT_EQ(execution["must"], (json{{"taskSupport", "required"}}));

  auto fresh = server_.NewSession("t2");
  sessions_.push_back(fresh);
  r = Send(*fresh, 0, "initialize", {{"protocolVersion", "2025-11-25"}});
  EXPECT_EQ(r["result"]["capabilities"]["tasks"],
            (json{{"list", json::object()},
                  {"cancel", json::object()},
                  {"requests", {{"tools", {{"call", json::object()}}}}}}));
  auto old = server_.NewSession("t3");
  sessions_.push_back(old);
  r = Send(*old, 0, "initialize", {{"protocolVersion", "2025-06-18"}});
  EXPECT_FALSE(r["result"]["capabilities"].contains("tasks")) << r;

  auto stateless = server_.NewSession("t4");
  sessions_.push_back(stateless);
  r = Send(*stateless, 1, "server/discover", Stateless(json::object()));
  EXPECT_EQ(r["result"]["capabilities"]["extensions"][std::string(kTasksExtension)], json::object());
  EXPECT_FALSE(r["result"]["capabilities"].contains("tasks"));
}

TEST_F(McpTasksTest, ATaskAnswersAtOnceAndTasksResultWaitsForTheRun) {
  auto session = NewSession();
  const std::string id = StartTask(*session, "job", {{"block", true}, {"n", 7}}, {{"ttl", 60000}});
  ASSERT_TRUE(job_->WaitStarted(1));
  json got = Send(*session, 2, "tasks/get", {{"taskId", id}});
  EXPECT_EQ(got["result"]["status"], "working");
  EXPECT_EQ(got["result"]["ttl"], 60000);
  EXPECT_TRUE(got["result"]["createdAt"].get<std::string>().ends_with("Z"));

  auto waiting = std::make_shared<RecordingSink>();
  session->Handle(json{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tasks/result"},
                       {"params", {{"taskId", id}}}}.dump(),
                  waiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(waiting->Messages().empty()) << "tasks/result answered before the run ended";
  job_->Release();
  auto messages = waiting->WaitFinals(1);
  ASSERT_EQ(messages.size(), 2u) << json(messages);  // the ended task's status, then the answer
  EXPECT_EQ(messages[0]["method"], "notifications/tasks/status");
  messages.erase(messages.begin());
  EXPECT_EQ(messages[0]["id"], 3);
  EXPECT_EQ(messages[0]["result"]["structuredContent"]["n"], 7);
  EXPECT_EQ(messages[0]["result"]["_meta"][std::string(kMetaRelatedTask)]["taskId"], id);

  got = Send(*session, 4, "tasks/get", {{"taskId", id}});
  EXPECT_EQ(got["result"]["status"], "completed");
  got = Send(*session, 5, "tasks/list", json::object());
  ASSERT_EQ(got["result"]["tasks"].size(), 1u) << got;
  EXPECT_EQ(got["result"]["tasks"][0]["taskId"], id);
  // A finished task cannot be cancelled (2025-11-25 says so), and its result stays.
  got = Send(*session, 6, "tasks/cancel", {{"taskId", id}});
  EXPECT_EQ(got["error"]["code"], jsonrpc::kInvalidParams);
  EXPECT_THAT(got["error"]["message"].get<std::string>(), HasSubstr("completed"));
  got = Send(*session, 7, "tasks/result", {{"taskId", id}});
  EXPECT_EQ(got["result"]["structuredContent"]["n"], 7);
}

TEST_F(McpTasksTest, CancelAnswersOnlyOnceTheRunHasStopped) {
  auto session = NewSession();
  const std::string id = StartTask(*session, "job", {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  json r = Send(*session, 2, "tasks/cancel", {{"taskId", id}});
  EXPECT_EQ(job_->Cancelled(), 1) << "tasks/cancel answered before the run returned";
  EXPECT_EQ(r["result"]["status"], "cancelled") << r;
  EXPECT_EQ(r["result"]["taskId"], id);
  r = Send(*session, 3, "tasks/result", {{"taskId", id}});
  EXPECT_EQ(r["result"]["isError"], true) << r;
  EXPECT_EQ(r["result"]["_meta"][std::string(kMetaRelatedTask)]["taskId"], id);
  r = Send(*session, 4, "tasks/get", {{"taskId", id}});
  EXPECT_EQ(r["result"]["status"], "cancelled");
}

TEST_F(McpTasksTest, MalformedTaskRequestsAreInvalidParams) {
  auto session = NewSession();
  for (const json& task : {json("soon"), json{{"ttl", "60000"}}, json{{"ttl", -1}},
                           json{{"ttl", json::array()}}, json(7)}) {
    json r = Send(*session, 1, "tools/call", {{"name", "job"}, {"arguments", json::object()},
                                              {"task", task}});
    EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams) << task << ": " << r;
  }
  for (const std::string method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
    for (const json& params : {json::object(), json{{"taskId", 5}}}) {
      json r = Send(*session, 2, method, params);
      EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams) << method << params << ": " << r;
    }
  }
  EXPECT_EQ(Send(*session, 3, "tasks/list", {{"cursor", "nope"}})["error"]["code"],
            jsonrpc::kInvalidParams);
  // A tool that does not run as a task, and one that only does.
  json r = Send(*session, 4, "tools/call", {{"name", "fake"}, {"task", json::object()}});
  EXPECT_EQ(r["error"]["code"], jsonrpc::kMethodNotFound) << r;
  r = Send(*session, 5, "tools/call", {{"name", "must"}});
  EXPECT_EQ(r["error"]["code"], jsonrpc::kMethodNotFound) << r;
  // A revision before tasks: params.task is an unknown field, the call runs plainly.
  auto old = NewSession("2025-06-18");
  r = Send(*old, 6, "tools/call", {{"name", "job"}, {"arguments", {{"n", 1}}}, {"task", json::object()}});
  EXPECT_EQ(r["result"]["structuredContent"]["n"], 1) << r;
  EXPECT_EQ(Send(*old, 7, "tasks/list", json::object())["error"]["code"], jsonrpc::kMethodNotFound);
}

// Another client holding a task's id learns nothing: the same error as for an id that never was.
TEST_F(McpTasksTest, AnotherClientsTaskIsNotFoundAndUntouched) {
  auto owner = NewSession();
  auto other = NewSession();
  const std::string id = StartTask(*owner, "job", {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  for (const std::string method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
    const json theirs = Send(*other, 1, method, {{"taskId", id}});
    const json unknown = Send(*other, 2, method, {{"taskId", std::string(32, 'a')}});
    EXPECT_EQ(theirs["error"], unknown["error"]) << method;
    EXPECT_EQ(theirs["error"]["code"], jsonrpc::kInvalidParams) << method;
  }
  EXPECT_TRUE(Send(*other, 3, "tasks/list", json::object())["result"]["tasks"].empty());
  EXPECT_EQ(job_->Cancelled(), 0);
  EXPECT_EQ(Send(*owner, 4, "tasks/get", {{"taskId", id}})["result"]["status"], "working");
}

// A Streamable HTTP request's stream ends with its response: a task's later progress follows
// the tasks/result that waits for it, whose stream stays open until the task ends.
TEST_F(McpTasksTest, ATasksLaterProgressFollowsTasksResult) {
  auto session = NewSession();
  auto creating = std::make_shared<RecordingSink>();
  session->Handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                       {"params", {{"name", "job"},
                                   {"arguments", {{"block", true}, {"progress_after", 2}}},
                                   {"task", json::object()},
                                   {"_meta", {{"progressToken", "p1"}}}}}}.dump(),
                  creating);
  const std::string id = creating->WaitFinals(1).back()["result"]["task"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(1));
  auto waiting = std::make_shared<RecordingSink>();
  session->Handle(json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tasks/result"},
                       {"params", {{"taskId", id}}}}.dump(),
                  waiting);
  job_->Release();
  const std::vector<json> got = waiting->WaitFinals(1);
  ASSERT_EQ(got.size(), 4u) << json(got);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i]["method"], "notifications/progress");
    EXPECT_EQ(got[i]["params"]["progressToken"], "p1");
    EXPECT_EQ(got[i]["params"]["_meta"][std::string(kMetaRelatedTask)]["taskId"], id);
  }
  EXPECT_EQ(got[2]["method"], "notifications/tasks/status");
  EXPECT_EQ(got[3]["id"], 2);
  EXPECT_EQ(creating->Messages().size(), 1u);  // the handle only
}

// On a connection that stays open (stdio, legacy SSE), a task's progress follows its handle.
TEST_F(McpTasksTest, ProgressOfATaskCarriesItsTokenAndTaskId) {
  auto session = NewSession();
  auto sink = std::make_shared<RecordingSink>();
  session->Handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                       {"params", {{"name", "job"},
                                   {"arguments", {{"block", true}, {"progress_after", 3}}},
                                   {"task", json::object()},
                                   {"_meta", {{"progressToken", 9}}}}}}.dump(),
                  sink);
  const json handle = sink->WaitFinals(1).front();
  ASSERT_EQ(handle["id"], 1) << handle;
  const std::string id = handle["result"]["task"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(1));
  job_->Release();
  AwaitEnd(*session, id);
  int progress = 0;
  for (const json& m : sink->Messages()) {
    if (m.value("method", "") != "notifications/progress") continue;
    ++progress;
    EXPECT_EQ(m["params"]["progressToken"], 9);
    EXPECT_EQ(m["params"]["_meta"][std::string(kMetaRelatedTask)]["taskId"], id);
  }
  EXPECT_EQ(progress, 3);
}

// A task's log messages (2025-11-25) go where its progress goes, carry its id as its progress
// does, and follow the session's logging/setLevel as a plain call's do.
TEST_F(McpTasksTest, LogMessagesOfATaskCarryItsTaskId) {
  auto session = NewSession();
  ASSERT_EQ(Send(*session, 1, "logging/setLevel", {{"level", "info"}})["result"], json::object());
  const json lines = json::array({{{"level", "debug"}, {"logger", "stdout"}, {"data", "d"}},
                                  {{"level", "info"}, {"logger", "stdout"}, {"data", "i"}},
                                  {{"level", "warning"}, {"logger", "stderr"}, {"data", "w"}}});
  auto sink = std::make_shared<RecordingSink>();
  session->Handle(json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
                       {"params", {{"name", "job"},
                                   {"arguments", {{"block", true}, {"log", lines}}},
                                   {"task", json::object()}}}}.dump(),
                  sink);
  const json handle = sink->WaitFinals(1).front();
  ASSERT_EQ(handle["id"], 2) << handle;
  const std::string id = handle["result"]["task"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(1));
  job_->Release();  // the run logs once released, after its handle went out
  AwaitEnd(*session, id);
  std::vector<json> logs;
  for (const json& m : sink->Messages()) {
    if (m.value("method", "") == "notifications/message") logs.push_back(m);
  }
  const json related = {{std::string(kMetaRelatedTask), {{"taskId", id}}}};
  ASSERT_EQ(logs.size(), 2u) << json(sink->Messages());
  EXPECT_EQ(logs[0]["params"], (json{{"level", "info"}, {"logger", "stdout"}, {"data", "i"},
                                     {"_meta", related}}));
  EXPECT_EQ(logs[1]["params"], (json{{"level", "warning"}, {"logger", "stderr"}, {"data", "w"},
                                     {"_meta", related}}));
}

TEST_F(McpTasksTest, ClosingTheConnectionCancelsItsTasks) {
  auto session = NewSession();
  const std::string id = StartTask(*session, "job", {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  session->Close();
  EXPECT_TRUE(job_->WaitCancelled(1));
  EXPECT_EQ(server_.Tasks().Find("whoever", id), nullptr);
  EXPECT_EQ(server_.Tasks().GetStats().kept, 0u);
}

TEST_F(McpTasksTest, AFloodOfTasksIsRefusedPastTheCallersLimit) {
  auto session = NewSession();
  const size_t limit = server_.Tasks().Limits().max_running_per_caller;
  for (size_t i = 0; i < limit; ++i) StartTask(*session, "job", {{"block", true}});
  // A JSON-RPC error: the answer to a task request is a task or an error (a tool result would
  // fail the official SDK's parse, and hide the reason).
  json r = Send(*session, 9, "tools/call", {{"name", "job"}, {"task", json::object()}});
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInternalError) << r;
  EXPECT_THAT(r["error"]["message"].get<std::string>(), HasSubstr("MCP_EXEC_MAX_TASKS_PER_CALLER"));
  // Another client is not held back by this one's limit.
  auto other = NewSession();
  json theirs = Send(*other, 1, "tools/call", {{"name", "job"}, {"arguments", json::object()},
                                               {"task", json::object()}});
  EXPECT_EQ(theirs["result"]["task"]["status"], "working") << theirs;
}

// -------------------------------------------------------------- the stateless era's extension

TEST_F(McpTasksTest, StatelessTheServerDecidesForAClientThatDeclaresTheExtension) {
  auto session = server_.NewSession("stateless", "shared");
  sessions_.push_back(session);
  json r = Send(*session, 1, "tools/call", Stateless({{"name", "job"}, {"arguments", {{"n", 3}}}}));
  EXPECT_EQ(r["result"]["resultType"], "task") << r;
  EXPECT_FALSE(r["result"].contains("task"));
  EXPECT_FALSE(r["result"].contains("ttl"));
  EXPECT_GT(r["result"]["ttlMs"].get<int64_t>(), 0);
  EXPECT_GT(r["result"]["pollIntervalMs"].get<int64_t>(), 0);
  const std::string id = r["result"]["taskId"];
  r = AwaitEnd(*session, id, true);
  EXPECT_EQ(r["result"]["resultType"], "complete");
  EXPECT_EQ(r["result"]["status"], "completed");
  EXPECT_EQ(r["result"]["result"]["structuredContent"]["n"], 3);
  EXPECT_FALSE(r["result"]["result"].contains("_meta")) << r;
  // Cancelling an ended task is acknowledged, as any cancel is.
  r = Send(*session, 3, "tasks/cancel", Stateless({{"taskId", id}}));
  EXPECT_EQ(r["result"]["resultType"], "complete");
  EXPECT_FALSE(r["result"].contains("status"));
  // A later stateless request of the same credential (a new Session) finds it.
  auto later = server_.NewSession("stateless", "shared");
  sessions_.push_back(later);
  EXPECT_EQ(Send(*later, 4, "tasks/get", Stateless({{"taskId", id}}))["result"]["taskId"], id);

  // Without the extension: a plain result; the tasks methods need it.
  r = Send(*session, 5, "tools/call", Stateless({{"name", "job"}, {"arguments", {{"n", 4}}}}, false));
  EXPECT_EQ(r["result"]["resultType"], "complete");
  EXPECT_EQ(r["result"]["structuredContent"]["n"], 4);
  for (const std::string method : {"tasks/get", "tasks/cancel", "tasks/update"}) {
    r = Send(*session, 6, method, Stateless({{"taskId", id}, {"inputResponses", json::object()}}, false));
    EXPECT_EQ(r["error"]["code"], kMissingRequiredClientCapability) << method << ": " << r;
  }
  r = Send(*session, 7, "tools/call", Stateless({{"name", "must"}}, false));
  EXPECT_EQ(r["error"]["code"], kMissingRequiredClientCapability);
  EXPECT_EQ(r["error"]["data"]["requiredCapabilities"]["extensions"][std::string(kTasksExtension)],
            json::object());
  // tasks/result and tasks/list are not in this era; an unknown id is invalid params.
  EXPECT_EQ(Send(*session, 8, "tasks/result", Stateless({{"taskId", id}}))["error"]["code"],
            jsonrpc::kMethodNotFound);
  EXPECT_EQ(Send(*session, 9, "tasks/list", Stateless(json::object()))["error"]["code"],
            jsonrpc::kMethodNotFound);
  EXPECT_EQ(Send(*session, 10, "tasks/get", Stateless({{"taskId", "nope"}}))["error"]["code"],
            jsonrpc::kInvalidParams);
  // params.task (the older era's field) is ignored: not a task for a sync-only tool.
  r = Send(*session, 11, "tools/call",
           Stateless({{"name", "fake"}, {"task", {{"ttl", 60000}}}, {"arguments", {{"n", 5}}}}));
  EXPECT_EQ(r["result"]["resultType"], "complete") << r;
}

TEST_F(McpTasksTest, StatelessCancelWaitsForTheRunThenTheTaskSaysCancelled) {
  auto session = server_.NewSession("stateless", "shared");
  sessions_.push_back(session);
  json r = Send(*session, 1, "tools/call", Stateless({{"name", "job"}, {"arguments", {{"block", true}}}}));
  const std::string id = r["result"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(1));
  r = Send(*session, 2, "tasks/cancel", Stateless({{"taskId", id}}));
  EXPECT_EQ(job_->Cancelled(), 1);
  EXPECT_EQ(r["result"], (json{{"resultType", "complete"},
                               {"_meta", {{std::string(kMetaServerInfo),
                                           {{"name", "mcp-exec"}, {"version", "9.9.9"}}}}}}));
  r = Send(*session, 3, "tasks/get", Stateless({{"taskId", id}}));
  EXPECT_EQ(r["result"]["status"], "cancelled");
  EXPECT_FALSE(r["result"].contains("result"));
  // Another credential does not see it.
  auto stranger = server_.NewSession("stateless", "someone-else");
  sessions_.push_back(stranger);
  EXPECT_EQ(Send(*stranger, 4, "tasks/get", Stateless({{"taskId", id}}))["error"]["code"],
            jsonrpc::kInvalidParams);
}

// A Streamable HTTP reply ends with the task's handle: nothing may keep its queue alive (it
// counts against the session's open requests), neither the running task nor an ended one that a
// later tasks/result named.
class OneReplySink : public RecordingSink {
 public:
  bool OpenAfterFinal() const override { return false; }
};

// A Streamable HTTP reply in JSON: room for the final response alone.
class JsonReply : public OneReplySink {
 public:
  bool CarriesNotifications() const override { return false; }
  bool Send(const json& message, bool final) override {
    return final && RecordingSink::Send(message, final);
  }
};

// A standalone stream that refuses every message once `refuse` is set.
class DroppingStream : public RecordingSink {
 public:
  std::atomic<bool> refuse{false};
  bool Send(const json& message, bool final) override {
    return !refuse && RecordingSink::Send(message, final);
  }
};

TEST_F(McpTasksTest, NoRequestsReplyIsHeldPastItsAnswer) {
  auto session = NewSession();
  auto creating = std::make_shared<OneReplySink>();
  const json r = Send(*session, 1, "tools/call",
                      {{"name", "job"}, {"arguments", {{"block", true}}}, {"task", json::object()}},
                      creating);
  const std::string id = r["result"]["task"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(1));
  EXPECT_EQ(creating.use_count(), 1) << "the running task holds the tools/call's reply";
  job_->Release();
  AwaitEnd(*session, id);
  auto fetching = std::make_shared<OneReplySink>();
  EXPECT_EQ(Send(*session, 2, "tasks/result", {{"taskId", id}}, fetching)["id"], 2);
  EXPECT_EQ(fetching.use_count(), 1) << "the ended task holds the tasks/result's reply";
}

// Streamable HTTP with no tasks/result waiting: a task's progress and end go to the session's
// standalone stream. The newest stream wins and the one it replaces is ended; one that refuses
// a message (its client fell behind) is ended too; a detached one is not held.
TEST_F(McpTasksTest, ATasksNotificationsGoToTheStandaloneStream) {
  auto session = NewSession();
  auto methods_of = [](const std::shared_ptr<RecordingSink>& sink, size_t at_least) {
    std::vector<std::string> methods;
    for (int i = 0; i < 500 && methods.size() < at_least; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      methods.clear();
      for (const json& m : sink->Messages()) methods.push_back(m.value("method", ""));
    }
    return methods;
  };
  auto first = std::make_shared<RecordingSink>();
  auto second = std::make_shared<DroppingStream>();
  std::atomic<int> first_ended{0}, second_ended{0};
  session->AttachStandaloneStream(first, [&] { ++first_ended; });
  session->AttachStandaloneStream(second, [&] { ++second_ended; });
  EXPECT_EQ(first_ended, 1) << "the stream the newest replaced was not ended";
  EXPECT_EQ(first.use_count(), 1) << "the replaced stream is held";
  const json r = Send(*session, 1, "tools/call",
                      {{"name", "job"},
                       {"arguments", {{"block", true}, {"progress_after", 2}}},
                       {"task", json::object()},
                       {"_meta", {{"progressToken", "p"}}}},
                      std::make_shared<OneReplySink>());
  const std::string id = r["result"]["task"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(1));
  // A tasks/result answered in JSON cannot carry them: they stay on the stream.
  auto json_reply = std::make_shared<JsonReply>();
  session->Handle(json{{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tasks/result"},
                       {"params", {{"taskId", id}}}}.dump(),
                  json_reply);
  job_->Release();
  EXPECT_EQ(methods_of(second, 3), (std::vector<std::string>{"notifications/progress",
                                                             "notifications/progress",
                                                             "notifications/tasks/status"}));
  EXPECT_EQ(json_reply->WaitFinals(1).size(), 1u) << "the JSON reply holds its answer alone";
  EXPECT_EQ(second_ended, 0);
  // Past the client's budget: the stream refuses a message (the end of a task it cancels, made
  // once the task's handle is out) and is ended.
  second->refuse = true;
  const json blocked = Send(*session, 2, "tools/call",
                            {{"name", "must"}, {"arguments", {{"block", true}}},
                             {"task", json::object()}},
                            std::make_shared<OneReplySink>());
  ASSERT_TRUE(must_->WaitStarted(1));
  Send(*session, 3, "tasks/cancel", {{"taskId", blocked["result"]["task"]["taskId"]}});
  for (int i = 0; i < 500 && second_ended == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(second_ended, 1) << "a stream that refused a message was not ended";
  EXPECT_EQ(second.use_count(), 1) << "the ended stream is held";
}

// A tasks/result the client gives up on sends the task's notifications home again: on stdio,
// the connection.
TEST_F(McpTasksTest, AGivenUpTasksResultSendsTheNotificationsHomeAgain) {
  auto session = NewSession();
  auto connection = std::make_shared<RecordingSink>();
  const json r = Send(*session, 1, "tools/call",
                      {{"name", "job"}, {"arguments", {{"block", true}, {"progress_after", 1}}},
                       {"task", json::object()}, {"_meta", {{"progressToken", "p"}}}},
                      connection);
  const std::string id = r["result"]["task"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(1));
  auto waiting = std::make_shared<RecordingSink>();
  session->Handle(json{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "tasks/result"},
                       {"params", {{"taskId", id}}}}.dump(),
                  waiting);
  session->Handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}})",
                  std::make_shared<RecordingSink>());
  job_->Release();
  AwaitEnd(*session, id);
  std::vector<std::string> methods;
  for (int i = 0; i < 500 && methods.size() < 3; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    methods.clear();
    for (const json& m : connection->Messages()) methods.push_back(m.value("method", ""));
  }
  EXPECT_EQ(methods, (std::vector<std::string>{"", "notifications/progress",
                                               "notifications/tasks/status"}))
      << "the handle, then the progress and the end on the connection";
  EXPECT_TRUE(waiting->Messages().empty());
}

// 2025-11-25: an ended task's status goes where its notifications go: on the connection (stdio,
// SSE), or on a waiting tasks/result's stream (Streamable HTTP) ahead of its answer.
TEST_F(McpTasksTest, AnEndedTasksStatusIsNotifiedBeforeItsResult) {
  auto session = NewSession();
  auto status_of = [](const std::shared_ptr<RecordingSink>& sink) {
    std::vector<json> seen;
    for (const json& m : sink->Messages()) {
      if (m.value("method", "") == "notifications/tasks/status") seen.push_back(m["params"]);
    }
    return seen;
  };
  auto streamed = std::make_shared<OneReplySink>();  // one request's stream, as HTTP
  json r = Send(*session, 1, "tools/call",
                {{"name", "job"}, {"arguments", {{"block", true}}}, {"task", json::object()}},
                streamed);
  const std::string first = r["result"]["task"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(1));
  auto waiting = std::make_shared<OneReplySink>();
  session->Handle(json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tasks/result"},
                       {"params", {{"taskId", first}}}}.dump(),
                  waiting);
  EXPECT_EQ(Send(*session, 3, "tasks/cancel", {{"taskId", first}})["result"]["status"], "cancelled");
  waiting->WaitFinals(1);
  auto seen = status_of(waiting);
  ASSERT_EQ(seen.size(), 1u) << "the status did not reach the waiting tasks/result's stream: "
                             << json(waiting->Messages());
  EXPECT_EQ(seen[0]["taskId"], first);
  EXPECT_EQ(seen[0]["status"], "cancelled");
  EXPECT_TRUE(seen[0].contains("ttl") && seen[0].contains("lastUpdatedAt")) << seen[0];
  EXPECT_EQ(waiting->Messages().back()["id"], 2) << "the answer comes after the status";
  EXPECT_TRUE(status_of(streamed).empty()) << "a one-request stream that had ended got it";

  auto connection = std::make_shared<RecordingSink>();  // open after its answers, as stdio
  r = Send(*session, 4, "tools/call",
           {{"name", "job"}, {"arguments", {{"block", true}}}, {"task", json::object()}},
           connection);
  const std::string second = r["result"]["task"]["taskId"];
  ASSERT_TRUE(job_->WaitStarted(2));
  job_->Release();
  AwaitEnd(*session, second);
  // The status goes out once the task's end is visible to tasks/get (TaskStore::Announce, after
  // the store's lock): it may come just after.
  for (int i = 0; i < 500 && status_of(connection).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  seen = status_of(connection);
  ASSERT_EQ(seen.size(), 1u) << json(connection->Messages());
  EXPECT_EQ(seen[0]["taskId"], second);
  EXPECT_EQ(seen[0]["status"], "completed");
  EXPECT_EQ(connection->Messages().front()["id"], 4) << "the status came before the handle";
}

TEST_F(McpTasksTest, AFewRequestsMayWaitForOneTaskNoMore) {
  auto session = NewSession();
  const std::string id = StartTask(*session, "job", {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  auto waiting = WaitForResults(*session, id, 10, TaskStore::kMaxWaiters);
  json r = Send(*session, 2, "tasks/result", {{"taskId", id}});
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidRequest) << r;
  job_->Release();
  for (auto& sink : waiting) EXPECT_EQ(sink->WaitFinals(1).back()["result"]["isError"], false);
}

// Requests waiting for the outcome never keep its owner from cancelling a task.
TEST_F(McpTasksTest, ATaskIsCancelledHoweverManyRequestsWaitForIt) {
  auto session = NewSession();
  const std::string id = StartTask(*session, "job", {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  auto waiting = WaitForResults(*session, id, 10, TaskStore::kMaxWaiters);
  const json r = Send(*session, 3, "tasks/cancel", {{"taskId", id}});
  EXPECT_EQ(r["result"]["status"], "cancelled") << r;
  EXPECT_EQ(job_->Cancelled(), 1);
  for (auto& sink : waiting) EXPECT_EQ(sink->WaitFinals(1).back()["result"]["isError"], true);
}

// A client that gave up on a tasks/result (notifications/cancelled, or a Streamable HTTP
// stream that closed: both reach Session::Cancel) frees its place, and gets no answer.
TEST_F(McpTasksTest, AnAbandonedTasksResultFreesItsPlace) {
  auto session = NewSession();
  const std::string id = StartTask(*session, "job", {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  std::vector<std::shared_ptr<RecordingSink>> abandoned;
  for (int round = 0; round < 3; ++round) {
    for (auto& sink : WaitForResults(*session, id, 100 * round, TaskStore::kMaxWaiters)) {
      abandoned.push_back(sink);
    }
    for (size_t i = 0; i < TaskStore::kMaxWaiters; ++i) {
      session->Handle(json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"},
                           {"params", {{"requestId", 100 * round + static_cast<int>(i)}}}}.dump(),
                      std::make_shared<RecordingSink>());
    }
  }
  // Three times as many gave up as may wait: every place is free again.
  auto waiting = WaitForResults(*session, id, 1000, TaskStore::kMaxWaiters);
  for (auto& sink : waiting) EXPECT_TRUE(sink->Messages().empty()) << sink->Messages().front();
  // A second request under a waiting one's id is refused, not added.
  const json again = Send(*session, 1000, "tasks/result", {{"taskId", id}});
  EXPECT_THAT(again.dump(), HasSubstr("still running"));
  // A tools/call under a waiting one's id is refused too: cancelling that id would end both.
  const json call = Send(*session, 1001, "tools/call", {{"name", "job"}, {"arguments", json::object()}});
  EXPECT_THAT(call.dump(), HasSubstr("still running"));
  for (auto& sink : abandoned) EXPECT_EQ(sink.use_count(), 1) << "the task keeps a given-up reply";
  job_->Release();
  for (auto& sink : waiting) EXPECT_EQ(sink->WaitFinals(1).back()["result"]["isError"], false);
  for (auto& sink : abandoned) {
    for (const json& m : sink->Messages()) EXPECT_FALSE(m.contains("result")) << m;
  }
}

// A session that closes gives up its waits, even for a task its caller keeps (two sessions of
// one caller): the task keeps neither their places nor their replies.
TEST_F(McpTasksTest, AClosedConnectionsWaitsAreDropped) {
  auto owner = server_.NewSession("http-1", "shared-credential");
  sessions_.push_back(owner);
  ASSERT_EQ(Send(*owner, 0, "initialize", {{"protocolVersion", std::string(kTasksProtocolVersion)},
                                           {"capabilities", json::object()},
                                           {"clientInfo", {{"name", "t"}, {"version", "1"}}}})
                .contains("result"),
            true);
  const std::string id = StartTask(*owner, "job", {{"block", true}});
  ASSERT_TRUE(job_->WaitStarted(1));
  auto other = server_.NewSession("http-2", "shared-credential");
  sessions_.push_back(other);
  Send(*other, 0, "initialize", {{"protocolVersion", std::string(kTasksProtocolVersion)},
                                 {"capabilities", json::object()},
                                 {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
  auto gone = WaitForResults(*other, id, 10, TaskStore::kMaxWaiters);
  other->Close();
  for (auto& sink : gone) EXPECT_EQ(sink.use_count(), 1);
  auto waiting = WaitForResults(*owner, id, 5, 1).front();
  EXPECT_TRUE(waiting->Messages().empty()) << "refused: the closed connection's waits stayed";
  job_->Release();
  EXPECT_EQ(waiting->WaitFinals(1).back()["result"]["isError"], false);
}

TEST_F(McpTasksTest, ACallOnAClosedConnectionMakesNoTask) {
  auto session = NewSession();
  session->Close();
  auto sink = std::make_shared<RecordingSink>();
  EXPECT_EQ(session->Handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                                 {"params", {{"name", "job"}, {"task", json::object()}}}}.dump(),
                            sink),
            Handled::kNoResponse);
  EXPECT_EQ(server_.Tasks().GetStats().created, 1u);
  EXPECT_EQ(server_.Tasks().GetStats().kept, 0u);
  EXPECT_EQ(server_.Tasks().GetStats().running, 0u);
}

TEST_F(McpTasksTest, StatelessARunAsksTheClientAndTasksUpdateAnswers) {
  auto session = server_.NewSession("stateless", "shared");
  sessions_.push_back(session);
  const json ask = {{"name", {{"method", "elicitation/create"}, {"params", {{"message", "name?"}}}}},
                    {"ok", {{"method", "elicitation/create"}, {"params", {{"message", "ok?"}}}}}};
  json r = Send(*session, 1, "tools/call", Stateless({{"name", "job"}, {"arguments", {{"ask", ask}}}}));
  const std::string id = r["result"]["taskId"];
  r = AwaitEnd(*session, id, true, "input_required");
  EXPECT_EQ(r["result"]["inputRequests"], ask);
  // Someone else's answer does not reach it.
  auto stranger = server_.NewSession("stateless", "someone-else");
  sessions_.push_back(stranger);
  r = Send(*stranger, 3, "tasks/update",
           Stateless({{"taskId", id}, {"inputResponses", {{"name", "mallory"}}}}));
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams);
  r = Send(*session, 4, "tasks/update", Stateless({{"taskId", id}, {"inputResponses", "all"}}));
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams);
  // One key, then the other.
  r = Send(*session, 5, "tasks/update", Stateless({{"taskId", id}, {"inputResponses", {{"name", "ann"}}}}));
  EXPECT_EQ(r["result"]["resultType"], "complete");
  r = Send(*session, 6, "tasks/get", Stateless({{"taskId", id}}));
  EXPECT_EQ(r["result"]["status"], "input_required");
  EXPECT_EQ(r["result"]["inputRequests"], (json{{"ok", ask["ok"]}}));
  Send(*session, 7, "tasks/update", Stateless({{"taskId", id}, {"inputResponses", {{"ok", true}}}}));
  r = AwaitEnd(*session, id, true);
  EXPECT_EQ(r["result"]["status"], "completed");
  EXPECT_EQ(r["result"]["result"]["structuredContent"]["answers"], (json{{"name", "ann"}, {"ok", true}}));
  EXPECT_FALSE(r["result"].contains("inputRequests"));
}

TEST_F(McpTasksTest, StatelessACallMayAskForInputBeforeItRuns) {
  auto session = server_.NewSession("stateless", "shared");
  sessions_.push_back(session);
  json r = Send(*session, 1, "tools/call", Stateless({{"name", "job"}, {"arguments", {{"need_input", true}}}}));
  EXPECT_EQ(r["result"]["resultType"], "input_required") << r;
  EXPECT_TRUE(r["result"]["inputRequests"].contains("who"));
  EXPECT_FALSE(r["result"].contains("taskId"));
  r = Send(*session, 2, "tools/call",
           Stateless({{"name", "job"}, {"arguments", {{"need_input", true}}}, {"inputResponses", 5}}));
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams);
  // The retry with the answer becomes a task, and the run sees the answer.
  r = Send(*session, 3, "tools/call",
           Stateless({{"name", "job"}, {"arguments", {{"need_input", true}}},
                      {"inputResponses", {{"who", {{"action", "accept"}, {"content", {{"name", "Alice"}}}}}}}}));
  EXPECT_EQ(r["result"]["resultType"], "task") << r;
  r = AwaitEnd(*session, r["result"]["taskId"], true);
  EXPECT_EQ(r["result"]["result"]["structuredContent"]["input_responses"]["who"]["content"]["name"], "Alice");
  // Without the extension the same retry runs plainly.
  r = Send(*session, 4, "tools/call",
           Stateless({{"name", "job"}, {"arguments", {{"need_input", true}}}, {"inputResponses", {{"who", 1}}}}, false));
  EXPECT_EQ(r["result"]["structuredContent"]["input_responses"]["who"], 1) << r;
}

TEST_F(McpTasksTest, StatelessCancelEndsAWaitForInput) {
  auto session = server_.NewSession("stateless", "shared");
  sessions_.push_back(session);
  json r = Send(*session, 1, "tools/call",
                Stateless({{"name", "job"}, {"arguments", {{"ask", {{"k", json::object()}}}}}}));
  const std::string id = r["result"]["taskId"];
  AwaitEnd(*session, id, true, "input_required");
  r = Send(*session, 2, "tasks/cancel", Stateless({{"taskId", id}}));
  EXPECT_EQ(r["result"]["resultType"], "complete");
  EXPECT_EQ(job_->Cancelled(), 1);
  EXPECT_EQ(Send(*session, 3, "tasks/get", Stateless({{"taskId", id}}))["result"]["status"], "cancelled");
}

// Tasks live in the server's memory: a restarted server answers an id it never made at once,
// with the unknown-id error, in both eras.
TEST_F(McpTasksTest, ARestartedServerAnswersItsOldIdsAsUnknown) {
  auto before = server_.NewSession("stateless", "shared");
  sessions_.push_back(before);
  json r = Send(*before, 1, "tools/call", Stateless({{"name", "job"}, {"arguments", json::object()}}));
  const std::string id = r["result"]["taskId"];
  WorkerPool pool(1, 1);
  Server restarted({"mcp-exec", "9.9.9", ""}, {job_}, pool);
  auto after = restarted.NewSession("stateless", "shared");
  const auto t0 = std::chrono::steady_clock::now();
  r = Send(*after, 2, "tasks/get", Stateless({{"taskId", id}}));
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams) << r;
  auto handshake = restarted.NewSession("stdio");
  Send(*handshake, 0, "initialize", {{"protocolVersion", "2025-11-25"}});
  r = Send(*handshake, 3, "tasks/result", {{"taskId", id}});
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams) << r;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  after->Close();
  handshake->Close();
  pool.Drain();
}

// Tasks kept 50 ms: a requested TTL is raised to it, and an ended task is kept that long after
// its end (TaskLimits::min_ttl_ms, 10 s in a server).
class McpTasksShortTtlTest : public McpTasksTest {
 protected:
  static TaskLimits Limits() {
    TaskLimits limits;
    limits.min_ttl_ms = 50;
    return limits;
  }
  McpTasksShortTtlTest() : McpTasksTest(Limits()) {}
};

// A task past its TTL is gone, and its id is answered exactly as one that never was: an
// "expired" error would tell whoever holds the id that it was once a task.
TEST_F(McpTasksShortTtlTest, AnExpiredTaskIsNotFoundExactlyAsAnUnknownId) {
  auto session = NewSession();
  const std::string id = StartTask(*session, "job", {{"block", true}}, {{"ttl", 50}});
  ASSERT_TRUE(job_->WaitStarted(1));
  const json known = Send(*session, 2, "tasks/get", {{"taskId", id}});
  ASSERT_EQ(known["result"]["status"], "working") << known;
  ASSERT_EQ(known["result"]["ttl"], 50);
  job_->Release();
  // Its end without a poll (a poll later than 50 ms after the end would find it gone already).
  for (int i = 0; i < 500 && server_.Tasks().GetStats().running != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server_.Tasks().GetStats().running, 0u);
  // Past its TTL (50 ms from its creation) and past the 50 ms it is kept after its end.
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  for (const std::string method : {"tasks/result", "tasks/get", "tasks/cancel"}) {
    const json expired = Send(*session, 3, method, {{"taskId", id}});
    const json unknown = Send(*session, 3, method, {{"taskId", std::string(32, 'a')}});
    EXPECT_EQ(expired, unknown) << method;
    EXPECT_EQ(unknown.value("error", json::object()).value("code", 0), jsonrpc::kInvalidParams)
        << method << ": " << unknown;
  }
  EXPECT_TRUE(Send(*session, 4, "tasks/list", json::object())["result"]["tasks"].empty());
  EXPECT_EQ(server_.Tasks().GetStats().kept, 0u);
  EXPECT_EQ(job_->Cancelled(), 0);
}

// With MCP_EXEC_MAX_TASKS=0 nothing announces tasks, and a client's task metadata is ignored.
class McpTasksOffTest : public McpTasksTest {
 protected:
  static TaskLimits Off() {
    TaskLimits limits;
    limits.max_tasks = 0;
    return limits;
  }
  McpTasksOffTest() : McpTasksTest(Off()) {}
};

TEST_F(McpTasksOffTest, NothingIsAnnouncedAndCallsRunPlainly) {
  auto session = server_.NewSession("t");
  sessions_.push_back(session);
  json r = Send(*session, 0, "initialize", {{"protocolVersion", "2025-11-25"}});
  EXPECT_FALSE(r["result"]["capabilities"].contains("tasks")) << r;
  r = Send(*session, 1, "tools/list", json::object());
  for (const json& tool : r["result"]["tools"]) EXPECT_FALSE(tool.contains("execution")) << tool;
  r = Send(*session, 2, "tools/call", {{"name", "job"}, {"arguments", {{"n", 1}}}, {"task", json::object()}});
  EXPECT_EQ(r["result"]["structuredContent"]["n"], 1) << r;
  auto stateless = server_.NewSession("s", "shared");
  sessions_.push_back(stateless);
  r = Send(*stateless, 3, "server/discover", Stateless(json::object()));
  EXPECT_FALSE(r["result"]["capabilities"].contains("extensions")) << r;
  r = Send(*stateless, 4, "tools/call", Stateless({{"name", "job"}, {"arguments", {{"n", 2}}}}));
  EXPECT_EQ(r["result"]["resultType"], "complete");
}

long RssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A client that starts tasks and never fetches their results: 10,000 of them, 8 KB each, 80 MB
// if all were kept, against a limit of 1 MiB of results (MCP_EXEC_TASK_RESULTS_BYTES). The limit
// on tasks (MCP_EXEC_MAX_TASKS) is set above the flood, so that the bytes alone bound it. The
// store keeps what its limit allows, and memory stays flat: it grows by less than 16 MiB, a
// fifth of what keeping every result would take. (Not larger results: the unit tests also run
// under TSan.)
class McpTasksMemoryTest : public McpTasksTest {
 protected:
  static constexpr size_t kResults = 10'000;
  static constexpr size_t kPadding = 8'000;  // a result is this and a little more
  static constexpr size_t kResultBytes = 1u << 20;
  static TaskLimits Limits() {
    TaskLimits limits;
    limits.max_tasks = 2 * kResults;
    limits.max_running_per_caller = kResults;  // the flood is of results here, not of runs
    limits.max_result_bytes = kResultBytes;
    return limits;
  }
  McpTasksMemoryTest() : McpTasksTest(Limits()) {}
};

TEST_F(McpTasksMemoryTest, TenThousandUnfetchedResultsStayWithinTheLimits) {
  auto session = NewSession();
  long rss_after_first = 0;
  for (size_t i = 0; i < kResults; ++i) {
    const std::string id = StartTask(*session, "job", {{"padding", kPadding}});
    ASSERT_FALSE(id.empty()) << i;
    // Paced within the worker pool's queue (64): past it the server is busy, as it should be.
    if (i % 32 == 31) AwaitEnd(*session, id);
    if (i == 999) rss_after_first = RssKib();
  }
  pool_.Drain();
  const TaskStore::Stats stats = server_.Tasks().GetStats();
  EXPECT_LE(stats.result_bytes, kResultBytes);
  EXPECT_LE(stats.kept * kPadding, kResultBytes);
  EXPECT_EQ(stats.created, kResults);
  EXPECT_EQ(stats.dropped, kResults - stats.kept);
  const long growth_kib = RssKib() - rss_after_first;
  RecordProperty("rss_growth_kib_after_1000", static_cast<int>(growth_kib));
#ifndef __SANITIZE_ADDRESS__
  // ASan keeps freed memory in its quarantine (256 MiB by default), where RSS tells nothing of
  // the store; the store's own accounting above is checked in every build.
  EXPECT_LT(growth_kib, 16 * 1024) << "memory grew with the tasks left unfetched";
#endif
}

}  // namespace
}  // namespace mcpexec::mcp
