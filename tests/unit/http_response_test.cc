#include "http/response.h"

#include <gtest/gtest.h>

namespace mcpexec::http {
namespace {

Response Json(int status, std::string body) {
  Response res;
  res.status = status;
  res.SetContent(std::move(body), "application/json");
  return res;
}

TEST(SerializeResponseHead, FixedLengthKeptAlive) {
  Response res = Json(200, "{}");
  res.SetHeader("Mcp-Session-Id", "abc");
  ResponseHeadOptions o;
  o.content_length = res.body.size();
  o.keep_alive_timeout_s = 30;
  EXPECT_EQ(SerializeResponseHead(res, o),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: abc\r\n"
            "Content-Length: 2\r\nKeep-Alive: timeout=30\r\n\r\n");
}

TEST(SerializeResponseHead, Closing) {
  Response res = Json(413, "{}");
  ResponseHeadOptions o;
  o.content_length = 2;
  o.keep_alive = false;
  o.keep_alive_timeout_s = 30;
  EXPECT_EQ(SerializeResponseHead(res, o),
            "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nConnection: close\r\n\r\n");
}

TEST(SerializeResponseHead, StreamFramings) {
  Response res;
  res.SetStream(
      "text/event-stream", [](StreamSink&) { return false; }, nullptr);
  ResponseHeadOptions o;
  o.framing = ResponseFraming::kChunked;
  EXPECT_EQ(
      SerializeResponseHead(res, o),
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
  o.framing = ResponseFraming::kUntilClose;
  o.keep_alive = false;
  EXPECT_EQ(SerializeResponseHead(res, o),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
}

TEST(SerializeResponseHead, Http10KeptAliveIsTold) {
  Response res;
  ResponseHeadOptions o;
  o.request_minor_version = 0;
  EXPECT_EQ(SerializeResponseHead(res, o),
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
}

TEST(SerializeResponseHead, HeadersThatCouldSplitTheResponseAreLeftOut) {
  Response res;
  res.SetHeader("X-Good", "1");
  res.SetHeader("X-Bad", "a\r\nSet-Cookie: x=1");
  res.SetHeader("X-Bad2", "a\nb");
  res.SetHeader(std::string_view("X-Nul\0", 6), "1");
  res.SetHeader("", "empty name");
  ResponseHeadOptions o;
  EXPECT_EQ(SerializeResponseHead(res, o),
            "HTTP/1.1 200 OK\r\nX-Good: 1\r\nContent-Length: 0\r\n\r\n");
}

TEST(Response, SetHeaderReplacesCaseInsensitively) {
  Response res;
  res.SetHeader("Allow", "GET");
  res.SetHeader("allow", "POST");
  ASSERT_EQ(res.headers.size(), 1u);
  EXPECT_EQ(res.headers[0].second, "POST");
  ASSERT_NE(res.FindHeader("ALLOW"), nullptr);
  EXPECT_EQ(*res.FindHeader("ALLOW"), "POST");
  EXPECT_EQ(res.FindHeader("Other"), nullptr);
}

TEST(StatusReason, KnownAndUnknown) {
  EXPECT_EQ(StatusReason(100), "Continue");
  EXPECT_EQ(StatusReason(202), "Accepted");
  EXPECT_EQ(StatusReason(404), "Not Found");
  EXPECT_EQ(StatusReason(408), "Request Timeout");
  EXPECT_EQ(StatusReason(431), "Request Header Fields Too Large");
  EXPECT_EQ(StatusReason(505), "HTTP Version Not Supported");
  EXPECT_EQ(StatusReason(299), "Unknown");
}

TEST(ChunkHeader, HexSizes) {
  EXPECT_EQ(ChunkHeader(0), "0\r\n");
  EXPECT_EQ(ChunkHeader(1), "1\r\n");
  EXPECT_EQ(ChunkHeader(255), "ff\r\n");
  EXPECT_EQ(ChunkHeader(4096), "1000\r\n");
  EXPECT_EQ(ChunkHeader(SIZE_MAX), std::string(2 * sizeof(size_t), 'f') + "\r\n");
  EXPECT_EQ(kLastChunk, "0\r\n\r\n");
}

}  // namespace
}  // namespace mcpexec::http
