// LineWriter: the stdio transport's sink, over a pipe the test reads (or does not).
#include "mcp/transport/line_writer.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "jsonrpc/message.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;

struct Pipe {
  Pipe() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    read_end.Reset(fds[0]);
    write_end.Reset(fds[1]);
  }
  // Every line written until the write end is closed.
  std::vector<json> ReadAllLines() {
    std::string text;
    char buf[65536];
    ssize_t n;
    while ((n = read(read_end.Get(), buf, sizeof buf)) > 0) {
      text.append(buf, static_cast<size_t>(n));
    }
    std::vector<json> lines;
    for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
         start = end + 1) {
      lines.push_back(json::parse(text.substr(start, end - start)));
    }
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "a partial line";
    return lines;
  }
  UniqueFd read_end, write_end;
};

json Note(int i, size_t size = 10) {
  return jsonrpc::MakeNotification("notifications/progress",
                                   {{"progress", i}, {"message", std::string(size, 'x')}});
}

TEST(LineWriterTest, WritesEveryMessageAsOneLineInOrder) {
  Pipe p;
  {
    LineWriter writer(p.write_end.Get(), 1 << 20);
    writer.Send(Note(1), false);
    writer.Send(Note(2), false);
    writer.Send(jsonrpc::MakeResult(7, {{"ok", true}}), true);
    writer.Finish();
    writer.Send(Note(3), false);  // after Finish: dropped
  }
  p.write_end.Reset();
  std::vector<json> lines = p.ReadAllLines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["params"]["progress"], 1);
  EXPECT_EQ(lines[1]["params"]["progress"], 2);
  EXPECT_EQ(lines[2]["id"], 7);
}

// The stall this class exists for: with nobody reading, sending notifications returns (past the
// budget they are dropped), and the response still gets through once the client reads.
TEST(LineWriterTest, AClientThatDoesNotReadNeverBlocksANotification) {
  Pipe p;
  LineWriter writer(p.write_end.Get(), 256 * 1024);
  auto sending = std::async(std::launch::async, [&] {
    for (int i = 0; i < 2000; ++i) writer.Send(Note(i, 4096), false);  // 8 MiB
  });
  ASSERT_EQ(sending.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "Send blocked on a client that does not read";
  auto responding = std::async(std::launch::async,
                               [&] { writer.Send(jsonrpc::MakeResult(1, json::object()), true); });
  auto reading = std::async(std::launch::async, [&] { return p.ReadAllLines(); });
  ASSERT_EQ(responding.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  writer.Finish();
  p.write_end.Reset();
  std::vector<json> lines = reading.get();
  ASSERT_GE(lines.size(), 2u);
  EXPECT_LT(lines.size(), 2001u) << "nothing was dropped: the test did not fill the budget";
  EXPECT_EQ(lines.back()["id"], 1);
  int last = -1;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    const int progress = lines[i]["params"]["progress"];
    EXPECT_GT(progress, last) << "out of order";
    last = progress;
  }
}

// A response that finds nothing queued is on the descriptor when Send returns: its sender wrote
// it, with no hand-off to the writer's thread on the call's path. Twenty in a row, so that a
// thread that merely won the race each time is not taken for it.
TEST(LineWriterTest, AResponseWithNothingQueuedIsWrittenBySend) {
  Pipe p;
  LineWriter writer(p.write_end.Get(), 1 << 20);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(writer.Send(jsonrpc::MakeResult(i, {{"ok", true}}), true));
    pollfd pfd{p.read_end.Get(), POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 0), 1) << "response " << i << " was not written yet";
    char buf[4096];
    const ssize_t n = read(p.read_end.Get(), buf, sizeof buf);
    ASSERT_GT(n, 0);
    const std::string line(buf, static_cast<size_t>(n));
    ASSERT_EQ(line.back(), '\n');
    EXPECT_EQ(json::parse(line)["id"], i);
  }
  // A long one goes through the thread as before, and arrives whole.
  const json big = jsonrpc::MakeResult(99, {{"text", std::string(100000, 'y')}});
  auto reading = std::async(std::launch::async, [&] { return p.ReadAllLines(); });
  EXPECT_TRUE(writer.Send(big, true));  // not ASSERT: the reader must see the write end close
  writer.Finish();
  p.write_end.Reset();
  const std::vector<json> lines = reading.get();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], big);
}

TEST(LineWriterTest, AClosedClientEndsTheWritesWithoutASignal) {
  Pipe p;
  LineWriter writer(p.write_end.Get(), 1 << 20);
  p.read_end.Reset();  // EPIPE, and SIGPIPE, which each write blocks
  writer.Send(jsonrpc::MakeResult(0, json::object()), true);  // not written by this thread
  writer.Send(Note(1), false);
  writer.Send(jsonrpc::MakeResult(1, json::object()), true);
  writer.Finish();
  writer.Send(Note(2), false);
}

}  // namespace
}  // namespace mcpexec::mcp
