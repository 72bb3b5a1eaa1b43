// /metrics and /readyz on a real HttpServer (loopback, a free port): who may read them, what
// they answer, and the HTTP server's own families.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>

#include "base/unique_fd.h"
#include "loopback.h"
#include "mcp/server.h"
#include "mcp/transport/http_server.h"
#include "mcp/worker_pool.h"

namespace mcpexec::mcp {
namespace {

using ::mcpexec::test::Connect;
using ::mcpexec::test::Reply;

// One request on a new connection, read to the server's close.
Reply Get(int port, const std::string& method_and_path, const std::string& headers = "") {
  UniqueFd sock = Connect(port);
  const std::string request = method_and_path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers +
                              "Connection: close\r\n\r\n";
  EXPECT_EQ(write(sock.Get(), request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  return ::mcpexec::test::ReadReply(sock);
}

constexpr char kAuth[] = "X-MCP-AUTH: s3cret\r\n";

class HttpMetricsTest : public ::testing::Test {
 protected:
  // Starts the server with `options` on a free loopback port.
  void Start(HttpServerOptions options) {
    options.listen.host = "127.0.0.1";
    options.listen.port = 0;
    http_ = std::make_unique<HttpServer>(server_, std::move(options));
    auto port = http_->Start();
    ASSERT_TRUE(port.ok()) << port.error().message;
    port_ = *port;
  }
  void TearDown() override {
    if (http_) http_->Stop();
    pool_.Drain();
  }

  WorkerPool pool_{1, 1};
  Server server_{ServerInfo{}, {}, pool_};
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
};

HttpServerOptions WithToken() {
  HttpServerOptions o;
  o.auth_token = "s3cret";
  o.write_metrics = [](metrics::TextWriter& out) {
    out.Family("mcp_exec_test_info", "from the caller", metrics::Type::kGauge);
    out.Sample("mcp_exec_test_info", uint64_t{1});
  };
  return o;
}

TEST_F(HttpMetricsTest, MetricsNeedTheTokenByDefault) {
  Start(WithToken());
  EXPECT_EQ(Get(port_, "GET /metrics").status, 401);
  EXPECT_EQ(Get(port_, "GET /metrics", "X-MCP-AUTH: wrong\r\n").status, 401);
  EXPECT_EQ(Get(port_, "GET /metrics", "Authorization: Bearer s3cret\r\n").status, 200);
  const Reply r = Get(port_, "GET /metrics", kAuth);
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.head.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
            std::string::npos)
      << r.head;
  EXPECT_NE(r.body.find("# TYPE mcp_exec_test_info gauge\nmcp_exec_test_info 1\n"),
            std::string::npos);
  // The two refusals and the Bearer scrape, counted when they were sent.
  EXPECT_NE(r.body.find("# TYPE mcp_exec_http_requests_total counter\n"), std::string::npos);
  EXPECT_NE(r.body.find("mcp_exec_http_requests_total{code=\"401\"} 2\n"), std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("mcp_exec_http_requests_total{code=\"200\"} 1\n"), std::string::npos);
  EXPECT_NE(r.body.find("mcp_exec_sessions_open{transport=\"streamable_http\"} 0\n"),
            std::string::npos);
  EXPECT_NE(r.body.find("mcp_exec_sessions_open{transport=\"sse\"} 0\n"), std::string::npos);
  EXPECT_EQ(Get(port_, "POST /metrics", std::string(kAuth) + "Content-Length: 0\r\n").status, 405);
}

TEST_F(HttpMetricsTest, MetricsAuthNoneOpensMetricsOnly) {
  HttpServerOptions o = WithToken();
  o.metrics_need_token = false;
  Start(std::move(o));
  EXPECT_EQ(Get(port_, "GET /metrics").status, 200);
  EXPECT_EQ(Get(port_, "HEAD /metrics").status, 200);
  EXPECT_EQ(Get(port_, "GET /sse").status, 401);
  EXPECT_EQ(Get(port_, "DELETE /mcp").status, 401);
}

TEST_F(HttpMetricsTest, MetricsCountOpenSessions) {
  Start(WithToken());
  // A legacy SSE stream is a session while it is open.
  UniqueFd sock = Connect(port_);
  const std::string open = std::string("GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n") + kAuth + "\r\n";
  ASSERT_EQ(write(sock.Get(), open.data(), open.size()), static_cast<ssize_t>(open.size()));
  std::string in;
  char buf[1024];
  while (in.find("event: endpoint") == std::string::npos) {
    const ssize_t n = read(sock.Get(), buf, sizeof buf);
    ASSERT_GT(n, 0);
    in.append(buf, n);
  }
  const Reply r = Get(port_, "GET /metrics", kAuth);
  EXPECT_NE(r.body.find("mcp_exec_sessions_open{transport=\"sse\"} 1\n"), std::string::npos)
      << r.body;
}

TEST_F(HttpMetricsTest, ReadyzNeedsNoTokenAndSaysWhatFails) {
  auto failing = std::make_shared<std::atomic<bool>>(false);
  HttpServerOptions o = WithToken();
  o.readiness = [failing] {
    std::vector<NotReady> out;
    if (*failing) out.push_back({"engine", "no sandbox ready and no live zygote"});
    return out;
  };
  Start(std::move(o));
  Reply r = Get(port_, "GET /readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(nlohmann::json::parse(r.body), nlohmann::json({{"ready", true}}));
  *failing = true;
  r = Get(port_, "GET /readyz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(nlohmann::json::parse(r.body),
            nlohmann::json::parse(R"({"ready":false,"failing":[{"check":"engine",
                                      "reason":"no sandbox ready and no live zygote"}]})"));
  EXPECT_EQ(Get(port_, "HEAD /readyz").status, 503);
  EXPECT_EQ(Get(port_, "POST /readyz", "Content-Length: 0\r\n").status, 405);
  // Liveness is unchanged.
  EXPECT_EQ(Get(port_, "GET /healthz").status, 200);
}

TEST_F(HttpMetricsTest, ReadyzWithoutAReadinessCheckIsReady) {
  Start(HttpServerOptions{});
  EXPECT_EQ(Get(port_, "GET /readyz").status, 200);
  EXPECT_EQ(Get(port_, "GET /metrics").status, 200);  // no token configured: open
}

}  // namespace
}  // namespace mcpexec::mcp
