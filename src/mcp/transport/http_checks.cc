#include "mcp/transport/http_checks.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "base/random.h"

namespace mcpexec::mcp::transport {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string LowerCopy(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A decimal port 0..65535: digits only, nothing else.
std::optional<int> ParsePort(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  int port = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port > 65535) return std::nullopt;
  return port;
}

bool IsIpv4Literal(const std::string& host) {
  in_addr addr{};
  return inet_pton(AF_INET, host.c_str(), &addr) == 1;
}

bool IsIpv6Literal(const std::string& host) {
  in6_addr addr{};
  return inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

Error Invalid(std::string_view text, const std::string& why) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "listen address \"" + std::string(text) + "\": " + why +
                       " (expected :PORT, IPV4:PORT, [IPV6]:PORT or localhost:PORT)");
}

// q of one media range's parameters: 1 when absent; 0 for a malformed value, so that garbage
// never makes a type acceptable.
double ParseQ(std::string_view params) {
  while (!params.empty()) {
    const size_t semi = params.find(';');
    std::string_view param = Trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos || !EqualsIgnoreCase(Trim(param.substr(0, eq)), "q")) {
      continue;
    }
    std::string_view value = Trim(param.substr(eq + 1));
    // RFC 9110: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
    if (value.empty() || (value[0] != '0' && value[0] != '1')) return 0;
    double q = value[0] - '0';
    if (value.size() > 1) {
      if (value[1] != '.' || value.size() > 5) return 0;
      double scale = 0.1;
      for (char c : value.substr(2)) {
        if (c < '0' || c > '9') return 0;
        q += (c - '0') * scale;
        scale /= 10;
      }
    }
    return q > 1 ? 0 : q;
  }
  return 1;
}

// For one concrete type: the q of the most specific matching range, -1 when none matches.
struct TypeMatch {
  int specificity = -1;  // 0 = */*, 1 = type/*, 2 = type/subtype
  double q = 0;
  void Offer(int spec, double value) {
    if (spec > specificity) {
      specificity = spec;
      q = value;
    }
  }
};

void MatchRange(std::string_view range, std::string_view type, std::string_view subtype, double q,
                TypeMatch& match) {
  const size_t slash = range.find('/');
  if (slash == std::string_view::npos) return;
  std::string_view r_type = Trim(range.substr(0, slash));
  std::string_view r_sub = Trim(range.substr(slash + 1));
  if (r_type == "*" && r_sub == "*") {
    match.Offer(0, q);
  } else if (EqualsIgnoreCase(r_type, type) && r_sub == "*") {
    match.Offer(1, q);
  } else if (EqualsIgnoreCase(r_type, type) && EqualsIgnoreCase(r_sub, subtype)) {
    match.Offer(2, q);
  }
}

bool IsLoopbackHost(std::string_view host) {
  return EqualsIgnoreCase(host, "localhost") || host == "127.0.0.1" || host == "[::1]";
}

// Normalized form of an origin for comparing with configured entries.
std::string NormalizeOrigin(std::string_view origin) {
  origin = Trim(origin);
  while (!origin.empty() && origin.back() == '/') origin.remove_suffix(1);
  return LowerCopy(origin);
}

}  // namespace

bool ListenAddress::IsLoopback() const {
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

std::string ListenAddress::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  std::string_view host;
  std::string_view port_text;
  bool bracketed = false;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return Invalid(text, "unclosed '['");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return Invalid(text, "missing :PORT after ']'");
    port_text = rest.substr(1);
    bracketed = true;
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return Invalid(text, "missing :PORT");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return Invalid(text, "an IPv6 address needs brackets");
    }
  }
  const std::optional<int> port = ParsePort(port_text);
  if (!port) return Invalid(text, "the port must be a number from 0 to 65535");

  ListenAddress address;
  address.port = *port;
  const std::string h(host);
  if (bracketed) {
    if (!IsIpv6Literal(h)) return Invalid(text, "\"" + h + "\" is not an IPv6 address");
    address.host = h;
  } else if (h.empty()) {
    address.host = "0.0.0.0";
  } else if (EqualsIgnoreCase(h, "localhost")) {
    address.host = "127.0.0.1";
  } else if (IsIpv4Literal(h)) {
    address.host = h;
  } else {
    return Invalid(text, "the host must be an IP address or localhost, not \"" + h + "\"");
  }
  return address;
}

ResponseMode ChooseResponseMode(std::string_view accept_header, bool stream_only) {
  if (Trim(accept_header).empty()) accept_header = "*/*";
  TypeMatch json;
  TypeMatch sse;
  while (!accept_header.empty()) {
    const size_t comma = accept_header.find(',');
    std::string_view item = accept_header.substr(0, comma);
    accept_header =
        comma == std::string_view::npos ? std::string_view() : accept_header.substr(comma + 1);
    const size_t semi = item.find(';');
    std::string_view range = Trim(item.substr(0, semi));
    const double q = semi == std::string_view::npos ? 1.0 : ParseQ(item.substr(semi + 1));
    MatchRange(range, "application", "json", q, json);
    MatchRange(range, "text", "event-stream", q, sse);
  }
  const double q_json = json.specificity >= 0 ? json.q : 0;
  const double q_sse = sse.specificity >= 0 ? sse.q : 0;
  if (q_json <= 0 && q_sse <= 0) return ResponseMode::kNotAcceptable;
  if (stream_only && q_sse > 0) return ResponseMode::kEventStream;
  if (q_sse > q_json) return ResponseMode::kEventStream;
  if (q_json > q_sse) return ResponseMode::kJson;
  return sse.specificity == 2 ? ResponseMode::kEventStream : ResponseMode::kJson;
}

bool ConstantTimeEquals(std::string_view provided, std::string_view expected) {
  // The loop runs expected.size() times whatever the input. Bytes past the end of `provided` are
  // compared as 0 through a mask rather than a branch, and the length difference is folded into
  // the result, so a wrong length fails without ending early.
  const size_t n = provided.size();
  volatile uint64_t diff = static_cast<uint64_t>(n ^ expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const uint64_t in_range = static_cast<uint64_t>(i < n);  // 1 or 0, no branch
    const size_t index = static_cast<size_t>(in_range) * i;  // stays in bounds when n > 0
    const unsigned char p =
        n == 0 ? 0
               : static_cast<unsigned char>(static_cast<unsigned char>(provided[index]) &
                                            static_cast<unsigned char>(0 - in_range));
    diff = diff | static_cast<uint64_t>(p ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

std::optional<std::string_view> RequestToken(std::optional<std::string_view> x_mcp_auth,
                                             std::optional<std::string_view> authorization) {
  if (x_mcp_auth) return Trim(*x_mcp_auth);
  if (!authorization) return std::nullopt;
  std::string_view value = Trim(*authorization);
  constexpr std::string_view kBearer = "bearer";
  if (value.size() <= kBearer.size() ||
      !EqualsIgnoreCase(value.substr(0, kBearer.size()), kBearer) ||
      (value[kBearer.size()] != ' ' && value[kBearer.size()] != '\t')) {
    return std::nullopt;
  }
  return Trim(value.substr(kBearer.size()));
}

bool OriginAllowed(std::string_view origin, const std::vector<std::string>& extra) {
  const std::string normalized = NormalizeOrigin(origin);
  for (const std::string& entry : extra) {
    if (entry == "*" || NormalizeOrigin(entry) == normalized) return true;
  }
  // scheme "://" host [ ":" port ], nothing else (an origin has no path, query or userinfo).
  std::string_view rest = normalized;
  if (rest.rfind("http://", 0) == 0) {
    rest.remove_prefix(7);
  } else if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
  } else {
    return false;
  }
  std::string_view host = rest;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return false;
    host = rest.substr(0, close + 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return false;
      port = after.substr(1);
      if (port.empty()) return false;
    }
  } else {
    const size_t colon = rest.find(':');
    if (colon != std::string_view::npos) {
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
      if (port.empty()) return false;
    }
  }
  if (!port.empty() && !ParsePort(port)) return false;
  return IsLoopbackHost(host);
}

Result<std::string> NewSessionId() { return RandomHex(16); }

}  // namespace mcpexec::mcp::transport
