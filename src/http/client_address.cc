#include "http/client_address.h"

#include <arpa/inet.h>
#include <strings.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace mcpexec::http {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// An IPv4 or IPv6 literal as 16 bytes (IPv4 mapped into IPv6).
std::optional<std::array<uint8_t, 16>> ParseAddress(std::string_view text) {
  const std::string s(text);
  std::array<uint8_t, 16> out{};
  in_addr v4{};
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    out[10] = out[11] = 0xff;
    std::memcpy(out.data() + 12, &v4, 4);
    return out;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, 16);
    return out;
  }
  return std::nullopt;
}

// A node of a forwarding header, as a plain address: quotes, IPv6 brackets and a port taken off.
// Empty when it is not an address ("unknown", an obfuscated "_name").
std::string NodeAddress(std::string_view node) {
  node = Trim(node);
  if (node.size() >= 2 && node.front() == '"' && node.back() == '"') {
    node = node.substr(1, node.size() - 2);
  }
  if (!node.empty() && node.front() == '[') {
    const size_t close = node.find(']');
    if (close == std::string_view::npos) return {};
    node = node.substr(1, close - 1);
  } else if (std::count(node.begin(), node.end(), ':') == 1) {
    node = node.substr(0, node.find(':'));  // IPv4 with a port
  }
  return ParseAddress(node) ? std::string(node) : std::string();
}

// Every node of the header's values, in order (left: farthest from us).
std::vector<std::string> ForwardedNodes(const RequestHead& head) {
  std::vector<std::string> nodes;
  bool any_forwarded = false;
  for (const HeaderField& field : head.headers) {
    if (!EqualsIgnoreCase(field.name, "Forwarded")) continue;
    any_forwarded = true;
    std::string_view rest = field.value;
    while (!rest.empty()) {
      const size_t end = rest.find_first_of(",;");
      std::string_view pair = Trim(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      if (pair.size() > 4 && EqualsIgnoreCase(pair.substr(0, 4), "for=")) {
        nodes.push_back(NodeAddress(pair.substr(4)));
      }
    }
  }
  if (any_forwarded) return nodes;
  for (const HeaderField& field : head.headers) {
    if (!EqualsIgnoreCase(field.name, "X-Forwarded-For")) continue;
    std::string_view rest = field.value;
    while (true) {
      const size_t comma = rest.find(',');
      nodes.push_back(NodeAddress(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return nodes;
}

}  // namespace

Result<TrustedProxies> TrustedProxies::Parse(std::string_view text) {
  TrustedProxies proxies;
  while (!Trim(text).empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (entry.empty()) continue;
    const size_t slash = entry.find('/');
    const auto address = ParseAddress(entry.substr(0, slash));
    if (!address) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "'" + std::string(entry) + "' is not an IP address or a CIDR network");
    }
    const bool v4 = entry.substr(0, slash).find(':') == std::string_view::npos;
    Network net{*address, 128};
    if (slash != std::string_view::npos) {
      const std::string_view bits = entry.substr(slash + 1);
      int prefix = 0;
      const bool digits = !bits.empty() && bits.size() <= 3 &&
                          std::all_of(bits.begin(), bits.end(), [](char c) {
                            return c >= '0' && c <= '9';
                          });
      if (digits) prefix = std::stoi(std::string(bits));
      if (!digits || prefix > (v4 ? 32 : 128)) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "'" + std::string(entry) + "' has an invalid prefix length");
      }
      net.prefix = v4 ? prefix + 96 : prefix;
    }
    proxies.networks_.push_back(net);
  }
  return proxies;
}

bool TrustedProxies::Contains(std::string_view address) const {
  const auto bytes = ParseAddress(address);
  if (!bytes) return false;
  for (const Network& net : networks_) {
    int bits = net.prefix;
    bool match = true;
    for (size_t i = 0; i < 16 && bits > 0 && match; ++i, bits -= 8) {
      const uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
      match = ((*bytes)[i] & mask) == (net.bytes[i] & mask);
    }
    if (match) return true;
  }
  return false;
}

std::string ClientAddress(const RequestHead& head, const std::string& peer,
                          const TrustedProxies& proxies) {
  if (proxies.Empty() || !proxies.Contains(peer)) return peer;
  const std::vector<std::string> nodes = ForwardedNodes(head);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (it->empty()) break;  // a hop that hid its client: nothing left of it can be believed
    if (!proxies.Contains(*it)) return *it;
  }
  return peer;
}

}  // namespace mcpexec::http
