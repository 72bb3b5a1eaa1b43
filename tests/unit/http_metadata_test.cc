#include "mcp/transport/http_metadata.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace mcpexec::mcp::transport {
namespace {

using nlohmann::json;

constexpr char kVersion[] = "2026-07-28";

jsonrpc::Request CallRequest(const json& name) {
  json params = {{"arguments", {{"code", "print(1)"}}},
                 {"_meta", {{"io.modelcontextprotocol/protocolVersion", kVersion}}}};
  if (!name.is_null()) params["name"] = name;
  return {1, "tools/call", std::move(params)};
}

MetadataHeaders CallHeaders(std::string_view name) {
  return {kVersion, "tools/call", name};
}

// ---- DecodeHeaderValue

TEST(DecodeHeaderValue, PlainValueIsItself) {
  EXPECT_EQ(DecodeHeaderValue("exec"), "exec");
  EXPECT_EQ(DecodeHeaderValue(""), "");
  // The markers alone, or one of them, are not the sentinel form.
  EXPECT_EQ(DecodeHeaderValue("=?base64?"), "=?base64?");
  EXPECT_EQ(DecodeHeaderValue("?="), "?=");
}

TEST(DecodeHeaderValue, SentinelFormIsDecoded) {
  // The specification's examples.
  EXPECT_EQ(DecodeHeaderValue("=?base64?SGVsbG8sIOS4lueVjA==?="), "Hello, \xe4\xb8\x96\xe7\x95\x8c");
  EXPECT_EQ(DecodeHeaderValue("=?base64?IHBhZGRlZCA=?="), " padded ");
  EXPECT_EQ(DecodeHeaderValue("=?base64?bGluZTEKbGluZTI=?="), "line1\nline2");
  EXPECT_EQ(DecodeHeaderValue("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="), "=?base64?literal?=");
  EXPECT_EQ(DecodeHeaderValue("=?base64?" "?="), "");  // split: "??=" would be a trigraph
}

TEST(DecodeHeaderValue, MarkersAreCaseSensitive) {
  EXPECT_EQ(DecodeHeaderValue("=?BASE64?ZXhlYw==?="), "=?BASE64?ZXhlYw==?=");
}

TEST(DecodeHeaderValue, SentinelAroundNonBase64IsRefused) {
  EXPECT_EQ(DecodeHeaderValue("=?base64?not base64!?="), std::nullopt);
  EXPECT_EQ(DecodeHeaderValue("=?base64?ZXhlYw?="), std::nullopt);  // unpadded
}

// ---- MetadataMismatch

TEST(MetadataMismatch, MatchingHeadersPass) {
  EXPECT_EQ(MetadataMismatch(CallHeaders("exec"), CallRequest("exec")), std::nullopt);
  const jsonrpc::Request list{2, "tools/list",
                              {{"_meta", {{"io.modelcontextprotocol/protocolVersion", kVersion}}}}};
  EXPECT_EQ(MetadataMismatch({kVersion, "tools/list", std::nullopt}, list), std::nullopt);
}

TEST(MetadataMismatch, EncodedNameIsComparedDecoded) {
  // "exéc" is not header-safe, so the client sends it encoded.
  EXPECT_EQ(MetadataMismatch(CallHeaders("=?base64?ZXjDqWM=?="), CallRequest("ex\xc3\xa9" "c")),
            std::nullopt);
  EXPECT_NE(MetadataMismatch(CallHeaders("=?base64?ZXjDqWM=?="), CallRequest("exec")),
            std::nullopt);
  const auto bad = MetadataMismatch(CallHeaders("=?base64?***?="), CallRequest("exec"));
  ASSERT_TRUE(bad.has_value());
  EXPECT_NE(bad->find("not valid base64"), std::string::npos) << *bad;
}

TEST(MetadataMismatch, VersionHeaderMustEqualTheBodys) {
  MetadataHeaders headers = CallHeaders("exec");
  headers.protocol_version = std::nullopt;
  auto why = MetadataMismatch(headers, CallRequest("exec"));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("MCP-Protocol-Version header is required"), std::string::npos) << *why;

  headers.protocol_version = "2026-07-29";
  why = MetadataMismatch(headers, CallRequest("exec"));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("'2026-07-29' does not match body value '2026-07-28'"), std::string::npos)
      << *why;

  jsonrpc::Request no_meta = CallRequest("exec");
  no_meta.params.erase("_meta");
  EXPECT_NE(MetadataMismatch(CallHeaders("exec"), no_meta), std::nullopt);
  jsonrpc::Request number = CallRequest("exec");
  number.params["_meta"]["io.modelcontextprotocol/protocolVersion"] = 20260728;
  EXPECT_NE(MetadataMismatch(CallHeaders("exec"), number), std::nullopt);
}

TEST(MetadataMismatch, MethodHeaderIsRequiredAndMustEqualTheMethod) {
  MetadataHeaders headers = CallHeaders("exec");
  headers.method = std::nullopt;
  auto why = MetadataMismatch(headers, CallRequest("exec"));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("Mcp-Method header is required"), std::string::npos) << *why;
  headers.method = "tools/list";
  EXPECT_NE(MetadataMismatch(headers, CallRequest("exec")), std::nullopt);
  headers.method = "Tools/Call";  // values are case-sensitive
  EXPECT_NE(MetadataMismatch(headers, CallRequest("exec")), std::nullopt);
}

TEST(MetadataMismatch, NameHeaderIsRequiredOnToolsCallAndMustEqualTheName) {
  auto why = MetadataMismatch({kVersion, "tools/call", std::nullopt}, CallRequest("exec"));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("Mcp-Name header is required"), std::string::npos) << *why;
  why = MetadataMismatch(CallHeaders("exec2"), CallRequest("exec"));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("'exec2' does not match body value 'exec'"), std::string::npos) << *why;
  // A body without a name is the core's to refuse (invalid params), unless a header names one.
  EXPECT_EQ(MetadataMismatch({kVersion, "tools/call", std::nullopt}, CallRequest(nullptr)),
            std::nullopt);
  EXPECT_NE(MetadataMismatch(CallHeaders("exec"), CallRequest(nullptr)), std::nullopt);
}

TEST(MetadataMismatch, ResourcesReadMirrorsTheUri) {
  const jsonrpc::Request read{
      3, "resources/read",
      {{"uri", "file:///a"}, {"_meta", {{"io.modelcontextprotocol/protocolVersion", kVersion}}}}};
  EXPECT_EQ(MetadataMismatch({kVersion, "resources/read", "file:///a"}, read), std::nullopt);
  EXPECT_NE(MetadataMismatch({kVersion, "resources/read", "file:///b"}, read), std::nullopt);
}

TEST(MetadataMismatch, TheTasksMethodsMirrorTheTaskId) {
  for (const char* method : {"tasks/get", "tasks/update", "tasks/cancel"}) {
    const jsonrpc::Request request{
        4, method,
        {{"taskId", "abc"}, {"_meta", {{"io.modelcontextprotocol/protocolVersion", kVersion}}}}};
    EXPECT_EQ(MetadataMismatch({kVersion, method, "abc"}, request), std::nullopt) << method;
    EXPECT_NE(MetadataMismatch({kVersion, method, "abd"}, request), std::nullopt) << method;
    EXPECT_NE(MetadataMismatch({kVersion, method, std::nullopt}, request), std::nullopt) << method;
  }
}

TEST(MetadataMismatch, LongValuesAreShortenedInTheMessage) {
  const std::string name(10000, 'n');
  const auto why = MetadataMismatch(CallHeaders("exec"), CallRequest(name));
  ASSERT_TRUE(why.has_value());
  EXPECT_LT(why->size(), 300u) << *why;
}

// ---- VersionMismatch in the handshake era

TEST(VersionMismatch, HandshakeEraBodiesNeedNotNameARevision) {
  const jsonrpc::Request ping{1, "ping", json::object()};
  EXPECT_EQ(VersionMismatch(std::nullopt, ping, false), std::nullopt);
  EXPECT_EQ(VersionMismatch("2025-11-25", ping, false), std::nullopt);
  EXPECT_NE(VersionMismatch("2025-11-25", ping, true), std::nullopt);
}

TEST(VersionMismatch, BodyNamingARevisionNeedsTheSameHeader) {
  const jsonrpc::Request call = CallRequest("exec");
  EXPECT_NE(VersionMismatch(std::nullopt, call, false), std::nullopt);
  EXPECT_NE(VersionMismatch("2025-11-25", call, false), std::nullopt);
  EXPECT_EQ(VersionMismatch(kVersion, call, false), std::nullopt);
}

// ---- StatelessReplyStatus

TEST(StatelessReplyStatus, ErrorCodesTheRevisionGivesAStatus) {
  auto error = [](int code) {
    return json{{"jsonrpc", "2.0"}, {"id", 1}, {"error", {{"code", code}, {"message", "m"}}}}
        .dump();
  };
  EXPECT_EQ(StatelessReplyStatus(error(-32601)), 404);
  EXPECT_EQ(StatelessReplyStatus(error(-32020)), 400);
  EXPECT_EQ(StatelessReplyStatus(error(-32021)), 400);
  EXPECT_EQ(StatelessReplyStatus(error(-32022)), 400);
  EXPECT_EQ(StatelessReplyStatus(error(-32602)), 400);
  EXPECT_EQ(StatelessReplyStatus(error(-32603)), 200);
  EXPECT_EQ(StatelessReplyStatus(R"({"jsonrpc":"2.0","id":1,"result":{}})"), 200);
  EXPECT_EQ(StatelessReplyStatus("not json"), 200);
  EXPECT_EQ(StatelessReplyStatus(R"({"error":{"code":"-32601"}})"), 200);
}

}  // namespace
}  // namespace mcpexec::mcp::transport
