// The request metadata headers of Streamable HTTP in the stateless revision (2026-07-28):
// MCP-Protocol-Version, Mcp-Method and Mcp-Name mirror fields of the body so that proxies can
// route on them, and a server MUST refuse a request whose headers and body disagree (400 with
// HeaderMismatch, -32020), since a proxy and the server would otherwise act on different values.
// Pure checks, no sockets.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "jsonrpc/message.h"

namespace mcpexec::mcp::transport {

// The headers of one POST that mirror its body; nullopt for an absent header.
struct MetadataHeaders {
  std::optional<std::string_view> protocol_version;  // MCP-Protocol-Version
  std::optional<std::string_view> method;            // Mcp-Method
  std::optional<std::string_view> name;              // Mcp-Name
};

// An Mcp-Name (or Mcp-Param-*) value as the client meant it: the bytes of "=?base64?…?=",
// decoded, or the value itself. nullopt when the sentinel wraps text that is not base64.
std::optional<std::string> DecodeHeaderValue(std::string_view value);

// Why an MCP-Protocol-Version header (nullopt: absent) does not match the revision `request`
// names in params._meta; nullopt when they match, or when the body names none and
// `body_must_name_one` is false (the handshake era's requests name none).
std::optional<std::string> VersionMismatch(std::optional<std::string_view> header,
                                           const jsonrpc::Request& request,
                                           bool body_must_name_one);

// Why `headers` do not match `request`, as the message of a HeaderMismatch error; nullopt when
// they match. Checked: MCP-Protocol-Version equals params._meta's protocol version; Mcp-Method
// is present and equals the method; on tools/call, resources/read and prompts/get, Mcp-Name is
// present when the body has params.name (params.uri) and equals it after decoding.
std::optional<std::string> MetadataMismatch(const MetadataHeaders& headers,
                                            const jsonrpc::Request& request);

// The HTTP status of a response the server core gave at once to a stateless request: 404 for
// an unknown method (so that a legacy client sees "no such endpoint"), 400 for invalid params
// (a malformed request: a required _meta field missing, an unknown tool), an unsupported
// revision, a header mismatch or a missing client capability, 200 otherwise.
int StatelessReplyStatus(std::string_view serialized_response);

}  // namespace mcpexec::mcp::transport
