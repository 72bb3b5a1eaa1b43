#include "mcp/transport/http_metadata.h"

#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "mcp/protocol.h"

namespace mcpexec::mcp::transport {
namespace {

using nlohmann::json;

constexpr std::string_view kSentinelStart = "=?base64?";
constexpr std::string_view kSentinelEnd = "?=";

// A body value quoted for an error message, short enough for a log line.
std::string Quote(std::string_view value) {
  constexpr size_t kMax = 80;
  std::string out = "'";
  out += value.substr(0, kMax);
  if (value.size() > kMax) out += "...";
  return out + "'";
}

// The body field Mcp-Name mirrors for `method`, or nullptr when the method has none.
const char* NameField(std::string_view method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") {
    return "taskId";
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> DecodeHeaderValue(std::string_view value) {
  if (value.size() < kSentinelStart.size() + kSentinelEnd.size() ||
      !value.starts_with(kSentinelStart) || !value.ends_with(kSentinelEnd)) {
    return std::string(value);
  }
  value.remove_prefix(kSentinelStart.size());
  value.remove_suffix(kSentinelEnd.size());
  return Base64Decode(value);
}

std::optional<std::string> VersionMismatch(std::optional<std::string_view> header,
                                           const jsonrpc::Request& request,
                                           bool body_must_name_one) {
  const json* meta_version = MetaField(request.params, kMetaProtocolVersion);
  if (meta_version == nullptr && !body_must_name_one) return std::nullopt;
  if (!header) return "the MCP-Protocol-Version header is required";
  if (meta_version == nullptr || !meta_version->is_string()) {
    return "MCP-Protocol-Version header value " + Quote(*header) +
           " has no string to match in params._meta \"" + std::string(kMetaProtocolVersion) +
           "\"";
  }
  if (*header != meta_version->get_ref<const std::string&>()) {
    return "MCP-Protocol-Version header value " + Quote(*header) + " does not match body value " +
           Quote(meta_version->get_ref<const std::string&>());
  }
  return std::nullopt;
}

std::optional<std::string> MetadataMismatch(const MetadataHeaders& headers,
                                            const jsonrpc::Request& request) {
  if (auto why = VersionMismatch(headers.protocol_version, request, true)) return why;
  if (!headers.method) return "the Mcp-Method header is required";
  if (*headers.method != request.method) {
    return "Mcp-Method header value " + Quote(*headers.method) + " does not match body value " +
           Quote(request.method);
  }

  const char* field = NameField(request.method);
  if (field == nullptr) return std::nullopt;
  const json* body_name = nullptr;
  if (request.params.is_object()) {
    auto it = request.params.find(field);
    if (it != request.params.end() && it->is_string()) body_name = &*it;
  }
  // No name in the body: the server core answers that with invalid params; a header naming
  // something the body does not is still a mismatch.
  if (body_name == nullptr) {
    if (!headers.name) return std::nullopt;
    return "Mcp-Name header value " + Quote(*headers.name) + " has no string params." +
           field + " to match";
  }
  if (!headers.name) return "the Mcp-Name header is required for " + request.method;
  const std::optional<std::string> name = DecodeHeaderValue(*headers.name);
  if (!name) return "Mcp-Name header value " + Quote(*headers.name) + " is not valid base64";
  if (*name != body_name->get_ref<const std::string&>()) {
    return "Mcp-Name header value " + Quote(*name) + " does not match body value " +
           Quote(body_name->get_ref<const std::string&>());
  }
  return std::nullopt;
}

int StatelessReplyStatus(std::string_view serialized_response) {
  const json message = json::parse(serialized_response, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object()) return 200;
  auto error = message.find("error");
  if (error == message.end() || !error->is_object()) return 200;
  const json code = error->value("code", json());
  if (!code.is_number_integer()) return 200;
  switch (code.get<int>()) {
    case jsonrpc::kMethodNotFound:
      return 404;
    case jsonrpc::kInvalidParams:  // a malformed request, a missing _meta field among them
    case kHeaderMismatch:
    case kMissingRequiredClientCapability:
    case kUnsupportedProtocolVersion:
      return 400;
    default:
      return 200;
  }
}

}  // namespace mcpexec::mcp::transport
