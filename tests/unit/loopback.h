// A client's TCP connection to a test server on 127.0.0.1, for the HTTP servers' tests.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

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

}  // namespace mcpexec::test
