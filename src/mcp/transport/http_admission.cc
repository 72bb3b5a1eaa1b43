#include "mcp/transport/http_admission.h"

#include <cstdint>

#include "http/connection.h"
#include "jsonrpc/message.h"
#include "log/log.h"
#include "mcp/transport/http_checks.h"

namespace mcpexec::mcp::transport {
namespace {

using nlohmann::json;

enum class Auth {
  kToken,    // the token, when one is set
  kMetrics,  // the token, when one is set and AdmissionPolicy::metrics_need_token
  kNone,     // a probe's endpoint: it shows nobody's data
};

struct Route {
  std::string_view path;
  std::string_view allow;  // the Allow header of a 405
  Auth auth = Auth::kToken;
};
constexpr Route kRoutes[] = {
    {"/mcp", "GET, POST, DELETE"},
    {"/sse", "GET"},
    {"/messages", "POST"},
    {"/metrics", "GET, HEAD", Auth::kMetrics},
    {"/readyz", "GET, HEAD", Auth::kNone},
};

bool NeedsToken(const AdmissionPolicy& policy, const Route& route) {
  if (policy.auth_token.empty()) return false;
  switch (route.auth) {
    case Auth::kToken:
      return true;
    case Auth::kMetrics:
      return policy.metrics_need_token;
    case Auth::kNone:
      return false;
  }
  return true;
}

const Route* FindRoute(std::string_view path) {
  for (const Route& r : kRoutes) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

bool MethodAllowed(const Route& route, std::string_view method) {
  std::string_view allow = route.allow;
  while (!allow.empty()) {
    const size_t comma = allow.find(',');
    if (allow.substr(0, comma) == method) return true;
    if (comma == std::string_view::npos) break;
    allow.remove_prefix(comma + 2);
  }
  return false;
}

}  // namespace

std::optional<std::string_view> Header(const Request& req, std::string_view name) {
  return req.head.Header(name);
}

void SendJson(Response& res, int status, const json& body) {
  res.status = status;
  res.SetContent(jsonrpc::Serialize(body), "application/json");
}

void SendRpcError(Response& res, int status, int code, const std::string& message) {
  SendJson(res, status, jsonrpc::MakeError(nullptr, code, message));
}

void CloseConnection(Response& res) { res.close = true; }

Admission Admit(const AdmissionPolicy& policy, const Request& req, Response& res) {
  const RequestHead& head = req.head;
  const bool has_body = head.HasBody();
  auto reject = [&](int status, const json& body) {
    SendJson(res, status, body);
    if (has_body) CloseConnection(res);
    return Admission::kAnswered;
  };
  if (head.path == "/healthz") {
    if (head.method != "GET" && head.method != "HEAD") {
      res.SetHeader("Allow", "GET, HEAD");
      return reject(405, {{"error", "method not allowed"}});
    }
    res.status = 200;
    res.SetContent("ok", "text/plain");
    if (has_body) CloseConnection(res);
    return Admission::kAnswered;
  }
  const Route* route = FindRoute(head.path);
  if (route == nullptr) return reject(404, {{"error", "not found"}});

  // A refused origin or token closes the connection: a client without the right ones gets
  // nothing from keeping it open.
  if (auto origin = head.Header("Origin");
      origin && !OriginAllowed(*origin, policy.allowed_origins)) {
    static log::Throttle throttle;
    if (auto held = throttle.Allow()) {
      log::Warn("request from a foreign origin refused", {{"origin", std::string(*origin)},
                                                          {"path", head.path},
                                                          {"remote", req.remote_addr},
                                                          {"held_back", *held}});
    }
    CloseConnection(res);
    return reject(403, {{"error", "origin not allowed"}});
  }
  if (NeedsToken(policy, *route)) {
    const auto token = RequestToken(head.Header("X-MCP-AUTH"), head.Header("Authorization"));
    if (!token || !ConstantTimeEquals(*token, policy.auth_token)) {
      res.SetHeader("WWW-Authenticate", "Bearer");
      CloseConnection(res);
      return reject(401, {{"error", "unauthorized"}});
    }
  }
  if (!MethodAllowed(*route, head.method)) {
    res.SetHeader("Allow", std::string(route->allow));
    return reject(405, {{"error", "method not allowed"}});
  }
  if (head.method != "POST") {
    if (has_body) return reject(400, {{"error", "this request takes no body"}});
    return Admission::kAdmitted;
  }
  // The parser has checked the framing (one Content-Length of digits, or exactly chunked); a
  // chunked body's size is checked while it is read.
  if (head.framing == BodyFraming::kNone) {
    return reject(411, {{"error", "Content-Length required"}});
  }
  if (head.framing == BodyFraming::kContentLength && head.content_length > policy.max_body_bytes) {
    SendRpcError(res, 413, kTransportError,
                 "Payload Too Large: the body is larger than " +
                     std::to_string(policy.max_body_bytes) + " bytes");
    CloseConnection(res);
    return Admission::kAnswered;
  }
  // The body must be one JSON-RPC message, not a form.
  if (auto type = head.Header("Content-Type"); type && type->rfind("multipart/", 0) == 0) {
    return reject(415, {{"error", "the body must be one JSON-RPC message"}});
  }
  return Admission::kAdmitted;
}

}  // namespace mcpexec::mcp::transport
