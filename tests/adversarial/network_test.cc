// The network (catalogue NET-01 to NET-04): the host listens on its loopback (TCP, UDP), in
// the abstract Unix namespace and on socket paths; the sandbox, in a network namespace of its
// own, cannot reach any of them, and the host's side receives nothing. No packet is aimed
// outside loopback. Each case ends with a positive control: the host's listener does receive
// what is sent to it from the host.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "adversarial_test.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

// Connects (stream) or sends one datagram to 127.0.0.1:port from the host; true on success.
bool ReachFromHost(int port, int type) {
  const int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = type == SOCK_STREAM
                      ? connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0
                      : sendto(fd, "x", 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 1;
  close(fd);
  return ok;
}

bool ConnectAbstractFromHost(const std::string& name) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  close(fd);
  return ok;
}

TEST_P(Adversarial, NET_01_NoRouteLeavesTheSandbox) {
  json o = Contained("net01_egress");
  EXPECT_EQ(o["interfaces"], json({"lo"}));
  EXPECT_EQ(o["IPv4 routes"], 0);
  EXPECT_EQ(o["IPv6 routes off lo"], 0);
  ExpectEach(o,
             {"route to TEST-NET-1 192.0.2.1", "route to metadata 169.254.169.254",
              "route to public 1.1.1.1", "route to IPv6 2001:db8::1"},
             "ENETUNREACH");
}

TEST_P(Adversarial, NET_01_NoResolverIsReachable) {
  json o = Contained("net01_dns");
  EXPECT_EQ(o["resolv.conf nameservers"], json::array());
  // glibc falls back to 127.0.0.1:53: the sandbox's own loopback, where nothing listens.
  EXPECT_EQ(o["query 127.0.0.1"], json("ECONNREFUSED"));
  ExpectEach(o, {"getaddrinfo example.com", "getaddrinfo metadata.google.internal"}, "EAI_AGAIN");
}

TEST_P(Adversarial, NET_02_HostLoopbackTcpIsUnreachable) {
  HostTcpListener v4(AF_INET), v6(AF_INET6);
  ASSERT_TRUE(v4.Valid());
  json params = {{"port", v4.Port()}};
  if (v6.Valid()) params["port6"] = v6.Port();
  json o = Contained("net02_host_tcp", params);
  ExpectEach(o, {"connect 127.0.0.1", "connect localhost"}, "ECONNREFUSED");
  if (v6.Valid()) {
    EXPECT_EQ(o["connect ::1"], json("ECONNREFUSED"));
  }
  EXPECT_EQ(v4.AcceptAll(), 0) << "a connection reached the host's 127.0.0.1 listener";
  EXPECT_EQ(v6.AcceptAll(), 0) << "a connection reached the host's ::1 listener";
  ASSERT_TRUE(ReachFromHost(v4.Port(), SOCK_STREAM));
  EXPECT_EQ(v4.AcceptAll(), 1) << "positive control";
}

TEST_P(Adversarial, NET_02_HostLoopbackUdpIsUnreachable) {
  HostUdpSocket udp;
  json o = Contained("net02_host_udp", {{"port", udp.Port()}});
  EXPECT_EQ(o["send"], json("ok"));
  // ICMP port unreachable from the sandbox's own loopback.
  EXPECT_EQ(o["recv"], json("ECONNREFUSED"));
  EXPECT_EQ(udp.DrainAll(), 0) << "a datagram reached the host's socket";
  ASSERT_TRUE(ReachFromHost(udp.Port(), SOCK_DGRAM));
  // Loopback delivery can lag the send on a loaded (or emulated) machine.
  int received = 0;
  for (int i = 0; i < 100 && received == 0; ++i) {
    received = udp.DrainAll();
    if (received == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(received, 1) << "positive control";
}

TEST_P(Adversarial, NET_03_HostAbstractSocketsAreUnreachable) {
  const std::string name = "mcpexec-adversarial-" + RandomToken();
  HostUnixSockets host(name, /*abstract=*/true);
  ASSERT_TRUE(host.Valid());
  json o = Contained("net03_host_abstract", {{"name", name}});
  ExpectEach(o, {"connect stream", "connect datagram"}, "ECONNREFUSED");
  EXPECT_EQ(o["/proc/net/unix entries"], 0);
  EXPECT_EQ(host.DrainAll(), 0) << "the sandbox reached the host's abstract socket";
  ASSERT_TRUE(ConnectAbstractFromHost(name));
  EXPECT_EQ(host.DrainAll(), 1) << "positive control";
}

TEST_P(Adversarial, NET_04_HostSocketFilesAreAbsent) {
  const std::string token = RandomToken();
  HostUnixSockets in_tmp("/tmp/mcpexec-adversarial-" + token + ".sock", /*abstract=*/false);
  HostUnixSockets in_run("/run/mcpexec-adversarial-" + token + ".sock", /*abstract=*/false);
  ASSERT_TRUE(in_tmp.Valid());
  json paths = {"/tmp/mcpexec-adversarial-" + token + ".sock"};
  if (in_run.Valid()) paths.push_back("/run/mcpexec-adversarial-" + token + ".sock");
  json o = Contained("net04_path_sockets", {{"paths", paths}});
  EXPECT_EQ(o["socket files"], json::array());
  for (const json& path : paths) {
    EXPECT_EQ(o["connect " + path.get<std::string>()], json("ENOENT")) << path;
  }
  ExpectEach(o,
             {"connect /run/docker.sock", "connect /var/run/docker.sock",
              "connect /run/dbus/system_bus_socket", "connect /run/systemd/private"},
             "ENOENT");
  EXPECT_EQ(in_tmp.DrainAll() + in_run.DrainAll(), 0);
}

}  // namespace
}  // namespace mcpexec::testing
