// Plain HTTP/1.1 to a server under test on 127.0.0.1: a free port to give it, one request per
// connection (Connection: close) read to the end, and whether the server process has exited.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace mcpexec::testing {

// A port nobody listens on right now (bound to 0, read, closed); 0 if that failed.
int FreePort();

struct HttpReply {
  int status = 0;  // 0: no answer
  std::string head;
  std::string body;
  // The value of header `name` (case-insensitive), or "".
  std::string Header(const std::string& name) const;
};

// One request; a non-empty `body` is sent as JSON with its Content-Length. `headers` are
// "Name: value" lines.
HttpReply HttpRequest(int port, const std::string& method, const std::string& path,
                      const std::vector<std::string>& headers = {}, const std::string& body = "",
                      std::chrono::seconds timeout = std::chrono::seconds(60));

// Whether `pid`, a child of this process, has exited (it is left to be reaped).
bool Exited(pid_t pid);

}  // namespace mcpexec::testing
