// Budgets of a client on a real HttpServer (loopback, a free port). One Streamable HTTP session's
// open requests beyond max_open_per_session are refused with 429, while another session from the
// same address is served, and the session gets its slots back as its answers go out. One
// address's legacy event streams beyond max_streams_per_peer are refused with 503, while its
// requests are still served.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "loopback.h"
#include "mcp/server.h"
#include "mcp/tool.h"
#include "mcp/transport/http_server.h"
#include "mcp/worker_pool.h"

namespace mcpexec::mcp {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A tool whose calls wait until released (or cancelled).
class HoldingTool : public Tool {
 public:
  std::string Name() const override { return "hold"; }
  json Definition() const override {
    return {{"name", "hold"},
            {"description", "waits"},
            {"inputSchema", {{"type", "object"}}}};
  }
  json Call(const json&, const ToolCallContext& context) override {
    ++entered;
    while (!released.load()) {
      pollfd p{context.cancel_fd, POLLIN, 0};
      if (context.cancel_fd >= 0 && poll(&p, 1, 5) > 0) break;
      if (context.cancel_fd < 0) std::this_thread::sleep_for(5ms);
    }
    return {{"content", json::array({{{"type", "text"}, {"text", "done"}}})}};
  }
  std::atomic<int> entered{0};
  std::atomic<bool> released{false};
};

using ::mcpexec::test::Connect;

// Sends one POST /mcp on a new connection and returns the connection without reading.
UniqueFd Send(int port, const json& body, const std::string& session) {
  UniqueFd sock = Connect(port);
  const std::string text = body.dump();
  std::string request =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json\r\nMCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n"
      "Content-Length: " +
      std::to_string(text.size()) + "\r\n";
  if (!session.empty()) request += "Mcp-Session-Id: " + session + "\r\n";
  request += "\r\n" + text;
  EXPECT_EQ(write(sock.Get(), request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  return sock;
}

using ::mcpexec::test::Reply;
Reply Read(const UniqueFd& sock) { return ::mcpexec::test::ReadReply(sock); }

json Call(int id) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", "hold"}, {"arguments", json::object()}}}};
}

class HttpSessionBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.listen.host = "127.0.0.1";
    options.listen.port = 0;
    options.max_open_per_session = 2;
    options.max_streams_per_peer = 2;
    options.max_standalone_streams_per_peer = 2;
    http_ = std::make_unique<HttpServer>(server_, std::move(options));
    auto port = http_->Start();
    ASSERT_TRUE(port.ok()) << port.error().message;
    port_ = *port;
  }
  void TearDown() override {
    tool_->released = true;
    if (http_) http_->Stop();
    pool_.Drain();
  }

  // A new initialized session's id.
  std::string Open() {
    const json init = {{"jsonrpc", "2.0"},
                       {"id", 0},
                       {"method", "initialize"},
                       {"params",
                        {{"protocolVersion", "2025-11-25"},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}};
    const Reply reply = Read(Send(port_, init, ""));
    EXPECT_EQ(reply.status, 200) << reply.body;
    const std::string key = "Mcp-Session-Id: ";
    const size_t at = reply.head.find(key);
    if (at == std::string::npos) return "";
    const std::string id = reply.head.substr(at + key.size(),
                                             reply.head.find("\r\n", at) - at - key.size());
    const Reply initialized =
        Read(Send(port_, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, id));
    EXPECT_EQ(initialized.status, 202) << initialized.body;
    return id;
  }

  void WaitEntered(int n) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (tool_->entered.load() < n && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(2ms);
    }
    ASSERT_EQ(tool_->entered.load(), n);
  }

  std::shared_ptr<HoldingTool> tool_ = std::make_shared<HoldingTool>();
  WorkerPool pool_{4, 4};
  Server server_{ServerInfo{}, {tool_}, pool_};
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
};

TEST_F(HttpSessionBudgetTest, ASessionAtItsBudgetIsRefusedWhileAnotherIsServed) {
  const std::string busy = Open();
  ASSERT_FALSE(busy.empty());
  std::vector<UniqueFd> open;
  open.push_back(Send(port_, Call(1), busy));
  open.push_back(Send(port_, Call(2), busy));
  WaitEntered(2);

  const Reply refused = Read(Send(port_, Call(3), busy));
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_NE(refused.body.find("this session has 2 requests open"), std::string::npos)
      << refused.body;
  EXPECT_EQ(tool_->entered.load(), 2) << "the refused call ran";

  // Another session from the same address has a budget of its own.
  const std::string other = Open();
  ASSERT_FALSE(other.empty());
  UniqueFd theirs = Send(port_, Call(4), other);
  WaitEntered(3);

  tool_->released = true;
  for (UniqueFd& sock : open) EXPECT_EQ(Read(sock).status, 200);
  EXPECT_EQ(Read(theirs).status, 200);
  // Its answers out, the session has its slots back.
  const Reply again = Read(Send(port_, Call(5), busy));
  EXPECT_EQ(again.status, 200) << again.body;
}

// A legacy event stream: the connection, once its endpoint event has arrived.
UniqueFd OpenStream(int port, std::string* first) {
  UniqueFd sock = Connect(port);
  const std::string request =
      "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
  EXPECT_EQ(write(sock.Get(), request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  char buf[4096];
  pollfd p{sock.Get(), POLLIN, 0};
  while (first->find("\r\n\r\n") == std::string::npos ||
         (first->starts_with("HTTP/1.1 200") && first->find("endpoint") == std::string::npos)) {
    if (poll(&p, 1, 10000) <= 0) break;
    const ssize_t n = read(sock.Get(), buf, sizeof buf);
    if (n <= 0) break;
    first->append(buf, static_cast<size_t>(n));
  }
  return sock;
}

TEST_F(HttpSessionBudgetTest, AnAddressAtItsStreamBudgetIsRefusedStreamsButServedRequests) {
  std::string first, second, third;
  UniqueFd a = OpenStream(port_, &first);
  UniqueFd b = OpenStream(port_, &second);
  ASSERT_TRUE(first.starts_with("HTTP/1.1 200")) << first;
  ASSERT_TRUE(second.starts_with("HTTP/1.1 200")) << second;
  UniqueFd refused = OpenStream(port_, &third);
  EXPECT_TRUE(third.starts_with("HTTP/1.1 503")) << third;
  EXPECT_NE(third.find("this address has 2 event streams open"), std::string::npos) << third;

  // Its requests are not streams: they are served.
  EXPECT_FALSE(Open().empty());

  // A stream closed gives its slot back.
  a.Reset();
  std::string again;
  UniqueFd c;
  for (int i = 0; i < 100 && !again.starts_with("HTTP/1.1 200"); ++i) {
    again.clear();
    c = OpenStream(port_, &again);
    if (!again.starts_with("HTTP/1.1 200")) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(again.starts_with("HTTP/1.1 200")) << again;
}

// A Streamable HTTP standalone stream (GET /mcp) of session `session`: the connection, once the
// response head has arrived.
UniqueFd OpenStandalone(int port, const std::string& session, std::string* head) {
  UniqueFd sock = Connect(port);
  const std::string request = "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                              "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: " +
                              session + "\r\n\r\n";
  EXPECT_EQ(write(sock.Get(), request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  char buf[4096];
  pollfd p{sock.Get(), POLLIN, 0};
  while (head->find("\r\n\r\n") == std::string::npos) {
    if (poll(&p, 1, 10000) <= 0) break;
    const ssize_t n = read(sock.Get(), buf, sizeof buf);
    if (n <= 0) break;
    head->append(buf, static_cast<size_t>(n));
  }
  return sock;
}

// Each standalone stream holds a thread for its session's life: past one address's budget a GET
// is 405, which a client takes for "no standalone stream" and polls; a session's new GET
// replaces its old one (whose connection ends) and takes no more.
TEST_F(HttpSessionBudgetTest, StandaloneStreamsPastTheBudgetAre405) {
  const std::string a = Open(), b = Open(), c = Open();
  std::string head_a, head_b, head_c;
  UniqueFd stream_a = OpenStandalone(port_, a, &head_a);
  UniqueFd stream_b = OpenStandalone(port_, b, &head_b);
  ASSERT_TRUE(head_a.starts_with("HTTP/1.1 200")) << head_a;
  ASSERT_TRUE(head_b.starts_with("HTTP/1.1 200")) << head_b;
  UniqueFd refused = OpenStandalone(port_, c, &head_c);
  EXPECT_TRUE(head_c.starts_with("HTTP/1.1 405")) << head_c;
  EXPECT_NE(head_c.find("Allow: POST, DELETE"), std::string::npos) << head_c;

  // a's new stream replaces its old one, which the server ends.
  std::string again;
  UniqueFd stream_a2;
  for (int i = 0; i < 100 && !again.starts_with("HTTP/1.1 200"); ++i) {
    again.clear();
    stream_a2 = OpenStandalone(port_, a, &again);
    if (!again.starts_with("HTTP/1.1 200")) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(again.starts_with("HTTP/1.1 200")) << again;
  // Its chunked body ends (the connection may stay for another request).
  std::string rest = head_a;
  char buf[4096];
  pollfd p{stream_a.Get(), POLLIN, 0};
  while (rest.find("\r\n0\r\n\r\n") == std::string::npos && poll(&p, 1, 10000) > 0) {
    const ssize_t n = read(stream_a.Get(), buf, sizeof buf);
    if (n <= 0) break;
    rest.append(buf, static_cast<size_t>(n));
  }
  EXPECT_NE(rest.find("\r\n0\r\n\r\n"), std::string::npos) << "the replaced stream goes on: " << rest;
}

}  // namespace
}  // namespace mcpexec::mcp
