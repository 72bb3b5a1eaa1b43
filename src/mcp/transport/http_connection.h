// HTTP/1.1 connections: the listening socket, one thread per connection (capped: beyond the cap
// the accept thread answers 503 itself), and on each connection the request loop: read a head
// (http_request.h), admit it, let the handler read the body and fill a response, write the
// response (fixed length, or streamed with chunked transfer-coding), and keep the connection
// alive or close it. Every wait has a timeout and also ends when the server stops; a client that
// sends a head byte by byte is cut at the request deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/unique_fd.h"
#include "mcp/transport/http_request.h"
#include "mcp/transport/http_response.h"

namespace mcpexec::mcp::http {

struct ConnectionLimits {
  size_t max_connections = 1024;  // beyond this a new connection gets 503 and is closed
  std::chrono::milliseconds keep_alive_timeout{30000};  // idle time between requests
  size_t keep_alive_max_requests = 10000;               // requests per connection
  std::chrono::milliseconds read_timeout{10000};        // a single read of a request
  std::chrono::milliseconds request_timeout{60000};     // reading a whole request, body included
  std::chrono::milliseconds write_timeout{10000};       // a single write of a response
  HeadLimits head;                                      // size of a request head
};

// How reading a request body ended.
enum class BodyStatus {
  kOk,        // the whole body was read
  kTooLarge,  // it is larger than the limit given (nothing more is read)
  kFailed,    // malformed chunked framing, a timeout, or the client went away
};

// One request, as a handler sees it. Belongs to the connection's thread.
struct Request {
  RequestHead head;
  std::string remote_addr;  // the client's IP address, for logs; empty when unknown
  int socket = -1;          // the connection's socket, to watch for a hang-up; -1 when none

  // Set by the connection: reads the whole body (Content-Length or chunked) into `*body`, first
  // sending "100 Continue" when the client waits for it. At most `max_bytes`: kTooLarge beyond.
  // Call at most once. Unset (tests): no body.
  std::function<BodyStatus(size_t max_bytes, std::string* body)> read_body;

  BodyStatus ReadBody(size_t max_bytes, std::string* body) const {
    return read_body ? read_body(max_bytes, body) : BodyStatus::kOk;
  }
};

// What an admission check decided.
enum class Admission {
  kAdmitted,  // go on to Handler::Handle
  kAnswered,  // the response is filled (a refusal, or an answer that needs no handler)
};

// What a server does with requests. Called on connection threads, concurrently.
class Handler {
 public:
  virtual ~Handler() = default;
  // Runs on the head alone, before any body byte is read and before "100 Continue" is sent.
  virtual Admission Admit(const Request& req, Response& res) = 0;
  // Serves an admitted request: may read the body (Request::ReadBody) and fills `res`. A body
  // left unread closes the connection after the response. An exception becomes a 500.
  virtual void Handle(Request& req, Response& res) = 0;
};

// Serves one connected socket on the calling thread until the client or a limit ends the
// connection, or `stop_fd` (an eventfd, or any fd that becomes readable) is readable. Takes
// ownership of `sock` and closes it.
void ServeConnection(int sock, int stop_fd, const ConnectionLimits& limits, Handler& handler);

// A listening socket and its accept thread. `handler` must outlive it; `stop_fd` is owned by the
// caller: once it is readable the accept loop and every connection end.
class ConnectionServer {
 public:
  ConnectionServer(ConnectionLimits limits, int stop_fd, Handler& handler);
  // Join()s: signal stop_fd first if Start() was called.
  ~ConnectionServer();
  ConnectionServer(const ConnectionServer&) = delete;
  ConnectionServer& operator=(const ConnectionServer&) = delete;

  // Binds `host` (an IPv4 or IPv6 literal; "::" also accepts IPv4) and `port` (0: any free one)
  // and listens. Returns the bound port; kUnavailable with the errno of the failing call.
  Result<int> Listen(const std::string& host, int port, int backlog);
  // Accepts and serves connections on a background thread until stop_fd is readable. Call once,
  // after Listen().
  Result<void> Start();
  // Waits for the accept thread and every connection thread to end (they end once stop_fd is
  // readable). Idempotent.
  void Join();

  const ConnectionLimits& Limits() const { return limits_; }

 private:
  class Threads;
  void AcceptLoop();
  void Reject(int sock);

  const ConnectionLimits limits_;
  const int stop_fd_;
  Handler& handler_;
  UniqueFd listen_fd_;
  std::unique_ptr<Threads> threads_;
  std::thread accept_thread_;
  std::atomic<uint64_t> refused_{0};
  std::atomic<int64_t> last_refusal_log_s_{-3600};
};

// What ended a wait for queued messages.
enum class WaitResult { kReady, kTimeout, kStopped, kPeerClosed };

// Waits until `queue_fd` is readable, the peer of `sock` hangs up (or the socket fails), `stop_fd`
// is readable, or `timeout` passes. `sock` may be -1 (not watched).
WaitResult WaitForMessages(int queue_fd, int sock, int stop_fd, std::chrono::milliseconds timeout);

}  // namespace mcpexec::mcp::http
