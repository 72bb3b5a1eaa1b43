#include "host_fixtures.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace mcpexec::testing {
namespace {

namespace fs = std::filesystem;

// Binds `fd` to the loopback address of `family` on an ephemeral port; returns the port or -1.
int BindLoopback(int fd, int family) {
  sockaddr_storage storage{};
  socklen_t len;
  if (family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &len) != 0) {
    return -1;
  }
  return family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port)
                            : ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
}

sockaddr_un UnixAddress(const std::string& name, bool abstract, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t offset = abstract ? 1 : 0;
  const size_t n = std::min(name.size(), sizeof addr.sun_path - 1 - offset);
  memcpy(addr.sun_path + offset, name.data(), n);
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + offset + n + (abstract ? 0 : 1));
  return addr;
}

int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval timeout{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads the reply until the server closes (requests say Connection: close).
HttpReply Exchange(int port, const std::string& request) {
  HttpReply reply;
  const int fd = ConnectLoopback(port);
  if (fd < 0) return reply;
  for (size_t done = 0; done < request.size();) {
    const ssize_t n = write(fd, request.data() + done, request.size() - done);
    if (n <= 0) {
      close(fd);
      return reply;
    }
    done += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[8192];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return reply;
  reply.status = std::atoi(raw.c_str() + 9);
  reply.headers = raw.substr(0, end);
  reply.body = raw.substr(end + 4);
  if (HeaderValue(reply.headers, "Transfer-Encoding") == "chunked") {
    std::string body;
    size_t at = 0;
    while (at < reply.body.size()) {
      const size_t line = reply.body.find("\r\n", at);
      if (line == std::string::npos) break;
      const size_t size = std::stoul(reply.body.substr(at, line - at), nullptr, 16);
      if (size == 0) break;
      body += reply.body.substr(line + 2, size);
      at = line + 2 + size + 2;
    }
    reply.body = body;
  }
  return reply;
}

}  // namespace

std::string RandomToken() {
  std::random_device random;
  char text[33];
  std::snprintf(text, sizeof text, "%08x%08x%08x%08x", random(), random(), random(), random());
  return text;
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::map<std::string, std::string> HostNamespaces() {
  std::map<std::string, std::string> links;
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time"}) {
    std::error_code ec;
    links[ns] = fs::read_symlink(std::string("/proc/self/ns/") + ns, ec).string();
  }
  return links;
}

std::vector<std::string> HostInterfaces() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/class/net", ec)) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// ------------------------------------------------------------------------------ TCP and UDP

HostTcpListener::HostTcpListener(int family) {
  fd_ = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  port_ = BindLoopback(fd_, family);
  if (port_ < 0 || listen(fd_, 16) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

HostTcpListener::~HostTcpListener() {
  if (fd_ >= 0) close(fd_);
}

int HostTcpListener::AcceptAll() {
  int n = 0;
  for (int conn; fd_ >= 0 && (conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; ++n) {
    close(conn);
  }
  return n;
}

HostUdpSocket::HostUdpSocket() {
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || (port_ = BindLoopback(fd_, AF_INET)) < 0) std::abort();
}

HostUdpSocket::~HostUdpSocket() { close(fd_); }

int HostUdpSocket::DrainAll() {
  int n = 0;
  char buf[2048];
  while (recv(fd_, buf, sizeof buf, 0) >= 0) ++n;
  return n;
}

// ------------------------------------------------------------------------------ Unix sockets

HostUnixSockets::HostUnixSockets(const std::string& name, bool abstract)
    : name_(name), abstract_(abstract) {
  socklen_t len;
  sockaddr_un addr = UnixAddress(name, abstract, &len);
  stream_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (stream_ < 0 || bind(stream_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(stream_, 16) != 0) {
    if (stream_ >= 0) close(stream_);
    stream_ = -1;
  }
  addr = UnixAddress(name + "-dgram", abstract, &len);
  dgram_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (dgram_ < 0 || bind(dgram_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    if (dgram_ >= 0) close(dgram_);
    dgram_ = -1;
  }
  if (!abstract) {
    chmod(name.c_str(), 0777);
    chmod((name + "-dgram").c_str(), 0777);
  }
}

HostUnixSockets::~HostUnixSockets() {
  if (stream_ >= 0) close(stream_);
  if (dgram_ >= 0) close(dgram_);
  if (!abstract_) {
    unlink(name_.c_str());
    unlink((name_ + "-dgram").c_str());
  }
}

int HostUnixSockets::DrainAll() {
  int n = 0;
  for (int conn; stream_ >= 0 && (conn = accept4(stream_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;
       ++n) {
    close(conn);
  }
  char buf[2048];
  while (dgram_ >= 0 && recv(dgram_, buf, sizeof buf, 0) >= 0) ++n;
  return n;
}

// --------------------------------------------------------------------------- PlantedSecrets

PlantedSecrets::~PlantedSecrets() {
  for (const std::string& path : paths_) unlink(path.c_str());
}

bool PlantedSecrets::PlantIn(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  const std::string path = dir + "/mcpexec-adversarial-secret-" + token_;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const std::string content = "secret " + token_ + "\n";
  const bool ok = write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  close(fd);
  paths_.push_back(path);
  return ok;
}

// ------------------------------------------------------------------------------ HostSleeper

HostSleeper::HostSleeper(uid_t uid, gid_t gid) {
  pid_ = fork();
  if (pid_ < 0) std::abort();
  if (pid_ != 0) return;
  // Between fork and execve: syscalls only.
  const int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
  }
  close_range(3, ~0U, 0);
  if (getuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) {
    _exit(126);
  }
  const char* argv[] = {"/bin/sleep", "60", nullptr};
  execv(argv[0], const_cast<char* const*>(argv));
  _exit(127);
}

HostSleeper::~HostSleeper() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

bool HostSleeper::Alive() const {
  const std::string stat = ReadHostFile("/proc/" + std::to_string(pid_) + "/stat");
  const size_t close_paren = stat.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < stat.size() &&
         stat[close_paren + 2] != 'Z' && stat[close_paren + 2] != 'X';
}

// ------------------------------------------------------------------------------------- HTTP

HttpReply HttpPost(int port, const std::string& path, const std::string& body,
                   const std::vector<std::string>& headers) {
  std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\nContent-Type: application/json\r\n"
                        "Accept: application/json, text/event-stream\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n";
  for (const std::string& h : headers) request += h + "\r\n";
  return Exchange(port, request + "\r\n" + body);
}

HttpReply HttpGet(int port, const std::string& path) {
  return Exchange(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                            "\r\nConnection: close\r\n\r\n");
}

std::string HeaderValue(const std::string& headers, const std::string& name) {
  std::istringstream lines(headers);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon != name.size()) continue;
    if (!std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      continue;
    }
    size_t start = colon + 1;
    while (start < line.size() && line[start] == ' ') ++start;
    return line.substr(start);
  }
  return "";
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int port = BindLoopback(fd, AF_INET);
  close(fd);
  return port;
}

nlohmann::json ReplyJson(const HttpReply& reply) {
  std::string body = reply.body;
  if (const size_t data = body.find("data: "); data != std::string::npos) {
    body = body.substr(data + 6, body.find('\n', data) - data - 6);
  }
  return nlohmann::json::parse(body, nullptr, false);
}

bool WaitForHealthz(int port) {
  for (int i = 0; i < 100; ++i) {
    if (HttpGet(port, "/healthz").status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

McpSession OpenMcpSession(int port, std::vector<std::string> headers) {
  McpSession session;
  session.init = HttpPost(
      port, "/mcp",
      nlohmann::json({{"jsonrpc", "2.0"},
                      {"id", 1},
                      {"method", "initialize"},
                      {"params",
                       {{"protocolVersion", "2025-06-18"},
                        {"capabilities", nlohmann::json::object()},
                        {"clientInfo", {{"name", "adversarial"}, {"version", "1"}}}}}})
          .dump(),
      headers);
  headers.push_back("Mcp-Session-Id: " + HeaderValue(session.init.headers, "Mcp-Session-Id"));
  headers.push_back("MCP-Protocol-Version: 2025-06-18");
  if (session.init.status == 200) {
    HttpPost(port, "/mcp",
             nlohmann::json({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).dump(),
             headers);
  }
  session.headers = std::move(headers);
  return session;
}

}  // namespace mcpexec::testing
