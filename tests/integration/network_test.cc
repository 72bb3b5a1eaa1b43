// The network: an empty namespace with its own loopback. Nothing on the host's loopback is
// reachable, nothing leaves the machine, names do not resolve.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

// A listening TCP socket on the host's 127.0.0.1, non-blocking, on an ephemeral port.
class HostListener {
 public:
  HostListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(fd_, 8) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::abort();
    }
    port_ = ntohs(addr.sin_port);
  }
  ~HostListener() { close(fd_); }

  int Port() const { return port_; }
  // accept4's errno, or 0 when a connection was waiting.
  int TryAccept() const {
    const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) return errno;
    close(conn);
    return 0;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Connects to 127.0.0.1:port from the host; true on success.
bool ConnectFromHost(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

constexpr const char* kConnect = R"py(
import errno, json, socket
def connect(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port))
        return "connected"
    except ConnectionRefusedError:
        return "refused"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()
)py";

class NetworkTest : public SandboxTest {
 protected:
  json RunJson(const std::string& body) {
    const Outcome r = runner_.RunCode(std::string(kConnect) + body, {"--timeout", "20"});
    EXPECT_TRUE(IsRunResult(r));
    EXPECT_EQ(r.exit_status, 0) << r.Describe();
    const json j = r.ProgramJson();
    EXPECT_TRUE(j.is_object()) << r.Describe();
    return j.is_object() ? j : json::object();
  }
};

TEST_P(NetworkTest, HostLoopbackListenerIsUnreachable) {
  HostListener listener;
  const json j = RunJson("print(json.dumps({'result': connect('127.0.0.1', " +
                         std::to_string(listener.Port()) + ")}))");
  EXPECT_EQ(j["result"], "refused");
  EXPECT_EQ(listener.TryAccept(), EAGAIN) << "a connection reached the host's listener";
  // Positive control: the listener does accept connections made on the host.
  ASSERT_TRUE(ConnectFromHost(listener.Port()));
  EXPECT_EQ(listener.TryAccept(), 0);
}

TEST_P(NetworkTest, NonLoopbackAddressIsUnreachable) {
  // TEST-NET-1: with no route in the sandbox the packet never leaves it.
  const json j = RunJson("print(json.dumps({'result': connect('192.0.2.1', 80)}))");
  EXPECT_EQ(j["result"], "ENETUNREACH");
}

TEST_P(NetworkTest, LoopbackIsUpAndTheOnlyInterface) {
  const json j = RunJson(R"py(
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.bind(("127.0.0.1", 0))
server.listen(1)
client = socket.create_connection(server.getsockname(), timeout=5)
conn, _ = server.accept()
client.sendall(b"ping")
print(json.dumps({"echo": conn.recv(4).decode(),
                  "interfaces": [name for _, name in socket.if_nameindex()]}))
)py");
  EXPECT_EQ(j["echo"], "ping");
  EXPECT_EQ(j["interfaces"], json({"lo"}));
}

TEST_P(NetworkTest, NameResolutionFails) {
  const json j = RunJson(R"py(
try:
    socket.getaddrinfo("example.com", 80)
    result = "resolved"
except socket.gaierror as e:
    result = "gaierror"
print(json.dumps({"result": result}))
)py");
  EXPECT_EQ(j["result"], "gaierror");
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(NetworkTest);

}  // namespace
}  // namespace mcpexec::testing
