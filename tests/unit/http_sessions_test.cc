#include "mcp/transport/http_sessions.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace mcpexec::mcp::transport {
namespace {

using namespace std::chrono_literals;

class SessionTableTest : public ::testing::Test {
 protected:
  std::shared_ptr<Session> New(const std::string& id) { return server_.NewSession(id); }
  static std::shared_ptr<MessageQueue> Queue() {
    auto q = MessageQueue::Create(1024);
    EXPECT_TRUE(q.ok());
    return *q;
  }

  WorkerPool pool_{1, 1};
  Server server_{ServerInfo{}, {}, pool_};
};

TEST_F(SessionTableTest, FindsSessionsByIdAndKind) {
  SessionTable table(10, 1h);
  auto streamable = New("a");
  auto legacy = New("b");
  auto stream = Queue();
  ASSERT_TRUE(table.Add("id-a", streamable));
  ASSERT_TRUE(table.Add("id-b", legacy, stream));
  EXPECT_EQ(table.Size(), 2u);

  EXPECT_EQ(table.Find("id-a", SessionTable::Kind::kStreamable), streamable);
  EXPECT_EQ(table.Find("id-a", SessionTable::Kind::kLegacy), nullptr);
  std::shared_ptr<MessageQueue> found_stream;
  EXPECT_EQ(table.Find("id-b", SessionTable::Kind::kLegacy, &found_stream), legacy);
  EXPECT_EQ(found_stream, stream);
  EXPECT_EQ(table.Find("id-b", SessionTable::Kind::kStreamable), nullptr);
  EXPECT_EQ(table.Find("nope", SessionTable::Kind::kStreamable), nullptr);
}

TEST_F(SessionTableTest, AnIdIsNeverReplaced) {
  SessionTable table(10, 1h);
  auto first = New("a");
  ASSERT_TRUE(table.Add("id", first));
  EXPECT_FALSE(table.Add("id", New("b")));
  EXPECT_EQ(table.Find("id", SessionTable::Kind::kStreamable), first);
}

TEST_F(SessionTableTest, RemoveForgetsAndAbortsOpenReplies) {
  SessionTable table(10, 1h);
  ASSERT_TRUE(table.Add("id", New("a")));
  auto reply = Queue();
  table.TrackReply("id", reply);
  EXPECT_TRUE(table.Remove("id"));
  EXPECT_FALSE(table.Remove("id"));
  EXPECT_EQ(table.Find("id", SessionTable::Kind::kStreamable), nullptr);
  EXPECT_TRUE(reply->Take().aborted);
}

TEST_F(SessionTableTest, ASessionTracksAtMostItsBudgetOfOpenReplies) {
  SessionTable table(10, 1h);
  ASSERT_TRUE(table.Add("id", New("a")));
  auto first = Queue();
  auto second = Queue();
  EXPECT_TRUE(table.TrackReply("id", first, 2));
  EXPECT_TRUE(table.TrackReply("id", second, 2));
  auto third = Queue();
  EXPECT_FALSE(table.TrackReply("id", third, 2));
  second.reset();  // answered: its slot is free
  EXPECT_TRUE(table.TrackReply("id", third, 2));
  EXPECT_TRUE(table.Remove("id"));
  EXPECT_TRUE(first->Take().aborted);
  EXPECT_TRUE(third->Take().aborted);
}

TEST_F(SessionTableTest, TrackingAReplyOfAGoneSessionAbortsIt) {
  SessionTable table(10, 1h);
  auto reply = Queue();
  table.TrackReply("gone", reply);
  EXPECT_TRUE(reply->Take().aborted);
}

TEST_F(SessionTableTest, FullTableRefusesWhileNothingIsIdle) {
  SessionTable table(2, 1h);
  ASSERT_TRUE(table.Add("1", New("1")));
  ASSERT_TRUE(table.Add("2", New("2")));
  EXPECT_FALSE(table.Add("3", New("3")));
  EXPECT_EQ(table.Size(), 2u);
}

// A clock the test moves by hand.
struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  SessionTable::Now Fn() {
    return [this] { return now; };
  }
};

TEST_F(SessionTableTest, FullTableClosesIdleStreamableSessionsOnly) {
  FakeClock clock;
  SessionTable table(3, 20ms, clock.Fn());
  ASSERT_TRUE(table.Add("idle", New("idle")));
  ASSERT_TRUE(table.Add("legacy", New("legacy"), Queue()));  // lives as long as its stream
  ASSERT_TRUE(table.Add("busy", New("busy")));
  auto reply = Queue();
  table.TrackReply("busy", reply);  // a reply still open: not idle
  clock.now += 19ms;
  EXPECT_FALSE(table.Add("early", New("early")));  // nothing idle for 20 ms yet
  clock.now += 1ms;
  ASSERT_TRUE(table.Add("new", New("new")));
  EXPECT_EQ(table.Find("idle", SessionTable::Kind::kStreamable), nullptr);
  EXPECT_NE(table.Find("legacy", SessionTable::Kind::kLegacy), nullptr);
  EXPECT_NE(table.Find("busy", SessionTable::Kind::kStreamable), nullptr);
  EXPECT_NE(table.Find("new", SessionTable::Kind::kStreamable), nullptr);
}

TEST_F(SessionTableTest, UseKeepsASessionFromExpiring) {
  FakeClock clock;
  SessionTable table(1, 50ms, clock.Fn());
  ASSERT_TRUE(table.Add("a", New("a")));
  for (int i = 0; i < 4; ++i) {
    clock.now += 40ms;
    ASSERT_NE(table.Find("a", SessionTable::Kind::kStreamable), nullptr);
  }
  EXPECT_FALSE(table.Add("b", New("b")));
  clock.now += 50ms;
  EXPECT_TRUE(table.Add("b", New("b")));
}

TEST_F(SessionTableTest, CloseAllEmptiesTheTable) {
  SessionTable table(10, 1h);
  ASSERT_TRUE(table.Add("1", New("1")));
  ASSERT_TRUE(table.Add("2", New("2"), Queue()));
  auto reply = Queue();
  table.TrackReply("1", reply);
  EXPECT_EQ(table.CloseAll(), 2u);
  EXPECT_EQ(table.Size(), 0u);
  EXPECT_TRUE(reply->Take().aborted);
}

}  // namespace
}  // namespace mcpexec::mcp::transport
