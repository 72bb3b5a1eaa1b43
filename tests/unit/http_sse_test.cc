#include <gtest/gtest.h>
#include <poll.h>

#include <thread>

#include "mcp/transport/sse_stream.h"

namespace mcpexec::mcp::transport {
namespace {

using nlohmann::json;

std::shared_ptr<MessageQueue> NewQueue(size_t budget = 1 << 20) {
  auto q = MessageQueue::Create(budget);
  EXPECT_TRUE(q.ok());
  return q.ok() ? *q : nullptr;
}

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

TEST(SseEvent, OneDataLine) {
  EXPECT_EQ(SseEvent("message", R"({"a":1})"), "event: message\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(SseEvent("endpoint", "/messages?sessionId=ab"),
            "event: endpoint\ndata: /messages?sessionId=ab\n\n");
}

TEST(SseEvent, LineBreaksBecomeSeveralDataLines) {
  EXPECT_EQ(SseEvent("message", "a\nb\r\nc\rd"),
            "event: message\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(SseEvent("message", ""), "event: message\ndata: \n\n");
  EXPECT_EQ(SseEvent("message", "x\n"), "event: message\ndata: x\ndata: \n\n");
}

TEST(MessageQueue, TakesInOrderAndSignalsThroughTheFd) {
  auto q = NewQueue();
  EXPECT_FALSE(Readable(q->WaitFd()));
  EXPECT_TRUE(q->Push("1", MessageQueue::Kind::kNotification));
  EXPECT_TRUE(q->Push("2", MessageQueue::Kind::kNotification));
  EXPECT_TRUE(Readable(q->WaitFd()));
  MessageQueue::Batch b = q->Take();
  EXPECT_EQ(b.messages, (std::vector<std::string>{"1", "2"}));
  EXPECT_FALSE(b.final);
  EXPECT_FALSE(b.aborted);
  EXPECT_FALSE(Readable(q->WaitFd()));
  EXPECT_TRUE(q->Take().messages.empty());
}

TEST(MessageQueue, TheFinalResponseEndsIt) {
  auto q = NewQueue();
  q->Push("progress", MessageQueue::Kind::kNotification);
  EXPECT_TRUE(q->Push("result", MessageQueue::Kind::kFinalResponse));
  EXPECT_FALSE(q->Push("late", MessageQueue::Kind::kNotification));
  EXPECT_FALSE(q->Push("late", MessageQueue::Kind::kFinalResponse));
  MessageQueue::Batch b = q->Take();
  EXPECT_TRUE(b.final);
  EXPECT_EQ(b.messages, (std::vector<std::string>{"progress", "result"}));
  EXPECT_FALSE(q->Take().final);  // reported once
}

TEST(MessageQueue, TakeLoneFinalTakesOnlyAFinalWithNothingBeforeIt) {
  const auto yes = [](std::string_view) { return true; };
  auto q = NewQueue();
  EXPECT_EQ(q->TakeLoneFinal(yes), std::nullopt);  // empty
  q->Push("n", MessageQueue::Kind::kNotification);
  q->Push("r", MessageQueue::Kind::kFinalResponse);
  EXPECT_EQ(q->TakeLoneFinal(yes), std::nullopt);  // a notification came first
  EXPECT_EQ(q->Take().messages.size(), 2u);         // both still there

  auto lone = NewQueue();
  lone->Push("r", MessageQueue::Kind::kFinalResponse);
  std::string seen;
  EXPECT_EQ(lone->TakeLoneFinal([&seen](std::string_view m) {
    seen = m;
    return false;
  }),
            std::nullopt);  // refused: left in place
  EXPECT_EQ(seen, "r");
  ASSERT_TRUE(Readable(lone->WaitFd()));
  EXPECT_EQ(lone->TakeLoneFinal(yes), "r");
  EXPECT_FALSE(Readable(lone->WaitFd()));
  EXPECT_EQ(lone->TakeLoneFinal(yes), std::nullopt);  // taken once
  const MessageQueue::Batch after = lone->Take();
  EXPECT_TRUE(after.messages.empty());
  EXPECT_FALSE(after.final);

  auto unfinished = NewQueue();
  unfinished->Push("n", MessageQueue::Kind::kNotification);
  EXPECT_EQ(unfinished->TakeLoneFinal(yes), std::nullopt);
}

TEST(MessageQueue, NotificationsOverBudgetAreDroppedResponsesNever) {
  auto q = NewQueue(10);
  EXPECT_TRUE(q->Push("12345", MessageQueue::Kind::kNotification));
  EXPECT_TRUE(q->Push("12345", MessageQueue::Kind::kNotification));
  EXPECT_FALSE(q->Push("1", MessageQueue::Kind::kNotification));
  EXPECT_TRUE(q->Push(std::string(100, 'r'), MessageQueue::Kind::kResponse));
  EXPECT_TRUE(q->Push(std::string(100, 'f'), MessageQueue::Kind::kFinalResponse));
  EXPECT_EQ(q->Take().messages.size(), 4u);
  // Taking frees the budget.
  auto q2 = NewQueue(10);
  q2->Push("1234567890", MessageQueue::Kind::kNotification);
  EXPECT_FALSE(q2->Push("x", MessageQueue::Kind::kNotification));
  q2->Take();
  EXPECT_TRUE(q2->Push("x", MessageQueue::Kind::kNotification));
}

TEST(MessageQueue, ASlowReaderPastTheQueueCapLosesTheQueue) {
  auto created = MessageQueue::Create(10, 250);
  ASSERT_TRUE(created.ok());
  auto q = *created;
  EXPECT_TRUE(q->Push(std::string(300, 'a'), MessageQueue::Kind::kResponse));  // alone: fits
  EXPECT_EQ(q->Take().messages.size(), 1u);
  EXPECT_TRUE(q->Push(std::string(200, 'b'), MessageQueue::Kind::kResponse));
  EXPECT_FALSE(q->Overflowed());
  EXPECT_FALSE(q->Push(std::string(100, 'c'), MessageQueue::Kind::kResponse));
  EXPECT_TRUE(q->Overflowed());
  EXPECT_TRUE(Readable(q->WaitFd()));
  MessageQueue::Batch b = q->Take();
  EXPECT_TRUE(b.aborted);
  EXPECT_TRUE(b.messages.empty());
  EXPECT_FALSE(q->Push("d", MessageQueue::Kind::kResponse));
}

TEST(MessageQueue, AbortWakesTheReaderAndStopsPushes) {
  auto q = NewQueue();
  q->Abort();
  EXPECT_TRUE(Readable(q->WaitFd()));
  EXPECT_FALSE(q->Push("x", MessageQueue::Kind::kResponse));
  MessageQueue::Batch b = q->Take();
  EXPECT_TRUE(b.aborted);
  EXPECT_FALSE(b.final);
  // An abort after the final response changes nothing: the reply is complete.
  auto q2 = NewQueue();
  q2->Push("r", MessageQueue::Kind::kFinalResponse);
  q2->Abort();
  MessageQueue::Batch b2 = q2->Take();
  EXPECT_TRUE(b2.final);
  EXPECT_FALSE(b2.aborted);
}

TEST(MessageQueue, ConcurrentPushersLoseNothing) {
  auto q = NewQueue(1 << 30);
  constexpr int kThreads = 8, kEach = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) q->Push("m", MessageQueue::Kind::kNotification);
    });
  }
  size_t got = 0;
  while (got < kThreads * kEach) {
    pollfd p{q->WaitFd(), POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 5000), 1);
    got += q->Take().messages.size();
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(got, static_cast<size_t>(kThreads * kEach));
}

json Response(int id) { return {{"jsonrpc", "2.0"}, {"id", id}, {"result", json::object()}}; }
json Progress() {
  return {{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", json::object()}};
}

TEST(QueueSink, RequestStreamCarriesProgressThenEnds) {
  auto q = NewQueue();
  QueueSink sink(q, SinkMode::kRequestStream);
  sink.Send(Progress(), false);
  sink.Send(Response(1), true);
  sink.Send(Progress(), false);
  MessageQueue::Batch b = q->Take();
  ASSERT_EQ(b.messages.size(), 2u);
  EXPECT_TRUE(b.final);
  EXPECT_EQ(json::parse(b.messages[1]), Response(1));
}

TEST(QueueSink, JsonReplyKeepsOnlyTheFinalResponse) {
  auto q = NewQueue();
  QueueSink sink(q, SinkMode::kRequestJson);
  sink.Send(Progress(), false);
  EXPECT_FALSE(Readable(q->WaitFd()));
  sink.Send(Response(7), true);
  MessageQueue::Batch b = q->Take();
  ASSERT_EQ(b.messages.size(), 1u);
  EXPECT_TRUE(b.final);
  EXPECT_EQ(json::parse(b.messages[0]), Response(7));
}

TEST(QueueSink, SessionStreamNeverEnds) {
  auto q = NewQueue();
  QueueSink sink(q, SinkMode::kSessionStream);
  sink.Send(Response(1), true);
  sink.Send(Progress(), false);
  sink.Send(Response(2), true);
  MessageQueue::Batch b = q->Take();
  EXPECT_EQ(b.messages.size(), 3u);
  EXPECT_FALSE(b.final);
}

TEST(QueueSink, InvalidUtf8IsReplacedNotThrown) {
  auto q = NewQueue();
  QueueSink sink(q, SinkMode::kRequestStream);
  json bad = Response(1);
  bad["result"]["text"] = std::string(
      "a\xff"
      "b");
  sink.Send(bad, true);
  MessageQueue::Batch b = q->Take();
  ASSERT_EQ(b.messages.size(), 1u);
  EXPECT_NE(b.messages[0].find("a\xEF\xBF\xBD"
                               "b"),
            std::string::npos);
}

}  // namespace
}  // namespace mcpexec::mcp::transport
