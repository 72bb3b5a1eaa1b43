// A call's step record (base/call_steps.h): marks go to the record in the calling thread's slot
// only, a hand-off copies it and silences the original, the server moves a tool call's record
// to its worker, the stdio writer marks a response it writes, and the debug line's fields are
// the times between consecutive steps, with a step not reached left out.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/call_steps.h"
#include "base/unique_fd.h"
#include "mcp/call_steps_log.h"
#include "mcp/server.h"
#include "mcp/transport/line_writer.h"
#include "mcp_fakes.h"

namespace mcpexec {
namespace {

using nlohmann::json;
using std::chrono::microseconds;

TEST(CallSteps, AMarkGoesToTheRecordInTheCallingThreadsSlotOnly) {
  EXPECT_EQ(CurrentSteps(), nullptr);
  MarkStep(Step::kSent);  // no record: nothing to mark, nothing to fail
  CallSteps outer, inner;
  {
    const CallStepsScope outer_scope(&outer);
    MarkStep(Step::kRead);
    {
      const CallStepsScope inner_scope(&inner);
      MarkTaken("forked");
    }
    EXPECT_EQ(CurrentSteps(), &outer) << "a scope puts back what was there before";
    MarkStep(Step::kParsed);
  }
  EXPECT_EQ(CurrentSteps(), nullptr);
  EXPECT_TRUE(outer.Reached(Step::kRead));
  EXPECT_TRUE(outer.Reached(Step::kParsed));
  EXPECT_FALSE(outer.Reached(Step::kTaken));
  EXPECT_EQ(outer.sandbox, nullptr);
  EXPECT_TRUE(inner.Reached(Step::kTaken));
  EXPECT_STREQ(inner.sandbox, "forked");
  EXPECT_FALSE(inner.Reached(Step::kRead));
}

TEST(CallSteps, AHandOffCopiesTheRecordAndLeavesTheOriginalToReportNothing) {
  EXPECT_FALSE(HandOffSteps().has_value());
  CallSteps steps;
  steps.tool = "exec";
  const CallStepsScope scope(&steps);
  MarkStep(Step::kQueued);
  std::optional<CallSteps> moved = HandOffSteps();
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->At(Step::kQueued), steps.At(Step::kQueued));
  EXPECT_EQ(moved->tool, "exec");
  EXPECT_FALSE(moved->handed_off);
  EXPECT_TRUE(steps.handed_off);
}

TEST(CallStepsFields, EachStepIsTheTimeSinceTheStepBeforeAndOneNotReachedIsLeftOut) {
  CallSteps steps;
  steps.tool = "exec";
  steps.session = "stdio";
  steps.request_id = "7";
  const auto t0 = CallSteps::Clock::now();
  auto set = [&](Step step, int us) {
    steps.at[static_cast<size_t>(step)] = t0 + microseconds(us);
  };
  set(Step::kRead, 0);
  set(Step::kParsed, 10);
  set(Step::kQueued, 25);
  set(Step::kStarted, 40);
  set(Step::kValidated, 100);
  // kTaken not reached: take_us and send_us are left out, not 0.
  set(Step::kSent, 300);
  set(Step::kEnded, 5300);
  set(Step::kCollected, 5400);
  set(Step::kAnswered, 5500);
  set(Step::kSerialized, 5510);
  const json fields = mcp::CallStepsFields(steps);
  EXPECT_EQ(fields["tool"], "exec");
  EXPECT_EQ(fields["session"], "stdio");
  EXPECT_EQ(fields["request_id"], "7");
  EXPECT_EQ(fields["parse_us"], 10);
  EXPECT_EQ(fields["dispatch_us"], 15);
  EXPECT_EQ(fields["queue_us"], 15);
  EXPECT_EQ(fields["validate_us"], 60);
  EXPECT_FALSE(fields.contains("take_us")) << fields;
  EXPECT_FALSE(fields.contains("send_us")) << fields;
  EXPECT_FALSE(fields.contains("sandbox")) << fields;
  EXPECT_EQ(fields["run_us"], 5000);
  EXPECT_EQ(fields["collect_us"], 100);
  EXPECT_EQ(fields["result_us"], 100);
  EXPECT_EQ(fields["serialize_us"], 10);
  EXPECT_FALSE(fields.contains("write_us")) << "not written here (HTTP): " << fields;

  set(Step::kTaken, 150);
  steps.sandbox = "ready";
  const json taken = mcp::CallStepsFields(steps);
  EXPECT_EQ(taken["take_us"], 50);
  EXPECT_EQ(taken["send_us"], 150);
  EXPECT_EQ(taken["sandbox"], "ready");
}

// Keeps a copy of the record it finds in its thread's slot when it is called.
class StepsTool : public mcp::Tool {
 public:
  std::string Name() const override { return "steps"; }
  json Definition() const override { return {{"name", "steps"}}; }
  json Call(const json&, const mcp::ToolCallContext&) override {
    std::lock_guard lock(mu_);
    if (CurrentSteps() != nullptr) seen_ = *CurrentSteps();
    return {{"content", json::array()}, {"isError", false}};
  }
  std::optional<CallSteps> Seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::optional<CallSteps> seen_;
};

TEST(CallStepsServer, AToolCallsRecordMovesToItsWorkerNamedAfterTheCall) {
  mcp::WorkerPool pool(1, 1);
  auto tool = std::make_shared<StepsTool>();
  mcp::Server server({"mcp-exec", "9.9.9", ""}, {tool}, pool);
  auto session = server.NewSession("test");
  auto sink = std::make_shared<mcp::RecordingSink>();
  session->Handle(json{{"jsonrpc", "2.0"},
                       {"id", 0},
                       {"method", "initialize"},
                       {"params", {{"protocolVersion", "2025-06-18"}}}}
                      .dump(),
                  sink);
  CallSteps reader;
  reader.at[static_cast<size_t>(Step::kRead)] = CallSteps::Clock::now();
  {
    const CallStepsScope scope(&reader);
    session->Handle(json{{"jsonrpc", "2.0"},
                         {"id", 7},
                         {"method", "tools/call"},
                         {"params", {{"name", "steps"}, {"arguments", json::object()}}}}
                        .dump(),
                    sink);
  }
  ASSERT_EQ(sink->WaitFinals(2).size(), 2u);
  pool.Drain();
  EXPECT_TRUE(reader.handed_off) << "the worker reports the call, not the reading thread";
  const std::optional<CallSteps> seen = tool->Seen();
  ASSERT_TRUE(seen.has_value()) << "the worker had no record in its slot";
  EXPECT_EQ(seen->tool, "steps");
  EXPECT_EQ(seen->session, "test");
  EXPECT_EQ(seen->request_id, "7");
  EXPECT_FALSE(seen->handed_off);
  for (Step step : {Step::kRead, Step::kParsed, Step::kQueued, Step::kStarted}) {
    EXPECT_TRUE(seen->Reached(step)) << static_cast<int>(step);
  }
  EXPECT_LE(seen->At(Step::kRead), seen->At(Step::kParsed));
  EXPECT_LE(seen->At(Step::kParsed), seen->At(Step::kQueued));
  EXPECT_LE(seen->At(Step::kQueued), seen->At(Step::kStarted));
  EXPECT_FALSE(seen->Reached(Step::kAnswered)) << "marked once the tool has returned";
}

TEST(CallStepsLineWriter, AResponseItsSenderWritesIsMarkedSerializedThenWriting) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  mcp::LineWriter writer(write_end.Get(), 1 << 20);
  CallSteps reply, note;
  {
    // Nothing queued and room in the pipe: the sender writes its response itself.
    const CallStepsScope scope(&reply);
    EXPECT_TRUE(writer.Send(json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}}, true));
  }
  {
    const CallStepsScope scope(&note);
    EXPECT_TRUE(writer.Send(json{{"jsonrpc", "2.0"}, {"method", "notifications/progress"}}, false));
  }
  writer.Finish();
  EXPECT_FALSE(reply.handed_off);
  ASSERT_TRUE(reply.Reached(Step::kSerialized));
  ASSERT_TRUE(reply.Reached(Step::kWriting));
  EXPECT_LE(reply.At(Step::kSerialized), reply.At(Step::kWriting));
  EXPECT_FALSE(note.Reached(Step::kSerialized)) << "a notification is not the reply";
  EXPECT_FALSE(note.handed_off) << "a notification carries no record to the writer thread";
}

TEST(CallStepsLineWriter, AResponseLeftToTheWriterThreadTakesItsRecordAlong) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  // A full pipe: the response cannot be written now, and waits for the writer thread.
  ASSERT_EQ(fcntl(write_end.Get(), F_SETFL, O_NONBLOCK), 0);
  const std::string junk(4096, 'x');
  while (write(write_end.Get(), junk.data(), junk.size()) > 0) {
  }
  ASSERT_EQ(fcntl(write_end.Get(), F_SETFL, 0), 0);
  mcp::LineWriter writer(write_end.Get(), 1 << 20);
  CallSteps reply;
  {
    const CallStepsScope scope(&reply);
    EXPECT_TRUE(writer.Send(json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}}, true));
  }
  EXPECT_TRUE(reply.Reached(Step::kSerialized));
  EXPECT_TRUE(reply.handed_off) << "the writer thread reports the call once it has written";
  EXPECT_FALSE(reply.Reached(Step::kWriting)) << "marked in the writer thread's copy";
  std::thread drain([&] {
    char buf[65536];
    while (read(read_end.Get(), buf, sizeof buf) > 0) {
    }
  });
  writer.Finish();
  write_end.Reset();
  drain.join();
}

}  // namespace
}  // namespace mcpexec
