#include "jsonrpc/message.h"

#include <gtest/gtest.h>

namespace mcpexec::jsonrpc {
namespace {

using nlohmann::json;

json ErrorOf(std::string_view text) {
  Incoming in = Parse(text);
  EXPECT_TRUE(std::holds_alternative<Invalid>(in)) << text;
  if (!std::holds_alternative<Invalid>(in)) return json();
  return std::get<Invalid>(in).error_response;
}

TEST(JsonRpcParse, RequestWithStringOrIntegerId) {
  auto r = std::get<Request>(Parse(R"({"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}})"));
  EXPECT_EQ(r.id, "a");
  EXPECT_EQ(r.method, "m");
  EXPECT_EQ(r.params["x"], 1);
  auto n = std::get<Request>(Parse(R"({"jsonrpc":"2.0","id":7,"method":"m"})"));
  EXPECT_EQ(n.id, 7);
  EXPECT_TRUE(n.params.is_null());
}

TEST(JsonRpcParse, NotificationHasNoId) {
  auto n = std::get<Notification>(Parse(R"({"jsonrpc":"2.0","method":"notifications/x"})"));
  EXPECT_EQ(n.method, "notifications/x");
}

TEST(JsonRpcParse, ClientResponsesAreRecognized) {
  EXPECT_TRUE(std::holds_alternative<Response>(Parse(R"({"jsonrpc":"2.0","id":1,"result":{}})")));
  EXPECT_TRUE(std::holds_alternative<Response>(
      Parse(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}})")));
}

TEST(JsonRpcParse, MalformedJsonIsAParseErrorWithNullId) {
  json e = ErrorOf("{not json");
  EXPECT_EQ(e["error"]["code"], kParseError);
  EXPECT_TRUE(e["id"].is_null());
  EXPECT_EQ(e["jsonrpc"], "2.0");
  EXPECT_EQ(ErrorOf("")["error"]["code"], kParseError);
  EXPECT_EQ(ErrorOf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} trailing")["error"]["code"],
            kParseError);
}

TEST(JsonRpcParse, InvalidRequestsKeepTheirIdWhenReadable) {
  json e = ErrorOf(R"({"jsonrpc":"1.0","id":5,"method":"m"})");
  EXPECT_EQ(e["error"]["code"], kInvalidRequest);
  EXPECT_EQ(e["id"], 5);
  EXPECT_EQ(ErrorOf(R"({"jsonrpc":"2.0","id":5,"method":3})")["id"], 5);
  EXPECT_EQ(ErrorOf(R"({"jsonrpc":"2.0","id":5,"method":"m","params":3})")["error"]["code"],
            kInvalidRequest);
  EXPECT_EQ(ErrorOf(R"({"jsonrpc":"2.0","id":5})")["error"]["code"], kInvalidRequest);
}

TEST(JsonRpcParse, BadIdsBatchesAndNonObjectsAreInvalid) {
  json e = ErrorOf(R"({"jsonrpc":"2.0","id":{"x":1},"method":"m"})");
  EXPECT_EQ(e["error"]["code"], kInvalidRequest);
  EXPECT_TRUE(e["id"].is_null());
  EXPECT_EQ(ErrorOf(R"({"jsonrpc":"2.0","id":1.5,"method":"m"})")["error"]["code"],
            kInvalidRequest);
  EXPECT_EQ(ErrorOf(R"([{"jsonrpc":"2.0","id":1,"method":"m"}])")["error"]["code"],
            kInvalidRequest);
  EXPECT_EQ(ErrorOf("42")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(ErrorOf("null")["error"]["code"], kInvalidRequest);
}

TEST(JsonRpcBuild, ResultsErrorsAndNotifications) {
  EXPECT_EQ(MakeResult(1, {{"a", 1}}),
            json::parse(R"({"jsonrpc":"2.0","id":1,"result":{"a":1}})"));
  EXPECT_EQ(MakeError("x", kMethodNotFound, "nope", json{{"m", "y"}}),
            json::parse(
                R"({"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope","data":{"m":"y"}}})"));
  EXPECT_EQ(MakeNotification("n", nullptr), json::parse(R"({"jsonrpc":"2.0","method":"n"})"));
  EXPECT_TRUE(IsResponse(MakeResult(1, json::object())));
  EXPECT_FALSE(IsResponse(MakeNotification("n", json::object())));
}

TEST(JsonRpcBuild, SerializeNeverThrowsOnInvalidUtf8) {
  const std::string text = Serialize(MakeResult(1, {{"s", std::string("a\xff")}}));
  EXPECT_NE(text.find("a\xEF\xBF\xBD"), std::string::npos);
}

std::string Nested(int depth, std::string_view open = "[", std::string_view close = "]") {
  std::string inner;
  for (int i = 0; i < depth; ++i) inner += open;
  for (int i = 0; i < depth; ++i) inner += close;
  return R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":)" + inner + "}}";
}

// Fixed bug: 200,000 nested brackets crashed the server (a stack overflow walking the value).
TEST(JsonRpcParse, DeepNestingIsRefusedBeforeParsing) {
  for (const std::string& text : {Nested(200000), Nested(200000, "{\"a\":", "}"),
                                  Nested(200000, "[", "")}) {
    json e = ErrorOf(text);
    EXPECT_EQ(e["error"]["code"], kInvalidRequest);
    EXPECT_NE(e["error"]["message"].get<std::string>().find("nested deeper than 64"),
              std::string::npos);
    EXPECT_TRUE(e["id"].is_null());
  }
}

TEST(JsonRpcParse, NestingUpToTheLimitIsAccepted) {
  // The message object and params take two levels.
  auto r = std::get<Request>(Parse(Nested(kMaxNesting - 2)));
  EXPECT_EQ(r.method, "m");
  ErrorOf(Nested(kMaxNesting - 1));
}

TEST(JsonRpcParse, BracketsInStringsDoNotCountAsNesting) {
  const std::string brackets(1000, '[');
  auto r = std::get<Request>(
      Parse(R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\")" + brackets + R"("}})"));
  EXPECT_EQ(r.params["s"], "\"" + brackets);
}

}  // namespace
}  // namespace mcpexec::jsonrpc
