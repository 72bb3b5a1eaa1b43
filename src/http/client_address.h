// The client's address of a request that came through a reverse proxy the operator trusts
// (MCP_EXEC_TRUSTED_PROXIES): only from such a peer are X-Forwarded-For and Forwarded believed,
// since anyone else can write them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "http/request.h"

namespace mcpexec::http {

// A set of addresses and networks (IPv4 and IPv6, an IPv4 one also matching its IPv4-mapped
// IPv6 form). Immutable once parsed; thread-safe.
class TrustedProxies {
 public:
  TrustedProxies() = default;  // trusts none

  // Parses a comma-separated list of addresses and CIDR networks ("10.0.0.1, 192.168.0.0/16,
  // fd00::/8"); empty: none. kInvalidArgument names the entry that is not one.
  static Result<TrustedProxies> Parse(std::string_view text);

  bool Empty() const { return networks_.empty(); }
  // `address` (a literal, as getpeername gives it) is one of them.
  bool Contains(std::string_view address) const;

 private:
  struct Network {
    std::array<uint8_t, 16> bytes{};  // IPv6, or IPv4-mapped IPv6
    int prefix = 128;
  };
  std::vector<Network> networks_;
};

// The address a request is from: `peer`, or, when `peer` is a trusted proxy, the address the
// proxies recorded: of the Forwarded header's "for=" values (else X-Forwarded-For's), the
// rightmost that is not itself a trusted proxy. `peer` when the headers name none that parses.
std::string ClientAddress(const RequestHead& head, const std::string& peer,
                          const TrustedProxies& proxies);

}  // namespace mcpexec::http
