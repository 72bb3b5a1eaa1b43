// Pure checks of the HTTP transport: the listen address, the Accept header, the auth token, the
// Origin allow-list and session ids. No sockets, so they are unit-tested alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace mcpexec::mcp::transport {

// Where the server listens, from an MCP_EXEC_ADDR value.
struct ListenAddress {
  // What to bind: an IPv4 literal or an IPv6 literal without brackets. "0.0.0.0" for all
  // interfaces; "localhost" is bound as 127.0.0.1 (as Go's net.Listen does), so that a client
  // that dials 127.0.0.1 always reaches it.
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port

  // True when only this machine can connect: 127.0.0.0/8 or ::1.
  bool IsLoopback() const;
  // "127.0.0.1:8080", "[::1]:8080": for logs and messages.
  std::string ToString() const;
};

// Parses ":8080" (all interfaces), "127.0.0.1:8080", "[::1]:8080", "localhost:0" (any free port).
// A host is an IPv4 literal, an IPv6 literal in brackets, or "localhost"; other host names are
// refused (a name could resolve to several addresses, some of them public). kInvalidArgument with
// the reason otherwise.
Result<ListenAddress> ParseListenAddress(std::string_view text);

// How to answer a POSTed request, from the client's Accept header.
enum class ResponseMode {
  kEventStream,    // text/event-stream: progress notifications, then the response
  kJson,           // application/json: the response alone
  kNotAcceptable,  // neither is acceptable: 406
};

// Reads media ranges and q-values (RFC 9110 12.5.1; the most specific range decides a type's q).
// The type with the higher q wins; on a tie text/event-stream wins if the client named it, else
// JSON (a client that sent only "*/*", like curl, gets a plain JSON body). An empty header
// means "*/*". `stream_only`: the answer is an event stream or nothing (subscriptions/listen),
// chosen whenever the header accepts one at all.
ResponseMode ChooseResponseMode(std::string_view accept_header, bool stream_only = false);

// Compares a client's token with the configured one in time that depends only on the configured
// token's length: no early exit on the first difference, no branch on the provided length.
bool ConstantTimeEquals(std::string_view provided, std::string_view expected);

// The token a request carries: the X-MCP-AUTH header, else the credentials of an
// "Authorization: Bearer <token>" header (scheme case-insensitive). nullopt when neither.
std::optional<std::string_view> RequestToken(std::optional<std::string_view> x_mcp_auth,
                                             std::optional<std::string_view> authorization);

// The Origin check against DNS rebinding. Allowed: http(s) origins whose host is localhost,
// 127.0.0.1 or [::1] (any port), and every entry of `extra` (compared case-insensitively,
// trailing '/' ignored; "*" allows every origin). The "null" origin is refused unless listed.
bool OriginAllowed(std::string_view origin, const std::vector<std::string>& extra);

// A fresh session id: 32 lowercase hex digits (128 bits from getrandom), visible ASCII as
// Streamable HTTP requires. kUnavailable if the kernel has no entropy to give.
Result<std::string> NewSessionId();

}  // namespace mcpexec::mcp::transport
