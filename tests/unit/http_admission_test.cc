// The admission check on request heads alone: its order (healthz, path, Origin, token, method,
// framing and size) and the status codes it answers with.
#include "mcp/transport/http_admission.h"

#include <gtest/gtest.h>

#include <string>

namespace mcpexec::mcp::transport {
namespace {

Request Req(const std::string& head_text) {
  HeadParse p = ParseRequestHead(head_text, {});
  EXPECT_EQ(p.state, HeadParse::State::kComplete) << head_text;
  Request req;
  req.head = std::move(p.head);
  req.remote_addr = "127.0.0.1";
  return req;
}

std::string Head(const std::string& request_line, const std::string& headers = "") {
  return request_line + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "\r\n";
}

class AdmitTest : public ::testing::Test {
 protected:
  // The status of an answered request, 0 when admitted.
  int Status(const std::string& head_text) {
    res_ = Response();
    const Request req = Req(head_text);
    return Admit(policy_, req, res_) == Admission::kAdmitted ? 0 : res_.status;
  }

  AdmissionPolicy policy_{"s3cret", {}, 1000};
  Response res_;
};

constexpr char kAuth[] = "X-MCP-AUTH: s3cret\r\n";

TEST_F(AdmitTest, HealthzNeedsNoTokenAndTakesGetAndHead) {
  EXPECT_EQ(Status(Head("GET /healthz")), 200);
  EXPECT_EQ(res_.body, "ok");
  EXPECT_FALSE(res_.close);
  EXPECT_EQ(Status(Head("HEAD /healthz")), 200);
  EXPECT_EQ(Status(Head("POST /healthz", "Content-Length: 1\r\n")), 405);
  ASSERT_NE(res_.FindHeader("Allow"), nullptr);
  EXPECT_EQ(*res_.FindHeader("Allow"), "GET, HEAD");
  EXPECT_TRUE(res_.close);  // its body is never read
}

TEST_F(AdmitTest, UnknownPathsAre404BeforeAuth) {
  EXPECT_EQ(Status(Head("GET /nope")), 404);
  EXPECT_EQ(Status(Head("GET /mcp/")), 404);
  EXPECT_EQ(Status(Head("GET /mc%70")), 404);  // paths are not decoded
}

TEST_F(AdmitTest, ForeignOriginIs403BeforeTheToken) {
  EXPECT_EQ(Status(Head("POST /mcp", "Origin: http://evil.example\r\nContent-Length: 2\r\n")), 403);
  EXPECT_TRUE(res_.close);
  // Without a body too: a refused client gets nothing from keeping the connection.
  EXPECT_EQ(Status(Head("GET /sse", "Origin: http://evil.example\r\n")), 403);
  EXPECT_TRUE(res_.close);
  EXPECT_EQ(Status(Head("GET /sse", std::string("Origin: http://localhost:5173\r\n") + kAuth)), 0);
}

TEST_F(AdmitTest, MissingOrWrongTokenIs401BeforeMethodAndSize) {
  EXPECT_EQ(Status(Head("GET /sse")), 401);
  ASSERT_NE(res_.FindHeader("WWW-Authenticate"), nullptr);
  EXPECT_EQ(*res_.FindHeader("WWW-Authenticate"), "Bearer");
  EXPECT_TRUE(res_.close);
  EXPECT_EQ(Status(Head("PUT /mcp")), 401);
  EXPECT_EQ(Status(Head("POST /mcp", "Content-Length: 999999\r\n")), 401);
  EXPECT_TRUE(res_.close);
  EXPECT_EQ(Status(Head("GET /sse", "X-MCP-AUTH: wrong\r\n")), 401);
  EXPECT_EQ(Status(Head("GET /sse", "Authorization: Bearer s3cret\r\n")), 0);
}

TEST_F(AdmitTest, WrongMethodIs405WithAllow) {
  EXPECT_EQ(Status(Head("PUT /mcp", kAuth)), 405);
  EXPECT_EQ(*res_.FindHeader("Allow"), "GET, POST, DELETE");
  EXPECT_EQ(Status(Head("POST /sse", std::string(kAuth) + "Content-Length: 2\r\n")), 405);
  EXPECT_EQ(*res_.FindHeader("Allow"), "GET");
  EXPECT_EQ(Status(Head("GET /messages", kAuth)), 405);
  EXPECT_EQ(*res_.FindHeader("Allow"), "POST");
}

TEST_F(AdmitTest, BodiesAndFraming) {
  EXPECT_EQ(Status(Head("GET /sse", std::string(kAuth) + "Content-Length: 2\r\n")), 400);
  EXPECT_TRUE(res_.close);
  EXPECT_EQ(Status(Head("GET /sse", std::string(kAuth) + "Content-Length: 0\r\n")), 0);
  EXPECT_EQ(Status(Head("POST /mcp", kAuth)), 411);
  EXPECT_EQ(Status(Head("POST /mcp", std::string(kAuth) + "Content-Length: 1000\r\n")), 0);
  EXPECT_EQ(Status(Head("POST /mcp", std::string(kAuth) + "Transfer-Encoding: chunked\r\n")), 0);
  EXPECT_EQ(
      Status(Head("POST /messages?sessionId=x", std::string(kAuth) + "Content-Length: 0\r\n")), 0);
}

TEST_F(AdmitTest, OversizedBodyIs413BeforeItIsRead) {
  EXPECT_EQ(Status(Head("POST /mcp", std::string(kAuth) + "Content-Length: 1001\r\n")), 413);
  EXPECT_TRUE(res_.close);
  EXPECT_NE(res_.body.find("Payload Too Large: the body is larger than 1000 bytes"),
            std::string::npos);
  EXPECT_NE(res_.body.find("-32000"), std::string::npos);
  // Also when the client waits for 100 Continue: this answer replaces it.
  EXPECT_EQ(Status(Head("POST /mcp",
                        std::string(kAuth) + "Content-Length: 5000\r\nExpect: 100-continue\r\n")),
            413);
}

TEST_F(AdmitTest, MultipartIs415) {
  EXPECT_EQ(
      Status(Head("POST /mcp", std::string(kAuth) +
                                   "Content-Length: 2\r\nContent-Type: multipart/form-data\r\n")),
      415);
  EXPECT_EQ(
      Status(Head("POST /mcp",
                  std::string(kAuth) + "Content-Length: 2\r\nContent-Type: application/json\r\n")),
      0);
}

TEST_F(AdmitTest, NoTokenConfiguredAdmitsWithout) {
  policy_.auth_token.clear();
  EXPECT_EQ(Status(Head("GET /sse")), 0);
  EXPECT_EQ(Status(Head("DELETE /mcp")), 0);
}

}  // namespace
}  // namespace mcpexec::mcp::transport
