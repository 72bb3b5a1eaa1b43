#include "mcp/transport/http_checks.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace mcpexec::mcp::transport {
namespace {

// ---- ParseListenAddress

ListenAddress Parsed(const std::string& text) {
  Result<ListenAddress> r = ParseListenAddress(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : ListenAddress{};
}

TEST(ParseListenAddress, PortAloneMeansAllInterfaces) {
  const ListenAddress a = Parsed(":8080");
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 8080);
  EXPECT_FALSE(a.IsLoopback());
}

TEST(ParseListenAddress, Ipv4) {
  const ListenAddress a = Parsed("127.0.0.1:8080");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 8080);
  EXPECT_TRUE(a.IsLoopback());
  EXPECT_EQ(a.ToString(), "127.0.0.1:8080");
  EXPECT_TRUE(Parsed("127.1.2.3:1").IsLoopback());
  EXPECT_FALSE(Parsed("192.168.1.10:80").IsLoopback());
}

TEST(ParseListenAddress, Ipv6InBrackets) {
  const ListenAddress a = Parsed("[::1]:8080");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 8080);
  EXPECT_TRUE(a.IsLoopback());
  EXPECT_EQ(a.ToString(), "[::1]:8080");
  EXPECT_FALSE(Parsed("[::]:9000").IsLoopback());
  EXPECT_TRUE(Parsed("[::ffff:127.0.0.1]:9000").IsLoopback());
}

TEST(ParseListenAddress, LocalhostIsBoundAsIpv4Loopback) {
  const ListenAddress a = Parsed("localhost:0");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 0);
  EXPECT_TRUE(a.IsLoopback());
  EXPECT_EQ(Parsed("LocalHost:1").host, "127.0.0.1");
}

TEST(ParseListenAddress, PortBounds) {
  EXPECT_EQ(Parsed(":0").port, 0);
  EXPECT_EQ(Parsed(":65535").port, 65535);
  EXPECT_EQ(Parsed(":00080").port, 80);
}

TEST(ParseListenAddress, RefusesMalformedAddresses) {
  for (const char* bad : {"",
                          "8080",
                          "127.0.0.1",
                          "127.0.0.1:",
                          ":65536",
                          ":99999",
                          ":-1",
                          ":+80",
                          ": 80",
                          ":80 ",
                          ":8o",
                          "::1:8080",
                          "[::1]",
                          "[::1]8080",
                          "[::1:8080",
                          "[127.0.0.1]:80",
                          "[]:80",
                          "example.com:80",
                          "256.0.0.1:80",
                          "1.2.3:80",
                          "localhost:http",
                          ":123456"}) {
    Result<ListenAddress> r = ParseListenAddress(bad);
    EXPECT_FALSE(r.ok()) << '"' << bad << "\" parsed as " << (r.ok() ? r->ToString() : "");
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
      EXPECT_NE(r.error().message.find("listen address"), std::string::npos);
    }
  }
}

// ---- ChooseResponseMode

TEST(ChooseResponseMode, TheSdkHeaderGetsAnEventStream) {
  EXPECT_EQ(ChooseResponseMode("application/json, text/event-stream"), ResponseMode::kEventStream);
  EXPECT_EQ(ChooseResponseMode("text/event-stream, application/json"), ResponseMode::kEventStream);
}

// subscriptions/listen can only be answered with a stream: any header that accepts one gets it.
TEST(ChooseResponseMode, AStreamOnlyAnswerTakesAStreamWheneverOneIsAccepted) {
  for (const char* accept : {"*/*", "", "application/json, text/event-stream;q=0.1", "text/*"}) {
    EXPECT_EQ(ChooseResponseMode(accept, true), ResponseMode::kEventStream) << accept;
  }
  EXPECT_EQ(ChooseResponseMode("application/json", true), ResponseMode::kJson);
  EXPECT_EQ(ChooseResponseMode("application/json, text/event-stream;q=0", true), ResponseMode::kJson);
  EXPECT_EQ(ChooseResponseMode("*/*", false), ResponseMode::kJson);
}

TEST(ChooseResponseMode, SingleTypes) {
  EXPECT_EQ(ChooseResponseMode("application/json"), ResponseMode::kJson);
  EXPECT_EQ(ChooseResponseMode("text/event-stream"), ResponseMode::kEventStream);
  EXPECT_EQ(ChooseResponseMode("Application/JSON"), ResponseMode::kJson);
  EXPECT_EQ(ChooseResponseMode("application/json; charset=utf-8"), ResponseMode::kJson);
}

TEST(ChooseResponseMode, WildcardsPreferJson) {
  EXPECT_EQ(ChooseResponseMode(""), ResponseMode::kJson);  // no Accept header at all
  EXPECT_EQ(ChooseResponseMode("*/*"), ResponseMode::kJson);
  EXPECT_EQ(ChooseResponseMode("application/*"), ResponseMode::kJson);
  EXPECT_EQ(ChooseResponseMode("text/*"), ResponseMode::kEventStream);
  EXPECT_EQ(ChooseResponseMode("text/event-stream, */*"), ResponseMode::kEventStream);
}

TEST(ChooseResponseMode, QValuesDecide) {
  EXPECT_EQ(ChooseResponseMode("application/json;q=1, text/event-stream;q=0.5"),
            ResponseMode::kJson);
  EXPECT_EQ(ChooseResponseMode("application/json;q=0.2, text/event-stream"),
            ResponseMode::kEventStream);
  EXPECT_EQ(ChooseResponseMode("text/event-stream;q=0, application/json"), ResponseMode::kJson);
  EXPECT_EQ(ChooseResponseMode("*/*, application/json;q=0"), ResponseMode::kEventStream);
  EXPECT_EQ(ChooseResponseMode("application/json ; Q=0.000"), ResponseMode::kNotAcceptable);
}

TEST(ChooseResponseMode, TheMostSpecificRangeWins) {
  // text/event-stream is refused explicitly even though text/* allows it.
  EXPECT_EQ(ChooseResponseMode("text/*, text/event-stream;q=0"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("*/*;q=0, application/json"), ResponseMode::kJson);
}

TEST(ChooseResponseMode, NeitherIsNotAcceptable) {
  EXPECT_EQ(ChooseResponseMode("text/plain"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("text/html, image/*"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("*/*;q=0"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("application/jsonx"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("garbage"), ResponseMode::kNotAcceptable);
}

TEST(ChooseResponseMode, MalformedQRefusesTheRange) {
  EXPECT_EQ(ChooseResponseMode("application/json;q=abc"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("application/json;q=2"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("application/json;q=1.5"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("application/json;q=0.12345"), ResponseMode::kNotAcceptable);
  EXPECT_EQ(ChooseResponseMode("application/json;q=1.000"), ResponseMode::kJson);
}

// ---- ConstantTimeEquals and RequestToken

TEST(ConstantTimeEquals, EqualOnlyWhenIdentical) {
  EXPECT_TRUE(ConstantTimeEquals("s3cret", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3creT", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("x3cret", "s3cret"));
}

TEST(ConstantTimeEquals, LengthMismatchFails) {
  EXPECT_FALSE(ConstantTimeEquals("", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3cre", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret1", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("s3cret\0", 7), "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string(1000, 'a'), "aaaa"));
}

TEST(ConstantTimeEquals, ComparesEveryByteIncludingHighBytes) {
  std::string a(64, '\xff');
  std::string b = a;
  EXPECT_TRUE(ConstantTimeEquals(a, b));
  for (size_t i = 0; i < b.size(); ++i) {
    std::string c = b;
    c[i] = '\xfe';
    EXPECT_FALSE(ConstantTimeEquals(c, b)) << i;
  }
}

TEST(RequestToken, PrefersXMcpAuth) {
  EXPECT_EQ(RequestToken("abc", "Bearer xyz"), std::optional<std::string_view>("abc"));
  EXPECT_EQ(RequestToken(" abc ", std::nullopt), std::optional<std::string_view>("abc"));
}

TEST(RequestToken, ReadsBearerCredentials) {
  EXPECT_EQ(RequestToken(std::nullopt, "Bearer xyz"), std::optional<std::string_view>("xyz"));
  EXPECT_EQ(RequestToken(std::nullopt, "bearer   xyz "), std::optional<std::string_view>("xyz"));
  EXPECT_EQ(RequestToken(std::nullopt, "BEARER\txyz"), std::optional<std::string_view>("xyz"));
}

TEST(RequestToken, IgnoresOtherSchemes) {
  EXPECT_EQ(RequestToken(std::nullopt, std::nullopt), std::nullopt);
  EXPECT_EQ(RequestToken(std::nullopt, "Basic dXNlcjpwYXNz"), std::nullopt);
  EXPECT_EQ(RequestToken(std::nullopt, "Bearerxyz"), std::nullopt);
  EXPECT_EQ(RequestToken(std::nullopt, "Bearer"), std::nullopt);
  EXPECT_EQ(RequestToken(std::nullopt, "xyz"), std::nullopt);
}

// ---- OriginAllowed

TEST(OriginAllowed, LoopbackOriginsOnAnyPort) {
  for (const char* ok :
       {"http://localhost", "http://localhost:5173", "https://localhost:8443", "http://127.0.0.1",
        "http://127.0.0.1:6274", "http://[::1]", "http://[::1]:3000", "HTTP://LOCALHOST:80"}) {
    EXPECT_TRUE(OriginAllowed(ok, {})) << ok;
  }
}

TEST(OriginAllowed, RefusesEverythingElseByDefault) {
  for (const char* bad :
       {"http://evil.example", "http://localhost.evil.example", "http://evil.example:80",
        "http://127.0.0.2", "http://127.0.0.1.nip.io", "http://[::2]", "null", "",
        "file://localhost", "ws://localhost", "localhost", "http://localhost:",
        "http://localhost:abc", "http://localhost:99999", "http://localhost/path",
        "http://user@localhost", "http://[::1", "http://[::1]x", "http://localhost:80@evil"}) {
    EXPECT_FALSE(OriginAllowed(bad, {})) << '"' << bad << '"';
  }
}

TEST(OriginAllowed, ConfiguredOrigins) {
  const std::vector<std::string> extra = {"https://app.example.com", "http://Tools.Local:8080/"};
  EXPECT_TRUE(OriginAllowed("https://app.example.com", extra));
  EXPECT_TRUE(OriginAllowed("https://APP.example.com", extra));
  EXPECT_TRUE(OriginAllowed("http://tools.local:8080", extra));
  EXPECT_FALSE(OriginAllowed("http://app.example.com", extra));  // scheme differs
  EXPECT_FALSE(OriginAllowed("https://app.example.com:444", extra));
  EXPECT_FALSE(OriginAllowed("https://evil.example", extra));
  EXPECT_TRUE(OriginAllowed("http://localhost:3000", extra));  // defaults still apply
}

TEST(OriginAllowed, StarAllowsAll) {
  EXPECT_TRUE(OriginAllowed("https://anything.example", {"*"}));
  EXPECT_TRUE(OriginAllowed("null", {"*"}));
}

// ---- NewSessionId

TEST(NewSessionId, ThirtyTwoHexDigitsAndFresh) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    Result<std::string> id = NewSessionId();
    ASSERT_TRUE(id.ok()) << id.error().message;
    ASSERT_EQ(id->size(), 32u);
    for (char c : *id) {
      EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << *id;
    }
    EXPECT_TRUE(seen.insert(*id).second) << "repeated id " << *id;
  }
}

}  // namespace
}  // namespace mcpexec::mcp::transport
