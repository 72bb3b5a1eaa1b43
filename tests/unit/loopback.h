// A client's TCP connection to a test server on 127.0.0.1, for the HTTP servers' tests.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "base/unique_fd.h"

namespace mcpexec::test {

// Connected (blocking) to 127.0.0.1:port; a failure is a test failure.
inline UniqueFd Connect(int port) {
  UniqueFd sock(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(sock.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return sock;
}

// A response read to the server's close (or 10 s without a byte): its status (0 when it is not
// an HTTP/1.1 response), head and body.
struct Reply {
  int status = 0;
  std::string head;
  std::string body;
};

inline Reply ReadReply(const UniqueFd& sock) {
  std::string in;
  char buf[4096];
  pollfd p{sock.Get(), POLLIN, 0};
  while (poll(&p, 1, 10000) > 0) {
    const ssize_t n = read(sock.Get(), buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  Reply reply;
  const size_t end = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return reply;
  reply.status = std::stoi(in.substr(9, 3));
  reply.head = in.substr(0, end);
  reply.body = in.substr(end + 4);
  return reply;
}

}  // namespace mcpexec::test
