// The request loop of one connection (ServeConnection) over a socketpair, with a scripted
// handler: keep-alive, pipelining, bodies, 100-continue, streams, limits and timeouts.
#include "http/connection.h"
#include "loopback.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace mcpexec::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class ScriptedHandler : public Handler {
 public:
  std::function<Admission(const Request&, Response&)> admit = [](const Request&, Response&) {
    return Admission::kAdmitted;
  };
  // Default: answers with the path, or with the body for a POST.
  std::function<void(Request&, Response&)> handle = [](Request& req, Response& res) {
    std::string body;
    if (req.head.method == "POST" && req.ReadBody(1 << 20, &body) != BodyStatus::kOk) {
      res.status = 400;
    }
    res.SetContent(req.head.method == "POST" ? body : req.head.path, "text/plain");
  };

  Admission Admit(const Request& req, Response& res) override { return admit(req, res); }
  void Handle(Request& req, Response& res) override { handle(req, res); }
};

class ConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    limits_.keep_alive_timeout = 5s;
    limits_.read_timeout = 5s;
    limits_.request_timeout = 5s;
    limits_.write_timeout = 5s;
  }

  void Start() {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    client_.Reset(fds[0]);
    stop_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    ASSERT_TRUE(stop_.Valid());
    server_ = std::thread([this, sock = fds[1]] {
      ServeConnection(sock, stop_.Get(), limits_, handler_);
      served_ = true;
    });
  }

  void TearDown() override {
    if (!server_.joinable()) return;
    const uint64_t one = 1;
    (void)!write(stop_.Get(), &one, sizeof one);
    server_.join();
  }

  void Send(std::string_view data) {
    ASSERT_EQ(send(client_.Get(), data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }

  // Reads until `received_` holds `needle` (true), EOF or the timeout (false).
  bool WaitFor(std::string_view needle, std::chrono::milliseconds timeout = 5s) {
    const auto deadline = Clock::now() + timeout;
    while (received_.find(needle) == std::string::npos) {
      if (!ReadSome(deadline)) return false;
    }
    return true;
  }

  // Reads until the server closes the connection (true) or the timeout (false).
  bool WaitEof(std::chrono::milliseconds timeout = 5s) {
    const auto deadline = Clock::now() + timeout;
    while (!eof_) {
      if (!ReadSome(deadline) && !eof_) return false;
    }
    return true;
  }

  bool ReadSome(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{client_.Get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    const ssize_t n = recv(client_.Get(), buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    received_.append(buf, static_cast<size_t>(n));
    return true;
  }

  static size_t Count(const std::string& s, std::string_view what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  }

  ConnectionLimits limits_;
  ScriptedHandler handler_;
  UniqueFd client_;
  UniqueFd stop_;
  std::thread server_;
  std::atomic<bool> served_{false};
  std::string received_;
  bool eof_ = false;
};

constexpr char kGetA[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
constexpr char kGetBClose[] = "GET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";

TEST_F(ConnectionTest, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  Send(std::string(kGetA) + kGetA + kGetBClose);
  ASSERT_TRUE(WaitEof());
  EXPECT_EQ(Count(received_, "HTTP/1.1 200 OK\r\n"), 3u);
  const size_t a2 = received_.find("\r\n\r\n/a", received_.find("\r\n\r\n/a") + 1);
  const size_t b = received_.find("\r\n\r\n/b");
  ASSERT_NE(a2, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_LT(a2, b);
  EXPECT_EQ(Count(received_, "Connection: close\r\n"), 1u);
  EXPECT_TRUE(received_.ends_with("Connection: close\r\n\r\n/b"));
}

TEST_F(ConnectionTest, KeepAliveServesOneRequestAfterAnother) {
  Start();
  Send(kGetA);
  ASSERT_TRUE(WaitFor("\r\n\r\n/a"));
  EXPECT_NE(received_.find("Keep-Alive: timeout=5\r\n"), std::string::npos);
  EXPECT_NE(received_.find("Content-Length: 2\r\n"), std::string::npos);
  Send(kGetBClose);
  ASSERT_TRUE(WaitEof());
  EXPECT_TRUE(received_.ends_with("/b"));
}

TEST_F(ConnectionTest, Http10ClosesUnlessKeptAlive) {
  Start();
  Send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(WaitFor("Connection: keep-alive\r\n"));
  ASSERT_TRUE(WaitFor("/a"));
  Send("GET /b HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(WaitEof());
  EXPECT_TRUE(received_.ends_with("Connection: close\r\n\r\n/b"));
}

TEST_F(ConnectionTest, ContentLengthBody) {
  Start();
  Send("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhel");
  std::this_thread::sleep_for(20ms);
  Send("lo");
  Send(kGetBClose);
  ASSERT_TRUE(WaitEof());
  EXPECT_NE(received_.find("Content-Length: 5\r\nKeep-Alive: timeout=5\r\n\r\nhello"),
            std::string::npos);
  EXPECT_TRUE(received_.ends_with("/b"));
}

TEST_F(ConnectionTest, ChunkedBodyThenAPipelinedRequest) {
  Start();
  Send(
      "POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
      "6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n" +
      std::string(kGetBClose));
  ASSERT_TRUE(WaitEof());
  EXPECT_NE(received_.find("\r\n\r\nhello world"), std::string::npos);
  EXPECT_TRUE(received_.ends_with("/b"));
}

TEST_F(ConnectionTest, ChunkedBodyOverTheLimitIsTooLarge) {
  BodyStatus status = BodyStatus::kOk;
  handler_.handle = [&](Request& req, Response& res) {
    std::string body;
    status = req.ReadBody(4, &body);
    res.status = 413;
  };
  Start();
  Send(
      "POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  ASSERT_TRUE(WaitEof());
  EXPECT_EQ(status, BodyStatus::kTooLarge);
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 413 Payload Too Large\r\n"));
  EXPECT_NE(received_.find("Connection: close\r\n"), std::string::npos);
}

TEST_F(ConnectionTest, MalformedChunkedBodyFailsTheRead) {
  BodyStatus status = BodyStatus::kOk;
  handler_.handle = [&](Request& req, Response& res) {
    std::string body;
    status = req.ReadBody(100, &body);
    res.status = 400;
  };
  Start();
  Send("POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  ASSERT_TRUE(WaitEof());
  EXPECT_EQ(status, BodyStatus::kFailed);
}

TEST_F(ConnectionTest, ExpectContinueIsAnsweredWhenTheBodyIsRead) {
  Start();
  Send("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(WaitFor("HTTP/1.1 100 Continue\r\n\r\n"));
  EXPECT_EQ(received_, "HTTP/1.1 100 Continue\r\n\r\n");
  Send("hello");
  ASSERT_TRUE(WaitFor("\r\n\r\nhello"));
  EXPECT_NE(received_.find("HTTP/1.1 200 OK\r\n"), std::string::npos);
  EXPECT_EQ(received_.find("Connection: close"), std::string::npos);
}

TEST_F(ConnectionTest, ARefusalIsSentInsteadOfContinue) {
  handler_.admit = [](const Request&, Response& res) {
    res.status = 413;
    return Admission::kAnswered;
  };
  Start();
  Send("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 99999\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(WaitEof());
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 413 Payload Too Large\r\n"));
  EXPECT_EQ(received_.find("100 Continue"), std::string::npos);
  EXPECT_NE(received_.find("Connection: close\r\n"), std::string::npos);
}

TEST_F(ConnectionTest, AnUnreadBodyClosesTheConnection) {
  handler_.handle = [](Request&, Response& res) { res.SetContent("no", "text/plain"); };
  Start();
  Send("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc" + std::string(kGetA));
  ASSERT_TRUE(WaitEof());
  EXPECT_EQ(Count(received_, "HTTP/1.1 "), 1u);
  EXPECT_NE(received_.find("Connection: close\r\n"), std::string::npos);
}

TEST_F(ConnectionTest, HeadGetsTheLengthWithoutTheBody) {
  Start();
  Send("HEAD /abcde HTTP/1.1\r\nHost: h\r\n\r\n" + std::string(kGetBClose));
  ASSERT_TRUE(WaitEof());
  EXPECT_NE(received_.find("Content-Length: 6\r\nKeep-Alive: timeout=5\r\n\r\nHTTP/1.1 200"),
            std::string::npos);
  EXPECT_TRUE(received_.ends_with("/b"));
}

TEST_F(ConnectionTest, StreamedResponseIsChunkedAndTheConnectionLivesOn) {
  std::atomic<int> ended{-1};
  handler_.handle = [&](Request& req, Response& res) {
    if (req.head.path != "/stream") {
      res.SetContent(req.head.path, "text/plain");
      return;
    }
    auto step = std::make_shared<int>(0);
    res.SetStream(
        "text/event-stream",
        [step](StreamSink& out) {
          switch ((*step)++) {
            case 0:
              return out.Write("a") && out.Write("");  // an empty piece is not a chunk
            case 1:
              return out.Write("bc");
            default:
              out.Done();
              return true;
          }
        },
        [&](bool done) { ended = done ? 1 : 0; });
  };
  Start();
  Send("GET /stream HTTP/1.1\r\nHost: h\r\n\r\n" + std::string(kGetBClose));
  ASSERT_TRUE(WaitEof());
  EXPECT_NE(received_.find("Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"),
            std::string::npos);
  EXPECT_NE(received_.find("\r\n\r\n1\r\na\r\n2\r\nbc\r\n0\r\n\r\nHTTP/1.1 200 OK"),
            std::string::npos);
  EXPECT_TRUE(received_.ends_with("/b"));
  EXPECT_EQ(ended.load(), 1);
}

TEST_F(ConnectionTest, StreamToHttp10EndsWithTheConnection) {
  handler_.handle = [](Request&, Response& res) {
    auto sent = std::make_shared<bool>(false);
    res.SetStream(
        "text/event-stream",
        [sent](StreamSink& out) {
          if (*sent) {
            out.Done();
            return true;
          }
          *sent = true;
          return out.Write("abc");
        },
        nullptr);
  };
  Start();
  Send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(WaitEof());
  EXPECT_EQ(received_.find("Transfer-Encoding"), std::string::npos);
  EXPECT_TRUE(received_.ends_with("Connection: close\r\n\r\nabc"));
}

TEST_F(ConnectionTest, AProviderThatFailsEndsTheConnection) {
  std::atomic<int> ended{-1};
  handler_.handle = [&](Request&, Response& res) {
    res.SetStream(
        "text/event-stream", [](StreamSink& out) { return out.Write("x") && false; },
        [&](bool done) { ended = done ? 1 : 0; });
  };
  Start();
  Send(std::string(kGetA) + kGetA);
  ASSERT_TRUE(WaitEof());
  EXPECT_EQ(Count(received_, "HTTP/1.1 200"), 1u);
  EXPECT_TRUE(received_.ends_with("1\r\nx\r\n"));  // no last chunk: the body is cut short
  EXPECT_EQ(ended.load(), 0);
}

TEST_F(ConnectionTest, MalformedHeadsAreAnsweredAndClosed) {
  Start();
  Send("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx" +
       std::string(kGetA));
  ASSERT_TRUE(WaitEof());
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_NE(received_.find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(received_.find("{\"error\":\"more than one Content-Length\"}"), std::string::npos);
  EXPECT_EQ(Count(received_, "HTTP/1.1 "), 1u);  // the smuggled request is never served
}

TEST_F(ConnectionTest, OversizedHeadIs431) {
  limits_.head.max_head_bytes = 256;
  Start();
  Send("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(300, 'a'));
  ASSERT_TRUE(WaitEof());
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
}

TEST_F(ConnectionTest, UnsupportedVersionIs505) {
  Start();
  Send("GET / HTTP/2.0\r\n\r\n");
  ASSERT_TRUE(WaitEof());
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 505 HTTP Version Not Supported\r\n"));
}

TEST_F(ConnectionTest, ASlowHeadIsCutAtTheRequestDeadline) {
  limits_.request_timeout = 300ms;
  Start();
  const auto start = Clock::now();
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    const std::string head = "GET / HTTP/1.1\r\nHost: h\r\nX-Slow: ";
    for (size_t i = 0; !stop; ++i) {
      const char c = i < head.size() ? head[i] : 'a';
      if (send(client_.Get(), &c, 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(20ms);
    }
  });
  const bool closed = WaitEof(3s);
  stop = true;
  drip.join();
  ASSERT_TRUE(closed);
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, 250ms);
  EXPECT_LT(elapsed, 1500ms);
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 408 Request Timeout\r\n")) << received_;
}

// A body that stops coming is cut at the read timeout, and the handler can tell a timeout
// (408) from a client that went away.
TEST_F(ConnectionTest, AStalledBodyTimesOut) {
  limits_.read_timeout = 200ms;
  std::atomic<int> status{-1};
  handler_.handle = [&](Request& req, Response& res) {
    std::string body;
    status = static_cast<int>(req.ReadBody(1 << 20, &body));
    res.status = 408;
    res.close = true;
  };
  Start();
  const auto start = Clock::now();
  Send("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\nx");
  ASSERT_TRUE(WaitEof(3s));
  EXPECT_LT(Clock::now() - start, 1500ms);
  EXPECT_EQ(status.load(), static_cast<int>(BodyStatus::kTimedOut));
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 408 Request Timeout\r\n")) << received_;
}

// A byte now and then, each well within the read timeout, is still too slow: the body must come
// at the minimum rate once its grace (the read timeout) is over.
TEST_F(ConnectionTest, ABodyTrickledBelowTheMinimumRateIsCut) {
  limits_.read_timeout = 300ms;
  limits_.request_timeout = 20s;
  limits_.min_transfer_rate = 1000;  // bytes/s: a byte buys 1 ms
  std::atomic<int> status{-1};
  handler_.handle = [&](Request& req, Response& res) {
    std::string body;
    status = static_cast<int>(req.ReadBody(1 << 20, &body));
    res.close = true;
  };
  Start();
  const auto start = Clock::now();
  Send("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n");
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    while (!stop && send(client_.Get(), "x", 1, MSG_NOSIGNAL) == 1) {
      std::this_thread::sleep_for(50ms);
    }
  });
  const bool closed = WaitEof(5s);
  stop = true;
  drip.join();
  ASSERT_TRUE(closed) << "a body trickled at 20 bytes/s still held its connection after 5 s";
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(status.load(), static_cast<int>(BodyStatus::kTimedOut));
}

// A client that takes its response slower than the minimum rate loses the connection, although
// every write makes some progress within the write timeout.
TEST_F(ConnectionTest, AClientReadingBelowTheMinimumRateIsCut) {
  limits_.write_timeout = 300ms;
  limits_.min_transfer_rate = 1 << 20;  // 1 MiB/s: a 1 MiB body gets 1.3 s
  handler_.handle = [](Request&, Response& res) {
    res.SetContent(std::string(1 << 20, 'x'), "text/plain");
  };
  Start();
  const auto start = Clock::now();
  Send(kGetA);
  // About 200 KiB/s: the whole body would take 5 s.
  char buf[4096];
  while (!served_ && Clock::now() - start < 8s) {
    if (recv(client_.Get(), buf, sizeof buf, MSG_DONTWAIT) == 0) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(served_.load());
  EXPECT_LT(Clock::now() - start, 3s);
}

TEST_F(ConnectionTest, AnIdleConnectionIsClosedSilently) {
  limits_.keep_alive_timeout = 100ms;
  Start();
  Send(kGetA);
  ASSERT_TRUE(WaitFor("/a"));
  received_.clear();
  ASSERT_TRUE(WaitEof(2s));
  EXPECT_EQ(received_, "");
}

TEST_F(ConnectionTest, StopEndsAnIdleConnection) {
  Start();
  Send(kGetA);
  ASSERT_TRUE(WaitFor("/a"));
  const uint64_t one = 1;
  ASSERT_EQ(write(stop_.Get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  ASSERT_TRUE(WaitEof(2s));
}

TEST_F(ConnectionTest, AHandlerExceptionIs500AndCloses) {
  handler_.handle = [](Request&, Response&) { throw std::runtime_error("boom"); };
  Start();
  Send(std::string(kGetA) + kGetA);
  ASSERT_TRUE(WaitEof());
  EXPECT_TRUE(received_.starts_with("HTTP/1.1 500 Internal Server Error\r\n"));
  EXPECT_TRUE(received_.ends_with("{\"error\":\"internal error\"}"));
  EXPECT_EQ(Count(received_, "HTTP/1.1 "), 1u);
}

TEST_F(ConnectionTest, RequestsPerConnectionAreCapped) {
  limits_.keep_alive_max_requests = 2;
  Start();
  Send(std::string(kGetA) + kGetA + kGetA);
  ASSERT_TRUE(WaitEof());
  EXPECT_EQ(Count(received_, "HTTP/1.1 200"), 2u);
  EXPECT_TRUE(received_.ends_with("Connection: close\r\n\r\n/a"));
}

TEST_F(ConnectionTest, TheHandlerSeesTheHeadAndTheSocket) {
  Request seen;
  handler_.handle = [&](Request& req, Response&) {
    seen.head = req.head;
    seen.socket = req.socket;
  };
  Start();
  Send("GET /messages?sessionId=x%41 HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(WaitEof());
  EXPECT_EQ(seen.head.path, "/messages");
  EXPECT_EQ(QueryParam(seen.head.query, "sessionId"), "xA");
  EXPECT_EQ(seen.head.Header("x-a"), "1");
  EXPECT_GE(seen.socket, 0);
}

TEST(WaitForMessages, ReadyTimeoutStopAndHangUp) {
  UniqueFd queue(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  UniqueFd stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  UniqueFd ours(fds[0]);
  UniqueFd peer(fds[1]);
  EXPECT_EQ(WaitForMessages(queue.Get(), ours.Get(), stop.Get(), 10ms), WaitResult::kTimeout);
  const uint64_t one = 1;
  ASSERT_EQ(write(queue.Get(), &one, sizeof one), 8);
  EXPECT_EQ(WaitForMessages(queue.Get(), ours.Get(), stop.Get(), 10ms), WaitResult::kReady);
  peer.Reset();
  EXPECT_EQ(WaitForMessages(queue.Get(), ours.Get(), stop.Get(), 10ms), WaitResult::kPeerClosed);
  EXPECT_EQ(WaitForMessages(queue.Get(), -1, stop.Get(), 10ms), WaitResult::kReady);
  ASSERT_EQ(write(stop.Get(), &one, sizeof one), 8);
  EXPECT_EQ(WaitForMessages(queue.Get(), -1, stop.Get(), 10ms), WaitResult::kStopped);
}

using ::mcpexec::test::Connect;

// Everything the peer sends until it closes (or 5 s pass).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 5000) > 0) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

bool SendAll(int fd, std::string_view data) {
  return send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
}

// Reads one response (up to 5 s); empty when the peer closed or nothing came.
std::string ReadSome(int fd) {
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 5000) <= 0) return {};
  const ssize_t n = recv(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

constexpr char kGet[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
constexpr char kOk[] = "HTTP/1.1 200 OK\r\n";
constexpr char k503[] = "HTTP/1.1 503 Service Unavailable\r\n";

// A ConnectionServer on 127.0.0.1 with a scripted handler, stopped and joined at the end.
class ServerTest : public ::testing::Test {
 protected:
  void Start() {
    stop_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    server_ = std::make_unique<ConnectionServer>(limits_, stop_.Get(), handler_);
    const Result<int> port = server_->Listen("127.0.0.1", 0, 64);
    ASSERT_TRUE(port.ok()) << port.error().message;
    port_ = *port;
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    release_ = true;
    if (!server_) return;
    const uint64_t one = 1;
    ASSERT_EQ(write(stop_.Get(), &one, sizeof one), 8);
    server_->Join();
  }
  // A connection that has had one request answered.
  UniqueFd Served() {
    UniqueFd fd = Connect(port_);
    EXPECT_TRUE(SendAll(fd.Get(), kGet));
    EXPECT_TRUE(ReadSome(fd.Get()).starts_with(kOk));
    return fd;
  }

  // Starts the server with a handler that holds GET /block until release_ is set, and returns
  // the connection of one such request (its head with `headers` added) once the handler has it.
  UniqueFd StartHoldingOne(const std::string& headers = "") {
    handler_.handle = [this](Request& req, Response& res) {
      if (req.head.path == "/block") {
        entered_ = true;
        while (!release_.load()) std::this_thread::sleep_for(1ms);
      }
      res.SetContent("x", "text/plain");
    };
    Start();
    UniqueFd busy = Connect(port_);
    EXPECT_TRUE(SendAll(busy.Get(), "GET /block HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n"));
    while (!entered_.load()) std::this_thread::sleep_for(1ms);
    return busy;
  }

  std::atomic<bool> release_{false};
  std::atomic<bool> entered_{false};
  ConnectionLimits limits_;
  ScriptedHandler handler_;
  UniqueFd stop_;
  std::unique_ptr<ConnectionServer> server_;
  int port_ = 0;
};

TEST_F(ServerTest, IdleConnectionsHoldNoThread) {
  limits_.max_connections = 1;
  Start();
  // The thread that served a request ends just after its response is out: a request right
  // behind it may find it still counted and get 503. One that keeps being refused means an idle
  // connection holds the thread.
  auto served_soon = [&] {
    for (int attempt = 0; attempt < 200; ++attempt) {
      UniqueFd fd = Connect(port_);
      if (SendAll(fd.Get(), kGet) && ReadSome(fd.Get()).starts_with(kOk)) return fd;
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "refused for 2 s while the other connections were idle";
    return UniqueFd();
  };
  UniqueFd first = served_soon();
  // The first connection is open and idle; the one thread is free for the second and third.
  UniqueFd second = served_soon();
  UniqueFd third = served_soon();
  // ... and the first is still open, waiting for its next request.
  pollfd p{first.Get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0) << "the idle connection was closed";
}

// The thread that served a kept-alive connection's request gives its slot back before the
// connection, so the connection's next request never finds the one slot still taken.
TEST_F(ServerTest, AKeptAliveConnectionsNextRequestFindsItsSlotFree) {
  limits_.max_connections = 1;
  Start();
  UniqueFd fd = Connect(port_);
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(SendAll(fd.Get(), kGet));
    const std::string got = ReadSome(fd.Get());
    ASSERT_TRUE(got.starts_with(kOk)) << "request " << i << ": " << got;
  }
}

TEST_F(ServerTest, RequestsBeyondTheCapAre503) {
  limits_.max_connections = 1;
  UniqueFd busy = StartHoldingOne();
  UniqueFd second = Connect(port_);
  ASSERT_TRUE(SendAll(second.Get(), kGet));
  const std::string refused = ReadAll(second.Get());
  EXPECT_TRUE(refused.starts_with(k503)) << refused;
  EXPECT_NE(refused.find("Retry-After: 1\r\n"), std::string::npos);
  release_ = true;
  EXPECT_TRUE(ReadSome(busy.Get()).starts_with(kOk));
}

TEST_F(ServerTest, AtTheIdleCapTheLongestIdleUntrustedConnectionMakesRoom) {
  limits_.max_idle_connections = 2;
  Start();
  UniqueFd trusted = Served();      // idle, with an admitted request
  UniqueFd untrusted = Connect(port_);  // idle, nothing sent
  // Both are held before the third arrives: the served one is idle again once it answered,
  // and the silent one once the loop has accepted it (a request on a fourth proves that).
  UniqueFd probe = Served();
  EXPECT_EQ(ReadAll(untrusted.Get()), "");  // pushed out, without a response
  EXPECT_TRUE(SendAll(trusted.Get(), kGet));
  EXPECT_TRUE(ReadSome(trusted.Get()).starts_with(kOk));
}

TEST_F(ServerTest, UntrustedConnectionsGetTheShorterIdleTimeout) {
  limits_.untrusted_idle_timeout = 200ms;
  limits_.keep_alive_timeout = 30s;
  Start();
  UniqueFd trusted = Served();
  UniqueFd silent = Connect(port_);
  EXPECT_EQ(ReadAll(silent.Get()), "");  // closed after ~200 ms, without a response
  EXPECT_TRUE(SendAll(trusted.Get(), kGet));
  EXPECT_TRUE(ReadSome(trusted.Get()).starts_with(kOk));
}

TEST_F(ServerTest, AStalledHeadIs408) {
  limits_.untrusted_idle_timeout = 200ms;
  Start();
  UniqueFd slow = Connect(port_);
  ASSERT_TRUE(SendAll(slow.Get(), "GET /a HTTP/1.1\r\nHo"));
  const std::string out = ReadAll(slow.Get());
  EXPECT_TRUE(out.starts_with("HTTP/1.1 408 Request Timeout\r\n")) << out;
}

TEST_F(ServerTest, PipelinedAndKeptAliveRequestsGoThroughTheLoop) {
  Start();
  UniqueFd fd = Connect(port_);
  ASSERT_TRUE(SendAll(fd.Get(), std::string(kGet) + kGet));
  std::string got;
  while (got.find(kOk) == got.rfind(kOk)) {
    const std::string more = ReadSome(fd.Get());
    ASSERT_FALSE(more.empty()) << got;
    got += more;
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(SendAll(fd.Get(), kGet));
    EXPECT_TRUE(ReadSome(fd.Get()).starts_with(kOk));
  }
}

// An admitted body that stalls waits in the event loop, not on a thread: with one thread, another
// client is served meanwhile, and the stalled one is cut with 408 at its read timeout.
TEST_F(ServerTest, AStalledBodyHoldsNoThreadAndIsCutAt408) {
  limits_.max_connections = 1;
  limits_.read_timeout = 300ms;
  Start();
  UniqueFd stalled = Connect(port_);
  ASSERT_TRUE(SendAll(stalled.Get(), "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\nx"));
  std::this_thread::sleep_for(50ms);
  const auto start = Clock::now();
  UniqueFd other = Connect(port_);
  ASSERT_TRUE(SendAll(other.Get(), kGet));
  const std::string got = ReadSome(other.Get());
  EXPECT_TRUE(got.starts_with(kOk)) << got;
  EXPECT_LT(Clock::now() - start, 250ms);
  const std::string cut = ReadAll(stalled.Get());
  EXPECT_TRUE(cut.starts_with("HTTP/1.1 408 Request Timeout\r\n")) << cut;
}

// The whole body reaches the handler when the loop has read it.
TEST_F(ServerTest, ABodyReadByTheLoopReachesTheHandler) {
  Start();
  UniqueFd fd = Connect(port_);
  ASSERT_TRUE(SendAll(fd.Get(), "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhel"));
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(SendAll(fd.Get(), std::string("lo") + kGet));
  std::string got;
  while (got.find("hello") == std::string::npos || got.find("\r\n\r\n/a") == std::string::npos) {
    const std::string more = ReadSome(fd.Get());
    ASSERT_FALSE(more.empty()) << got;
    got += more;
  }
}

// A client that pipelines requests admission answers (/healthz) and never reads the answers
// holds no thread, is read only as fast as it takes them, and is cut at the write timeout.
TEST_F(ServerTest, APipelinerThatDoesNotReadHoldsNoThreadAndIsCut) {
  limits_.max_connections = 1;
  limits_.write_timeout = 300ms;
  handler_.admit = [](const Request& req, Response& res) {
    if (req.head.path != "/healthz") return Admission::kAdmitted;
    res.SetContent(std::string(64 * 1024, 'k'), "text/plain");  // more than fits in buffers
    return Admission::kAnswered;
  };
  Start();
  UniqueFd hog = Connect(port_);
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n";
  std::string pipeline;
  while (pipeline.size() < (8u << 20)) pipeline += request;
  size_t sent = 0;
  const auto until = Clock::now() + 500ms;
  while (sent < pipeline.size() && Clock::now() < until) {
    const ssize_t n = send(hog.Get(), pipeline.data() + sent, pipeline.size() - sent,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) sent += static_cast<size_t>(n);
    else std::this_thread::sleep_for(5ms);
  }
  EXPECT_LT(sent, pipeline.size()) << "the server read 8 MiB of requests whose answers wait";
  const auto start = Clock::now();
  UniqueFd other = Connect(port_);
  ASSERT_TRUE(SendAll(other.Get(), kGet));
  const std::string got = ReadSome(other.Get());
  EXPECT_TRUE(got.starts_with(kOk)) << got;
  EXPECT_LT(Clock::now() - start, 250ms);
  // Cut: what it was sent, then the end (or a reset), within the write timeout and a sweep.
  std::this_thread::sleep_for(1s);
  char buf[65536];
  ssize_t n = 0;
  while ((n = recv(hog.Get(), buf, sizeof buf, MSG_DONTWAIT)) > 0) {
  }
  EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << "still open: errno " << errno;
}

// The server closed `fd` (EOF or reset) within `timeout`, having sent nothing.
bool ClosedSilently(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

// At the per-address cap, a newcomer pushes out the address's oldest waiting connection (an
// unproven one first) instead of being refused: the legitimate client of a crowded address gets
// in.
TEST_F(ServerTest, ThePerPeerCapEvictsTheOldestWaitingConnectionInsteadOfRefusing) {
  limits_.max_connections_per_peer = 2;
  Start();
  UniqueFd proven = Served();          // idle, with an admitted request
  UniqueFd unproven = Connect(port_);  // idle, nothing sent
  std::this_thread::sleep_for(50ms);   // accepted by the loop
  UniqueFd newcomer = Connect(port_);
  ASSERT_TRUE(SendAll(newcomer.Get(), kGet));
  const std::string got = ReadSome(newcomer.Get());
  EXPECT_TRUE(got.starts_with(kOk)) << got;
  EXPECT_TRUE(ClosedSilently(unproven.Get(), 1s));
  EXPECT_TRUE(SendAll(proven.Get(), kGet));
  EXPECT_TRUE(ReadSome(proven.Get()).starts_with(kOk));
}

// Only when every connection of the address is being served is a newcomer refused.
TEST_F(ServerTest, ThePerPeerCapRefusesWhenAllAreServed) {
  limits_.max_connections_per_peer = 1;
  UniqueFd busy = StartHoldingOne();
  UniqueFd refused = Connect(port_);
  const std::string out = ReadAll(refused.Get());
  EXPECT_TRUE(out.starts_with(k503)) << out;
  release_ = true;
  EXPECT_TRUE(ReadSome(busy.Get()).starts_with(kOk));
}

// Unproven connections have a budget of their own: at it, the oldest unproven one makes room
// for a new client, and proven ones are left alone.
TEST_F(ServerTest, AtTheUnprovenBudgetTheOldestUnprovenMakesRoom) {
  limits_.max_unproven_connections = 2;
  Start();
  UniqueFd proven = Served();
  UniqueFd oldest = Connect(port_);
  std::this_thread::sleep_for(20ms);
  UniqueFd younger = Connect(port_);
  std::this_thread::sleep_for(50ms);  // both accepted by the loop
  UniqueFd newcomer = Connect(port_);
  ASSERT_TRUE(SendAll(newcomer.Get(), kGet));
  EXPECT_TRUE(ReadSome(newcomer.Get()).starts_with(kOk));
  EXPECT_TRUE(ClosedSilently(oldest.Get(), 1s));
  pollfd p{younger.Get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0) << "the younger unproven connection was closed";
  EXPECT_TRUE(SendAll(proven.Get(), kGet));
  EXPECT_TRUE(ReadSome(proven.Get()).starts_with(kOk));
}

// A connection that has not proven a token gets a few answers from the loop, then its end: a
// pipeline of /healthz costs a reconnect per few answers, not a parse and an answer per request.
// Once a request is admitted the connection is trusted and kept alive as usual.
TEST_F(ServerTest, AnUnprovenConnectionGetsAFewAnswersThenItsEnd) {
  limits_.max_unproven_answers = 3;
  handler_.admit = [](const Request& req, Response& res) {
    if (req.head.path != "/healthz") return Admission::kAdmitted;
    res.SetContent("ok", "text/plain");
    return Admission::kAnswered;
  };
  Start();
  const std::string healthz = "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n";
  std::string pipeline;
  for (int i = 0; i < 10; ++i) pipeline += healthz;
  UniqueFd unproven = Connect(port_);
  ASSERT_TRUE(SendAll(unproven.Get(), pipeline));
  const std::string got = ReadAll(unproven.Get());
  size_t answers = 0;
  for (size_t at = got.find(kOk); at != std::string::npos; at = got.find(kOk, at + 1)) ++answers;
  EXPECT_EQ(answers, 3u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;

  UniqueFd proven = Served();  // its first request admitted
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(SendAll(proven.Get(), healthz));
    EXPECT_TRUE(ReadSome(proven.Get()).starts_with(kOk)) << "answer " << i;
  }
}

// An address's requests being served (streams, running calls) have a share of the threads: past
// it, that address is refused while others are still served.
TEST_F(ServerTest, AnAddressGetsOnlyItsShareOfTheThreads) {
  limits_.max_served_per_peer = 1;
  UniqueFd busy = StartHoldingOne();
  UniqueFd second = Connect(port_);
  ASSERT_TRUE(SendAll(second.Get(), kGet));
  const std::string refused = ReadAll(second.Get());
  EXPECT_TRUE(refused.starts_with(k503)) << refused;
  release_ = true;
  EXPECT_TRUE(ReadSome(busy.Get()).starts_with(kOk));
}

// The address a handler sees (and the per-address cap counts): the forwarded client's only when
// the peer is a trusted proxy.
TEST_F(ServerTest, XForwardedForIsHonouredOnlyFromATrustedProxy) {
  handler_.handle = [](Request& req, Response& res) { res.SetContent(req.remote_addr, "text/plain"); };
  const std::string request = "GET /a HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 192.0.2.1\r\n\r\n";
  auto answer = [&] {
    UniqueFd fd = Connect(port_);
    EXPECT_TRUE(SendAll(fd.Get(), request));
    return ReadSome(fd.Get());
  };
  limits_.trusted_proxies = *TrustedProxies::Parse("10.0.0.1");
  Start();
  EXPECT_TRUE(answer().ends_with("\r\n\r\n127.0.0.1"));
  TearDown();
  server_.reset();
  limits_.trusted_proxies = *TrustedProxies::Parse("127.0.0.0/8");
  Start();
  EXPECT_TRUE(answer().ends_with("\r\n\r\n192.0.2.1"));
}

// Behind a trusted proxy, the per-address cap is the forwarded client's: one client at its cap
// does not lock out another behind the same proxy.
TEST_F(ServerTest, BehindATrustedProxyEachClientHasItsOwnCap) {
  limits_.max_connections_per_peer = 1;
  limits_.max_served_per_peer = 1;
  limits_.trusted_proxies = *TrustedProxies::Parse("127.0.0.1");
  UniqueFd busy = StartHoldingOne("X-Forwarded-For: 192.0.2.1\r\n");
  UniqueFd other = Connect(port_);
  ASSERT_TRUE(SendAll(other.Get(), "GET /a HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 192.0.2.2\r\n\r\n"));
  EXPECT_TRUE(ReadSome(other.Get()).starts_with(kOk));
  UniqueFd same = Connect(port_);
  ASSERT_TRUE(SendAll(same.Get(), "GET /a HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 192.0.2.1\r\n\r\n"));
  const std::string refused = ReadAll(same.Get());
  EXPECT_TRUE(refused.starts_with(k503)) << refused;
  release_ = true;
  EXPECT_TRUE(ReadSome(busy.Get()).starts_with(kOk));
}

TEST(ConnectionServer, ABusyPortIsUnavailable) {
  UniqueFd stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ScriptedHandler handler;
  ConnectionServer a({}, stop.Get(), handler);
  const Result<int> port = a.Listen("127.0.0.1", 0, 16);
  ASSERT_TRUE(port.ok());
  ConnectionServer b({}, stop.Get(), handler);
  const Result<int> again = b.Listen("127.0.0.1", *port, 16);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(again.error().sys_errno, EADDRINUSE);
  EXPECT_FALSE(b.Listen("localhost", 0, 16).ok());  // literals only
}

}  // namespace
}  // namespace mcpexec::http
