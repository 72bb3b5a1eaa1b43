// Connection handling under httplib: one thread per connection (httplib's default pool has
// max(8, cores-1) threads, and every open event stream holds one), our own keep-alive loop and
// socket stream (timeouts that also end on Stop(), a per-request read deadline against slow
// clients, no SIGPIPE), and access to the socket of the request being handled so that a handler
// can tell when its client hung up.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

namespace mcpexec::mcp::http {

struct ConnectionLimits {
  size_t max_connections = 1024;  // beyond this a new connection gets 503 and is closed
  std::chrono::milliseconds keep_alive_timeout{30000};  // idle time between requests
  size_t keep_alive_max_requests = 10000;               // requests per connection
  std::chrono::milliseconds read_timeout{10000};        // a single read of a request
  std::chrono::milliseconds request_timeout{60000};     // reading a whole request, body included
  std::chrono::milliseconds write_timeout{10000};       // a single write of a response
};

// An httplib::Server whose connections are served by our loop. `stop_fd` is an eventfd owned by
// the caller; once readable, every wait of every connection ends and connections close.
class ConnectionServer : public httplib::Server {
 public:
  ConnectionServer(ConnectionLimits limits, int stop_fd);

  // Raises the listen backlog (httplib listens with 5). Call after bind. False on error.
  bool SetBacklog(int backlog);

  // The socket of the request being handled on the calling thread (handlers and content
  // providers run on their connection's thread); -1 elsewhere.
  static int CurrentSocket();
  // Closes the connection after the current response (for a request whose body was not read).
  static void CloseAfterResponse();

  const ConnectionLimits& Limits() const { return limits_; }

 private:
  class Threads;
  // Overrides httplib's private virtual: serves one accepted socket (and closes it).
  bool process_and_close_socket(socket_t sock) override;
  void Reject(int sock);

  const ConnectionLimits limits_;
  const int stop_fd_;
  std::atomic<uint64_t> refused_{0};
  std::atomic<int64_t> last_refusal_log_s_{-3600};
};

// What ended a wait for queued messages.
enum class WaitResult { kReady, kTimeout, kStopped, kPeerClosed };

// Waits until `queue_fd` is readable, the peer of `sock` hangs up (or the socket fails), `stop_fd`
// is readable, or `timeout` passes. `sock` may be -1 (not watched).
WaitResult WaitForMessages(int queue_fd, int sock, int stop_fd, std::chrono::milliseconds timeout);

}  // namespace mcpexec::mcp::http
