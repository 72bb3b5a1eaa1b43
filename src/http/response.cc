#include "http/response.h"

namespace mcpexec::http {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool SafeForHeader(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

struct Reason {
  int status;
  std::string_view text;
};
constexpr Reason kReasons[] = {
    {100, "Continue"},
    {200, "OK"},
    {202, "Accepted"},
    {204, "No Content"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {411, "Length Required"},
    {413, "Payload Too Large"},
    {415, "Unsupported Media Type"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {503, "Service Unavailable"},
    {505, "HTTP Version Not Supported"},
};

}  // namespace

void Response::SetHeader(std::string_view name, std::string value) {
  for (auto& [n, v] : headers) {
    if (SameName(n, name)) {
      v = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::string(name), std::move(value));
}

const std::string* Response::FindHeader(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (SameName(n, name)) return &v;
  }
  return nullptr;
}

void Response::SetContent(std::string content, std::string_view content_type) {
  body = std::move(content);
  SetHeader("Content-Type", std::string(content_type));
}

void Response::SetStream(std::string_view content_type, std::function<bool(StreamSink&)> provider,
                         std::function<void(bool done)> ended) {
  body.clear();
  SetHeader("Content-Type", std::string(content_type));
  stream = std::move(provider);
  stream_ended = std::move(ended);
}

std::string_view StatusReason(int status) {
  for (const Reason& r : kReasons) {
    if (r.status == status) return r.text;
  }
  return "Unknown";
}

std::string SerializeResponseHead(const Response& res, const ResponseHeadOptions& options) {
  std::string out;
  out.reserve(256);
  out.append("HTTP/1.1 ")
      .append(std::to_string(res.status))
      .append(" ")
      .append(StatusReason(res.status))
      .append("\r\n");
  for (const auto& [name, value] : res.headers) {
    if (name.empty() || !SafeForHeader(name) || !SafeForHeader(value)) continue;
    out.append(name).append(": ").append(value).append("\r\n");
  }
  switch (options.framing) {
    case ResponseFraming::kContentLength:
      out.append("Content-Length: ").append(std::to_string(options.content_length)).append("\r\n");
      break;
    case ResponseFraming::kChunked:
      out.append("Transfer-Encoding: chunked\r\n");
      break;
    case ResponseFraming::kUntilClose:
      break;
  }
  if (!options.keep_alive) {
    out.append("Connection: close\r\n");
  } else {
    if (options.request_minor_version == 0) out.append("Connection: keep-alive\r\n");
    if (options.keep_alive_timeout_s > 0) {
      out.append("Keep-Alive: timeout=")
          .append(std::to_string(options.keep_alive_timeout_s))
          .append("\r\n");
    }
  }
  out.append("\r\n");
  return out;
}

std::string ClosingErrorResponse(int status, std::string_view reason, int retry_after_s) {
  Response res;
  res.status = status;
  res.SetContent("{\"error\":\"" + std::string(reason) + "\"}", "application/json");
  if (retry_after_s > 0) res.SetHeader("Retry-After", std::to_string(retry_after_s));
  ResponseHeadOptions options;
  options.content_length = res.body.size();
  options.keep_alive = false;
  return SerializeResponseHead(res, options) + res.body;
}

std::string ChunkHeader(size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  char digits[2 * sizeof(size_t)];
  size_t n = 0;
  do {
    digits[n++] = kHex[size & 0xF];
    size >>= 4;
  } while (size != 0);
  std::string out;
  out.reserve(n + 2);
  while (n > 0) out.push_back(digits[--n]);
  out.append("\r\n");
  return out;
}

}  // namespace mcpexec::http
