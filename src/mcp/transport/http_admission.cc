#include "mcp/transport/http_admission.h"

#include <cstdint>

#include "jsonrpc/message.h"
#include "log/log.h"
#include "mcp/transport/http_checks.h"
#include "mcp/transport/http_connection.h"

namespace mcpexec::mcp::http {
namespace {

using httplib::Request;
using httplib::Response;
using nlohmann::json;

bool HasBody(const Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  auto length = Header(req, "Content-Length");
  return length && *length != "0";
}

std::optional<uint64_t> ContentLength(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

struct Route {
  std::string_view path;
  std::string_view allow;  // the Allow header of a 405
};
constexpr Route kRoutes[] = {
    {"/mcp", "GET, POST, DELETE"},
    {"/sse", "GET"},
    {"/messages", "POST"},
};

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

std::optional<std::string_view> Header(const Request& req, const char* name) {
  auto it = req.headers.find(name);
  if (it == req.headers.end()) return std::nullopt;
  return std::string_view(it->second);
}

void SendJson(Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(jsonrpc::Serialize(body), "application/json");
}

void SendRpcError(Response& res, int status, int code, const std::string& message) {
  SendJson(res, status, jsonrpc::MakeError(nullptr, code, message));
}

void CloseConnection(Response& res) {
  res.set_header("Connection", "close");
  ConnectionServer::CloseAfterResponse();
}

httplib::Server::HandlerResponse Admit(const AdmissionPolicy& policy, const Request& req,
                                       Response& res) {
  using HR = httplib::Server::HandlerResponse;
  const bool has_body = HasBody(req);
  auto reject = [&](int status, const json& body) {
    SendJson(res, status, body);
    if (has_body) CloseConnection(res);
    return HR::Handled;
  };
  if (req.path == "/healthz") {
    if (req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      return reject(405, {{"error", "method not allowed"}});
    }
    res.status = 200;
    res.set_content("ok", "text/plain");
    if (has_body) CloseConnection(res);
    return HR::Handled;
  }
  const Route* route = FindRoute(req.path);
  if (route == nullptr) return reject(404, {{"error", "not found"}});

  if (auto origin = Header(req, "Origin");
      origin && !OriginAllowed(*origin, policy.allowed_origins)) {
    log::Warn("request from a foreign origin refused",
              {{"origin", std::string(*origin)}, {"path", req.path}, {"remote", req.remote_addr}});
    return reject(403, {{"error", "origin not allowed"}});
  }
  if (!policy.auth_token.empty()) {
    const auto token = RequestToken(Header(req, "X-MCP-AUTH"), Header(req, "Authorization"));
    if (!token || !ConstantTimeEquals(*token, policy.auth_token)) {
      res.set_header("WWW-Authenticate", "Bearer");
      return reject(401, {{"error", "unauthorized"}});
    }
  }
  if (!MethodAllowed(*route, req.method)) {
    res.set_header("Allow", std::string(route->allow));
    return reject(405, {{"error", "method not allowed"}});
  }
  if (req.method != "POST") {
    if (has_body) return reject(400, {{"error", "this request takes no body"}});
    return HR::Unhandled;
  }
  if (auto te = Header(req, "Transfer-Encoding")) {
    if (*te != "chunked") return reject(501, {{"error", "unsupported transfer encoding"}});
  } else if (auto length = Header(req, "Content-Length")) {
    const std::optional<uint64_t> n = ContentLength(*length);
    if (!n) return reject(400, {{"error", "invalid Content-Length"}});
    if (*n > policy.max_body_bytes) {
      SendRpcError(res, 413, kTransportError,
                   "Payload Too Large: the body is larger than " +
                       std::to_string(policy.max_body_bytes) + " bytes");
      CloseConnection(res);
      return HR::Handled;
    }
  } else {
    return reject(411, {{"error", "Content-Length required"}});
  }
  // httplib would hand a multipart body to its form parser instead of to us.
  if (auto type = Header(req, "Content-Type"); type && type->rfind("multipart/", 0) == 0) {
    return reject(415, {{"error", "the body must be one JSON-RPC message"}});
  }
  return HR::Unhandled;
}

}  // namespace mcpexec::mcp::http
