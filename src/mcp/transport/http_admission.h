// What every HTTP request goes through before it reaches an MCP handler, and the response
// helpers the handlers share.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/connection.h"

namespace mcpexec::mcp::transport {

// MCP's HTTP transports are written in the generic server's terms (Request, Response,
// Admission, ...), which live a layer below, in src/http.
using namespace ::mcpexec::http;  // NOLINT(google-build-using-namespace)

// The codes the TypeScript SDK's server uses for transport-level errors with a JSON-RPC body.
inline constexpr int kTransportError = -32000;
inline constexpr int kSessionNotFound = -32001;

struct AdmissionPolicy {
  std::string auth_token;  // empty: no auth
  std::vector<std::string> allowed_origins;
  size_t max_body_bytes = 0;
  // /metrics needs the token too (MCP_EXEC_METRICS_AUTH=token); false: it is open (none).
  bool metrics_need_token = true;
};

// The check every request goes through on its head alone, before any body is read (and before
// "100 Continue"): /healthz (answered here, without auth), unknown paths (404), the Origin (403),
// the token (401; never for /readyz, and for /metrics as the policy says), the method (405), and the body's framing and size (411, 413, 415). Returns
// kAnswered with `res` filled; kAdmitted to let the request through. A refused request that
// carries a body closes its connection, since the body is never read. (Malformed framing, 400 or
// 501, never gets here: the head parser refuses it.)
Admission Admit(const AdmissionPolicy& policy, const Request& req, Response& res);

// The first value of a request header (names are case-insensitive), nullopt when absent.
std::optional<std::string_view> Header(const Request& req, std::string_view name);
// `body` as application/json with `status`.
void SendJson(Response& res, int status, const nlohmann::json& body);
// A JSON-RPC error object with a null id, as the transport answers requests it refuses.
void SendRpcError(Response& res, int status, int code, const std::string& message);
// Closes the connection after this response (for a request whose body was not read).
void CloseConnection(Response& res);

}  // namespace mcpexec::mcp::transport
