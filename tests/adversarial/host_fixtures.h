// Host-side halves of the adversarial cases: what the test puts on the host for the sandboxed
// program to attack (listeners, abstract and path sockets, planted secrets, a process of the
// sandbox's host uid), and how it checks afterwards that the attack got nothing.
//
// Every class here owns what it creates and removes it in its destructor. None is thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mcpexec::testing {

// 32 random hex digits.
std::string RandomToken();

// The whole content of `path`; empty when it cannot be read.
std::string ReadHostFile(const std::string& path);

// readlink of /proc/self/ns/<name> for the namespaces a sandbox gets, plus "time".
std::map<std::string, std::string> HostNamespaces();

// The host's network interfaces (/sys/class/net).
std::vector<std::string> HostInterfaces();

// A non-blocking TCP listener on the host's loopback (AF_INET: 127.0.0.1, AF_INET6: ::1), on an
// ephemeral port. Valid() is false when the family is unavailable (no IPv6).
class HostTcpListener {
 public:
  explicit HostTcpListener(int family);
  ~HostTcpListener();
  HostTcpListener(const HostTcpListener&) = delete;
  HostTcpListener& operator=(const HostTcpListener&) = delete;

  bool Valid() const { return fd_ >= 0; }
  int Port() const { return port_; }
  // Accepts whatever is waiting; returns how many connections there were.
  int AcceptAll();

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A non-blocking UDP socket bound on the host's 127.0.0.1.
class HostUdpSocket {
 public:
  HostUdpSocket();
  ~HostUdpSocket();
  HostUdpSocket(const HostUdpSocket&) = delete;
  HostUdpSocket& operator=(const HostUdpSocket&) = delete;

  int Port() const { return port_; }
  // Reads whatever is waiting; returns how many datagrams there were.
  int DrainAll();

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Unix sockets of the host: a listening stream socket and a bound datagram socket, either in the
// abstract namespace (`abstract`: the name without its leading NUL; the datagram one is
// name + "-dgram") or at a path.
class HostUnixSockets {
 public:
  HostUnixSockets(const std::string& name, bool abstract);
  ~HostUnixSockets();
  HostUnixSockets(const HostUnixSockets&) = delete;
  HostUnixSockets& operator=(const HostUnixSockets&) = delete;

  bool Valid() const { return stream_ >= 0 && dgram_ >= 0; }
  // Connections accepted plus datagrams read since the last call.
  int DrainAll();

 private:
  std::string name_;
  bool abstract_;
  int stream_ = -1, dgram_ = -1;
};

// Files whose names and contents hold a token, planted in host directories; removed again.
class PlantedSecrets {
 public:
  explicit PlantedSecrets(std::string token) : token_(std::move(token)) {}
  ~PlantedSecrets();
  PlantedSecrets(const PlantedSecrets&) = delete;
  PlantedSecrets& operator=(const PlantedSecrets&) = delete;

  // Plants one file in `dir`; false (and nothing planted) when `dir` is not a writable directory.
  bool PlantIn(const std::string& dir);
  const std::vector<std::string>& Paths() const { return paths_; }

 private:
  std::string token_;
  std::vector<std::string> paths_;
};

// /bin/sleep running on the host as `uid`/`gid`: a process the sandbox could signal if it were
// not in a PID namespace of its own. Killed and reaped by the destructor.
class HostSleeper {
 public:
  HostSleeper(uid_t uid, gid_t gid);
  ~HostSleeper();
  HostSleeper(const HostSleeper&) = delete;
  HostSleeper& operator=(const HostSleeper&) = delete;

  pid_t Pid() const { return pid_; }
  // True while the process runs (not a zombie).
  bool Alive() const;

 private:
  pid_t pid_ = -1;
};

// A minimal HTTP/1.1 client for the MCP server's Streamable HTTP endpoint on 127.0.0.1.
struct HttpReply {
  int status = 0;       // 0 when the request could not be made
  std::string headers;  // the raw header block
  std::string body;
};
HttpReply HttpPost(int port, const std::string& path, const std::string& body,
                   const std::vector<std::string>& headers);
HttpReply HttpGet(int port, const std::string& path);
// The body of a Streamable HTTP reply as JSON (discarded when it is not): the body itself, or
// the data of the first message of an SSE stream.
nlohmann::json ReplyJson(const HttpReply& reply);
// Polls 127.0.0.1:port/healthz until it answers 200, for at most 5 s; false when it never did.
bool WaitForHealthz(int port);
// An MCP session on 127.0.0.1:port/mcp: initialize (with `headers`, e.g. a token) and
// notifications/initialized. `headers` then also carries the session id and protocol version
// for the session's requests; `init` is the initialize reply (status 200 when it worked).
struct McpSession {
  HttpReply init;
  std::vector<std::string> headers;
};
McpSession OpenMcpSession(int port, std::vector<std::string> headers);
// The value of `name` in a raw header block (case-insensitive); empty when absent.
std::string HeaderValue(const std::string& headers, const std::string& name);

// A free TCP port on 127.0.0.1 at the time of the call.
int FreeLoopbackPort();

}  // namespace mcpexec::testing
