// Which address a request is from: the socket's peer, or, from a trusted proxy only, the client
// its forwarding headers name.
#include "http/client_address.h"

#include <gtest/gtest.h>

namespace mcpexec::http {
namespace {

RequestHead With(std::vector<HeaderField> headers) {
  RequestHead head;
  head.headers = std::move(headers);
  return head;
}

TrustedProxies Proxies(std::string_view text) {
  auto proxies = TrustedProxies::Parse(text);
  EXPECT_TRUE(proxies.ok()) << proxies.error().message;
  return proxies.ok() ? *proxies : TrustedProxies();
}

TEST(TrustedProxies, ParsesAddressesAndNetworks) {
  const TrustedProxies p = Proxies(" 10.0.0.0/8, 192.168.1.7 ,fd00::/8");
  EXPECT_TRUE(p.Contains("10.1.2.3"));
  EXPECT_TRUE(p.Contains("::ffff:10.1.2.3"));  // an IPv4 client of a dual-stack socket
  EXPECT_TRUE(p.Contains("192.168.1.7"));
  EXPECT_FALSE(p.Contains("192.168.1.8"));
  EXPECT_TRUE(p.Contains("fd12::1"));
  EXPECT_FALSE(p.Contains("fe80::1"));
  EXPECT_FALSE(p.Contains("not an address"));
  EXPECT_TRUE(Proxies("").Empty());
}

TEST(TrustedProxies, RefusesWhatIsNotAnAddressOrNetwork) {
  for (const char* bad : {"proxy.example", "10.0.0.0/33", "10.0.0.0/", "::/129", "1.2.3.4/x"}) {
    const auto p = TrustedProxies::Parse(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(p.error().message.find(bad), std::string::npos) << p.error().message;
  }
}

TEST(ClientAddress, ForwardingHeadersFromAnUntrustedPeerAreIgnored) {
  const RequestHead head = With({{"X-Forwarded-For", "192.0.2.1"}, {"Forwarded", "for=192.0.2.2"}});
  EXPECT_EQ(ClientAddress(head, "127.0.0.1", TrustedProxies()), "127.0.0.1");
  EXPECT_EQ(ClientAddress(head, "127.0.0.1", Proxies("10.0.0.1")), "127.0.0.1");
}

TEST(ClientAddress, FromATrustedProxyTheRightmostUntrustedHopIsTheClient) {
  const TrustedProxies proxies = Proxies("127.0.0.1, 10.0.0.0/8");
  // The leftmost is whatever the client claimed; the proxies appended the rest.
  EXPECT_EQ(ClientAddress(With({{"X-Forwarded-For", "6.6.6.6, 192.0.2.1, 10.0.0.5"}}),
                          "127.0.0.1", proxies),
            "192.0.2.1");
  EXPECT_EQ(ClientAddress(With({{"X-Forwarded-For", "6.6.6.6"}, {"x-forwarded-for", "192.0.2.9"}}),
                          "127.0.0.1", proxies),
            "192.0.2.9");
  // Forwarded wins over X-Forwarded-For; quotes, brackets and ports are taken off.
  EXPECT_EQ(ClientAddress(With({{"X-Forwarded-For", "192.0.2.1"},
                                {"Forwarded", "for=192.0.2.60;proto=http, for=\"[2001:db8::1]:4711\""}}),
                          "127.0.0.1", proxies),
            "2001:db8::1");
  EXPECT_EQ(ClientAddress(With({{"Forwarded", "for=192.0.2.60:8080"}}), "127.0.0.1", proxies),
            "192.0.2.60");
  // Nothing usable: the proxy itself.
  EXPECT_EQ(ClientAddress(With({}), "127.0.0.1", proxies), "127.0.0.1");
  EXPECT_EQ(ClientAddress(With({{"X-Forwarded-For", "unknown"}}), "127.0.0.1", proxies),
            "127.0.0.1");
  EXPECT_EQ(ClientAddress(With({{"X-Forwarded-For", "10.0.0.7"}}), "127.0.0.1", proxies),
            "127.0.0.1");
}

}  // namespace
}  // namespace mcpexec::http
