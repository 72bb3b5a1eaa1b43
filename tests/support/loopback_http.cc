#include "loopback_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <regex>

#include "base/sys.h"

namespace mcpexec::testing {

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string HttpReply::Header(const std::string& name) const {
  std::smatch m;
  if (std::regex_search(head, m, std::regex("\r\n" + name + ": ([^\r]*)", std::regex::icase))) {
    return m[1];
  }
  return "";
}

HttpReply HttpRequest(int port, const std::string& method, const std::string& path,
                      const std::vector<std::string>& headers, const std::string& body,
                      std::chrono::seconds timeout) {
  HttpReply reply;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{static_cast<time_t>(timeout.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string in;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                          std::to_string(port) + "\r\nConnection: close\r\n";
    if (!body.empty()) {
      request += "Content-Type: application/json\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n";
    }
    for (const std::string& h : headers) request += h + "\r\n";
    request += "\r\n" + body;
    if (WriteAll(fd, request).ok()) {
      char buf[8192];
      for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) in.append(buf, size_t(n));
    }
  }
  close(fd);
  const size_t end = in.find("\r\n\r\n");
  if (sscanf(in.c_str(), "HTTP/1.1 %d", &reply.status) != 1 || end == std::string::npos) {
    reply.status = 0;
    return reply;
  }
  reply.head = in.substr(0, end);
  reply.body = in.substr(end + 4);
  return reply;
}

bool Exited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

}  // namespace mcpexec::testing
