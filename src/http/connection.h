// HTTP/1.1 connections: the listening socket and its event loop, and on each connection the
// request loop: read a head (request.h), admit it, let the handler read the body and fill a
// response, write the response (fixed length, or streamed with chunked transfer-coding), and
// keep the connection alive or close it. The event loop holds every connection that waits for
// something from its client or for its client to take an answer: it reads request heads, admits
// them, answers those that admission answers (refusals, /healthz) without a thread, and reads the
// body of an admitted request (Content-Length, up to a limit) before a thread is taken. A
// connection holds a thread only while its handler runs and writes: idle, slow and non-reading
// clients cost a socket, so they cannot starve the server of threads. Every wait has a deadline
// and a minimum rate and also ends when the server stops.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/unique_fd.h"
#include "http/client_address.h"
#include "http/request.h"
#include "http/response.h"

namespace mcpexec::http {

struct ConnectionLimits {
  size_t max_connections = 1024;  // requests served at once (a thread each); beyond: 503
  // Connections waiting for a request head (a socket each, no thread). When they are this many,
  // a new connection pushes out the one idle for longest, preferring those with no admitted
  // request: a flood of idle connections cannot keep a new client out.
  size_t max_idle_connections = 8192;
  // Open connections from one IP address. A new one beyond it pushes out the oldest of that
  // address's connections waiting in the event loop, preferring those not yet proven (no admitted
  // request); only when all of them are being served is it refused with 503.
  size_t max_connections_per_peer = 256;
  // Connections in the event loop none of whose requests was admitted yet (no valid token): a
  // budget of their own, so that they cannot crowd out proven ones. A new connection beyond it
  // pushes out the oldest unproven one, so that a new client always gets in.
  size_t max_unproven_connections = 4096;
  // Requests from one IP address served at once (a thread each: running calls, open streams);
  // beyond: 503. Its share of max_connections, so one address cannot take every thread.
  size_t max_served_per_peer = 64;
  std::chrono::milliseconds keep_alive_timeout{30000};  // idle time between requests
  // Idle time allowed to a connection none of whose requests was admitted yet (a new one, or one
  // answered only with refusals such as 404), and its time to send a whole head.
  std::chrono::milliseconds untrusted_idle_timeout{5000};
  size_t keep_alive_max_requests = 10000;               // requests per connection
  // Answers given on a connection none of whose requests was admitted yet (refusals, /healthz)
  // before it is closed. A health check or a client's first refusal needs one or two; a client
  // that pipelines thousands of /healthz it never reads must reconnect, not cost the event loop
  // a parse and an answer per request it sent.
  size_t max_unproven_answers = 8;
  std::chrono::milliseconds read_timeout{10000};        // a single read of a request
  std::chrono::milliseconds request_timeout{60000};     // reading a whole request, body included
  std::chrono::milliseconds write_timeout{10000};       // a single write of a response
  // The slowest transfer allowed, in bytes per second, in each direction: a body (from where it
  // starts) and each write of a response (a block of a stream included) must finish within its
  // read or write timeout plus its size at this rate, so a client that trickles cannot hold a
  // connection for long by sending, or taking, a byte just before each timeout. 0: no minimum.
  size_t min_transfer_rate = 1024;
  // An admitted request's Content-Length body up to this size is read by the event loop before
  // the request takes a thread, so a body that stalls costs a socket, not a thread. Larger ones
  // (and chunked ones) are read on the request's thread, with the same deadlines.
  size_t max_loop_body_bytes = 8u << 20;
  HeadLimits head;                                      // size of a request head
  // Reverse proxies whose X-Forwarded-For / Forwarded name the client (MCP_EXEC_TRUSTED_PROXIES):
  // a connection from one is counted, and logged, under the client's address of its latest
  // request. None by default: the headers are anyone's to write.
  TrustedProxies trusted_proxies;
};

// How reading a request body ended.
enum class BodyStatus {
  kOk,        // the whole body was read
  kTooLarge,  // it is larger than the limit given (nothing more is read)
  kFailed,    // malformed chunked framing, or the client went away
  kTimedOut,  // the body stalled for the read timeout, or came slower than the minimum rate
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
  // Told the status of every response sent on any connection, those the transport sends
  // itself (400, 408, 503 ...) included. Called from any thread; must not block.
  virtual void Answered(int /*status*/) noexcept {}
};

// One client connection: its socket, what was received and not yet used, and its request loop.
// Used by one thread at a time; the event loop and the serving threads hand it over.
class Connection {
 public:
  // Takes ownership of `sock`. `limits`, `handler` and `stop_fd` must outlive the connection.
  Connection(int sock, int stop_fd, const ConnectionLimits& limits, Handler& handler);
  // Closes the socket, with a lingering close when a request was left unread.
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Blocking: serves requests until the client or a limit ends the connection, or stop_fd is
  // readable.
  void ServeUntilClosed();

  enum class Intake {
    kWaiting,  // a request head, or an admitted request's body, is not complete yet: read more
    kWriting,  // answers wait for the client to take them: wait until the socket is writable,
               // and read nothing meanwhile (backpressure on pipelined requests)
    kReady,    // a request needs its thread: ServeReady()
    kGone,     // the client closed the connection, the socket failed, or it is to be closed
  };
  // Event loop side, never blocks: sends what answers are pending, reads what the socket holds
  // (at most a head's worth, or an admitted body's, beyond what is buffered), admits each whole
  // head, answers those that admission answers with a fixed response, and reads an admitted
  // request's body (see ConnectionLimits::max_loop_body_bytes).
  Intake Progress();
  // When the event loop must give up on what it waits for from the client now: an answer not
  // taken (write timeout, minimum rate) or an admitted body that does not come (read timeout,
  // minimum rate). nullopt while it waits for a request head, whose deadlines the loop keeps.
  std::optional<std::chrono::steady_clock::time_point> LoopDeadline() const;
  // Requests answered or served on this connection so far.
  size_t Served() const;
  // Serves the request Progress() found ready, reading its body (unless the loop has) and writing
  // its response with the usual deadlines. True when the connection stays open: give it back to
  // the event loop, which calls Progress() at once (more may be buffered); false when it is
  // finished (destroy it to close it).
  bool ServeReady();
  // Answers 408 without blocking, for a head not received in time; the caller then closes it.
  void RefuseSlowHead();

  // Bytes of a request have arrived (not just the empty lines allowed between requests).
  bool HeadStarted() const;
  // One of its requests got past admission (the token, when one is set).
  bool Trusted() const;
  // The client's IP address (from a trusted proxy: the one its latest request was forwarded
  // for); empty when unknown.
  const std::string& Remote() const;
  int Socket() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Serves one connected socket on the calling thread until the client or a limit ends the
// connection, or `stop_fd` (an eventfd, or any fd that becomes readable) is readable. Takes
// ownership of `sock` and closes it.
void ServeConnection(int sock, int stop_fd, const ConnectionLimits& limits, Handler& handler);

// A listening socket and its event loop, which accepts connections, holds the idle ones, and
// hands a connection to a thread of its own while a request on it is served. `handler` must
// outlive it; `stop_fd` is owned by the caller: once it is readable the loop and every
// connection end.
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
  // Waits for the event loop and every serving thread to end (they end once stop_fd is
  // readable). Idempotent.
  void Join();

  const ConnectionLimits& Limits() const { return limits_; }

 private:
  class Loop;

  const ConnectionLimits limits_;
  const int stop_fd_;
  Handler& handler_;
  UniqueFd listen_fd_;
  std::unique_ptr<Loop> loop_;
  std::thread loop_thread_;
};

// What ended a wait for queued messages.
enum class WaitResult { kReady, kTimeout, kStopped, kPeerClosed };

// Waits until `queue_fd` is readable, the peer of `sock` hangs up (or the socket fails), `stop_fd`
// is readable, or `timeout` passes. `sock` may be -1 (not watched).
WaitResult WaitForMessages(int queue_fd, int sock, int stop_fd, std::chrono::milliseconds timeout);

}  // namespace mcpexec::http
