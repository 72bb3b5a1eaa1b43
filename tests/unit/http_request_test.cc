#include "http/request.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mcpexec::http {
namespace {

using State = HeadParse::State;

HeadParse Parse(std::string_view input, HeadLimits limits = {}) {
  return ParseRequestHead(input, limits);
}

RequestHead Parsed(std::string_view input) {
  HeadParse p = Parse(input);
  EXPECT_EQ(p.state, State::kComplete) << input << ": " << p.error.status << " " << p.error.reason;
  EXPECT_EQ(p.consumed, input.size()) << input;
  return std::move(p.head);
}

// The status a malformed head is refused with; 0 when it is not refused.
int RefusedWith(std::string_view input, HeadLimits limits = {}) {
  HeadParse p = Parse(input, limits);
  return p.state == State::kError ? p.error.status : 0;
}

// ---- valid requests

TEST(ParseRequestHead, SimpleGet) {
  const RequestHead h = Parsed("GET /healthz HTTP/1.1\r\nHost: localhost:8080\r\n\r\n");
  EXPECT_EQ(h.method, "GET");
  EXPECT_EQ(h.target, "/healthz");
  EXPECT_EQ(h.path, "/healthz");
  EXPECT_EQ(h.query, "");
  EXPECT_EQ(h.minor_version, 1);
  ASSERT_EQ(h.headers.size(), 1u);
  EXPECT_EQ(h.headers[0].name, "Host");
  EXPECT_EQ(h.headers[0].value, "localhost:8080");
  EXPECT_EQ(h.framing, BodyFraming::kNone);
  EXPECT_FALSE(h.HasBody());
  EXPECT_TRUE(h.keep_alive);
  EXPECT_FALSE(h.expect_continue);
}

TEST(ParseRequestHead, PostWithContentLengthAndQuery) {
  const RequestHead h = Parsed(
      "POST /messages?sessionId=ab%20c&x=1 HTTP/1.1\r\nHost: h\r\nContent-Type: "
      "application/json\r\nContent-Length: 42\r\n\r\n");
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.path, "/messages");
  EXPECT_EQ(h.query, "sessionId=ab%20c&x=1");
  EXPECT_EQ(h.framing, BodyFraming::kContentLength);
  EXPECT_EQ(h.content_length, 42u);
  EXPECT_TRUE(h.HasBody());
}

TEST(ParseRequestHead, ZeroContentLengthIsNoBody) {
  const RequestHead h = Parsed("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(h.framing, BodyFraming::kContentLength);
  EXPECT_FALSE(h.HasBody());
}

TEST(ParseRequestHead, Chunked) {
  const RequestHead h =
      Parsed("POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n");
  EXPECT_EQ(h.framing, BodyFraming::kChunked);
  EXPECT_TRUE(h.HasBody());
}

TEST(ParseRequestHead, HeaderNamesAreCaseInsensitiveAndValuesTrimmed) {
  const RequestHead h = Parsed(
      "GET / HTTP/1.1\r\nhost: h\r\nMCP-Protocol-Version: \t 2025-11-25 \t\r\nX-Empty:\r\n"
      "x-dup: 1\r\nX-Dup: 2\r\n\r\n");
  EXPECT_EQ(h.Header("Mcp-Protocol-Version"), "2025-11-25");
  EXPECT_EQ(h.Header("HOST"), "h");
  EXPECT_EQ(h.Header("x-empty"), "");
  EXPECT_EQ(h.Header("X-DUP"), "1");  // the first one
  EXPECT_EQ(h.Header("Missing"), std::nullopt);
  EXPECT_TRUE(h.HasHeader("x-empty"));
}

TEST(ParseRequestHead, ValuesMayHoldObsText) {
  EXPECT_EQ(Parsed("GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf\xc3\xa9\r\n\r\n").Header("x-name"),
            "caf\xc3\xa9");
}

TEST(ParseRequestHead, LeadingEmptyLinesAreSkipped) {
  const RequestHead h = Parsed("\r\n\r\nGET /x HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(h.path, "/x");
}

TEST(ParseRequestHead, AbsoluteAndAsteriskForms) {
  RequestHead h = Parsed("GET http://127.0.0.1:8080/mcp?a=1 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(h.path, "/mcp");
  EXPECT_EQ(h.query, "a=1");
  h = Parsed("GET HTTPS://example.com HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(h.path, "/");
  h = Parsed("GET http://example.com?q HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(h.path, "/");
  EXPECT_EQ(h.query, "q");
  h = Parsed("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(h.path, "*");
}

TEST(ParseRequestHead, PathIsNotDecoded) {
  EXPECT_EQ(Parsed("GET /mc%70 HTTP/1.1\r\nHost: h\r\n\r\n").path, "/mc%70");
}

TEST(ParseRequestHead, KeepAliveRules) {
  EXPECT_TRUE(Parsed("GET / HTTP/1.1\r\nHost: h\r\n\r\n").keep_alive);
  EXPECT_FALSE(Parsed("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(
      Parsed("GET / HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive, CLOSE\r\n\r\n").keep_alive);
  EXPECT_FALSE(Parsed("GET / HTTP/1.0\r\n\r\n").keep_alive);
  EXPECT_TRUE(Parsed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
  EXPECT_EQ(Parsed("GET / HTTP/1.0\r\n\r\n").minor_version, 0);
}

TEST(ParseRequestHead, ExpectContinueOnlyInHttp11) {
  EXPECT_TRUE(Parsed("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-Continue"
                     "\r\n\r\n")
                  .expect_continue);
  EXPECT_FALSE(Parsed("POST /mcp HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
                   .expect_continue);
  EXPECT_FALSE(Parsed("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: other\r\n\r\n")
                   .expect_continue);
}

// ---- incomplete input and pipelining

TEST(ParseRequestHead, EveryPrefixIsIncompleteNeverAnError) {
  const std::string req =
      "\r\nPOST /mcp?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nX: y\r\n\r\n";
  for (size_t n = 0; n < req.size(); ++n) {
    HeadParse p = Parse(std::string_view(req).substr(0, n));
    EXPECT_EQ(p.state, State::kIncomplete) << n;
    EXPECT_LE(p.scanned, n);
  }
  EXPECT_EQ(Parse(req).state, State::kComplete);
}

TEST(ParseRequestHead, ResumedScansGiveTheSameResult) {
  const std::string req = "GET /a HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n";
  size_t scanned = 0;
  HeadParse p;
  for (size_t n = 1; n <= req.size(); ++n) {
    p = ParseRequestHead(std::string_view(req).substr(0, n), {}, scanned);
    if (p.state != State::kIncomplete) {
      EXPECT_EQ(n, req.size());
      break;
    }
    EXPECT_GE(p.scanned, scanned);
    scanned = p.scanned;
  }
  ASSERT_EQ(p.state, State::kComplete);
  EXPECT_EQ(p.consumed, req.size());
  EXPECT_EQ(p.head.Header("x-a"), "1");
}

TEST(ParseRequestHead, PipelinedRequestsAreParsedOneAtATime) {
  const std::string first = "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n";
  const std::string second = "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string input = first + "{}" + second;
  HeadParse p = Parse(input);
  ASSERT_EQ(p.state, State::kComplete);
  EXPECT_EQ(p.consumed, first.size());
  EXPECT_EQ(p.head.content_length, 2u);
  HeadParse q = Parse(std::string_view(input).substr(p.consumed + 2));
  ASSERT_EQ(q.state, State::kComplete);
  EXPECT_EQ(q.head.path, "/healthz");
  EXPECT_EQ(q.consumed, second.size());
}

// ---- malformed heads

struct Bad {
  const char* head;
  int status;
};

TEST(ParseRequestHead, MalformedRequestLines) {
  const Bad cases[] = {
      {"GET /\r\nHost: h\r\n\r\n", 400},                   // no version
      {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},         // two spaces
      {"GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400},         // trailing space
      {" GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400},         // leading space
      {"GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},         // tab separator
      {"G@T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},          // method not a token
      {"GET foo HTTP/1.1\r\nHost: h\r\n\r\n", 400},        // not origin-form
      {"GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", 400},       // fragment
      {"GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400},      // control character
      {"GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", 400},  // raw non-ASCII
      {"GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400},  // no host in absolute-form
      {"GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n", 400},  // another scheme
      {"GET / http/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/1\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505},
      {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
      {"GET / HTTP/0.9\r\nHost: h\r\n\r\n", 505},
      {"GARBAGE\r\n\r\n", 400},
  };
  for (const Bad& c : cases) EXPECT_EQ(RefusedWith(c.head), c.status) << c.head;
}

TEST(ParseRequestHead, MalformedHeaderFields) {
  const Bad cases[] = {
      {"GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\n: empty-name\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400},  // whitespace before the colon
      {"GET / HTTP/1.1\r\nHost: h\r\nX Y: 1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\nX(: 1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01"
       "b\r\n\r\n",
       400},
      {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n", 400},
  };
  for (const Bad& c : cases) EXPECT_EQ(RefusedWith(c.head), c.status) << c.head;
  static constexpr char kNul[] = "GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n";
  EXPECT_EQ(RefusedWith(std::string_view(kNul, sizeof kNul - 1)), 400);
}

TEST(ParseRequestHead, ObsFoldIsRefused) {
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\n Host: h\r\n\r\n"), 400);
}

TEST(ParseRequestHead, BareCrOrLfIsRefused) {
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\nHost: h\n\n"), 400);
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nHost: h\nX: 1\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nHost: h\rX: 1\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nHost: h\r\n\n"), 400);
  // Refused as soon as it arrives, not when a head end never comes.
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\nHost"), 400);
  EXPECT_EQ(RefusedWith("\n"), 400);
}

TEST(ParseRequestHead, HostRules) {
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET / HTTP/1.0\r\n\r\n"), 0);  // optional in HTTP/1.0
}

// ---- request smuggling (RFC 9112 section 6.3)

TEST(ParseRequestHead, ContentLengthMustBeOneNumber) {
  const Bad cases[] = {
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9223372036854775808\r\n\r\n", 413},
  };
  for (const Bad& c : cases) EXPECT_EQ(RefusedWith(c.head), c.status) << c.head;
  EXPECT_EQ(Parsed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9223372036854775807\r\n\r\n")
                .content_length,
            9223372036854775807u);
  EXPECT_EQ(Parsed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length:  007 \r\n\r\n").content_length,
            7u);
}

TEST(ParseRequestHead, ContentLengthWithTransferEncodingIsRefused) {
  EXPECT_EQ(RefusedWith("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: "
                        "chunked\r\n\r\n"),
            400);
  EXPECT_EQ(RefusedWith("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-"
                        "Length: 5\r\n\r\n"),
            400);
}

TEST(ParseRequestHead, TransferEncodingRules) {
  const Bad cases[] = {
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
       "chunked\r\n\r\n",
       400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ,\r\n\r\n", 400},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
  };
  for (const Bad& c : cases) EXPECT_EQ(RefusedWith(c.head), c.status) << c.head;
  EXPECT_EQ(Parsed("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: , chunked ,\r\n\r\n").framing,
            BodyFraming::kChunked);
}

// ---- limits

TEST(ParseRequestHead, HeadSizeLimit) {
  HeadLimits limits;
  limits.max_head_bytes = 64;
  const std::string base = "GET / HTTP/1.1\r\nHost: h\r\nX: ";  // 28 bytes
  const std::string fits = base + std::string(64 - base.size() - 4, 'a') + "\r\n\r\n";
  ASSERT_EQ(fits.size(), 64u);
  EXPECT_EQ(Parse(fits, limits).state, State::kComplete);
  const std::string over = base + std::string(64 - base.size() - 3, 'a') + "\r\n\r\n";
  EXPECT_EQ(RefusedWith(over, limits), 431);
  // Without an end in sight: refused once the limit is reached, not before.
  EXPECT_EQ(Parse(std::string(63, 'a'), limits).state, State::kIncomplete);
  EXPECT_EQ(RefusedWith(std::string(64, 'a'), limits), 431);
  EXPECT_EQ(RefusedWith(std::string(100000, 'a')), 431);
  // Empty lines before the request count too.
  std::string crlfs;
  for (int i = 0; i < 40; ++i) crlfs += "\r\n";
  EXPECT_EQ(RefusedWith(crlfs, limits), 431);
}

TEST(ParseRequestHead, HeaderCountLimit) {
  HeadLimits limits;
  limits.max_headers = 100;
  std::string head = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 1; i < 100; ++i) head += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Parse(head + "\r\n", limits).state, State::kComplete);
  EXPECT_EQ(RefusedWith(head + "X-100: v\r\n\r\n", limits), 431);
}

TEST(ParseRequestHead, DefaultLimits) {
  const HeadLimits limits;
  EXPECT_EQ(limits.max_head_bytes, 16u * 1024);
  EXPECT_EQ(limits.max_headers, 100u);
  const std::string big = "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(16000, 'a') + "\r\n\r\n";
  EXPECT_EQ(Parse(big).state, State::kComplete);
  const std::string too_big =
      "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(16 * 1024, 'a') + "\r\n\r\n";
  EXPECT_EQ(RefusedWith(too_big), 431);
}

// ---- chunked bodies

struct Decoded {
  ChunkedDecoder::Step::State state;
  std::string body;
  size_t consumed = 0;
  int status = 0;
};

Decoded Decode(std::string_view input, uint64_t max = 1 << 20) {
  ChunkedDecoder d(max);
  Decoded out;
  const ChunkedDecoder::Step s = d.Feed(input, &out.body);
  out.state = s.state;
  out.consumed = s.consumed;
  out.status = s.state == ChunkedDecoder::Step::State::kError ? s.error.status : 0;
  return out;
}

using Chunk = ChunkedDecoder::Step::State;

TEST(ChunkedDecoder, DecodesChunks) {
  const std::string in = "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
  const Decoded d = Decode(in);
  EXPECT_EQ(d.state, Chunk::kDone);
  EXPECT_EQ(d.body, "hello, world");
  EXPECT_EQ(d.consumed, in.size());
}

TEST(ChunkedDecoder, HexSizesExtensionsAndTrailers) {
  const Decoded d =
      Decode("A;name=\"v\"\r\n0123456789\r\n00001 ; x\r\n!\r\n000\r\nX-Trailer: 1\r\nY: 2\r\n\r\n");
  EXPECT_EQ(d.state, Chunk::kDone);
  EXPECT_EQ(d.body, "0123456789!");
}

TEST(ChunkedDecoder, ByteAtATimeGivesTheSameBody) {
  const std::string in = "3\r\nabc\r\n1;e\r\nd\r\n0\r\nT: x\r\n\r\nNEXT";
  ChunkedDecoder d(100);
  std::string body;
  size_t i = 0;
  ChunkedDecoder::Step s;
  for (; i < in.size(); ++i) {
    s = d.Feed(std::string_view(in).substr(i, 1), &body);
    if (s.state != Chunk::kNeedMore) break;
    EXPECT_EQ(s.consumed, 1u);
  }
  EXPECT_EQ(s.state, Chunk::kDone);
  EXPECT_EQ(body, "abcd");
  EXPECT_EQ(in.substr(i + 1), "NEXT");
}

TEST(ChunkedDecoder, StopsAtTheEndOfTheBody) {
  const std::string body = "2\r\n{}\r\n0\r\n\r\n";
  const Decoded d = Decode(body + "GET / HTTP/1.1\r\n");
  EXPECT_EQ(d.state, Chunk::kDone);
  EXPECT_EQ(d.consumed, body.size());
  EXPECT_EQ(d.body, "{}");
}

TEST(ChunkedDecoder, IncompleteNeedsMore) {
  const Decoded d = Decode("5\r\nhel");
  EXPECT_EQ(d.state, Chunk::kNeedMore);
  EXPECT_EQ(d.body, "hel");
  EXPECT_EQ(d.consumed, 6u);
}

TEST(ChunkedDecoder, MalformedChunks) {
  for (const char* bad : {
           "x\r\n",             // not hex
           "\r\n",              // no size
           ";e\r\n",            // extension without size
           "5 x\r\nhello\r\n",  // not an extension
           "5\nhello\r\n",      // bare LF after the size
           "5\r\nhelloX\r\n",   // more data than announced
           "5\r\nhello\r\r",    // bad chunk end
           "5\r\nhello\n",      // bare LF after the data
           "-5\r\n",            // sign
           "5;\x01\r\n",        // control character in an extension
           "0\r\nX: 1\n\r\n",   // bare LF in the trailer
           "0\r\n\rX",          // bad last line
       }) {
    const Decoded d = Decode(bad);
    EXPECT_EQ(d.state, Chunk::kError) << bad;
    EXPECT_EQ(d.status, 400) << bad;
  }
}

TEST(ChunkedDecoder, SizeLimitIsCheckedBeforeTheData) {
  Decoded d = Decode("b\r\n", 10);  // 11 > 10: refused before any data arrives
  EXPECT_EQ(d.state, Chunk::kError);
  EXPECT_EQ(d.status, 413);
  d = Decode("6\r\n123456\r\n5\r\n", 10);  // 11 in total
  EXPECT_EQ(d.status, 413);
  EXPECT_EQ(d.body, "123456");
  d = Decode("a\r\n0123456789\r\n0\r\n\r\n", 10);  // exactly the limit
  EXPECT_EQ(d.state, Chunk::kDone);
  d = Decode("fffffffffffffffff\r\n");  // does not fit in 64 bits
  EXPECT_EQ(d.status, 413);
  d = Decode("ffffffffffffffff\r\n");
  EXPECT_EQ(d.status, 413);
}

TEST(ChunkedDecoder, LinesAreBounded) {
  EXPECT_EQ(Decode("1;" + std::string(5000, 'x')).status, 400);
  EXPECT_EQ(Decode(std::string(5000, '0')).status, 400);
  std::string trailer = "0\r\n";
  for (int i = 0; i < 1000; ++i) trailer += "X-Trailer: 1234\r\n";
  EXPECT_EQ(Decode(trailer).status, 400);
}

TEST(ChunkedDecoder, ErrorsAndDoneAreSticky) {
  ChunkedDecoder d(100);
  std::string body;
  EXPECT_EQ(d.Feed("zz", &body).state, Chunk::kError);
  const ChunkedDecoder::Step again = d.Feed("5\r\nhello\r\n", &body);
  EXPECT_EQ(again.state, Chunk::kError);
  EXPECT_EQ(again.consumed, 0u);
  ChunkedDecoder done(100);
  EXPECT_EQ(done.Feed("0\r\n\r\n", &body).state, Chunk::kDone);
  EXPECT_EQ(done.Feed("1\r\nx\r\n", &body).consumed, 0u);
  EXPECT_EQ(body, "");
}

// ---- query parameters

TEST(QueryParam, FindsAndDecodes) {
  EXPECT_EQ(QueryParam("sessionId=abc", "sessionId"), "abc");
  EXPECT_EQ(QueryParam("a=1&sessionId=x%41y&b", "sessionId"), "xAy");
  EXPECT_EQ(QueryParam("sessionId=a+b%2Bc", "sessionId"), "a b+c");
  EXPECT_EQ(QueryParam("session%49d=z", "sessionId"), "z");
  EXPECT_EQ(QueryParam("sessionId=1&sessionId=2", "sessionId"), "1");
  EXPECT_EQ(QueryParam("sessionId", "sessionId"), "");
  EXPECT_EQ(QueryParam("sessionId=", "sessionId"), "");
}

TEST(QueryParam, AbsentOrMalformed) {
  EXPECT_EQ(QueryParam("", "sessionId"), std::nullopt);
  EXPECT_EQ(QueryParam("sessionid=x", "sessionId"), std::nullopt);
  EXPECT_EQ(QueryParam("xsessionId=1&&", "sessionId"), std::nullopt);
  EXPECT_EQ(QueryParam("sessionId=%zz%4", "sessionId"), "%zz%4");
  EXPECT_EQ(QueryParam("sessionId=%", "sessionId"), "%");
}

}  // namespace
}  // namespace mcpexec::http
